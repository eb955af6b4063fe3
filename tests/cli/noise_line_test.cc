// The summary's `noise:` line: the figure, the warning over tuner::kNoisyStepSpread, and the
// `--confirm K` suggestion only to a run that did not confirm.

#include <gtest/gtest.h>

#include "cli/noise_line.h"
#include "tuner/tuner.h"

namespace slapo::cli {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(NoiseLineTest, AnUnknownSpreadPrintsNothing) {
  EXPECT_EQ(noise_line(std::nullopt, false), "");
  EXPECT_EQ(noise_line(std::nullopt, true), "");
}

TEST(NoiseLineTest, AQuietRunGivesItsSpreadWithoutAWarning) {
  const std::string line = noise_line(0.023, false);
  EXPECT_EQ(line, "noise: a trial's steps spread by a median 2.3% (p90 - p10 over the median)\n");
  // At the threshold itself the machine is not yet called noisy.
  EXPECT_FALSE(contains(noise_line(tuner::kNoisyStepSpread, false), "noisy"));
}

TEST(NoiseLineTest, ANoisyRunIsToldWhatToDo) {
  const std::string line = noise_line(0.081, false);
  EXPECT_TRUE(contains(line, "median 8.1%")) << line;
  EXPECT_TRUE(contains(line, "a noisy machine (over 5.0%)")) << line;
  EXPECT_TRUE(contains(line, "run on an idle machine")) << line;
  EXPECT_TRUE(contains(line, "--confirm K")) << line;
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line";
}

TEST(NoiseLineTest, ARunThatConfirmedIsNotToldToConfirm) {
  const std::string line = noise_line(0.081, true);
  EXPECT_TRUE(contains(line, "a noisy machine")) << line;
  EXPECT_FALSE(contains(line, "--confirm")) << line;
}

}  // namespace
}  // namespace slapo::cli
