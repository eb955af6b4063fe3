#pragma once
// KeyedDropout: dropout whose mask is a function of (module seed, step, global sample index), not
// of the order in which the process happened to draw random numbers.
//
// Why: a pipeline runs micro-batches stage by stage, data parallelism gives each rank other
// samples, and tensor parallelism computes a slice of a tensor per rank. With LibTorch's dropout
// (one sequential generator) none of them could draw the masks the single-process model draws, so
// "the schedule does not change the math" could not be checked with dropout on. A keyed mask is
// the same for a sample wherever and whenever it is computed:
//
//   element e of sample i of step t in module m:  kept iff hash(mix(seed_m, t, offset + i), e) < 1
//   − p
//
// (schedule/kernels/keyed_mask.h: a counter-based hash, so backward recomputes the mask instead of
// keeping it, and the loop vectorizes.)
//
// The trainer says which step and which global samples a forward covers (DropoutScope); without a
// scope, each forward draws as a new step of its own, starting at sample 0. Checkpointing keeps
// the key of the forward for the recompute in backward, so recomputed masks are the same.
//
// Sharded data: after shard_mask(axis, parts, rank) the module sees a slice of the tensor (e.g.
// the heads of one tensor-parallel rank). By default it draws the elements of the full per-sample
// mask that its slice holds (by their index in the full tensor) — the masks of the single-process
// model, at no extra cost. With
// `independent` (or after fork_rng) it draws only its slice from a stream keyed by the rank too:
// Megatron's choice: the same distribution, but not the single-process masks.

#include <cstdint>
#include <optional>

#include "schedule/kernels/dropout_key.h"
#include "schedule/kernels/keyed_mask.h"

#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

namespace slapo::schedule {

class KeyedDropoutImpl : public torch::nn::Cloneable<KeyedDropoutImpl> {
 public:
  KeyedDropoutImpl(double p, uint64_t seed);
  void reset() override {}
  torch::Tensor forward(const torch::Tensor& x);

  // This module now sees slice `rank` of `parts` along `axis` (≥ 1; axis 0 is the batch).
  void shard_mask(int64_t axis, int64_t parts, int64_t rank, bool independent = false);
  void set_seed(uint64_t seed) { seed_ = seed; }
  // fork_rng: its own seed, and — once its mask is sharded — its own stream on each rank of the
  // group (as if shard_mask(..., independent = true)).
  void fork(uint64_t seed) {
    seed_ = seed;
    forked_ = true;
  }
  uint64_t seed() const { return seed_; }
  double p() const { return p_; }
  // The mask a forward would draw now (keyed by the current dropout scope), for a kernel that
  // applies this dropout inside its own loop (models::MemoryEfficientAttention); nullopt when a
  // forward would draw none (eval mode, p = 0).
  std::optional<MaskSpec> mask_spec_now() const;

 private:
  double p_;
  uint64_t seed_;
  int64_t axis_ = 0, parts_ = 1, rank_ = 0;
  bool independent_ = false;
  bool forked_ = false;
};
TORCH_MODULE(KeyedDropout);

}  // namespace slapo::schedule
