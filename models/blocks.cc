#include "models/blocks.h"

#include <limits>

#include <ATen/ATen.h>

namespace slapo::models {

torch::nn::LayerNorm layer_norm(const ModelSpec& spec) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({spec.hidden}).eps(spec.layer_norm_eps));
}

schedule::KeyedDropout dropout(double p) {
  const int64_t seed =
      at::randint(std::numeric_limits<int64_t>::max(), {1}, at::kLong).item<int64_t>();
  return schedule::KeyedDropout(p, static_cast<uint64_t>(seed));
}

namespace {
AttentionOptions attention_options(const ModelSpec& spec, int64_t index = 0) {
  const FamilyTraits& f = spec.traits();
  AttentionOptions o;
  o.hidden = spec.hidden;
  o.heads = spec.heads;
  o.dropout = spec.dropout;
  o.causal = f.causal;
  o.qkv_bias = f.qkv_bias;
  o.scaled = f.scaled_attention;
  o.window = index % 2 == 1 ? spec.local_window : 0;  // global, local, global, ...
  return o;
}
}  // namespace

torch::Tensor ResidualAddImpl::forward(const torch::Tensor& residual, const torch::Tensor& y) {
  return residual + y;
}

MlpImpl::MlpImpl(int64_t hidden, int64_t ffn, double dropout, bool gelu_tanh) {
  add_slot("fc_in", torch::nn::Linear(hidden, ffn));
  add_slot("act",
           torch::nn::GELU(torch::nn::GELUOptions().approximate(gelu_tanh ? "tanh" : "none")));
  add_slot("fc_out", torch::nn::Linear(ffn, hidden));
  add_slot("drop", models::dropout(dropout));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  return call("drop", call("fc_out", call("act", call("fc_in", x))));
}

GptBlockImpl::GptBlockImpl(const ModelSpec& spec, int64_t index) {
  add_slot("ln_1", layer_norm(spec));
  add_slot("attn", Attention(attention_options(spec, index)));
  add_slot("attn_residual", ResidualAdd());
  add_slot("ln_2", layer_norm(spec));
  add_slot("mlp", Mlp(spec.hidden, spec.ffn, spec.dropout, spec.traits().gelu_tanh));
  add_slot("mlp_residual", ResidualAdd());
}

torch::Tensor GptBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor h = call("attn_residual", x, call("attn", call("ln_1", x)));
  return call("mlp_residual", h, call("mlp", call("ln_2", h)));
}

BertLayerImpl::BertLayerImpl(const ModelSpec& spec) {
  add_slot("attn", Attention(attention_options(spec)));
  add_slot("attn_residual", ResidualAdd());
  add_slot("attn_norm", layer_norm(spec));
  add_slot("mlp", Mlp(spec.hidden, spec.ffn, spec.dropout));
  add_slot("mlp_residual", ResidualAdd());
  add_slot("mlp_norm", layer_norm(spec));
}

torch::Tensor BertLayerImpl::forward(const torch::Tensor& x) {
  torch::Tensor h = call("attn_norm", call("attn_residual", x, call("attn", x)));
  return call("mlp_norm", call("mlp_residual", h, call("mlp", h)));
}

MlpBlockImpl::MlpBlockImpl(const ModelSpec& spec) {
  add_slot("norm", layer_norm(spec));
  add_slot("mlp", Mlp(spec.hidden, spec.ffn, spec.dropout));
  add_slot("mlp_residual", ResidualAdd());
}

torch::Tensor MlpBlockImpl::forward(const torch::Tensor& x) {
  return call("mlp_residual", x, call("mlp", call("norm", x)));
}

}  // namespace slapo::models
