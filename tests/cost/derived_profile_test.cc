// A profile derived from a base (cost/derived_profile.h) predicts what the full profile of the new
// key predicts, when the workloads follow the model exactly: the base's blocks and the new key's
// differ in time, activations, checkpointing and recompute; outside the blocks they are the same.

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "cost/derived_profile.h"
#include "cost/predictor.h"
#include "synthetic_workload.h"

namespace slapo::cost {
namespace {

using testing::kLayers;
using testing::kMB;
using testing::SyntheticWorkload;

PredictInput input(int64_t batch, int64_t ckpt_blocks, int64_t micro_batches) {
  PredictInput in;
  in.batch = batch;
  in.ckpt_blocks = ckpt_blocks;
  in.micro_batches = micro_batches;
  return in;
}

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

// What the profiler measures of the new key: its deep variant at the base's batches, and with
// every block checkpointed at the largest and at one sample.
std::vector<ProfilePoint> deep_steps(const SyntheticWorkload& w) {
  return {w.point(kLayers, 1, 0),  w.point(kLayers, 4, 0),        w.point(kLayers, 11, 0),
          w.point(kLayers, 32, 0), w.point(kLayers, 32, kLayers), w.point(kLayers, 1, kLayers)};
}

TEST(DerivedProfileTest, PredictsWhatTheFullProfileOfTheNewKeyPredicts) {
  const SyntheticWorkload base, other = other_block();
  const Profile derived = derive_profile(base.profile(), deep_steps(other), base.profile().shape);
  const Predictor from_derived(derived, testing::synthetic_collectives());
  const Predictor from_full(other.profile(), testing::synthetic_collectives());
  EXPECT_NEAR(from_derived.fit().recompute_share, 0.45, 1e-9);
  EXPECT_NEAR(from_derived.fit().block_act, 14 * kMB, 1);
  EXPECT_NEAR(from_derived.fit().ckpt_block_kept, 3 * kMB, 1);
  testing::expect_same_predictions(from_derived, from_full);
  // And the derived key is not the base: the check can fail.
  const Predictor from_base(base.profile());
  EXPECT_GT(from_derived.predict(input(32, 0, 1)).step_ms,
            1.2 * from_base.predict(input(32, 0, 1)).step_ms);
  // The composed points say so.
  size_t composed = 0;
  for (const ProfilePoint& q : derived.points) composed += q.derived;
  EXPECT_EQ(composed, derived.points.size() - deep_steps(other).size());
}

// One block's difference as the probe returns it.
BlockDifference difference(int64_t batch, bool checkpointed, double ms, double kept_bytes,
                           double transient_bytes = 0) {
  BlockDifference d;
  d.batch = batch;
  d.checkpointed = checkpointed;
  d.ms = ms;
  d.kept_bytes = kept_bytes;
  d.transient_bytes = transient_bytes;
  return d;
}

// What the block probe measures of the two keys' blocks alone: the difference of a block's time,
// of what it keeps per sample, plain and checkpointed (no transient: the synthetic blocks have
// none).
std::vector<BlockDifference> block_differences(const SyntheticWorkload& base,
                                               const SyntheticWorkload& other) {
  std::vector<BlockDifference> out;
  for (int64_t batch : {1, 4, 11, 32}) {
    const double x = static_cast<double>(batch);
    out.push_back(difference(batch, false, other.block_ms(x) - base.block_ms(x),
                             (other.block_act_mb - base.block_act_mb) * kMB * x));
    // One block's collectives: one block less of each variant.
    out.back().collectives = (other.collectives(1, batch, 0) - other.collectives(0, batch, 0)) -
                             (base.collectives(1, batch, 0) - base.collectives(0, batch, 0));
  }
  for (int64_t batch : {32, 1}) {
    const double x = static_cast<double>(batch);
    out.push_back(difference(
        batch, true,
        (1 + other.recompute) * other.block_ms(x) - (1 + base.recompute) * base.block_ms(x),
        (other.ckpt_kept_mb - base.ckpt_kept_mb) * kMB * x));
    out.back().collectives = (other.collectives(1, batch, 1) - other.collectives(0, batch, 0)) -
                             (base.collectives(1, batch, 1) - base.collectives(0, batch, 0));
  }
  return out;
}

TEST(DerivedProfileTest, TheBlocksAloneComposeTheDeepStepsOfTheNewKey) {
  const SyntheticWorkload base, other = other_block();
  const std::vector<ProfilePoint> composed =
      deep_steps_from_blocks(base.profile(), block_differences(base, other), base.profile().shape);
  const std::vector<ProfilePoint> measured = deep_steps(other);
  ASSERT_EQ(composed.size(), measured.size());
  for (size_t i = 0; i < measured.size(); ++i) {
    EXPECT_EQ(composed[i].batch, measured[i].batch);
    EXPECT_EQ(composed[i].ckpt_blocks, measured[i].ckpt_blocks);
    EXPECT_NEAR(composed[i].step_ms, measured[i].step_ms, 1e-9 * measured[i].step_ms) << i;
    EXPECT_NEAR(composed[i].peak_bytes, measured[i].peak_bytes, 1e-9 * measured[i].peak_bytes) << i;
    EXPECT_TRUE(composed[i].derived);
  }
  // Through derive_profile, the full profile's predictions.
  const Profile derived = derive_profile(base.profile(), composed, base.profile().shape);
  const Predictor from_derived(derived), from_full(other.profile());
  for (int64_t batch : {2, 24}) {
    for (int64_t ckpt : {int64_t{0}, kLayers}) {
      const PredictInput in = input(batch, ckpt, 1);
      EXPECT_NEAR(from_derived.predict(in).step_ms, from_full.predict(in).step_ms,
                  1e-6 * from_full.predict(in).step_ms);
      EXPECT_NEAR(from_derived.predict(in).peak_bytes, from_full.predict(in).peak_bytes,
                  1e-6 * from_full.predict(in).peak_bytes);
    }
  }
}

TEST(DerivedProfileTest, ADifferenceLargerThanTheBaseBlockComposesAFreeBlockNotANegativeStep) {
  const SyntheticWorkload base;
  const Predictor predictor(base.profile());
  std::vector<BlockDifference> noisy = block_differences(base, base);
  for (BlockDifference& b : noisy) b.ms = -10 * predictor.block_ms(static_cast<double>(b.batch));
  const std::vector<ProfilePoint> composed =
      deep_steps_from_blocks(base.profile(), noisy, base.profile().shape);
  ASSERT_FALSE(composed.empty());
  for (const ProfilePoint& q : composed) {
    // The base's step without its blocks' time: what is outside them, and the optimizer.
    const double x = static_cast<double>(q.batch);
    const double blocks = kLayers * predictor.block_ms(x) *
                          (q.ckpt_blocks > 0 ? 1 + predictor.fit().recompute_share : 1.0);
    EXPECT_GT(q.step_ms, 0) << q.batch;
    EXPECT_NEAR(q.step_ms, base.point(kLayers, q.batch, q.ckpt_blocks).step_ms - blocks,
                1e-9 * blocks)
        << q.batch;
  }
  EXPECT_NO_THROW(derive_profile(base.profile(), composed, base.profile().shape));
}

TEST(DerivedProfileTest, ABlockWithMoreParametersOrALargerTransientPeaksHigher) {
  const SyntheticWorkload base;
  ModelShape wider = base.profile().shape;
  wider.block_params *= 1.5;  // 16 bytes of state per parameter: 8 MB more per block
  std::vector<BlockDifference> none = block_differences(base, base);
  const std::vector<ProfilePoint> same = deep_steps_from_blocks(base.profile(), none, wider);
  EXPECT_NEAR(same[0].peak_bytes - base.point(kLayers, 1, 0).peak_bytes, kLayers * 8 * kMB, 1);
  // The optimizer steps over the extra parameters too (1 ms per 10^6).
  EXPECT_NEAR(same[0].step_ms - base.point(kLayers, 1, 0).step_ms, kLayers * 0.5, 1e-9);
  // A backward that needs more at once raises the peak once; one that needs less does not lower it.
  none[1].transient_bytes = 5 * kMB;
  none[2].transient_bytes = -5 * kMB;
  const std::vector<ProfilePoint> transient =
      deep_steps_from_blocks(base.profile(), none, base.profile().shape);
  EXPECT_NEAR(transient[1].peak_bytes - base.point(kLayers, 4, 0).peak_bytes, 5 * kMB, 1);
  EXPECT_NEAR(transient[2].peak_bytes, base.point(kLayers, 11, 0).peak_bytes, 1);
  // A batch the base was measured at without a difference is refused.
  none.erase(none.begin() + 1);
  EXPECT_THROW(deep_steps_from_blocks(base.profile(), none, base.profile().shape), Error);
}

// A base measured for a space without GPipe micro-batches has no GPipe step (runners/profiler.h):
// the derived profile has none either — none is composed from what the base never measured — and
// predicts everything else as before.
TEST(DerivedProfileTest, ABaseWithoutAGPipeStepDerivesNone) {
  const SyntheticWorkload base, other = other_block();
  const Profile without = base.profile();
  ASSERT_FALSE(has_gpipe_step(without));
  // The base with its GPipe step: 8 samples in two micro-batches of one block, the loss keeping
  // half of its activations per micro-batch in flight.
  Profile with = without;
  ProfilePoint gpipe = base.point(1, 8, 0);
  gpipe.micro_batches = 2;
  gpipe.peak_bytes = base.peak(1, 4, 0) + 4 * (base.block_act_mb + base.outside_act_mb / 2) * kMB;
  with.points.push_back(gpipe);
  ASSERT_TRUE(has_gpipe_step(with));

  const Profile derived = derive_profile(without, deep_steps(other), without.shape);
  EXPECT_FALSE(has_gpipe_step(derived));
  const Profile full = derive_profile(with, deep_steps(other), with.shape);
  EXPECT_TRUE(has_gpipe_step(full));
  EXPECT_EQ(derived.points.size() + 1, full.points.size());
  // Without GPipe micro-batches, the same predictions.
  const Predictor a(derived), b(full);
  for (int64_t batch : {2, 8, 64}) {
    for (int64_t ckpt : {int64_t{0}, int64_t{1}}) {
      EXPECT_DOUBLE_EQ(a.predict(input(batch, ckpt, 1)).peak_bytes,
                       b.predict(input(batch, ckpt, 1)).peak_bytes);
      EXPECT_DOUBLE_EQ(a.predict(input(batch, ckpt, 1)).step_ms,
                       b.predict(input(batch, ckpt, 1)).step_ms);
    }
  }
}

// A base measured for a space that checkpoints nothing has no checkpointed step: the new key's
// deep steps need none (from its own steps or from the blocks alone), its derived profile has none,
// and it predicts the steps without checkpointing as the whole derivation does.
TEST(DerivedProfileTest, ABaseWithoutACheckpointedStepDerivesNone) {
  const SyntheticWorkload base, other = other_block();
  auto plain_only = [](std::vector<ProfilePoint> points) {
    points.erase(std::remove_if(points.begin(), points.end(),
                                [](const ProfilePoint& q) { return q.ckpt_blocks > 0; }),
                 points.end());
    return points;
  };
  Profile without = base.profile();
  without.points = plain_only(without.points);
  ASSERT_FALSE(has_checkpointed_step(without));
  const Profile derived = derive_profile(without, plain_only(deep_steps(other)), without.shape);
  EXPECT_FALSE(has_checkpointed_step(derived));
  const Profile whole = derive_profile(base.profile(), deep_steps(other), base.profile().shape);
  const Predictor a(derived), b(whole);
  for (int64_t batch : {2, 8, 64}) {
    EXPECT_NEAR(a.predict(input(batch, 0, 1)).step_ms, b.predict(input(batch, 0, 1)).step_ms,
                1e-9 * b.predict(input(batch, 0, 1)).step_ms);
  }
  EXPECT_THROW(a.predict(input(8, 1, 1)), Error);
  // From the blocks alone: no checkpointed difference is needed, none composed.
  std::vector<BlockDifference> plain_differences = block_differences(base, other);
  plain_differences.erase(std::remove_if(plain_differences.begin(), plain_differences.end(),
                                         [](const BlockDifference& b) { return b.checkpointed; }),
                          plain_differences.end());
  const std::vector<ProfilePoint> steps =
      deep_steps_from_blocks(without, plain_differences, without.shape);
  EXPECT_TRUE(std::none_of(steps.begin(), steps.end(),
                           [](const ProfilePoint& q) { return q.ckpt_blocks > 0; }));
  EXPECT_FALSE(steps.empty());
}

// Under tensor parallelism the base and the new key are one rank of one group: the new key's
// collectives are the base's and what its blocks make more (here two all-reduces a block more, one
// of them in the forward), composed into every point — from its deep steps, or from the blocks
// alone — so that it predicts what its full profile predicts, collectives included.
TEST(DerivedProfileTest, UnderTensorParallelismTheBlocksCollectivesAreComposedToo) {
  SyntheticWorkload base, other = other_block();
  for (SyntheticWorkload* w : {&base, &other}) {
    w->tp = 2;
    w->outside_all_reduces = 2;
    w->block_all_reduces = 4;
  }
  other.block_all_reduces = 6;
  const Predictor from_full(other.profile(), testing::synthetic_collectives());
  const std::vector<ProfilePoint> composed =
      deep_steps_from_blocks(base.profile(), block_differences(base, other), base.profile().shape);
  const std::vector<ProfilePoint> measured = deep_steps(other);
  ASSERT_EQ(composed.size(), measured.size());
  for (size_t i = 0; i < measured.size(); ++i)
    EXPECT_EQ(composed[i].collectives, measured[i].collectives) << i;
  for (const std::vector<ProfilePoint>& steps : {measured, composed}) {
    const Profile derived = derive_profile(base.profile(), steps, base.profile().shape);
    EXPECT_EQ(derived.tp, 2);
    const Predictor from_derived(derived, testing::synthetic_collectives());
    testing::expect_same_predictions(from_derived, from_full, 2);
  }
  // The base's collectives alone are fewer: the check can fail.
  const Predictor from_base(base.profile(), testing::synthetic_collectives());
  PredictInput in = input(8, 0, 1);
  in.tp = 2;
  EXPECT_LT(testing::collectives_ms(from_base.predict(in)),
            0.9 * testing::collectives_ms(from_full.predict(in)));
}

// A block probed on a noisy machine can say more is saved than a tiny base's one-sample step
// holds, where the base's own fit puts less than nothing outside the blocks: the one-block step
// composed from it takes at least its optimizer step, and the profile is predicted.
TEST(DerivedProfileTest, AComposedOneBlockStepTakesAtLeastItsOptimizerStep) {
  const SyntheticWorkload w;
  Profile base = w.profile();
  for (ProfilePoint& q : base.points) {
    if (q.layers == 1 && q.batch == 1) q.step_ms = base.optimizer_ms(1);  // one hiccup less
  }
  std::vector<BlockDifference> d = block_differences(w, w);
  for (BlockDifference& b : d) {
    if (b.batch == 1 && !b.checkpointed) b.ms = -100;  // the probe's noise
  }
  const Profile derived =
      derive_profile(base, deep_steps_from_blocks(base, d, base.shape), base.shape);
  for (const ProfilePoint& q : derived.points) {
    EXPECT_GE(q.step_ms, derived.optimizer_ms(static_cast<double>(q.layers)) - 1e-9)
        << q.layers << " blocks at " << q.batch;
  }
  EXPECT_NO_THROW(Predictor{derived});
}

// The new key's block alone: the base's lines, and the lines through what the probed blocks' kept
// and transient bytes differ by at the smallest and largest plain batch — the checkpointed
// difference (another quantity) not read. A base that measured none derives none.
TEST(DerivedProfileTest, ABlockAloneIsTheBasesAndWhatTheProbedBlocksDifferBy) {
  Profile base = SyntheticWorkload().profile();
  base.block_bytes = {true, 0, 1000, 100, 10};
  const std::vector<BlockDifference> probed = {
      difference(8, false, 0, -800, 90), difference(2, false, 0, -200, 30),
      difference(4, false, 0, -400, 50), difference(8, true, 0, 5e6, 1e6)};
  const BlockBytes b = block_bytes_from(base, probed);
  ASSERT_TRUE(b.measured);
  EXPECT_DOUBLE_EQ(b.kept_per_sample, 900);
  EXPECT_DOUBLE_EQ(b.kept_at0, 0);
  EXPECT_DOUBLE_EQ(b.backward_per_sample, 20);
  EXPECT_DOUBLE_EQ(b.backward_at0, 110);
  EXPECT_DOUBLE_EQ(b.backward(4), base.block_bytes.backward(4) + 50);
  EXPECT_DOUBLE_EQ(b.kept(4), base.block_bytes.kept(4) - 400);
  base.block_bytes = {};
  EXPECT_FALSE(block_bytes_from(base, probed).measured);
  base.block_bytes = {true, 0, 1000, 100, 10};
  EXPECT_FALSE(block_bytes_from(base, {difference(8, false, 0, -800, 90)}).measured);
}

TEST(DerivedProfileTest, RefusesWhatItCannotDerive) {
  const SyntheticWorkload base;
  // The base checkpoints: the new key's steps need a checkpointed one above one sample (the
  // recompute's share is read there), not only the one-sample one (the least peak).
  std::vector<ProfilePoint> only_least = deep_steps(base);
  only_least.erase(only_least.end() - 2);
  ASSERT_EQ(only_least.back().batch, 1);
  EXPECT_THROW(derive_profile(base.profile(), only_least, base.profile().shape), Error);
  std::vector<ProfilePoint> no_checkpoint = only_least;
  no_checkpoint.pop_back();
  EXPECT_THROW(derive_profile(base.profile(), no_checkpoint, base.profile().shape), Error);
  EXPECT_NO_THROW(derive_profile(base.profile(), deep_steps(base), base.profile().shape));
}

}  // namespace
}  // namespace slapo::cost
