// slapo::layer_norm: layer norm over the last axis, one pass over each row each way; and
// slapo::add_layer_norm: the sum of two tensors and its layer norm in the same pass.
//
// Forward: per row, the mean and the variance (two sweeps of a row that sits in L1), then
// y = (x − mean) · rstd · w + b; mean and rstd (one float each per row) are kept for backward.
// Backward, per row: x̂ = (x − mean) · rstd, g = dy · w,
//   dx = rstd · (g − mean(g) − x̂ · mean(g · x̂)),  and per-thread partial sums of dy · x̂ (dw)
//   and dy (db), added up at the end.

#include <algorithm>
#include <cmath>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "core/error.h"
#include "schedule/kernels/fused_kernels.h"
#include "schedule/kernels/simd_dispatch.h"

namespace slapo::schedule {

namespace {

// (The pointers never alias: __restrict lets the loops that write dx, dw and db vectorize.)
// Row sums in kLanes partial sums: the compiler may not reorder IEEE additions itself, so a plain
// `sum += x[j]` loop runs one element at a time; independent lanes vectorize.
constexpr int64_t kLanes = 16;

template <typename Term>
__attribute__((always_inline)) inline float lane_sum(int64_t n, Term term) {
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int64_t k = 0; k < kLanes; ++k) acc[k] += term(j + k);
  }
  float total = 0;
  for (; j < n; ++j) total += term(j);
  for (int64_t k = 0; k < kLanes; ++k) total += acc[k];
  return total;
}

// With `addend` (and `sum`): the row normalised is x + addend, written to `sum` on the way.
__attribute__((always_inline)) inline void forward_rows_body(
    const float* __restrict x, const float* __restrict addend, float* __restrict sum,
    const float* __restrict w, const float* __restrict b, float* __restrict y,
    float* __restrict mean, float* __restrict rstd, int64_t rows, int64_t h, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * h;
    float* yr = y + r * h;
    if (addend) {
      const float* ar = addend + r * h;
      float* sr = sum + r * h;
      for (int64_t j = 0; j < h; ++j) sr[j] = xr[j] + ar[j];
      xr = sr;
    }
    const float mu = lane_sum(h, [&](int64_t j) { return xr[j]; }) / static_cast<float>(h);
    const float var =
        lane_sum(h, [&](int64_t j) { return (xr[j] - mu) * (xr[j] - mu); }) / static_cast<float>(h);
    const float rs = 1.0f / std::sqrt(var + eps);
    for (int64_t j = 0; j < h; ++j) yr[j] = (xr[j] - mu) * rs * w[j] + b[j];
    mean[r] = mu;
    rstd[r] = rs;
  }
}

// With `dx_more`: a gradient of x from elsewhere (the sum's own uses), added to dx on the way.
__attribute__((always_inline)) inline void backward_rows_body(
    const float* __restrict x, const float* __restrict w, const float* __restrict dy,
    const float* __restrict dx_more, const float* __restrict mean, const float* __restrict rstd,
    float* __restrict dx, float* __restrict dw, float* __restrict db, int64_t rows, int64_t h) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * h;
    const float* dyr = dy + r * h;
    float* dxr = dx + r * h;
    const float mu = mean[r], rs = rstd[r];
    const float mean_g =
        lane_sum(h, [&](int64_t j) { return dyr[j] * w[j]; }) / static_cast<float>(h);
    const float mean_gx =
        lane_sum(h, [&](int64_t j) { return dyr[j] * w[j] * ((xr[j] - mu) * rs); }) /
        static_cast<float>(h);
    for (int64_t j = 0; j < h; ++j) {
      const float xhat = (xr[j] - mu) * rs;
      dw[j] += dyr[j] * xhat;
      db[j] += dyr[j];
      dxr[j] = rs * (dyr[j] * w[j] - mean_g - xhat * mean_gx);
    }
    if (dx_more) {
      const float* mr = dx_more + r * h;
      for (int64_t j = 0; j < h; ++j) dxr[j] += mr[j];
    }
  }
}

