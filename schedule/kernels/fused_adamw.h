#pragma once
// FusedAdamW: torch::optim::AdamW's update in one pass over memory per parameter.
//
// LibTorch's AdamW runs about ten tensor operations per parameter (decay, two moment updates,
// sqrt, division, addcdiv), each a full pass over the parameter, its gradient or its moments: on a
// CPU the optimizer step is memory-bound, so those passes are its cost. This one reads p, g, m, v
// once and writes p, m, v once, in the same order of operations per element, vectorized for the
// SIMD level of the CPU (simd_dispatch.h) and split across threads.
//
// It is an AdamW: same options, same per-parameter state (AdamWParamState, so save/load and a
// switch between the two keep working), and the same weights bit for bit: each operation is
// rounded as ATen's kernels round it on a CPU with FMA (tests/schedule/static_graph_test.cc,
// FusedAdamWFollowsAdamW, at every SIMD level). Dense float32 CPU parameters without amsgrad;
// anything else is updated by LibTorch's AdamW, parameter by parameter.

#include <vector>

#include <torch/optim/adamw.h>

namespace slapo::schedule {

class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

// One AdamW update of n elements in place (exposed for the kernel's benchmark and tests).
// `decay` = 1 − lr·weight_decay, `step_size` = lr / (1 − β1^t), `bias2_sqrt` = √(1 − β2^t).
void adamw_update(float* p, const float* g, float* m, float* v, int64_t n, double decay,
                  double beta1, double beta2, double step_size, double bias2_sqrt, double eps);

}  // namespace slapo::schedule
