#include "schedule/keyed_dropout.h"

#include <atomic>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ATen.h>

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

torch::Tensor KeyedDropoutImpl::forward(const torch::Tensor& x) {
  if (!is_training() || p_ == 0 || x.numel() == 0) return x;
  const DropoutKey k = scope.active ? scope : fresh_dropout_key();
  SLAPO_CHECK(x.dim() >= 2, ErrorCode::kInvalidArgument, "dropout: expects [batch, ...], got ", x.sizes());
  SLAPO_CHECK(parts_ == 1 || axis_ < x.dim(), ErrorCode::kInvalidArgument, "dropout: sharded along axis ", axis_,
              " but the input has shape ", x.sizes());
  // The shape this rank draws: the full one (all ranks' slices), unless independent.
  const bool independent = independent_ || forked_;
  const bool slice = parts_ > 1 && !independent;
  std::vector<int64_t> full = x.sizes().vec();
  if (slice) full[axis_] *= parts_;
  torch::Tensor noise = at::empty(full, x.options());
  for (int64_t i = 0; i < x.size(0); ++i) {
    at::Generator gen = at::detail::createCPUGenerator(mask_seed(seed_, k.step, k.sample_offset + i, independent ? rank_ : 0));
    noise[i].bernoulli_(1 - p_, gen);
  }
  if (slice) noise = noise.narrow(axis_, rank_ * x.size(axis_), x.size(axis_));
  noise.div_(1 - p_);
  return x * noise;
}

}  // namespace slapo::schedule
