#include "schedule/runtime/keyed_dropout.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "core/error.h"
#include "schedule/kernels/keyed_mask.h"

namespace slapo::schedule {

KeyedDropoutImpl::KeyedDropoutImpl(double p, uint64_t seed) : p_(p), seed_(seed) {
  SLAPO_CHECK(p >= 0 && p < 1, ErrorCode::kInvalidArgument, "dropout probability ", p,
              " is not in [0, 1)");
}

void KeyedDropoutImpl::shard_mask(int64_t axis, int64_t parts, int64_t rank, bool independent) {
  SLAPO_CHECK(axis >= 1 && parts >= 1 && rank >= 0 && rank < parts, ErrorCode::kInvalidArgument,
              "dropout shard_mask: axis ", axis, " (must be ≥ 1, axis 0 is the batch), rank ", rank,
              " of ", parts);
  axis_ = axis;
  parts_ = parts;
  rank_ = rank;
  independent_ = independent;
}

namespace {

at::Tensor keyed_dropout_cpu(const at::Tensor& x, double p, int64_t seed, int64_t axis,
                             int64_t parts, int64_t rank, bool independent) {
  return apply_keyed_mask(mask_spec_in_scope(p, seed, axis, parts, rank, independent), x, {}, {});
}

// Nothing is saved but the key: backward draws the same mask again.
struct KeyedDropoutFunction : public torch::autograd::Function<KeyedDropoutFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, double p,
                            int64_t seed, int64_t axis, int64_t parts, int64_t rank,
                            bool independent) {
    const MaskSpec spec = mask_spec_in_scope(p, seed, axis, parts, rank, independent);
    save_mask_spec(ctx, spec);
    at::AutoDispatchBelowADInplaceOrView guard;
    return apply_keyed_mask(spec, x, {}, {});
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    return {apply_keyed_mask(saved_mask_spec(ctx), grads[0], {}, {}), {}, {}, {}, {}, {}, {}};
  }
};

at::Tensor keyed_dropout_autograd(const at::Tensor& x, double p, int64_t seed, int64_t axis,
                                  int64_t parts, int64_t rank, bool independent) {
  return KeyedDropoutFunction::apply(x, p, seed, axis, parts, rank, independent);
}

}  // namespace

// An operator, so that a traced graph records one `slapo::keyed_dropout` node that draws its mask
// from the dropout scope when the graph runs (the ops inside take a generator, which the tracer
// cannot record, and a traced step and sample offset would be frozen).
TORCH_LIBRARY(slapo, m) {
  m.def(
      "keyed_dropout(Tensor x, float p, int seed, int axis, int parts, int rank, bool independent) -> Tensor");
}
TORCH_LIBRARY_IMPL(slapo, CPU, m) { m.impl("keyed_dropout", keyed_dropout_cpu); }
TORCH_LIBRARY_IMPL(slapo, Autograd, m) { m.impl("keyed_dropout", keyed_dropout_autograd); }

std::optional<MaskSpec> KeyedDropoutImpl::mask_spec_now() const {
  if (!is_training() || p_ == 0) return std::nullopt;
  return mask_spec_in_scope(p_, static_cast<int64_t>(seed_), axis_, parts_, rank_,
                            independent_ || forked_);
}

torch::Tensor KeyedDropoutImpl::forward(const torch::Tensor& x) {
  if (!is_training() || p_ == 0 || x.numel() == 0) return x;
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("slapo::keyed_dropout", "")
          .typed<at::Tensor(const at::Tensor&, double, int64_t, int64_t, int64_t, int64_t, bool)>();
  return op.call(x, p_, static_cast<int64_t>(seed_), axis_, parts_, rank_, independent_ || forked_);
}

}  // namespace slapo::schedule
