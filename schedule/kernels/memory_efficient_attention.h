#pragma once
// Memory-efficient attention: softmax(q·kᵀ · scale + mask) · v without the seq × seq probabilities
// kept for backward (the FlashAttention scheme, on the CPU: each thread runs whole heads through
// vectorized loops, kernels/attention_head.h).
//
// Plain attention keeps two [batch, heads, seq, seq] tensors per layer for backward (the softmax
// output and the dropped-out probabilities the value product reads): at seq 1024 that is most of a
// step's memory. Here the keys are taken in blocks: forward keeps a running maximum and sum per
// query row (the online softmax) and accumulates the output block by block, so only the output
// and one log-sum-exp per row are kept; backward recomputes each block's probabilities from the
// log-sum-exp (one more q·kᵀ product) and uses D = rowsum(dO ∘ O) instead of the softmax's saved
// output. Blocks wholly hidden by the causal or local mask are skipped both ways.
//
// Dropout on the probabilities draws the keyed masks (keyed_mask.h) block by block: exactly the
// elements the plain model's dropout draws for the whole tensor, so a model with this attention
// computes what the plain model computes, on any tensor-parallel slice of the heads. The softmax's
// normaliser is taken before dropout, as in the plain model.

#include <cstdint>
#include <optional>

#include <ATen/core/Tensor.h>

#include "schedule/kernels/keyed_mask.h"

namespace slapo::schedule {

struct AttentionMask {
  bool causal = true;  // a query sees no later key
  int64_t window = 0;  // > 0: and no key `window` or more positions back (local attention)
  double scale = 1.0;  // scores = q·kᵀ · scale
};

// q, k, v: [batch, heads, seq, head_dim] float32 → [batch, heads, seq, head_dim]. `dropout` (if
// any) is the probabilities' dropout, its mask keyed as spec says (heads sharded along axis 1).
// `block` (≥ 1) is the edge of a square block of one head's scores computed at a time; 0 picks
// 64. Differentiable in q, k and v.
at::Tensor memory_efficient_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const AttentionMask& mask,
                                      const std::optional<MaskSpec>& dropout, int64_t block = 0);

}  // namespace slapo::schedule
