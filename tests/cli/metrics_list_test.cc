#include "cli/metrics_list.h"

#include <gtest/gtest.h>

#include <sstream>

namespace slapo::cli {
namespace {

TEST(MetricsListTest, TheValuesStandInOneColumnPastTheLongestName) {
  std::ostringstream out;
  write_metrics(out, {{"page_faults_per_step", 66}, {"wall_s", 0.5}});
  EXPECT_EQ(out.str(),
            "  page_faults_per_step  66\n"
            "  wall_s                0.5\n");
}

TEST(MetricsListTest, ShortNamesKeepTheUsualColumn) {
  std::ostringstream out;
  write_metrics(out, {{"tflops", 2}});
  EXPECT_EQ(out.str(), "  tflops          2\n");
  EXPECT_EQ(metric_name_width({{"tflops", 2}}, 18), 18u);
  EXPECT_EQ(metric_name_width({{"page_faults_per_step", 1}}, 18), 22u);
}

}  // namespace
}  // namespace slapo::cli
