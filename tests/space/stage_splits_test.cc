#include <gtest/gtest.h>

#include "core/error.h"
#include "space/stage_splits.h"

namespace slapo::space {
namespace {

TEST(StageSplitsTest, CountsTheIssueExamples) {
  EXPECT_EQ(StageSplits(48, 8, 4, 8).count(), 38165u);
  EXPECT_EQ(StageSplits(96, 16, 4, 8).count(), 10651488789u);
}

TEST(StageSplitsTest, SmallCasesByHand) {
  EXPECT_EQ(StageSplits(4, 2, 1, 4).count(), 3u);  // cuts {1}, {2}, {3}
  EXPECT_EQ(StageSplits(4, 1, 1, 4).count(), 1u);  // no cut
  EXPECT_EQ(StageSplits(4, 1, 1, 3).count(), 0u);  // one stage of 4 > max
  EXPECT_EQ(StageSplits(4, 5, 1, 4).count(), 0u);  // more stages than layers
  EXPECT_EQ(StageSplits(6, 3, 2, 2).count(), 1u);
  EXPECT_EQ(StageSplits(6, 3, 2, 2).at(0), (IntList{2, 4}));
  EXPECT_EQ(StageSplits(6, 0, 1, 6).count(), 0u);
}

TEST(StageSplitsTest, RankUnrankAndVisitAgree) {
  const StageSplits s(20, 4, 3, 7);
  uint64_t rank = 0;
  IntList previous;
  s.for_each([&](const IntList& cuts) {
    EXPECT_TRUE(s.contains(cuts));
    EXPECT_EQ(s.at(rank), cuts);
    EXPECT_EQ(s.rank_of(cuts), rank);
    EXPECT_TRUE(previous.empty() || previous < cuts);  // lexicographic order
    previous = cuts;
    ++rank;
    return true;
  });
  EXPECT_EQ(rank, s.count());
}

TEST(StageSplitsTest, LargeRanksRoundTrip) {
  const StageSplits s(96, 16, 4, 8);
  for (uint64_t rank : {uint64_t{0}, uint64_t{1}, uint64_t{5000000000}, s.count() - 1}) {
    const IntList cuts = s.at(rank);
    ASSERT_EQ(cuts.size(), 15u);
    EXPECT_TRUE(s.contains(cuts));
    EXPECT_EQ(s.rank_of(cuts), rank);
  }
}

TEST(StageSplitsTest, BalancedIsValidAndEven) {
  EXPECT_EQ(StageSplits(24, 4, 1, 24).balanced(), (IntList{6, 12, 18}));
  const StageSplits s(50, 8, 4, 8);
  const IntList b = s.balanced();
  EXPECT_TRUE(s.contains(b));
  int64_t previous = 0;
  for (size_t i = 0; i <= b.size(); ++i) {
    const int64_t len = (i < b.size() ? b[i] : 50) - previous;
    EXPECT_TRUE(len == 6 || len == 7) << len;
    previous = i < b.size() ? b[i] : 50;
  }
}

TEST(StageSplitsTest, HugeTablesAreRefused) {
  EXPECT_THROW(StageSplits(1000000, 1000, 1, 10), Error);
  EXPECT_THROW(StageSplits(2000000, 2, 1, 2000000), Error);
  EXPECT_EQ(StageSplits(96, 16, 4, 8).count(), 10651488789u);
  EXPECT_THROW(StageSplits(1000, 100, 5, 15).count(), Error);  // more than 2^64 - 1 splits
}

TEST(StageSplitsTest, ContainsRejectsWrongShapes) {
  const StageSplits s(12, 3, 2, 6);
  EXPECT_TRUE(s.contains({4, 8}));
  EXPECT_FALSE(s.contains({4}));
  EXPECT_FALSE(s.contains({8, 4}));
  EXPECT_FALSE(s.contains({1, 8}));  // first stage too short
  EXPECT_FALSE(s.contains({2, 4}));  // last stage too long
}

}  // namespace
}  // namespace slapo::space
