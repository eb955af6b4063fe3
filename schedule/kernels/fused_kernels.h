#pragma once
// The project's own fused CPU kernels, each an operator with its own autograd so that fuse() can
// put it into a traced graph (schedule/graph/fusion_chains.h), and each callable from C++:
//
//   slapo::bias_gelu(x, bias)                         gelu(x + bias), exact (erf) GELU
//   slapo::bias_dropout_add(x, bias, residual, p, seed, axis, parts, rank, independent)
//                                                     residual + keyed_dropout(x + bias)
//   slapo::layer_norm(x, weight, bias, eps)           layer norm over the last axis
//   add_layer_norm(x, addend, weight, bias, eps)      (x + addend, its layer norm): C++ only
//
// One pass forward and one backward each (per-thread partial sums for the parameter gradients).
// Loops are written so the compiler vectorizes them, built for AVX-512, AVX2+FMA and the baseline,
// chosen at run time (simd_dispatch.h). Debian's LibTorch ships no sleef.h, so erf and exp are
// polynomial approximations of our own (erf: absolute error below 2e-7, Abramowitz & Stegun
// 7.1.26 — about what float32 itself carries). float32 CPU tensors only.

#include <cstdint>
#include <utility>

#include <ATen/core/Tensor.h>

namespace slapo::schedule {

// x: [..., H]; bias: [H]. Differentiable in both.
at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& bias);

// x, residual: [batch, ..., H]; bias: [H]. The dropout is keyed dropout's
// (schedule/kernels/keyed_mask.h) with the same arguments as the operator slapo::keyed_dropout,
// under the current dropout scope: the same mask. Differentiable in x, bias and residual; nothing
// but the key is kept for backward.
at::Tensor bias_dropout_add(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& residual,
                            double p, int64_t seed, int64_t axis = 1, int64_t parts = 1,
                            int64_t rank = 0, bool independent = false);

// x: [..., H]; weight, bias: [H]. Differentiable in all three.
at::Tensor layer_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                      double eps);

// (x + addend, layer_norm(x + addend)) in one pass each way: a pre-LN block's residual stream and
// the next sublayer's input. x, addend: [..., H] of one shape; weight, bias: [H]. Differentiable
// in all four, through either output or both. (Not an operator: the eager path calls it.)
std::pair<at::Tensor, at::Tensor> add_layer_norm(const at::Tensor& x, const at::Tensor& addend,
                                                 const at::Tensor& weight, const at::Tensor& bias,
                                                 double eps);

// Makes sure the kernels (and their operator registrations) are linked into a program that only
// names the operators in a graph.
void fused_kernels_linked();

}  // namespace slapo::schedule
