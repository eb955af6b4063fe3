#pragma once
// The project's own fused CPU kernel for bias + GELU: y = gelu(x + b), exact (erf) GELU, one pass
// forward, one pass backward (dx, and db accumulated per thread). Registered as the operator
// `slapo::bias_gelu(Tensor x, Tensor bias) -> Tensor` with its own autograd, so fuse() can put it
// into a traced graph.
//
// erf and exp are polynomial approximations written so the compiler vectorizes them (Debian's
// LibTorch ships no sleef.h, so ATen's vectorized math cannot be borrowed); the kernels are built
// for AVX2+FMA and for the baseline and chosen at run time (GCC target_clones). erf's absolute
// error is below 2e-7 (Abramowitz & Stegun 7.1.26), about what float32 itself carries.

#include <ATen/core/Tensor.h>

namespace slapo::schedule {

// x: [..., H] float32; bias: [H]. Differentiable in both.
at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& bias);

// Makes sure this file (and its operator registration) is linked into a program that only names
// the operator in a graph.
void bias_gelu_kernel_linked();

}  // namespace slapo::schedule
