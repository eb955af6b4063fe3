// A profile derived from a base (cost/derived_profile.h) predicts what the full profile of the new
// key predicts, when the workloads follow the model exactly: the base's blocks and the new key's
// differ in time, activations, checkpointing and recompute; outside the blocks they are the same.

#include <gtest/gtest.h>

#include "core/error.h"
#include "cost/derived_profile.h"
#include "cost/predictor.h"
#include "synthetic_workload.h"

namespace slapo::cost {
namespace {

using testing::kLayers;
using testing::kMB;
using testing::SyntheticWorkload;

// Another block: slower per sample, more activations, a cheaper recompute, more kept when
// checkpointed (an attention variant), with the base's rest.
SyntheticWorkload other_block() {
  SyntheticWorkload w;
  w.block_at0 = 1;
  w.block_per_sample = 5;
  w.recompute = 0.45;
  w.block_act_mb = 14;
  w.ckpt_kept_mb = 3;
  return w;
}

// What the profiler measures of the new key: its deep variant at the base's batches, and once
// with every block checkpointed at the largest.
std::vector<ProfilePoint> deep_steps(const SyntheticWorkload& w) {
  return {w.point(kLayers, 1, 0), w.point(kLayers, 4, 0), w.point(kLayers, 11, 0),
          w.point(kLayers, 32, 0), w.point(kLayers, 32, kLayers)};
}

TEST(DerivedProfileTest, PredictsWhatTheFullProfileOfTheNewKeyPredicts) {
  const SyntheticWorkload base, other = other_block();
  const Profile derived = derive_profile(base.profile(), deep_steps(other), base.profile().shape);
  const Predictor from_derived(derived, testing::synthetic_collectives());
  const Predictor from_full(other.profile(), testing::synthetic_collectives());
  EXPECT_NEAR(from_derived.fit().recompute_share, 0.45, 1e-9);
  EXPECT_NEAR(from_derived.fit().block_act, 14 * kMB, 1);
  EXPECT_NEAR(from_derived.fit().ckpt_block_kept, 3 * kMB, 1);
  for (int64_t batch : {2, 8, 24, 64}) {
    for (int64_t ckpt : {int64_t{0}, int64_t{1}, kLayers}) {
      for (int64_t pp : {1, 2}) {
        PredictInput in{batch, ckpt, pp == 1 ? 1 : 2};
        in.pp = pp;
        if (pp == 2) in.cuts = {kLayers / 2};
        const Prediction a = from_derived.predict(in), b = from_full.predict(in);
        EXPECT_NEAR(a.step_ms, b.step_ms, 1e-6 * b.step_ms) << batch << " " << ckpt << " " << pp;
        EXPECT_NEAR(a.peak_bytes, b.peak_bytes, 1e-6 * b.peak_bytes)
            << batch << " " << ckpt << " " << pp;
      }
    }
  }
  // And the derived key is not the base: the check can fail.
  const Predictor from_base(base.profile());
  EXPECT_GT(from_derived.predict({32, 0, 1}).step_ms, 1.2 * from_base.predict({32, 0, 1}).step_ms);
  // The composed points say so.
  size_t composed = 0;
  for (const ProfilePoint& q : derived.points) composed += q.derived;
  EXPECT_EQ(composed, derived.points.size() - deep_steps(other).size());
}

TEST(DerivedProfileTest, RefusesWhatItCannotDerive) {
  const SyntheticWorkload base;
  Profile tensor_parallel = base.profile();
  tensor_parallel.tp = 2;
  EXPECT_THROW(derive_profile(tensor_parallel, deep_steps(base), base.profile().shape), Error);
  std::vector<ProfilePoint> no_checkpoint = deep_steps(base);
  no_checkpoint.pop_back();
  EXPECT_THROW(derive_profile(base.profile(), no_checkpoint, base.profile().shape), Error);
}

}  // namespace
}  // namespace slapo::cost
