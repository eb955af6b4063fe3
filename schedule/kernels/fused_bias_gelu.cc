#include "schedule/kernels/fused_kernels.h"

#include <cmath>
#include <cstdint>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "core/error.h"
#include "schedule/kernels/simd_dispatch.h"
#include "schedule/kernels/simd_math.h"

namespace slapo::schedule {

namespace {

using simd::exp_nonpositive;

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// erf(x), Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7).
__attribute__((always_inline)) inline float erf_approx(float x) {
  const float a = __builtin_fabsf(x);
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  const float poly =
      t * (0.254829592f +
           t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float y = 1.0f - poly * exp_nonpositive(-a * a);
  return __builtin_copysignf(y, x);
}

__attribute__((always_inline)) inline void forward_rows_body(const float* __restrict x,
                                                             const float* __restrict b,
                                                             float* __restrict y, int64_t rows,
                                                             int64_t h) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * h;
    float* yr = y + r * h;
    for (int64_t j = 0; j < h; ++j) {
      const float u = xr[j] + b[j];
      yr[j] = 0.5f * u * (1.0f + erf_approx(u * kInvSqrt2));
    }
  }
}

__attribute__((always_inline)) inline void backward_rows_body(
    const float* __restrict x, const float* __restrict b, const float* __restrict dy,
    float* __restrict dx, float* __restrict db, int64_t rows, int64_t h) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * h;
    const float* dyr = dy + r * h;
    float* dxr = dx + r * h;
    for (int64_t j = 0; j < h; ++j) {
      const float u = xr[j] + b[j];
      const float cdf = 0.5f * (1.0f + erf_approx(u * kInvSqrt2));
      const float pdf = kInvSqrt2Pi * exp_nonpositive(-0.5f * u * u);
      const float g = dyr[j] * (cdf + u * pdf);
      dxr[j] = g;
      db[j] += g;
    }
  }
}

SLAPO_SIMD_VARIANTS(forward_rows,
                    (const float* x, const float* b, float* y, int64_t rows, int64_t h),
                    (x, b, y, rows, h))
SLAPO_SIMD_VARIANTS(backward_rows,
                    (const float* x, const float* b, const float* dy, float* dx, float* db,
                     int64_t rows, int64_t h),
                    (x, b, dy, dx, db, rows, h))

void check(const at::Tensor& x, const at::Tensor& bias) {
  SLAPO_CHECK(
      x.scalar_type() == at::kFloat && bias.scalar_type() == at::kFloat && x.device().is_cpu(),
      ErrorCode::kInvalidArgument, "slapo::bias_gelu: float32 CPU tensors only (got ",
      x.scalar_type(), ")");
  SLAPO_CHECK(bias.dim() == 1 && x.dim() >= 1 && x.size(-1) == bias.size(0),
              ErrorCode::kInvalidArgument, "slapo::bias_gelu: bias ", bias.sizes(),
              " does not match the last axis of ", x.sizes());
}

at::Tensor forward_kernel(const at::Tensor& x_in, const at::Tensor& b_in) {
  check(x_in, b_in);
  const at::Tensor x = x_in.contiguous(), b = b_in.contiguous();
  at::Tensor y = at::empty_like(x);
  const int64_t h = b.size(0), rows = x.numel() / h;
  const float* xp = x.data_ptr<float>();
  const float* bp = b.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    forward_rows(xp + begin * h, bp, yp + begin * h, end - begin, h);
  });
  return y;
}

std::pair<at::Tensor, at::Tensor> backward_kernel(const at::Tensor& x_in, const at::Tensor& b_in,
                                                  const at::Tensor& dy_in) {
  const at::Tensor x = x_in.contiguous(), b = b_in.contiguous(), dy = dy_in.contiguous();
  at::Tensor dx = at::empty_like(x);
  const int64_t h = b.size(0), rows = x.numel() / h;
  // The bias gradient: one partial sum per chunk of rows, added up at the end.
  const int64_t grain = 16;
  const int64_t chunks = std::max<int64_t>(1, (rows + grain - 1) / grain);
  at::Tensor partial = at::zeros({chunks, h}, b.options());
  const float* xp = x.data_ptr<float>();
  const float* bp = b.data_ptr<float>();
  const float* dyp = dy.data_ptr<float>();
  float* dxp = dx.data_ptr<float>();
  float* pp = partial.data_ptr<float>();
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t r0 = c * grain, r1 = std::min(rows, r0 + grain);
      backward_rows(xp + r0 * h, bp, dyp + r0 * h, dxp + r0 * h, pp + c * h, r1 - r0, h);
    }
  });
  return {dx, partial.sum(0)};
}

struct BiasGeluFunction : public torch::autograd::Function<BiasGeluFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& bias) {
    ctx->save_for_backward({x, bias});
    at::AutoDispatchBelowADInplaceOrView guard;
    return forward_kernel(x, bias);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    auto [dx, db] = backward_kernel(saved[0], saved[1], grads[0]);
    return {dx, db};
  }
};

at::Tensor bias_gelu_autograd(const at::Tensor& x, const at::Tensor& bias) {
  return BiasGeluFunction::apply(x, bias);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(slapo, m) { m.def("bias_gelu(Tensor x, Tensor bias) -> Tensor"); }
TORCH_LIBRARY_IMPL(slapo, CPU, m) { m.impl("bias_gelu", forward_kernel); }
TORCH_LIBRARY_IMPL(slapo, Autograd, m) { m.impl("bias_gelu", bias_gelu_autograd); }

void link_bias_gelu() {}

at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& bias) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("slapo::bias_gelu", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op.call(x, bias);
}

}  // namespace slapo::schedule
