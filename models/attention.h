#pragma once
// Multi-head self-attention, written to be schedulable, and the implementations a schedule can
// swap in with `replace` (the `attn` knob of the templates):
//
//   naive      AttentionImpl: q, k, v, out projections; scores, mask, softmax, dropout, values
//   fused_qkv  FusedQkvAttentionImpl: one projection for q, k and v (one GEMM instead of three)
//   baddbmm    OnePassAttentionImpl: scale, mask and score in one baddbmm, softmax in place
//   memory_efficient  MemoryEfficientAttentionImpl: blocked over keys with an online softmax,
//              the seq × seq probabilities never kept
//              (schedule/kernels/memory_efficient_attention.h)
//
// All four compute the same function with the same dropout draws, so a model scheduled with any
// of them matches the original (tests/models).

#include <cstdint>

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include "schedule/language/slot_module.h"

namespace slapo::models {

struct AttentionOptions {
  int64_t hidden = 0;
  int64_t heads = 1;
  double dropout = 0.1;
  bool causal = true;
  bool qkv_bias = true;  // q, k and v projections with biases (GPT-Neo's have none)
  bool scaled = true;    // scores scaled by 1/sqrt(head_dim) (GPT-Neo does not scale them)
  int64_t window = 0;  // local attention: a token sees itself and the window − 1 before it; 0: all
  // The zoo's attention variants (fused qkv, one pass) implement this plain form only.
  bool plain() const { return qkv_bias && scaled && window == 0; }
};

class AttentionImpl : public schedule::SlotModule {
 public:
  explicit AttentionImpl(const AttentionOptions& options);
  // x: [batch, seq, hidden] → [batch, seq, hidden].
  torch::Tensor forward(const torch::Tensor& x);
  const AttentionOptions& options() const { return options_; }

 private:
  AttentionOptions options_;
};
TORCH_MODULE(Attention);

class FusedQkvAttentionImpl : public schedule::SlotModule {
 public:
  // Takes over `original`'s weights: qkv = [q; k; v], and its out projection and dropouts.
  explicit FusedQkvAttentionImpl(AttentionImpl& original);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  AttentionOptions options_;
};
TORCH_MODULE(FusedQkvAttention);

class OnePassAttentionImpl : public schedule::SlotModule {
 public:
  // Shares `original`'s projections and dropouts (same parameters, same names).
  explicit OnePassAttentionImpl(AttentionImpl& original);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  AttentionOptions options_;
};
TORCH_MODULE(OnePassAttention);

class MemoryEfficientAttentionImpl : public schedule::SlotModule {
 public:
  // Shares `original`'s projections and dropouts (same parameters, same names); applies the
  // probabilities' dropout (attn_drop, a KeyedDropout) inside the kernel, with the same masks.
  explicit MemoryEfficientAttentionImpl(AttentionImpl& original);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  AttentionOptions options_;
};
TORCH_MODULE(MemoryEfficientAttention);

// [batch, seq, heads · head_dim] → [batch, heads, seq, head_dim]. The number of heads comes from
// the tensor: a tensor-parallel rank whose projections are sharded by heads sees only its own.
torch::Tensor split_heads(const torch::Tensor& x, int64_t head_dim);

// Dot-product attention on [batch, heads, seq, head_dim] tensors as `options` say (scaling, causal
// and local masks), the probabilities through `owner`'s dropout slot; shared by the variants.
torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                     const AttentionOptions& options, schedule::SlotModule& owner,
                     const char* dropout_slot);

}  // namespace slapo::models
