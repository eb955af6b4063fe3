#include "models/attention.h"

#include <cmath>

#include <ATen/ATen.h>

#include "core/error.h"
#include "models/blocks.h"
#include "schedule/kernels/memory_efficient_attention.h"

namespace slapo::models {

torch::Tensor split_heads(const torch::Tensor& x, int64_t head_dim) {
  return x.view({x.size(0), x.size(1), -1, head_dim}).transpose(1, 2);
}

namespace {
// [batch, heads, seq, head_dim] → [batch, seq, hidden]
torch::Tensor merge_heads(const torch::Tensor& x) {
  const auto b = x.size(0), n = x.size(1), s = x.size(2), d = x.size(3);
  return x.transpose(1, 2).contiguous().view({b, s, n * d});
}
torch::Tensor causal_mask(int64_t seq, const torch::Tensor& like) {
  return torch::ones({seq, seq}, like.options().dtype(torch::kBool)).triu(1);
}
// A variant that computes attention its own way over the original's projections and dropouts
// (the same modules: the same parameters under the same names, shards and dropout seeds).
void share_slots(AttentionImpl& original, schedule::SlotModule& variant) {
  for (const char* name : {"q_proj", "k_proj", "v_proj", "attn_drop", "out_proj", "resid_drop"}) {
    const schedule::Slot& slot = original.slot(name);
    variant.add_slot_any(name, slot.module, slot.signature);
  }
}
}  // namespace

torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                     const AttentionOptions& options, schedule::SlotModule& owner,
                     const char* dropout_slot) {
  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1));
  if (options.scaled) scores = scores * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  const int64_t s = q.size(2);
  if (options.causal) scores = scores.masked_fill(causal_mask(s, q), -INFINITY);
  if (options.window > 0) {  // and nothing `window` or more tokens back
    const torch::Tensor far =
        torch::ones({s, s}, q.options().dtype(torch::kBool)).tril(-options.window);
    scores = scores.masked_fill(far, -INFINITY);
  }
  torch::Tensor probs = torch::softmax(scores, -1);
  probs = owner.call(dropout_slot, probs);
  return torch::matmul(probs, v);
}

AttentionImpl::AttentionImpl(const AttentionOptions& options) : options_(options) {
  SLAPO_CHECK(options.hidden % options.heads == 0, ErrorCode::kInvalidArgument,
              "attention: hidden ", options.hidden, " is not divisible by heads ", options.heads);
  for (const char* name : {"q_proj", "k_proj", "v_proj"})
    add_slot(name,
             torch::nn::Linear(
                 torch::nn::LinearOptions(options.hidden, options.hidden).bias(options.qkv_bias)));
  add_slot("attn_drop", dropout(options.dropout));
  add_slot("out_proj", torch::nn::Linear(options.hidden, options.hidden));
  add_slot("resid_drop", dropout(options.dropout));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x) {
  const int64_t d = options_.hidden / options_.heads;
  torch::Tensor q = split_heads(call("q_proj", x), d);
  torch::Tensor k = split_heads(call("k_proj", x), d);
  torch::Tensor v = split_heads(call("v_proj", x), d);
  torch::Tensor y = merge_heads(attend(q, k, v, options_, *this, "attn_drop"));
  return call("resid_drop", call("out_proj", y));
}

FusedQkvAttentionImpl::FusedQkvAttentionImpl(AttentionImpl& original)
    : options_(original.options()) {
  SLAPO_CHECK(options_.plain(), ErrorCode::kInvalidArgument,
              "fused qkv attention replaces a plain attention only (biases, scaled, global)");
  std::vector<torch::Tensor> weights, biases;
  for (const char* name : {"q_proj", "k_proj", "v_proj"}) {
    auto* linear = original.slot(name).module.get<torch::nn::Linear>().get();
    weights.push_back(linear->weight);
    biases.push_back(linear->bias);
  }
  // Sized from the weights: a tensor-parallel rank fuses only its own heads of q, k and v.
  torch::nn::Linear qkv(weights[0].size(1), 3 * weights[0].size(0));
  {
    torch::NoGradGuard no_grad;
    qkv->weight.copy_(torch::cat(weights, 0));
    qkv->bias.copy_(torch::cat(biases, 0));
  }
  add_slot("qkv", qkv);
  add_slot("attn_drop", original.slot("attn_drop").module.get<schedule::KeyedDropout>());
  add_slot("out_proj", original.slot("out_proj").module.get<torch::nn::Linear>());
  add_slot("resid_drop", original.slot("resid_drop").module.get<schedule::KeyedDropout>());
}