SLAPO_SIMD_VARIANTS(forward_rows,
                    (const float* x, const float* addend, float* sum, const float* w,
                     const float* b, float* y, float* mean, float* rstd, int64_t rows, int64_t h,
                     float eps),
                    (x, addend, sum, w, b, y, mean, rstd, rows, h, eps))
SLAPO_SIMD_VARIANTS(backward_rows,
                    (const float* x, const float* w, const float* dy, const float* dx_more,
                     const float* mean, const float* rstd, float* dx, float* dw, float* db,
                     int64_t rows, int64_t h),
                    (x, w, dy, dx_more, mean, rstd, dx, dw, db, rows, h))

void check(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  SLAPO_CHECK(x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat &&
                  b.scalar_type() == at::kFloat && x.device().is_cpu(),
              ErrorCode::kInvalidArgument, "slapo::layer_norm: float32 CPU tensors only (got ",
              x.scalar_type(), ")");
  SLAPO_CHECK(x.dim() >= 1 && w.dim() == 1 && b.dim() == 1 && w.size(0) == x.size(-1) &&
                  b.size(0) == x.size(-1),
              ErrorCode::kInvalidArgument, "slapo::layer_norm: weight ", w.sizes(), " and bias ",
              b.sizes(), " do not match the last axis of ", x.sizes());
}

struct Forward {
  at::Tensor y, mean, rstd;
  at::Tensor sum;  // x + addend, when there is an addend
};

// The layer norm of x, or of x + addend (an undefined addend: of x alone).
Forward forward_impl(const at::Tensor& x_in, const at::Tensor& addend_in, const at::Tensor& w_in,
                     const at::Tensor& b_in, double eps) {
  check(x_in, w_in, b_in);
  SLAPO_CHECK(!addend_in.defined() || addend_in.sizes() == x_in.sizes(),
              ErrorCode::kInvalidArgument, "slapo::add_layer_norm: ", x_in.sizes(), " and ",
              addend_in.defined() ? addend_in.sizes() : x_in.sizes(), " differ in shape");
  const at::Tensor x = x_in.contiguous(), w = w_in.contiguous(), b = b_in.contiguous();
  const at::Tensor addend = addend_in.defined() ? addend_in.contiguous() : addend_in;
  const int64_t h = x.size(-1), rows = h == 0 ? 0 : x.numel() / h;
  Forward f{at::empty_like(x), at::empty({rows}, x.options()), at::empty({rows}, x.options()),
            addend.defined() ? at::empty_like(x) : at::Tensor()};
  const float* xp = x.data_ptr<float>();
  const float* ap = addend.defined() ? addend.data_ptr<float>() : nullptr;
  float* sp = f.sum.defined() ? f.sum.data_ptr<float>() : nullptr;
  const float* wp = w.data_ptr<float>();
  const float* bp = b.data_ptr<float>();
  float* yp = f.y.data_ptr<float>();
  float* mp = f.mean.data_ptr<float>();
  float* rp = f.rstd.data_ptr<float>();
  at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    forward_rows(xp + begin * h, ap ? ap + begin * h : nullptr, sp ? sp + begin * h : nullptr, wp,
                 bp, yp + begin * h, mp + begin, rp + begin, end - begin, h,
                 static_cast<float>(eps));
  });
  return f;
}

