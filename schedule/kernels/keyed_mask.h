#pragma once
// The keyed dropout mask as a counter-based hash: whether element e of sample s is kept is a pure
// function of (module seed, step, s, e) — no generator state, no order of drawing.
//
//   key  = splitmix64 chain over (seed, step, global sample, rank if independent)
//   keep = hash32(e, key) < (1 − p) · 2^24        (e: the element's index in the full sample)
//
// So a mask needs no memory: backward recomputes it from the key instead of saving it; any slice
// of a tensor (a pipeline's micro-batch, a data-parallel rank's samples, a tensor-parallel rank's
// heads) draws exactly the elements of the full one; and the loop vectorizes (32-bit multiplies).

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "schedule/kernels/dropout_key.h"

namespace torch::autograd {
struct AutogradContext;
}

namespace slapo::schedule {

struct MaskSpec {
  double p = 0;
  uint64_t seed = 0;
  DropoutKey key;  // step and the global index of sample 0
  // The tensor is slice `rank` of `parts` along `axis` of the full one (parts 1: not sharded).
  int64_t axis = 1, parts = 1, rank = 0;
  bool independent = false;  // draw the slice's own elements from a stream keyed by the rank too
};

// The spec of a dropout with these operator arguments, keyed by the current dropout scope (a fresh
// step outside any scope). Throws for p outside [0, 1).
MaskSpec mask_spec_in_scope(double p, int64_t seed, int64_t axis, int64_t parts, int64_t rank,
                            bool independent);

// out = residual + (x + bias) · keep / (1 − p), over float32 tensors of x's shape ([batch, ...]);
// bias ([x.size(-1)]) and residual (x's shape) may be undefined. Returns out.
at::Tensor apply_keyed_mask(const MaskSpec& spec, const at::Tensor& x, const at::Tensor& bias,
                            const at::Tensor& residual);

// An autograd function keeps the spec (a few numbers), not the mask, for its backward.
void save_mask_spec(torch::autograd::AutogradContext* ctx, const MaskSpec& spec);
MaskSpec saved_mask_spec(torch::autograd::AutogradContext* ctx);

// The mask itself as 0 or 1/(1 − p), in x's shape (for tests).
at::Tensor keyed_mask(const MaskSpec& spec, const at::Tensor& x);

// Where the probabilities of one head of one sample of a [batch, heads, seq, seq] attention tensor
// sit among the elements apply_keyed_mask draws for the whole tensor (sharded along the heads,
// axis 1, as the spec says): what a kernel that draws the mask itself, row by row, needs.
struct AttentionMaskRows {
  uint32_t k0 = 0, k1 = 0;  // the sample's key
  uint32_t threshold = 0;   // an element is kept when its hash's top 24 bits are below it
  float scale = 1;          // 1 / (1 − p)
  int64_t seq = 0;
  int64_t head_base = 0;  // the full-sample index of the head's first probability
};
// Throws Error(kInvalidArgument) for a spec sharded along another axis, or a tensor too large for
// 32-bit element indices.
AttentionMaskRows attention_mask_rows(const MaskSpec& spec, int64_t heads, int64_t seq,
                                      int64_t sample, int64_t head);
// The mask of row `row`, columns [col0, col0 + n), as 0 or 1/(1 − p), into out[0..n).
void attention_mask_row(const AttentionMaskRows& rows, int64_t row, int64_t col0, int64_t n,
                        float* out);

}  // namespace slapo::schedule
