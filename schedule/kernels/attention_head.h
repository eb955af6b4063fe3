#pragma once
// One (sample, head) of memory-efficient attention, forward and backward, on raw float rows: the
// blocked loops of memory_efficient_attention.h written out, without a call into ATen, so that a
// block costs no dispatch and each thread runs whole heads of its own (no two threads write the
// same gradient row), at the best SIMD level of this CPU (simd_dispatch.h).
//
// The scores are taken in square blocks of `edge` × `edge`: a block of 64 × 64 and the 64 rows of
// k and v it reads stay in the first-level caches. Within a block, each row's visible columns are
// one range (causal: up to the diagonal; local: from `window` − 1 back), so the mask is never
// materialised and a hidden score is never exponentiated.

#include <cstdint>

#include "schedule/kernels/keyed_mask.h"

namespace slapo::schedule {

struct HeadAttention {
  const float* q = nullptr;  // [seq, dim] each, rows contiguous
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t seq = 0, dim = 0;
  bool causal = true;                          // a query sees no later key
  int64_t window = 0;                          // > 0: and no key `window` or more positions back
  float scale = 1;                             // scores = q·kᵀ · scale
  int64_t edge = 64;                           // the blocks' edge (≥ 1)
  const AttentionMaskRows* dropout = nullptr;  // the probabilities' keyed mask, or none
};

// out [seq, dim]; lse [seq]: each row's log-sum-exp of its visible scores (what backward needs).
void attention_head_forward(const HeadAttention& a, float* out, float* lse);

// Given the forward's out and lse and the gradient of out: the gradients of q, k and v, each
// [seq, dim], overwritten.
void attention_head_backward(const HeadAttention& a, const float* out, const float* lse,
                             const float* d_out, float* dq, float* dk, float* dv);

}  // namespace slapo::schedule