// The gradients of the normalised x (saved: x, w, mean, rstd) for dy, plus dx_more (undefined:
// nothing more) to x's: {dx, dw, db}.
std::vector<at::Tensor> backward_impl(const std::vector<at::Tensor>& saved, const at::Tensor& dy_in,
                                      const at::Tensor& dx_more_in) {
  const at::Tensor x = saved[0].contiguous(), w = saved[1].contiguous(), dy = dy_in.contiguous();
  const at::Tensor dx_more = dx_more_in.defined() ? dx_more_in.contiguous() : dx_more_in;
  const int64_t h = x.size(-1), rows = h == 0 ? 0 : x.numel() / h;
  at::Tensor dx = at::empty_like(x);
  const int64_t grain = 16;
  const int64_t chunks = std::max<int64_t>(1, (rows + grain - 1) / grain);
  at::Tensor partial = at::zeros({2, chunks, h}, x.options());  // dw, db per chunk of rows
  const float* xp = x.data_ptr<float>();
  const float* wp = w.data_ptr<float>();
  const float* dyp = dy.data_ptr<float>();
  const float* more = dx_more.defined() ? dx_more.data_ptr<float>() : nullptr;
  const float* mp = saved[2].data_ptr<float>();
  const float* rp = saved[3].data_ptr<float>();
  float* dxp = dx.data_ptr<float>();
  float* pp = partial.data_ptr<float>();
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t r0 = c * grain, r1 = std::min(rows, r0 + grain);
      backward_rows(xp + r0 * h, wp, dyp + r0 * h, more ? more + r0 * h : nullptr, mp + r0, rp + r0,
                    dxp + r0 * h, pp + c * h, pp + (chunks + c) * h, r1 - r0, h);
    }
  });
  const at::Tensor sums = partial.sum(1);
  return {dx, sums[0], sums[1]};
}

at::Tensor forward_kernel(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                          double eps) {
  return forward_impl(x, at::Tensor(), w, b, eps).y;
}

struct LayerNormFunction : public torch::autograd::Function<LayerNormFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& w, const at::Tensor& b, double eps) {
    at::AutoDispatchBelowADInplaceOrView guard;
    Forward f = forward_impl(x, at::Tensor(), w, b, eps);
    ctx->save_for_backward({x, w, f.mean, f.rstd});
    return f.y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const std::vector<at::Tensor> d = backward_impl(ctx->get_saved_variables(), grads[0], {});
    return {d[0], d[1], d[2], {}};
  }
};

// (x + addend, its layer norm): both outputs' gradients flow back to x and addend alike.
struct AddLayerNormFunction : public torch::autograd::Function<AddLayerNormFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const at::Tensor& x, const at::Tensor& addend,
                                                const at::Tensor& w, const at::Tensor& b,
                                                double eps) {
    at::AutoDispatchBelowADInplaceOrView guard;
    Forward f = forward_impl(x, addend, w, b, eps);
    ctx->save_for_backward({f.sum, w, f.mean, f.rstd});
    return {f.sum, f.y};
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor& d_sum = grads[0];
    const at::Tensor d_y = grads[1].defined() ? grads[1] : at::zeros_like(d_sum);
    const std::vector<at::Tensor> d = backward_impl(ctx->get_saved_variables(), d_y, d_sum);
    return {d[0], d[0], d[1], d[2], {}};
  }
};

at::Tensor autograd_kernel(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                           double eps) {
  return LayerNormFunction::apply(x, w, b, eps);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(slapo, m) {
  m.def("layer_norm(Tensor x, Tensor weight, Tensor bias, float eps) -> Tensor");
}
TORCH_LIBRARY_IMPL(slapo, CPU, m) { m.impl("layer_norm", forward_kernel); }
TORCH_LIBRARY_IMPL(slapo, Autograd, m) { m.impl("layer_norm", autograd_kernel); }

void link_layer_norm() {}

at::Tensor layer_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                      double eps) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("slapo::layer_norm", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, double)>();
  return op.call(x, weight, bias, eps);
}

std::pair<at::Tensor, at::Tensor> add_layer_norm(const at::Tensor& x, const at::Tensor& addend,
                                                 const at::Tensor& weight, const at::Tensor& bias,
                                                 double eps) {
  SLAPO_CHECK(addend.defined(), ErrorCode::kInvalidArgument, "slapo::add_layer_norm: no addend");
  const torch::autograd::variable_list out =
      AddLayerNormFunction::apply(x, addend, weight, bias, eps);
  return {out[0], out[1]};
}

}  // namespace slapo::schedule