torch::Tensor FusedQkvAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t d = options_.hidden / options_.heads;
  const std::vector<torch::Tensor> qkv = call("qkv", x).chunk(3, -1);
  torch::Tensor q = split_heads(qkv[0], d);
  torch::Tensor k = split_heads(qkv[1], d);
  torch::Tensor v = split_heads(qkv[2], d);
  torch::Tensor y = merge_heads(attend(q, k, v, options_, *this, "attn_drop"));
  return call("resid_drop", call("out_proj", y));
}

OnePassAttentionImpl::OnePassAttentionImpl(AttentionImpl& original) : options_(original.options()) {
  SLAPO_CHECK(options_.plain(), ErrorCode::kInvalidArgument,
              "one-pass attention replaces a plain attention only (biases, scaled, global)");
  share_slots(original, *this);
}

torch::Tensor OnePassAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t b = x.size(0), s = x.size(1), d = options_.hidden / options_.heads;
  torch::Tensor q_full = call("q_proj", x);
  const int64_t heads = q_full.size(-1) / d;  // this rank's heads when the projections are sharded
  // Fold batch and heads: [b * heads, s, d]; one baddbmm adds the mask and scales the scores.
  auto fold = [&](const torch::Tensor& t) { return split_heads(t, d).reshape({b * heads, s, d}); };
  torch::Tensor q = fold(q_full);
  torch::Tensor k = fold(call("k_proj", x));
  torch::Tensor v = fold(call("v_proj", x));
  torch::Tensor bias = torch::zeros({s, s}, x.options());
  if (options_.causal) bias.masked_fill_(causal_mask(s, x), -INFINITY);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  torch::Tensor scores =
      torch::baddbmm(bias.expand({b * heads, s, s}), q, k.transpose(1, 2), 1.0, scale);
  torch::Tensor probs = call("attn_drop", torch::softmax(scores.view({b, heads, s, s}), -1));
  torch::Tensor y = torch::bmm(probs.view({b * heads, s, s}), v).view({b, heads, s, d});
  return call("resid_drop", call("out_proj", merge_heads(y)));
}

MemoryEfficientAttentionImpl::MemoryEfficientAttentionImpl(AttentionImpl& original)
    : options_(original.options()) {
  share_slots(original, *this);
}

torch::Tensor MemoryEfficientAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t d = options_.hidden / options_.heads;
  torch::Tensor q = split_heads(call("q_proj", x), d);
  torch::Tensor k = split_heads(call("k_proj", x), d);
  torch::Tensor v = split_heads(call("v_proj", x), d);
  // The dropout slot is applied inside the kernel, so it must still be the keyed dropout whose
  // masks the kernel draws (a schedule that replaced it would otherwise be ignored silently).
  auto* drop = dynamic_cast<schedule::KeyedDropoutImpl*>(slot("attn_drop").module.ptr().get());
  SLAPO_CHECK(drop != nullptr, ErrorCode::kInvalidArgument,
              "memory-efficient attention: its attn_drop slot holds ",
              slot("attn_drop").module.ptr()->name(),
              ", not the KeyedDropout the kernel applies itself");
  schedule::AttentionMask mask;
  mask.causal = options_.causal;
  mask.window = options_.window;
  mask.scale = options_.scaled ? 1.0 / std::sqrt(static_cast<double>(d)) : 1.0;
  torch::Tensor y = schedule::memory_efficient_attention(q, k, v, mask, drop->mask_spec_now());
  return call("resid_drop", call("out_proj", merge_heads(y)));
}

}  // namespace slapo::models
