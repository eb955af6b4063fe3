#include "cost/profile_batches.h"

#include <gtest/gtest.h>

namespace slapo::cost {
namespace {

TEST(ProfileBatchesTest, TheMiddleIsABatchTheSpaceRunsWhenOneIsBetween) {
  // bert-mini's table 2: powers of two, profiled up to 16 — the middle is 8, not 10.
  EXPECT_EQ(middle_batch(4, 16, {4, 8, 16, 32, 64, 128}), 8);
  // Steps of 4 from 4 to 80, any order: the one nearest sqrt(4 * 16) = 8.
  EXPECT_EQ(middle_batch(4, 16, {80, 12, 4, 8, 16, 20}), 8);
  // Nearest by ratio, not by difference: around sqrt(2 * 50) = 10, 14 (x1.4) is nearer than 7
  // (x1/1.43), though 4 farther.
  EXPECT_EQ(middle_batch(2, 50, {7, 14}), 14);
  EXPECT_EQ(middle_batch(2, 50, {8, 14}), 8);
}

TEST(ProfileBatchesTest, TwoAsNearTakeTheSmaller) {
  EXPECT_EQ(middle_batch(4, 32, {16, 8}), 8);
  EXPECT_EQ(middle_batch(4, 32, {8, 16}), 8);
}

TEST(ProfileBatchesTest, WithTheBatchesNotKnownTheMiddleIsTheGeometricMean) {
  EXPECT_EQ(middle_batch(4, 16, {}), 8);
  EXPECT_EQ(middle_batch(4, 23, {}), 10);  // sqrt(92) = 9.6
}

TEST(ProfileBatchesTest, WithNoBatchTheSpaceRunsBetweenThereIsNoMiddle) {
  // Table 3: the ends themselves are measured already, and 11 samples predict no configuration.
  EXPECT_EQ(middle_batch(8, 16, {1, 2, 4, 8, 16, 32}), 0);
  EXPECT_EQ(middle_batch(4, 8, {4, 8, 16, 32}), 0);
}

TEST(ProfileBatchesTest, TheCapIsTheLargestBatchTakenWithinIt) {
  // Table 2's budget: first profiled up to sqrt(4 * 128) = 23 — the space runs 16 there.
  EXPECT_EQ(taken_at_most(23, 8, {4, 8, 16, 32, 64, 128}), 16);
  EXPECT_EQ(taken_at_most(18, 8, {4, 8, 12, 16, 20, 80}), 16);
  // None within [at_least, at_most]: the cap itself.
  EXPECT_EQ(taken_at_most(11, 10, {4, 8, 16, 32}), 11);
  EXPECT_EQ(taken_at_most(11, 8, {}), 11);
}

}  // namespace
}  // namespace slapo::cost
