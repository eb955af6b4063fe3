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

TEST(NoiseLineTest, TrialsApartWhileTheStepsAreQuietCallTheMachineNoisy) {
  // A configuration's trials 31% apart, each trial's own steps 2% (the host of 2026-11-29 ran one
  // configuration at 60 to 105 samples/s trial to trial).
  const std::string line = noise_line(0.02, true, 0.31);
  EXPECT_TRUE(contains(line, "steps spread by a median 2.0%")) << line;
  EXPECT_TRUE(contains(line, "; measured again, a configuration's trials lay a median 31.0% apart"))
      << line;
  EXPECT_TRUE(contains(line, "the machine's speed moved between trials (over 5.0%)")) << line;
  EXPECT_TRUE(contains(line, "run on an idle machine")) << line;
  EXPECT_FALSE(contains(line, "--confirm")) << line;
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line";
  // Noisy steps are said first, as before.
  EXPECT_TRUE(contains(noise_line(0.081, true, 0.31), " - a noisy machine (over 5.0%)"));
}

TEST(NoiseLineTest, TrialsCloseTogetherAddNoWarning) {
  EXPECT_EQ(
      noise_line(0.023, true, 0.012),
      "noise: a trial's steps spread by a median 2.3% (p90 - p10 over the median); measured "
      "again, a configuration's trials lay a median 1.2% apart (max - min over the median)\n");
  // An external command that reports no step times: the trials' figure alone.
  EXPECT_EQ(
      noise_line(std::nullopt, true, 0.012).rfind("noise: measured again, a configuration's", 0),
      0u);
}

}  // namespace
}  // namespace slapo::cli
