#include "runners/sweep_steps.h"

#include <string>

#include <gtest/gtest.h>

namespace slapo::runners {
namespace {

// "4" a timed step at 4 samples, "(4)" an untimed one.
std::string order(const std::vector<SweepStep>& steps) {
  std::string s;
  for (const SweepStep& step : steps) {
    if (!s.empty()) s += ' ';
    const std::string b = std::to_string(step.batch);
    s += step.timed ? b : "(" + b + ")";
  }
  return s;
}

TEST(SweepStepsTest, AWarmUpThenOneTimedStepPerBatch) {
  EXPECT_EQ(order(sweep_steps(1, {1, 4, 16}, false)), "(1) 1 4 16");
  EXPECT_EQ(order(sweep_steps(1, {}, false)), "(1)");
}

TEST(SweepStepsTest, ABatchLargerThanEveryStepBeforeRunsOnceUntimedFirst) {
  // The warm-up's batch is not new; each larger one is.
  EXPECT_EQ(order(sweep_steps(1, {1, 4, 16}, true)), "(1) 1 (4) 4 (16) 16");
  // Two micro-batches: the warm-up runs two samples, the point twice as many as the smallest.
  EXPECT_EQ(order(sweep_steps(2, {8}, true)), "(2) (8) 8");
  // Not larger than the largest before: nothing new to fault in.
  EXPECT_EQ(order(sweep_steps(4, {2, 4, 8, 8}, true)), "(4) 2 4 (8) 8 8");
}

TEST(SweepStepsTest, AShortMeasurementIsTimedUntilItsRunsAddUp) {
  EXPECT_EQ(timed_repeats(3.0, 1), 20);                // 60 ms in runs of 3
  EXPECT_EQ(timed_repeats(0.5, 1), kMaxTimedRepeats);  // capped
  EXPECT_EQ(timed_repeats(0.0, 1), kMaxTimedRepeats);  // too short for the clock
  EXPECT_EQ(timed_repeats(45.0, 2), 2);                // gpt-mini's smallest step: as before
  EXPECT_EQ(timed_repeats(250.0, 1), 1);
  EXPECT_EQ(timed_repeats(25.0, 1), 3);
}

}  // namespace
}  // namespace slapo::runners
