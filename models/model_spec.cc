#include "models/model_spec.h"

#include "core/error.h"
#include "models/family_table.h"

namespace slapo::models {

namespace {
ModelSpec spec(const char* preset, const char* family, int64_t vocab, int64_t seq, int64_t hidden,
               int64_t heads, int64_t layers, int64_t ffn) {
  ModelSpec s;
  s.preset = preset;
  s.family = family;
  s.vocab = vocab;
  s.max_seq = seq;
  s.hidden = hidden;
  s.heads = heads;
  s.layers = layers;
  s.ffn = ffn;
  s.layer_norm_eps = s.traits().layer_norm_eps;
  return s;
}
// A GPT-Neo preset: local attention of `window` tokens on every second block.
ModelSpec neo(const char* preset, int64_t vocab, int64_t seq, int64_t hidden, int64_t heads,
              int64_t layers, int64_t ffn, int64_t window) {
  ModelSpec s = spec(preset, "gpt_neo", vocab, seq, hidden, heads, layers, ffn);
  s.local_window = window;
  return s;
}
// A LLaMA-family preset: grouped key/value heads, no dropout (as the family trains).
ModelSpec llama(const char* preset, int64_t vocab, int64_t seq, int64_t hidden, int64_t heads,
                int64_t kv_heads, int64_t layers, int64_t ffn) {
  ModelSpec s = spec(preset, "llama", vocab, seq, hidden, heads, layers, ffn);
  s.kv_heads = kv_heads;
  s.dropout = 0;
  return s;
}

}  // namespace

std::vector<ModelSpec>& mutable_model_presets() {
  static std::vector<ModelSpec> presets = {
      spec("gpt2", "gpt", 50257, 1024, 768, 12, 12, 3072),
      spec("gpt2-medium", "gpt", 50257, 1024, 1024, 16, 24, 4096),
      spec("gpt-mini", "gpt", 8192, 256, 256, 8, 6, 1024),
      spec("gpt-tiny", "gpt", 128, 16, 32, 4, 2, 64),
      spec("bert-base", "bert", 30522, 512, 768, 12, 12, 3072),
      spec("bert-large", "bert", 30522, 512, 1024, 16, 24, 4096),
      spec("bert-mini", "bert", 8192, 256, 256, 4, 4, 1024),
      spec("bert-tiny", "bert", 128, 16, 32, 4, 2, 64),
      spec("mlp-mini", "mlp", 8192, 256, 512, 1, 8, 2048),
      spec("mlp-tiny", "mlp", 128, 16, 32, 1, 2, 64),
      // vocab, max_seq, hidden, heads, layers, ffn, local window
      neo("gpt-neo-1.3b", 50257, 2048, 2048, 16, 24, 8192, 256),
      neo("gpt-neo-125m", 50257, 2048, 768, 12, 12, 3072, 256),
      neo("gpt-neo-tiny", 128, 16, 32, 4, 2, 64, 4),
      // vocab, max_seq, hidden, heads, kv_heads, layers, ffn (SwiGLU's intermediate size)
      llama("llama-7b", 32000, 4096, 4096, 32, 32, 32, 11008),  // LLaMA-2 7B's shape
      llama("llama-mini", 8192, 256, 256, 8, 4, 6, 768),
      llama("llama-tiny", 128, 16, 32, 4, 2, 2, 64),
  };
  return presets;
}

namespace {
const std::vector<ModelSpec>& all() { return mutable_model_presets(); }
}  // namespace

ModelSpec model_preset(const std::string& name) {
  for (const ModelSpec& s : all()) {
    if (s.preset == name) return s;
  }
  std::string names;
  for (const ModelSpec& s : all()) names += (names.empty() ? "" : ", ") + s.preset;
  SLAPO_FAIL(ErrorCode::kNotFound, "unknown model '", name, "' (models: ", names,
             "; a model of a program's own is known to that program: docs/own-model.md)");
}

std::vector<std::string> model_presets() {
  std::vector<std::string> names;
  for (const ModelSpec& s : all()) names.push_back(s.preset);
  return names;
}

int64_t ModelSpec::parameter_count() const {
  const int64_t h = hidden;
  int64_t per_layer = 0;
  const FamilyTraits& f = traits();
  if (f.gated_mlp) {
    const int64_t kv = key_value_heads() * (h / heads);  // the width of k and of v
    const int64_t per_block = 2 * h * h + 2 * h * kv + 3 * h * ffn + 2 * h;  // no biases
    return vocab * h * (f.tied_head ? 1 : 2) + layers * per_block + h;
  }
  if (!f.attention) {
    per_layer = 2 * h + (h * ffn + ffn) + (ffn * h + h);
  } else {
    per_layer = 4 * (h * h + h) + (h * ffn + ffn) + (ffn * h + h) + 2 * 2 * h;
    if (!f.qkv_bias) per_layer -= 3 * h;
  }
  int64_t embeddings = vocab * h + (f.position_embedding ? max_seq * h : 0);
  // BERT's token-type embedding and its norm, and its head's dense, norm and vocabulary bias.
  if (f.head_bias) embeddings += 2 * h + 2 * h + h * h + h + 2 * h + vocab;
  const int64_t final_norm = f.final_norm ? 2 * h : 0;
  return embeddings + layers * per_layer + final_norm;
}

double ModelSpec::block_forward_flops(int64_t seq) const {
  const double h = static_cast<double>(hidden), s = static_cast<double>(seq),
               f = static_cast<double>(ffn);
  if (traits().gated_mlp) {
    const double kv = static_cast<double>(key_value_heads() * (hidden / heads));
    return 2 * s * h * f * 3               // gate, up, down
           + 2 * s * h * (2 * h + 2 * kv)  // q, out; k, v
           + 2 * s * s * h * 2;            // scores and weighted values
  }
  double flops = 2 * s * h * f * 2;  // MLP: two matmuls
  if (traits().attention)
    flops += 2 * s * h * h * 4     // q, k, v, out projections
             + 2 * s * s * h * 2;  // scores and weighted values
  return flops;
}

double ModelSpec::head_forward_flops(int64_t seq) const {
  return 2 * static_cast<double>(seq) * static_cast<double>(hidden) * static_cast<double>(vocab);
}

double ModelSpec::forward_flops(int64_t seq) const {
  return static_cast<double>(layers) * block_forward_flops(seq) + head_forward_flops(seq);
}

}  // namespace slapo::models
