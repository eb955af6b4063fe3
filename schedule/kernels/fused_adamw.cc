#include "schedule/kernels/fused_adamw.h"

#include <cmath>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "schedule/kernels/simd_dispatch.h"

namespace slapo::schedule {

namespace {

// Per element, the operations of AdamW::step in their order (adamw.cpp), rounded as ATen's
// kernels round them (found by comparing each intermediate, bit for bit): add_(g, α) and
// addcmul_(g, g, α) are one fused multiply-add onto the decayed moment; the denominator divides
// by √(1 − β2^t) (no reciprocal) and adds ε; addcdiv_ computes p + (−step · m) / denom. The file
// is compiled with -ffp-contract=off so that no other multiply-add is fused. (On a CPU without
// FMA, __builtin_fmaf is a library call: exact, slower — the baseline level.)
__attribute__((always_inline)) inline void adamw_kernel_body(
    float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
    int64_t n, float decay, float beta1, float one_minus_beta1, float beta2, float one_minus_beta2,
    float neg_step, float bias2_sqrt, float eps) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = __builtin_fmaf(gi, one_minus_beta1, m[i] * beta1);
    const float vi = __builtin_fmaf(one_minus_beta2 * gi, gi, v[i] * beta2);
    const float denom = __builtin_sqrtf(vi) / bias2_sqrt + eps;
    p[i] = p[i] * decay + (neg_step * mi) / denom;
    m[i] = mi;
    v[i] = vi;
  }
}

SLAPO_SIMD_VARIANTS(adamw_kernel,
                    (float* p, const float* g, float* m, float* v, int64_t n, float decay,
                     float beta1, float one_minus_beta1, float beta2, float one_minus_beta2,
                     float neg_step, float bias2_sqrt, float eps),
                    (p, g, m, v, n, decay, beta1, one_minus_beta1, beta2, one_minus_beta2, neg_step,
                     bias2_sqrt, eps))

bool fusable(const at::Tensor& p, const at::Tensor& g) {
  return p.scalar_type() == at::kFloat && g.scalar_type() == at::kFloat && p.is_contiguous() &&
         g.is_contiguous() && !g.is_sparse() && p.device().is_cpu();
}

}  // namespace

void adamw_update(float* p, const float* g, float* m, float* v, int64_t n, double decay,
                  double beta1, double beta2, double step_size, double bias2_sqrt, double eps) {
  // Each scalar rounded to float once, from the double AdamW computes it in (1 − β1 from the
  // double β1, not from its float: they differ in the last bit).
  const auto f = [](double x) { return static_cast<float>(x); };
  // Chunks big enough to amortize a thread's start, small enough to share among threads.
  at::parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    adamw_kernel(p + begin, g + begin, m + begin, v + begin, end - begin, f(decay), f(beta1),
                 f(1 - beta1), f(beta2), f(1 - beta2), f(-step_size), f(bias2_sqrt), f(eps));
  });
}

torch::Tensor FusedAdamW::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = {};
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const at::Tensor& grad = p.grad();
      if (o.amsgrad() || !fusable(p, grad)) {
        // Not this kernel's case: LibTorch's own update, for this parameter alone.
        torch::optim::AdamW one({p}, o);
        auto key = c10::guts::to_string(p.unsafeGetTensorImpl());
        auto it = state_.find(key);
        if (it != state_.end()) one.state()[key] = it->second->clone();
        one.step();
        state_[key] = one.state()[key]->clone();
        continue;
      }
      auto key = c10::guts::to_string(p.unsafeGetTensorImpl());
      auto it = state_.find(key);
      if (it == state_.end()) {
        auto state = std::make_unique<torch::optim::AdamWParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(p, at::MemoryFormat::Contiguous));
        state->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Contiguous));
        it = state_.emplace(key, std::move(state)).first;
      }
      auto& state = static_cast<torch::optim::AdamWParamState&>(*it->second);
      state.step(state.step() + 1);
      const auto [beta1, beta2] = o.betas();
      const double bias_correction1 = 1 - std::pow(beta1, state.step());
      const double bias_correction2 = 1 - std::pow(beta2, state.step());
      adamw_update(p.data_ptr<float>(), grad.data_ptr<float>(), state.exp_avg().data_ptr<float>(),
                   state.exp_avg_sq().data_ptr<float>(), p.numel(), 1 - o.lr() * o.weight_decay(),
                   beta1, beta2, o.lr() / bias_correction1, std::sqrt(bias_correction2), o.eps());
    }
  }
  return loss;
}

}  // namespace slapo::schedule
