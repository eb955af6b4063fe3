// A profile derived across the optimizer (cost/optimizer_swap.h): the base's steps shifted by the
// optimizers' difference; their peaks the base's, but where the base's optimizer step set them.

#include "cost/optimizer_swap.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "tests/cost/synthetic_workload.h"

namespace slapo::cost {
namespace {

using testing::kLayers;
using testing::kMB;

// The synthetic workload with an optimizer step that needs `optimizer_mb` above the state: at one
// sample it sets every variant's peak, and the one-block variant's at 4 samples too (4 · (10 + 30)
// = 160 MB of activations against 200).
Profile with_optimizer(double optimizer_mb, double ms_per_param) {
  testing::SyntheticWorkload w;
  w.optimizer_peak_mb = optimizer_mb;
  Profile p = w.profile();
  p.optimizer_ms_per_param = ms_per_param;
  return p;
}

const ProfilePoint* find(const Profile& p, int64_t layers, int64_t batch, int64_t ckpt) {
  for (const ProfilePoint& q : p.points) {
    if (q.layers == layers && q.batch == batch && q.ckpt_blocks == ckpt && q.micro_batches == 1)
      return &q;
  }
  return nullptr;
}

TEST(OptimizerSwapTest, TheStepsThatPeakedInTheOptimizerStepAreRunAgain) {
  const Profile base = with_optimizer(200, 2e-6);
  std::vector<std::tuple<int64_t, int64_t, int64_t>> bound;
  for (const ProfilePoint& q : optimizer_bound_points(base))
    bound.emplace_back(q.layers, q.batch, q.ckpt_blocks);
  // Each variant's one-sample step, and the one-block variant's at 4 samples (at its floor). The
  // deep variant's activations at 4 samples (4 · (40 + 30) = 280 MB) are over the optimizer's.
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> expected = {
      {1, 1, 0}, {1, 4, 0}, {kLayers, 1, 0}, {kLayers, 1, kLayers}};
  EXPECT_EQ(bound, expected);
  // An optimizer that needs nothing above the state: only the one-sample steps.
  EXPECT_EQ(optimizer_bound_points(with_optimizer(0, 2e-6)).size(), 3u);
}

TEST(OptimizerSwapTest, StepsShiftByTheOptimizersDifferenceAndPeaksAreTheBasesOrMeasured) {
  const Profile base = with_optimizer(200, 2e-6);
  const Profile fused = with_optimizer(0, 0.5e-6);  // what the new key measures, whole
  std::vector<ProfilePoint> measured;
  for (const ProfilePoint& q : optimizer_bound_points(base))
    measured.push_back(*find(fused, q.layers, q.batch, q.ckpt_blocks));
  const Profile swapped = swap_optimizer(base, 0.5e-6, 0, measured);
  EXPECT_EQ(swapped.optimizer_ms_per_param, 0.5e-6);
  EXPECT_EQ(swapped.optimizer_temp_bytes_per_element, 0);
  ASSERT_EQ(swapped.points.size(), base.points.size());
  for (size_t i = 0; i < base.points.size(); ++i) {
    const ProfilePoint& b = base.points[i];
    const ProfilePoint& s = swapped.points[i];
    SCOPED_TRACE(std::to_string(b.layers) + " blocks, " + std::to_string(b.batch) + " samples");
    // 1.5e-6 ms less a parameter of the variant's.
    EXPECT_NEAR(s.step_ms,
                b.step_ms - 1.5e-6 * base.shape.variant_params(static_cast<double>(b.layers)),
                1e-9);
    // Every peak what the new key's own profile measures: the optimizer-bound ones measured, the
    // others the base's.
    EXPECT_EQ(s.peak_bytes, find(fused, b.layers, b.batch, b.ckpt_blocks)->peak_bytes);
    EXPECT_TRUE(s.derived);
  }
  // The other way, to an optimizer that needs more: the base's activation peaks below the new
  // optimizer's step are raised to it.
  const Profile adamw = with_optimizer(300, 2e-6);
  std::vector<ProfilePoint> again;
  for (const ProfilePoint& q : optimizer_bound_points(fused))
    again.push_back(*find(adamw, q.layers, q.batch, q.ckpt_blocks));
  const Profile back = swap_optimizer(fused, 2e-6, 8, again);
  for (size_t i = 0; i < back.points.size(); ++i)
    EXPECT_EQ(back.points[i].peak_bytes, adamw.points[i].peak_bytes) << i;
  // The deep variant at 4 samples: 280 MB of activations, under the 300 of the new optimizer.
  EXPECT_EQ(find(back, kLayers, 4, 0)->peak_bytes,
            testing::SyntheticWorkload::state_bytes(kLayers) + 300 * kMB);
}

// The base's optimizer rate is timed within its deep steps, apart from each step it is taken out
// of: on a noisy machine it can say more than a small step took in all. That step keeps nothing of
// the base's optimizer and nothing less than the new one — never a step below zero, which the
// predictor refuses (it once came out at −3.2 ms under ctest -j2).
TEST(OptimizerSwapTest, ABaseOptimizerTimedSlowerThanAWholeStepLeavesItTheNewOptimizersTime) {
  Profile base = with_optimizer(200, 2e-6);
  const ProfilePoint& one = *find(base, 1, 1, 0);
  const double one_params = base.shape.variant_params(1);
  // The rate at which the base's optimizer alone would take twice the one-block, one-sample step.
  base.optimizer_ms_per_param = 2 * one.step_ms / one_params;
  std::vector<ProfilePoint> measured = optimizer_bound_points(base);
  const Profile swapped = swap_optimizer(base, 0.1 * base.optimizer_ms_per_param, 0, measured);
  for (size_t i = 0; i < base.points.size(); ++i) {
    const ProfilePoint& b = base.points[i];
    const double params = base.shape.variant_params(static_cast<double>(b.layers));
    const double base_optimizer = std::min(b.step_ms, base.optimizer_ms_per_param * params);
    SCOPED_TRACE(std::to_string(b.layers) + " blocks, " + std::to_string(b.batch) + " samples");
    EXPECT_GT(swapped.points[i].step_ms, 0);
    EXPECT_NEAR(swapped.points[i].step_ms,
                b.step_ms - base_optimizer + swapped.optimizer_ms_per_param * params, 1e-9);
  }
  // The one-block, one-sample step: the new optimizer's time alone.
  EXPECT_NEAR(find(swapped, 1, 1, 0)->step_ms, 0.2 * one.step_ms, 1e-9);
}

TEST(OptimizerSwapTest, AnOptimizerBoundStepNotRunAgainIsRefused) {
  const Profile base = with_optimizer(200, 2e-6);
  std::vector<ProfilePoint> measured = optimizer_bound_points(base);
  measured.pop_back();
  EXPECT_THROW(swap_optimizer(base, 0.5e-6, 0, measured), Error);
}

}  // namespace
}  // namespace slapo::cost
