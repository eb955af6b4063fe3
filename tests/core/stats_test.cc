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
}  // namespace slapo
