// A profile shifted by its head's difference (cost/head_difference.h) predicts what the full
// profile of the new head predicts, when the workloads follow the model exactly: the two heads
// differ in time and in what the loss keeps; the blocks and the embeddings are the same.

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "core/error.h"
#include "cost/head_difference.h"
#include "cost/predictor.h"
#include "synthetic_workload.h"

namespace slapo::cost {
namespace {

using testing::kLayers;
using testing::kMB;
using testing::SyntheticWorkload;

// Another head: cheaper per sample, far fewer bytes kept (the fused LM loss: no logits kept).
SyntheticWorkload other_head() {
  SyntheticWorkload w;
  w.outside_at0 = 6;
  w.outside_per_sample = 3;
  w.outside_act_mb = 12;
  return w;
}

// A difference of time and bytes alone (one rank: no collectives).
HeadDifference diff(int64_t batch, int64_t layers, int64_t micro_batches, double ms,
                    double peak_bytes) {
  HeadDifference d;
  d.batch = batch;
  d.layers = layers;
  d.micro_batches = micro_batches;
  d.ms = ms;
  d.peak_bytes = peak_bytes;
  return d;
}

// What a profile across the head measures: the new key's one-block steps at the base's one-block
// batches, against the base's.
std::vector<HeadDifference> one_block_differences(const SyntheticWorkload& from,
                                                  const SyntheticWorkload& to) {
  std::vector<HeadDifference> out;
  for (int64_t batch : {1, 4, 32}) {
    HeadDifference d;
    d.batch = batch;
    d.ms = to.step(1, batch, 0) - from.step(1, batch, 0);
    d.peak_bytes = to.peak(1, batch, 0) - from.peak(1, batch, 0);
    d.collectives = to.collectives(1, batch, 0) - from.collectives(1, batch, 0);
    out.push_back(d);
  }
  return out;
}

// What a head costs more on one block counts only when every paired round says so, the smaller
// of them; rounds that disagree (gpt-mini's fused loss: 0.05 ms a sample, below the noise) say 0.
TEST(HeadDifferenceTest, APairedDifferenceCountsWhenEveryRoundAgrees) {
  EXPECT_DOUBLE_EQ(paired_head_ms({-30.0, -24.0}), -24.0);  // BERT's fused loss: the head's own
  EXPECT_DOUBLE_EQ(paired_head_ms({5.0, 7.5}), 5.0);
  EXPECT_DOUBLE_EQ(paired_head_ms({-3.0, 2.0}), 0.0);
  EXPECT_DOUBLE_EQ(paired_head_ms({0.0, -2.0}), 0.0);
  EXPECT_DOUBLE_EQ(paired_head_ms({}), 0.0);
}

TEST(HeadDifferenceTest, PredictsWhatTheFullProfileOfTheNewHeadPredicts) {
  const SyntheticWorkload base, other = other_head();
  const Profile shifted = shift_head(base.profile(), one_block_differences(base, other));
  const Predictor from_shifted(shifted, testing::synthetic_collectives());
  const Predictor from_full(other.profile(), testing::synthetic_collectives());
  EXPECT_NEAR(from_shifted.fit().outside_act, 12 * kMB, 1);
  testing::expect_same_predictions(from_shifted, from_full);
  for (const ProfilePoint& q : shifted.points) EXPECT_TRUE(q.derived);
}

// The differences a shifted profile holds are recovered from it and its base: what lets another
// key of the new head be composed from its own profile with the base's head (an attention
// variant and the fused loss together), nothing of it run.
TEST(HeadDifferenceTest, TheDifferencesAShiftRecordedAreRecoveredFromThePair) {
  const SyntheticWorkload base, other = other_head();
  const std::vector<HeadDifference> applied = one_block_differences(base, other);
  // (The checkpointed deep steps' too, their peaks alone: the next test.)
  std::vector<HeadDifference> recovered;
  for (const HeadDifference& h :
       head_differences(base.profile(), shift_head(base.profile(), applied))) {
    if (h.ckpt_blocks == 0) recovered.push_back(h);
  }
  ASSERT_EQ(recovered.size(), applied.size());
  for (size_t i = 0; i < applied.size(); ++i) {
    EXPECT_EQ(recovered[i].batch, applied[i].batch);
    EXPECT_EQ(recovered[i].layers, 1);
    EXPECT_NEAR(recovered[i].ms, applied[i].ms, 1e-9);
    EXPECT_NEAR(recovered[i].peak_bytes, applied[i].peak_bytes, 1e-3);
  }
  // Another block with the base's head, shifted by them: the other block with the new head.
  SyntheticWorkload block = base;
  block.block_per_sample = 5;
  block.block_act_mb = 11;  // under the new head's 12: every peak at the head
  SyntheticWorkload both = block;
  both.outside_at0 = other.outside_at0;
  both.outside_per_sample = other.outside_per_sample;
  both.outside_act_mb = other.outside_act_mb;
  const Profile composed = shift_head(block.profile(), recovered);
  for (const ProfilePoint& q : composed.points) {
    const ProfilePoint want = both.point(q.layers, q.batch, q.ckpt_blocks);
    EXPECT_NEAR(q.step_ms, want.step_ms, 1e-9) << q.layers << " " << q.batch;
    EXPECT_NEAR(q.peak_bytes, want.peak_bytes, 1e-3) << q.layers << " " << q.batch;
  }
}

// A step of the deep variant measured with the new head gives that depth its own time
// difference, per sample (what a head saves grows with the blocks before it on a CPU), and a
// point of its peak's line beyond the one-block batches.
TEST(HeadDifferenceTest, ADeepStepsDifferenceIsThatDepthsOwn) {
  const SyntheticWorkload base;
  std::vector<HeadDifference> d = {diff(1, 1, 1, -1, 0), diff(32, 1, 1, -2, -320 * kMB)};
  const Profile one_block_only = shift_head(base.profile(), d);
  d.push_back(diff(64, kLayers, 1, -128, -1000 * kMB));  // 2 ms and ~15.6 MB a sample
  const Profile shifted = shift_head(base.profile(), d);
  const Profile original = base.profile();
  for (size_t i = 0; i < shifted.points.size(); ++i) {
    const ProfilePoint& q = original.points[i];
    const ProfilePoint& s = shifted.points[i];
    const double x = static_cast<double>(q.batch);
    if (q.layers == 1) {
      EXPECT_EQ(s.step_ms, one_block_only.points[i].step_ms) << q.batch;
      EXPECT_EQ(s.peak_bytes, one_block_only.points[i].peak_bytes) << q.batch;
    } else {
      EXPECT_NEAR(s.step_ms - q.step_ms, -2 * x, 1e-9) << q.batch;
    }
  }
  // Deep, at 32 samples: the one-block peak difference there (the line's points: 1, 32, 64).
  for (size_t i = 0; i < shifted.points.size(); ++i) {
    const ProfilePoint& q = original.points[i];
    if (q.layers == kLayers && q.batch == 32) {
      EXPECT_NEAR(shifted.points[i].peak_bytes - q.peak_bytes, -320 * kMB, 1e-3);
    }
  }
}

// Several deep steps: the depth's time differences interpolated between them, and below the first
// toward what the head differs by at no sample — the optimizer step over its parameters more —
// not extrapolated along their segment; a difference known against a prediction only (NaN time)
// shifts the peak, not the time.
TEST(HeadDifferenceTest, TheDepthsTimeLineRunsFromTheOptimizersDifferenceThroughItsOwn) {
  const SyntheticWorkload base;
  const Profile original = base.profile();
  const std::vector<HeadDifference> d = {
      diff(1, 1, 1, -1, 0), diff(32, 1, 1, -2, -320 * kMB), diff(4, kLayers, 1, -4, 0),
      diff(32, kLayers, 1, -60, -300 * kMB), diff(64, kLayers, 1, std::nan(""), -1000 * kMB)};
  const double more_params = 1e6;
  const Profile shifted = shift_head(original, d, {0, more_params, 0});
  const double at0 = original.optimizer_ms_per_param * more_params;
  ASSERT_GT(at0, 0);
  for (size_t i = 0; i < shifted.points.size(); ++i) {
    const ProfilePoint& q = original.points[i];
    if (q.layers != kLayers) continue;
    const double want = q.batch == 1 ? at0 + (-4 - at0) / 4  // a quarter of the way to 4 samples
                                     : -4 + static_cast<double>(q.batch - 4) * (-56.0 / 28);
    EXPECT_NEAR(shifted.points[i].step_ms - q.step_ms, want, 1e-9) << q.batch;
    if (q.batch == 32) {
      EXPECT_NEAR(shifted.points[i].peak_bytes - q.peak_bytes, -300 * kMB, 1e-3);
    }
  }
}

// A deep step of the new head is differenced against the base's as the line through the base's
// steps reads it: one slow step of the base's there is not a saving of the head.
TEST(HeadDifferenceTest, ADeepDifferenceIsAgainstTheBasesLineNotItsSlowStep) {
  const SyntheticWorkload base, other = other_head();
  bool found = false;
  for (const HeadDifference& d :
       head_differences(base.profile_with_one_slow_deep_step(32), other.profile())) {
    if (d.layers != kLayers || d.batch != 32 || d.ckpt_blocks != 0) continue;
    found = true;
    EXPECT_NEAR(d.ms, other.step(kLayers, 32, 0) - base.step(kLayers, 32, 0), 1e-6);
    EXPECT_NEAR(d.peak_bytes, other.peak(kLayers, 32, 0) - base.peak(kLayers, 32, 0), 1e-3);
  }
  EXPECT_TRUE(found);
}

// Where both heads' one-block steps peak in their optimizer step (the same bytes whatever the
// head), their difference says nothing of the head's bytes: the deep steps', measured at that
// batch, shift a one-block point there — one of another block, whose own peak is its activations'.
TEST(HeadDifferenceTest, OneBlockStepsAtTheirOptimizerPeakShiftNoHeadsBytes) {
  SyntheticWorkload base, other = other_head();
  base.optimizer_peak_mb = other.optimizer_peak_mb = 200;  // over one block's 4 samples
  std::vector<HeadDifference> d = one_block_differences(base, other);
  for (int64_t batch : {4, 11, 32}) {
    d.push_back(diff(batch, kLayers, 1,
                     other.step(kLayers, batch, 0) - base.step(kLayers, batch, 0),
                     other.peak(kLayers, batch, 0) - base.peak(kLayers, batch, 0)));
  }
  SyntheticWorkload block = base;
  block.block_act_mb = 40;  // one block of 4 samples, either head: over the optimizer's 200 MB
  SyntheticWorkload both = block;
  both.outside_act_mb = other.outside_act_mb;
  const Profile composed = shift_head(block.profile(), d);
  for (const ProfilePoint& q : composed.points) {
    if (q.ckpt_blocks != 0 || q.batch == 1) continue;
    EXPECT_NEAR(q.peak_bytes, both.peak(q.layers, q.batch, 0), 1e-3) << q.layers << " " << q.batch;
  }
}

TEST(HeadDifferenceTest, AStepShiftedPastItsOptimizerStepTakesThatStep) {
  // A head's difference larger than the steps themselves (a tiny model on a loaded machine):
  // every shifted step takes its optimizer step, none less — and the Predictor takes the profile.
  const SyntheticWorkload base;
  std::vector<HeadDifference> d = one_block_differences(base, base);
  for (HeadDifference& h : d) h.ms = -1e6;
  const Profile shifted = shift_head(base.profile(), d);
  for (const ProfilePoint& q : shifted.points) {
    EXPECT_DOUBLE_EQ(q.step_ms, shifted.optimizer_ms(static_cast<double>(q.layers)))
        << q.layers << " blocks at " << q.batch;
    EXPECT_GT(q.step_ms, 0);
  }
  EXPECT_NO_THROW(Predictor{shifted});
}

// Under tensor parallelism the two heads make other collectives (the plain head all-gathers its
// logits' parts, the fused loss all-reduces a few numbers a token): the shifted profile's are the
// new head's at every depth, checkpointing and layout — and they are recovered from the pair, the
// deep steps' too (against the base's line at its tp, whose steps hold no collective's time).
TEST(HeadDifferenceTest, UnderTensorParallelismTheHeadsCollectivesShiftToo) {
  SyntheticWorkload base, other = other_head();
  for (SyntheticWorkload* w : {&base, &other}) {
    w->tp = 2;
    w->block_all_reduces = 4;
  }
  base.outside_all_reduces = 1;
  base.outside_all_gathers = 1;  // the logits' parts: 0.5 MB a sample
  base.gather_bytes = 500000;
  other.outside_all_reduces = 4;
  const std::vector<HeadDifference> d = one_block_differences(base, other);
  const Profile shifted = shift_head(base.profile(), d);
  EXPECT_EQ(shifted.tp, 2);
  const Predictor from_shifted(shifted, testing::synthetic_collectives());
  const Predictor from_full(other.profile(), testing::synthetic_collectives());
  testing::expect_same_predictions(from_shifted, from_full, 2);
  // The base's collectives take longer (the logits' all-gather): the check can fail.
  PredictInput in;
  in.batch = 8;
  in.tp = 2;
  const Predictor from_base(base.profile(), testing::synthetic_collectives());
  EXPECT_GT(testing::collectives_ms(from_base.predict(in)),
            1.5 * testing::collectives_ms(from_full.predict(in)));
  // Recovered from two measured profiles: one block and the deep steps, each the heads' own.
  int deep = 0;
  for (const HeadDifference& h : head_differences(base.profile(), other.profile())) {
    if (h.ckpt_blocks > 0) continue;  // their peaks alone
    const CollectiveTally want =
        other.collectives(h.layers, h.batch, 0) - base.collectives(h.layers, h.batch, 0);
    EXPECT_EQ(h.collectives, want) << h.layers << " blocks at " << h.batch;
    if (h.layers == 1) continue;
    ++deep;
    EXPECT_NEAR(h.ms, other.step(h.layers, h.batch, 0) - base.step(h.layers, h.batch, 0), 1e-6)
        << h.batch;
  }
  EXPECT_EQ(deep, 4);  // 1, 4, 11 and 32 samples
}

// A checkpointed step's own peak difference (another embedding split: the first checkpointed
// block keeps what the embeddings make) shifts that point alone — not its time, nor any plain
// point — and is recovered from the pair, so a key of another block composed from them has it too.
TEST(HeadDifferenceTest, ACheckpointedStepsOwnPeakDifferenceShiftsThatPointAlone) {
  const SyntheticWorkload base;
  std::vector<HeadDifference> d = one_block_differences(base, base);  // nothing else differs
  HeadDifference kept = diff(32, kLayers, 1, std::nan(""), 8 * kMB);
  kept.ckpt_blocks = kLayers;
  d.push_back(kept);
  const Profile original = base.profile(), shifted = shift_head(original, d);
  ASSERT_EQ(shifted.points.size(), original.points.size());
  int found = 0;
  for (size_t i = 0; i < original.points.size(); ++i) {
    const ProfilePoint& q = original.points[i];
    const bool it = q.layers == kLayers && q.ckpt_blocks == kLayers && q.batch == 32;
    found += it;
    EXPECT_NEAR(shifted.points[i].peak_bytes - q.peak_bytes, it ? 8 * kMB : 0, 1e-3)
        << q.layers << " " << q.ckpt_blocks << " " << q.batch;
    EXPECT_NEAR(shifted.points[i].step_ms, q.step_ms, 1e-9) << q.layers << " " << q.batch;
  }
  EXPECT_EQ(found, 1);
  int recovered = 0;  // the profile's checkpointed deep steps: at 1 and 32 samples
  for (const HeadDifference& h : head_differences(original, shifted)) {
    if (h.ckpt_blocks == 0) continue;
    ++recovered;
    EXPECT_EQ(h.layers, kLayers);
    EXPECT_NEAR(h.peak_bytes, h.batch == 32 ? 8 * kMB : 0, 1e-3) << h.batch;
    EXPECT_TRUE(std::isnan(h.ms));
  }
  EXPECT_EQ(recovered, 2);
  SyntheticWorkload block = base;
  block.block_act_mb = 11;
  const Profile composed = shift_head(block.profile(), head_differences(original, shifted));
  for (const ProfilePoint& q : composed.points) {
    const double extra = q.layers == kLayers && q.ckpt_blocks == kLayers && q.batch == 32 ? 8 : 0;
    EXPECT_NEAR(q.peak_bytes, block.peak(q.layers, q.batch, q.ckpt_blocks) + extra * kMB, 1e-3)
        << q.layers << " " << q.ckpt_blocks << " " << q.batch;
  }
}

TEST(HeadDifferenceTest, WhatCannotBeShiftedIsRefused) {
  const SyntheticWorkload base;
  EXPECT_THROW(shift_head(base.profile(), {}), Error);
  // A point of two micro-batches needs its own difference.
  Profile p = base.profile();
  ProfilePoint gpipe = base.point(1, 8, 0);
  gpipe.micro_batches = 2;
  p.points.push_back(gpipe);
  EXPECT_THROW(shift_head(p, {diff(4, 1, 1, -1, 0)}), Error);
  EXPECT_NO_THROW(shift_head(p, {diff(4, 1, 1, -1, 0), diff(8, 1, 2, -2, 0)}));
  // Two profiles of no common one-block step: nothing to recover.
  Profile deep_only = base.profile();
  deep_only.points.erase(std::remove_if(deep_only.points.begin(), deep_only.points.end(),
                                        [](const ProfilePoint& q) { return q.layers == 1; }),
                         deep_only.points.end());
  EXPECT_THROW(head_differences(deep_only, base.profile()), Error);
}

}  // namespace
}  // namespace slapo::cost
