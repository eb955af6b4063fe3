#include "schedule/keyed_dropout.h"

#include <atomic>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "core/error.h"

namespace slapo::schedule {

namespace {

thread_local DropoutKey scope;
// Fresh keys count down from the top, far from any step a trainer will reach.
std::atomic<uint64_t> fresh_steps{~uint64_t{0}};

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t mask_seed(uint64_t seed, uint64_t step, int64_t sample, int64_t rank) {
  return splitmix(splitmix(splitmix(splitmix(seed) ^ step) ^ static_cast<uint64_t>(sample)) ^
                  static_cast<uint64_t>(rank));
}

}  // namespace

DropoutKey current_dropout_key() { return scope; }
DropoutKey fresh_dropout_key() { return DropoutKey{true, fresh_steps.fetch_sub(1), 0}; }

DropoutScope::DropoutScope(DropoutKey key) : outer_(scope) { scope = key; }
DropoutScope::~DropoutScope() { scope = outer_; }

KeyedDropoutImpl::KeyedDropoutImpl(double p, uint64_t seed) : p_(p), seed_(seed) {
  SLAPO_CHECK(p >= 0 && p < 1, ErrorCode::kInvalidArgument, "dropout probability ", p, " is not in [0, 1)");
}

void KeyedDropoutImpl::shard_mask(int64_t axis, int64_t parts, int64_t rank, bool independent) {
  SLAPO_CHECK(axis >= 1 && parts >= 1 && rank >= 0 && rank < parts, ErrorCode::kInvalidArgument,
              "dropout shard_mask: axis ", axis, " (must be ≥ 1, axis 0 is the batch), rank ", rank, " of ", parts);
  axis_ = axis;
  parts_ = parts;
  rank_ = rank;
  independent_ = independent;
}

namespace {

// The scaled mask (0 or 1/(1−p)) for `x` under the current dropout scope.
at::Tensor keyed_noise(const at::Tensor& x, double p, uint64_t seed, int64_t axis, int64_t parts, int64_t rank,
                       bool independent) {
  const DropoutKey k = scope.active ? scope : fresh_dropout_key();
  SLAPO_CHECK(x.dim() >= 2, ErrorCode::kInvalidArgument, "dropout: expects [batch, ...], got ", x.sizes());
  SLAPO_CHECK(parts == 1 || axis < x.dim(), ErrorCode::kInvalidArgument, "dropout: sharded along axis ", axis,
              " but the input has shape ", x.sizes());
  // The shape this rank draws: the full one (all ranks' slices), unless independent.
  const bool slice = parts > 1 && !independent;
  std::vector<int64_t> full = x.sizes().vec();
  if (slice) full[axis] *= parts;
  at::Tensor noise = at::empty(full, x.options());
  for (int64_t i = 0; i < x.size(0); ++i) {
    at::Generator gen = at::detail::createCPUGenerator(mask_seed(seed, k.step, k.sample_offset + i, independent ? rank : 0));
    noise[i].bernoulli_(1 - p, gen);
  }
  if (slice) noise = noise.narrow(axis, rank * x.size(axis), x.size(axis));
  noise.div_(1 - p);
  return noise;
}

at::Tensor keyed_dropout_cpu(const at::Tensor& x, double p, int64_t seed, int64_t axis, int64_t parts, int64_t rank,
                             bool independent) {
  return x * keyed_noise(x, p, static_cast<uint64_t>(seed), axis, parts, rank, independent);
}

struct KeyedDropoutFunction : public torch::autograd::Function<KeyedDropoutFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, double p, int64_t seed,
                            int64_t axis, int64_t parts, int64_t rank, bool independent) {
    at::Tensor noise = keyed_noise(x, p, static_cast<uint64_t>(seed), axis, parts, rank, independent);
    ctx->save_for_backward({noise});
    return x * noise;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor noise = ctx->get_saved_variables()[0];
    return {grads[0] * noise, {}, {}, {}, {}, {}, {}};
  }
};

at::Tensor keyed_dropout_autograd(const at::Tensor& x, double p, int64_t seed, int64_t axis, int64_t parts,
                                  int64_t rank, bool independent) {
  return KeyedDropoutFunction::apply(x, p, seed, axis, parts, rank, independent);
}

}  // namespace

// An operator, so that a traced graph records one `slapo::keyed_dropout` node that draws its mask
// from the dropout scope when the graph runs (the ops inside take a generator, which the tracer
// cannot record, and a traced step and sample offset would be frozen).
TORCH_LIBRARY(slapo, m) {
  m.def("keyed_dropout(Tensor x, float p, int seed, int axis, int parts, int rank, bool independent) -> Tensor");
}
TORCH_LIBRARY_IMPL(slapo, CPU, m) { m.impl("keyed_dropout", keyed_dropout_cpu); }
TORCH_LIBRARY_IMPL(slapo, Autograd, m) { m.impl("keyed_dropout", keyed_dropout_autograd); }

torch::Tensor KeyedDropoutImpl::forward(const torch::Tensor& x) {
  if (!is_training() || p_ == 0 || x.numel() == 0) return x;
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("slapo::keyed_dropout", "")
                             .typed<at::Tensor(const at::Tensor&, double, int64_t, int64_t, int64_t, int64_t, bool)>();
  return op.call(x, p_, static_cast<int64_t>(seed_), axis_, parts_, rank_, independent_ || forked_);
}

}  // namespace slapo::schedule
