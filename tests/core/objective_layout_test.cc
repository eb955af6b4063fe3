// Objective (which value is better) and Layout (ranks into tp, dp, pp groups).

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/layout.h"
#include "core/objective.h"

namespace slapo {
namespace {

TEST(ObjectiveTest, BetterFollowsTheDirection) {
  const Objective rate{"samples_per_s", false};
  const Objective time{"step_ms_median", true};
  EXPECT_TRUE(rate.better(2.0, 1.0));
  EXPECT_FALSE(rate.better(1.0, 1.0));  // strictly
  EXPECT_TRUE(time.better(1.0, 2.0));
  EXPECT_FALSE(time.better(2.0, 1.0));
  // A value beats none; none beats nothing.
  EXPECT_TRUE(rate.better(std::optional<double>(0.5), std::nullopt));
  EXPECT_FALSE(rate.better(std::nullopt, std::optional<double>(0.5)));
  EXPECT_FALSE(rate.better(std::nullopt, std::nullopt));
  EXPECT_EQ(rate.to_string(), "max samples_per_s");
  EXPECT_EQ(time.to_string(), "min step_ms_median");
  EXPECT_STREQ(time.verb(), "minimize");
}

TEST(LayoutTest, RanksMapToGroupsTensorParallelFastest) {
  const Layout l{2, 3, 4};  // tp, dp, pp
  EXPECT_EQ(l.world(), 24);
  for (int rank = 0; rank < l.world(); ++rank) {
    EXPECT_EQ(l.rank_of(l.tp_rank(rank), l.dp_rank(rank), l.pp_rank(rank)), rank);
  }
  EXPECT_EQ(l.tp_rank(5), 1);
  EXPECT_EQ(l.dp_rank(5), 2);
  EXPECT_EQ(l.pp_rank(6), 1);
  EXPECT_EQ(l.to_string(), "tp=2 dp=3 pp=4");
  EXPECT_NO_THROW(l.check_world(24));
  try {
    l.check_world(2);
    ADD_FAILURE() << "24 ranks do not fit in 2";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "the configuration (tp=2 dp=3 pp=4) needs 24 ranks; this run has 2");
  }
}

}  // namespace
}  // namespace slapo
