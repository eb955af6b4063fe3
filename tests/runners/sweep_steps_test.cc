#include "runners/sweep_steps.h"

#include <string>

#include <gtest/gtest.h>

namespace slapo::runners {
namespace {

// "4" a timed step at 4 samples, "(4)" an untimed one; "+" a step that grows (a batch larger than
// every step before it).
std::string order(const std::vector<SweepStep>& steps) {
  std::string s;
  for (const SweepStep& step : steps) {
    if (!s.empty()) s += ' ';
    const std::string b = std::to_string(step.batch) + (step.grows ? "+" : "");
    s += step.timed ? b : "(" + b + ")";
  }
  return s;
}

TEST(SweepStepsTest, TwoWarmUpStepsThenOneTimedStepPerBatch) {
  // Unwarmed, the timed step at a new batch grows (the deep variant touches the heap before it).
  EXPECT_EQ(order(sweep_steps(1, {1, 4, 16}, false)), "(1+) (1) 1 4+ 16+");
  EXPECT_EQ(order(sweep_steps(1, {}, false)), "(1+) (1)");
  EXPECT_EQ(order(sweep_steps(4, {2, 4, 8, 8}, false)), "(4+) (4) 2 4 8+ 8");
}

TEST(SweepStepsTest, ABatchLargerThanEveryStepBeforeRunsOnceUntimedFirst) {
  // The warm-up's batch is not new; each larger one is.
  EXPECT_EQ(order(sweep_steps(1, {1, 4, 16}, true)), "(1+) (1) 1 (4+) 4 (16+) 16");
  // Two micro-batches: the warm-up runs two samples, the point twice as many as the smallest.
  EXPECT_EQ(order(sweep_steps(2, {8}, true)), "(2+) (2) (8+) 8");
  // Not larger than the largest before: nothing new to fault in.
  EXPECT_EQ(order(sweep_steps(4, {2, 4, 8, 8}, true)), "(4+) (4) 2 4 (8+) 8 8");
}

TEST(SweepStepsTest, AShortMeasurementIsTimedUntilItsRunsAddUp) {
  EXPECT_EQ(timed_repeats(3.0, 1), 20);                // 60 ms in runs of 3
  EXPECT_EQ(timed_repeats(0.5, 1), kMaxTimedRepeats);  // capped
  EXPECT_EQ(timed_repeats(0.0, 1), kMaxTimedRepeats);  // too short for the clock
  EXPECT_EQ(timed_repeats(45.0, 2), 2);                // gpt-mini's smallest step: as before
  EXPECT_EQ(timed_repeats(250.0, 1), 1);
  EXPECT_EQ(timed_repeats(25.0, 1), 3);
}

TEST(SweepStepsTest, APeakIsExpectedAlongTheLineOfTheLargestBatchesGrowingFasterPastThem) {
  // bert-mini's deep variant (benchmark/tables/bert-mini-batch-ckpt.profiles.json), in MB.
  const std::vector<PeakAt> measured = {{4, 131.7}, {1, 111.6}, {10, 199.8}};
  // Past 10 samples: the line through 4 and 10 (11.35 MB a sample), its growth half as much again
  // — 347.3 MB measured at 23.
  EXPECT_NEAR(expected_peak(measured, 23), 199.8 + 1.5 * 13 * (199.8 - 131.7) / 6, 1e-9);
  EXPECT_GT(expected_peak(measured, 23), 347.3);
  // Between measured batches, on the line; at one, itself.
  EXPECT_NEAR(expected_peak(measured, 7), 165.75, 1e-9);
  EXPECT_NEAR(expected_peak(measured, 10), 199.8, 1e-9);
  // Nothing known from one batch (twice) or none.
  EXPECT_EQ(expected_peak({{4, 131.7}, {4, 140.0}}, 16), 0);
  EXPECT_EQ(expected_peak({}, 16), 0);
  // A peak that fell with the batch (noise, a moment of the optimizer) is not extended down.
  EXPECT_EQ(expected_peak({{1, 100}, {2, 90}}, 8), 90);
}

// The peaks say how a step's memory grows once two batches above the warm-ups' were measured: a
// line through the warm-ups' batch is the optimizer's, flat.
TEST(SweepStepsTest, GrowthIsExpectedFromTwoBatchesAboveTheWarmUps) {
  EXPECT_FALSE(expects_growth({}, 1));
  EXPECT_FALSE(expects_growth({{1, 135.6}}, 1));
  EXPECT_FALSE(expects_growth({{1, 135.6}, {4, 137.6}}, 1));
  EXPECT_FALSE(expects_growth({{1, 135.6}, {4, 137.6}, {4, 137.6}}, 1));  // one batch twice
  EXPECT_TRUE(expects_growth({{1, 135.6}, {4, 137.6}, {8, 164.5}}, 1));
  EXPECT_TRUE(expects_growth({{4, 137.6}, {8, 164.5}}, 1));   // known from another process
  EXPECT_FALSE(expects_growth({{2, 140.0}, {4, 150.0}}, 2));  // two micro-batches: from 2
}

}  // namespace

}  // namespace slapo::runners
