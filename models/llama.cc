#include "models/llama.h"

#include <cmath>

#include <ATen/ATen.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/linear.h>

#include "core/error.h"
#include "models/attention.h"

namespace slapo::models {

namespace {

torch::nn::Linear linear(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

}  // namespace

RmsNormImpl::RmsNormImpl(int64_t hidden, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({hidden}));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) {
  return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps_) * weight;
}

torch::Tensor apply_rotary(const torch::Tensor& x, double base) {
  const int64_t seq = x.size(2), d = x.size(3);
  SLAPO_CHECK(d % 2 == 0, ErrorCode::kInvalidArgument,
              "rotary embeddings need an even head size, not ", d);
  const auto f64 = x.options().dtype(at::kDouble);
  // θ_i = base^(-2i/d); the angle of position p is p·θ_i, the same for both halves of a head.
  const torch::Tensor inv_freq =
      torch::pow(base, -torch::arange(0, d, 2, f64) / static_cast<double>(d));
  const torch::Tensor angles = torch::outer(torch::arange(seq, f64), inv_freq);
  const torch::Tensor emb = torch::cat({angles, angles}, -1).to(x.scalar_type());  // [seq, d]
  const torch::Tensor x1 = x.narrow(-1, 0, d / 2), x2 = x.narrow(-1, d / 2, d / 2);
  const torch::Tensor rotated = torch::cat({-x2, x1}, -1);
  return x * emb.cos() + rotated * emb.sin();
}

GroupedQueryAttentionImpl::GroupedQueryAttentionImpl(const ModelSpec& spec)
    : head_dim_(spec.hidden / spec.heads) {
  SLAPO_CHECK(spec.hidden % spec.heads == 0 && spec.heads % spec.key_value_heads() == 0,
              ErrorCode::kInvalidArgument, "attention of '", spec.preset, "': hidden ", spec.hidden,
              ", heads ", spec.heads, " and kv_heads ", spec.key_value_heads(),
              " do not divide evenly");
  const int64_t kv_width = spec.key_value_heads() * head_dim_;
  add_slot("q_proj", linear(spec.hidden, spec.hidden));
  add_slot("k_proj", linear(spec.hidden, kv_width));
  add_slot("v_proj", linear(spec.hidden, kv_width));
  add_slot("out_proj", linear(spec.hidden, spec.hidden));
}

torch::Tensor GroupedQueryAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t b = x.size(0), s = x.size(1);
  torch::Tensor q = apply_rotary(split_heads(call("q_proj", x), head_dim_), rope_base_);
  torch::Tensor k = apply_rotary(split_heads(call("k_proj", x), head_dim_), rope_base_);
  torch::Tensor v = split_heads(call("v_proj", x), head_dim_);
  // Each key/value head serves `group` query heads (on a tp rank: of its own heads).
  const int64_t group = q.size(1) / k.size(1);
  if (group > 1) {
    k = k.repeat_interleave(group, /*dim=*/1);
    v = v.repeat_interleave(group, /*dim=*/1);
  }
  torch::Tensor scores =
      torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(head_dim_)));
  scores =
      scores.masked_fill(torch::ones({s, s}, x.options().dtype(torch::kBool)).triu(1), -INFINITY);
  torch::Tensor y = torch::matmul(torch::softmax(scores, -1), v);
  return call("out_proj", y.transpose(1, 2).contiguous().view({b, s, -1}));
}

SwiGluMlpImpl::SwiGluMlpImpl(int64_t hidden, int64_t ffn) {
  add_slot("gate_proj", linear(hidden, ffn));
  add_slot("up_proj", linear(hidden, ffn));
  add_slot("down_proj", linear(ffn, hidden));
}

torch::Tensor SwiGluMlpImpl::forward(const torch::Tensor& x) {
  return call("down_proj", torch::silu(call("gate_proj", x)) * call("up_proj", x));
}

LlamaBlockImpl::LlamaBlockImpl(const ModelSpec& spec) {
  add_slot("ln_1", RmsNorm(spec.hidden, spec.layer_norm_eps));
  add_slot("attn", GroupedQueryAttention(spec));
  add_slot("ln_2", RmsNorm(spec.hidden, spec.layer_norm_eps));
  add_slot("mlp", SwiGluMlp(spec.hidden, spec.ffn));
}

torch::Tensor LlamaBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor h = x + call("attn", call("ln_1", x));
  return h + call("mlp", call("ln_2", h));
}

}  // namespace slapo::models
