// slapo::bias_dropout_add: residual + keyed_dropout(x + bias) in one pass each way.
//
// Forward reads x, bias and residual once and writes the output; nothing is saved but the dropout
// key (the mask is recomputed in backward from its hash). Backward: d_residual is the incoming
// gradient itself, d_x = keep · g / (1 − p) (the same masked pass), d_bias its sum over rows.
// The ATen chain it replaces makes two extra tensors (x + bias, the dropped one) and, through
// slapo::keyed_dropout, passes over memory three times.

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "schedule/kernels/fused_kernels.h"
#include "schedule/kernels/keyed_mask.h"

namespace slapo::schedule {

namespace {

at::Tensor forward_kernel(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& residual,
                          double p, int64_t seed, int64_t axis, int64_t parts, int64_t rank,
                          bool independent) {
  return apply_keyed_mask(mask_spec_in_scope(p, seed, axis, parts, rank, independent), x, bias,
                          residual);
}

struct BiasDropoutAddFunction : public torch::autograd::Function<BiasDropoutAddFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& bias, const at::Tensor& residual, double p,
                            int64_t seed, int64_t axis, int64_t parts, int64_t rank,
                            bool independent) {
    const MaskSpec spec = mask_spec_in_scope(p, seed, axis, parts, rank, independent);
    save_mask_spec(ctx, spec);
    at::AutoDispatchBelowADInplaceOrView guard;
    return apply_keyed_mask(spec, x, bias, residual);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor& g = grads[0];
    const at::Tensor dx = apply_keyed_mask(saved_mask_spec(ctx), g, {}, {});
    const at::Tensor dbias = dx.reshape({-1, dx.size(-1)}).sum(0);
    return {dx, dbias, g, {}, {}, {}, {}, {}, {}};
  }
};

at::Tensor autograd_kernel(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& residual,
                           double p, int64_t seed, int64_t axis, int64_t parts, int64_t rank,
                           bool independent) {
  return BiasDropoutAddFunction::apply(x, bias, residual, p, seed, axis, parts, rank, independent);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(slapo, m) {
  m.def(
      "bias_dropout_add(Tensor x, Tensor bias, Tensor residual, float p, int seed, int axis, int parts, int rank, "
      "bool independent) -> Tensor");
}
TORCH_LIBRARY_IMPL(slapo, CPU, m) { m.impl("bias_dropout_add", forward_kernel); }
TORCH_LIBRARY_IMPL(slapo, Autograd, m) { m.impl("bias_dropout_add", autograd_kernel); }

void link_bias_dropout_add() {}

at::Tensor bias_dropout_add(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& residual,
                            double p, int64_t seed, int64_t axis, int64_t parts, int64_t rank,
                            bool independent) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("slapo::bias_dropout_add", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, double,
                            int64_t, int64_t, int64_t, int64_t, bool)>();
  return op.call(x, bias, residual, p, seed, axis, parts, rank, independent);
}

}  // namespace slapo::schedule
