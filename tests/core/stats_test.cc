#include <gtest/gtest.h>

#include "core/stats.h"

#include <cmath>

namespace slapo {
namespace {

TEST(StatsTest, PercentilesInterpolateBetweenRanks) {
  EXPECT_DOUBLE_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);  // the mean of the two middle values
  EXPECT_DOUBLE_EQ(median({7.0}), 7.0);
  EXPECT_DOUBLE_EQ(percentile({10.0, 0.0, 20.0}, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(percentile({10.0, 0.0, 20.0}, 1.0), 20.0);
  EXPECT_DOUBLE_EQ(
      percentile({0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0}, 0.9), 90.0);
  EXPECT_DOUBLE_EQ(percentile({0.0, 10.0}, 0.25), 2.5);
}

TEST(StatsTest, RobustZFlagsTheObviousOutlierOnly) {
  const std::vector<double> rates = {118, 121, 119.5, 122, 120, 117.8, 120.4};
  EXPECT_LT(robust_z(rates, 2.4), -3.5);            // a trial on a busy machine
  EXPECT_GT(robust_z(rates, 480), 3.5);             // an impossible one
  EXPECT_LT(std::fabs(robust_z(rates, 123)), 3.5);  // the best, honestly measured
  EXPECT_EQ(robust_z({5, 5, 5}, 5), 0);
  EXPECT_TRUE(std::isinf(robust_z({5, 5, 5}, 5.01)));
  EXPECT_LT(std::fabs(robust_z({5, 5, 5}, 5.01, 0.1)), 3.5);  // the floor: a spread of at least 0.1
}

}  // namespace
TEST(StatsTest, SpearmanComparesOrdersNotValues) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 1000}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // One pair swapped among five: 1 − 6·2 / (5·24) = 0.9.
  EXPECT_NEAR(spearman({1, 2, 3, 4, 5}, {1, 3, 2, 4, 5}), 0.9, 1e-12);
  // Ties share their mean rank.
  EXPECT_NEAR(spearman({1, 2, 3}, {1, 1, 2}), 0.8660254037844386, 1e-12);
  EXPECT_TRUE(std::isnan(spearman({1, 2, 3}, {5, 5, 5})));
}

TEST(StatsTest, TheRepeatedMedianLineIgnoresOneWildPoint) {
  // y = 2 + 0.5 x, exactly: the line itself.
  const Line exact = repeated_median_line({1, 4, 7, 11, 16}, {2.5, 4, 5.5, 7.5, 10});
  EXPECT_NEAR(exact.intercept, 2, 1e-12);
  EXPECT_NEAR(exact.slope, 0.5, 1e-12);
  EXPECT_NEAR(exact.at(32), 18, 1e-12);
  // The point at 16 off by +35 (a hiccup of the machine): the line does not move; least squares
  // would have predicted 10 + 24 = 34 at x = 16 and a negative value at x = 1.
  const Line wild = repeated_median_line({1, 4, 7, 11, 16}, {2.5, 4, 5.5, 7.5, 45});
  EXPECT_NEAR(wild.at(16), 10, 1e-12);
  EXPECT_NEAR(wild.at(1), 2.5, 1e-12);
  // So for four points, wherever the wild one is.
  const Line four = repeated_median_line({1, 4, 7, 11}, {2.5, -30, 5.5, 7.5});
  EXPECT_NEAR(four.slope, 0.5, 1e-12);
  EXPECT_NEAR(four.intercept, 2, 1e-12);
  // Repeated x: every measurement counts; one distinct x: a flat line at the median.
  const Line repeated = repeated_median_line({2, 2, 2, 6, 6, 6}, {1, 1.2, 9, 3, 3.2, 2.8});
  EXPECT_NEAR(repeated.at(2), 1.2, 1e-12);
  EXPECT_NEAR(repeated.at(6), 3, 1e-12);
  const Line flat = repeated_median_line({3, 3, 3}, {1, 5, 2});
  EXPECT_EQ(flat.slope, 0);
  EXPECT_EQ(flat.intercept, 2);
}

}  // namespace slapo
