// slapo-tune trial end to end: built-in workload (both runners), a command, bad input.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_support.h"

namespace {

using slapo::testing::kTrialSpace;
using slapo::testing::last_line;
using slapo::testing::Outcome;
using slapo::testing::run;

const std::string kConfig =
    " --config '{\"batch_size\": 8, \"ckpt_ratio\": 0.5, \"attn\": \"baddbmm\"}'";

TEST(TrialCliTest, JsonResultOnTheLastLine) {
  // The subprocess runner through its fork server (the default) and with a new process per trial.
  for (const std::string runner : {"inprocess", "subprocess", "subprocess --no-fork-server"}) {
    Outcome r = run("trial --space " + kTrialSpace + kConfig + " --json --runner " + runner);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto j = nlohmann::json::parse(last_line(r.out));
    EXPECT_EQ(j["status"], "ok");
    EXPECT_EQ(j["runner"], runner.substr(0, runner.find(' ')));
    EXPECT_GT(j["objective"].get<double>(), 0);
    for (const char* m :
         {"samples_per_s", "tokens_per_s", "step_ms_median", "step_ms_p10", "step_ms_p90",
          "peak_bytes", "tflops", "loss_first", "loss_last", "build_ms", "max_rss_bytes"}) {
      EXPECT_TRUE(j["metrics"].contains(m)) << m;
    }
  }
}

TEST(TrialCliTest, MemoryBudgetMakesItOom) {
  Outcome r = run("trial --space " + kTrialSpace + kConfig + " --json --memory-budget 64KiB");
  EXPECT_EQ(r.exit_code, 1);
  const auto j = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(j["status"], "oom");
  EXPECT_TRUE(j["objective"].is_null());
}

TEST(TrialCliTest, AnyCommand) {
  Outcome r = run("trial --space " + kTrialSpace + kConfig +
                  " --json -- sh -c 'echo throughput: $SLAPO_BATCH_SIZE'");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(j["runner"], "command");
  EXPECT_EQ(j["objective"].get<double>(), 8);
}

TEST(TrialCliTest, BadInputIsRefusedBeforeAnythingRuns) {
  Outcome outside =
      run("trial --space " + kTrialSpace +
          " --config '{\"batch_size\": 3, \"ckpt_ratio\": 0.5, \"attn\": \"naive\"}'");
  EXPECT_EQ(outside.exit_code, 2);
  EXPECT_NE(outside.err.find("knob 'batch_size': 3 is not in its domain"), std::string::npos)
      << outside.err;
  Outcome nproc = run("trial --space " + kTrialSpace + kConfig + " --nproc 0");
  EXPECT_EQ(nproc.exit_code, 2);
  EXPECT_NE(nproc.err.find("--nproc 0: expected a number of ranks from 1 to 1024"),
            std::string::npos)
      << nproc.err;
  Outcome inprocess =
      run("trial --space " + kTrialSpace + kConfig + " --runner inprocess --nproc 2");
  EXPECT_EQ(inprocess.exit_code, 2);
  EXPECT_NE(inprocess.err.find("--runner inprocess runs one rank"), std::string::npos)
      << inprocess.err;
  Outcome budget = run("trial --space " + kTrialSpace + kConfig + " --memory-budget 2GB2");
  EXPECT_EQ(budget.exit_code, 2);
  EXPECT_NE(budget.err.find("--memory-budget"), std::string::npos);
  const std::string foreign = slapo::testing::write_temp(
      "foreign_trial.toml",
      "[workload]\nmodel = 'gpt-tiny'\n[knobs]\nzero_stage = { values = [1, 2] }\n");
  Outcome knob = run("trial --space " + foreign + " --config '{\"zero_stage\": 2}'");
  EXPECT_EQ(knob.exit_code, 2);
  EXPECT_NE(
      knob.err.find(
          "foreign_trial.toml: knob 'zero_stage' is not understood by schedule template 'gpt'"),
      std::string::npos)
      << knob.err;
}

}  // namespace
