#include <gtest/gtest.h>

#include <vector>

#include "core/rng.h"

namespace slapo {
namespace {

TEST(RngTest, SameSeedSameStream) {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    EXPECT_NE(x, c.next_u64());
  }
}

TEST(RngTest, UniformStaysInRangeAndIsUnbiased) {
  Rng rng(7);
  const uint64_t n = 7;
  std::vector<int> counts(n, 0);
  const int draws = 70000;
  for (int i = 0; i < draws; ++i) {
    const uint64_t x = rng.uniform(n);
    ASSERT_LT(x, n);
    ++counts[x];
  }
  double chi = 0;
  for (int c : counts) chi += (c - draws / 7.0) * (c - draws / 7.0) / (draws / 7.0);
  EXPECT_LT(chi, 22.46);  // chi-square, 6 degrees of freedom, p = 0.001
  EXPECT_EQ(rng.uniform(1), 0u);
}

TEST(RngTest, UniformRealInUnitInterval) {
  Rng rng(3);
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    const double x = rng.uniform_real();
    ASSERT_GE(x, 0.0);
    ASSERT_LT(x, 1.0);
    sum += x;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

TEST(RngTest, ForkGivesAnIndependentReproducibleStream) {
  Rng a(5), b(5);
  Rng fa = a.fork(), fb = b.fork();
  EXPECT_EQ(fa.next_u64(), fb.next_u64());
  EXPECT_NE(fa.next_u64(), a.next_u64());
}

}  // namespace
}  // namespace slapo
