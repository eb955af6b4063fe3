#pragma once
// FamilyTraits: what a model family's structure means to schedules, runners and the tuner — the
// one place that knows where a family keeps its blocks, embedding and head, and which knobs
// apply to it. Code asks a trait ("has attention?"), never compares family names.

#include <string>
#include <vector>

namespace slapo::models {

struct FamilyTraits {
  std::string name;         // "gpt", "bert", "mlp", "llama"
  std::string description;  // one line, for listings
  std::string blocks;       // the path of the repeated blocks: "h", "encoder"
  std::string embedding;    // the token embedding: "wte", "embeddings.word"
  std::string head;         // the LM head tied to the embedding: "head", "decoder"
  bool attention = true;    // blocks hold an `attn` (attention) and an `mlp`; else only an `mlp`
  bool causal = true;       // attention sees only earlier tokens
  bool position_embedding = true;  // a learned position embedding of max_seq rows
  bool head_bias = false;          // the LM head adds a bias over the vocabulary (sharded with it)
  bool final_norm = true;          // a layer norm after the last block (pre-LN models)
  double layer_norm_eps = 1e-5;
  // Trains as a masked language model (BERT): predicts 15% of the positions of each sequence,
  // masked in its input (models/training_batch.h); else it predicts the next token.
  bool masked_lm = false;
  // LLaMA's structure: a SwiGLU MLP (gate_proj, up_proj, down_proj) in place of fc_in, GELU,
  // fc_out; RMSNorm in place of layer norm; rotary position embeddings inside attention (with
  // grouped key/value heads: ModelSpec::kv_heads); no biases in Linears; an LM head of its own.
  bool gated_mlp = false;
  bool rms_norm = false;
  bool rotary = false;
  bool tied_head = true;  // the LM head is the token embedding's weight
  // GPT-Neo's attention and MLP: q, k, v without biases, unscaled scores, GELU's tanh form (and
  // local attention on every second block when ModelSpec::local_window > 0).
  bool qkv_bias = true;
  bool scaled_attention = true;
  bool gelu_tanh = false;
};

// The traits of `family` (built in, or registered: models/model_registry.h). Throws
// Error(kNotFound) listing the families otherwise.
const FamilyTraits& family_traits(const std::string& family);
const std::vector<FamilyTraits>& model_families();

}  // namespace slapo::models
