// A model slapo did not write, tuned through the whole command line of a program of its own
// (examples/own_model/own_model_tuning.cc): every runner, verification across ranks, memory.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/process.h"
#include "tests/cli/cli_support.h"

namespace {

using slapo::testing::last_line;
using slapo::testing::temp_db;
using slapo::testing::write_temp;

const std::string kShiftMixerSpace =
    std::string(SLAPO_SOURCE_DIR) + "/examples/own_model/shift-mixer.toml";

slapo::ProcessResult own(const std::string& args) {
  slapo::ProcessOptions o;
  o.timeout_s = 300;
  return slapo::run_process({"/bin/sh", "-c", std::string(OWN_MODEL_EXAMPLE) + " " + args}, o);
}

nlohmann::json own_trials_of(const std::string& db) {
  const slapo::ProcessResult t = own("db trials --db " + db + " --format json");
  EXPECT_EQ(t.exit_code, 0) << t.err;
  return nlohmann::json::parse(t.out);
}

TEST(OwnModelTest, TunedWithEveryRunner) {
  for (const std::string runner : {"inprocess", "subprocess", "subprocess --no-fork-server"}) {
    const std::string db = temp_db("own-" + runner.substr(0, 10));
    const slapo::ProcessResult r = own("single-device --space " + kShiftMixerSpace + " --db " + db +
                                       " --strategy random --trials 3 --json --runner " + runner);
    ASSERT_EQ(r.exit_code, 0) << runner << ": " << r.out << r.err;
    const nlohmann::json rows = own_trials_of(db);
    ASSERT_EQ(rows.size(), 3u) << runner;
    for (const auto& row : rows) {
      EXPECT_EQ(row["status"], "ok") << runner << ": " << row.dump();
      EXPECT_GT(row["metrics"]["peak_bytes"].get<double>(), 0) << runner;
    }
  }
}

TEST(OwnModelTest, RanksPipelineItsBlocksAndVerifyAgainstTheOriginal) {
  const std::string space = write_temp(
      "own-ranks.toml",
      "[workload]\nmodel = \"shift-mixer-tiny\"\nbatch_size = 8\nseq_len = 32\nwarmup = 1\n"
      "steps = 2\nthreads = 1\n[knobs]\npp = { values = [1, 2] }\n"
      "micro_batches = { values = [2] }\nckpt_ratio = { values = [0.0, 0.5] }\n");
  const std::string db = temp_db("own-ranks");
  const slapo::ProcessResult tuned = own("single-node --nproc 2 --space " + space + " --db " + db +
                                         " --strategy exhaustive --trials 4");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.out << tuned.err;
  for (const auto& row : own_trials_of(db)) EXPECT_EQ(row["status"], "ok") << row.dump();
  const slapo::ProcessResult v =
      own("verify --space " + space +
          " --nproc 2 --config '{\"pp\": 2, \"micro_batches\": 2, \"ckpt_ratio\": 0.5}'");
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("verified rank 1 (tp=1 dp=1 pp=2)"), std::string::npos) << v.out;
}

TEST(OwnModelTest, ItsTemplateIsCheckedAndMemoryIsTracked) {
  // Its own knob (decompose) keeps the math; a knob its template does not understand is refused.
  const slapo::ProcessResult v =
      own("verify --space " + kShiftMixerSpace +
          " --config '{\"batch_size\": 8, \"ckpt_ratio\": 0.5, \"decompose\": true}'");
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  const std::string bad = write_temp(
      "own-bad.toml",
      "[workload]\nmodel = \"shift-mixer-tiny\"\n[knobs]\nattn = { choice = [\"naive\"] }\n");
  const slapo::ProcessResult refused =
      own("single-device --space " + bad + " --db " + temp_db("own-bad") + " --trials 1");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("knob 'attn' is not understood by schedule template 'shift_mixer'"),
            std::string::npos)
      << refused.err;
  // Tracked like a zoo model's: under a budget below its peak, out of memory.
  const std::string config =
      " --config '{\"batch_size\": 32, \"ckpt_ratio\": 0.0, \"decompose\": false}'";
  const slapo::ProcessResult fits = own("trial --space " + kShiftMixerSpace + config + " --json");
  ASSERT_EQ(fits.exit_code, 0) << fits.err;
  const double peak = nlohmann::json::parse(last_line(fits.out))["metrics"]["peak_bytes"];
  const slapo::ProcessResult oom =
      own("trial --space " + kShiftMixerSpace + config + " --json --memory-budget " +
          std::to_string(static_cast<int64_t>(peak / 2)));
  EXPECT_EQ(nlohmann::json::parse(last_line(oom.out))["status"], "oom") << oom.out << oom.err;
  // slapo-tune itself does not know the model, and says where models come from.
  const slapo::ProcessResult unknown =
      slapo::run_process({SLAPO_TUNE, "trial", "--space", kShiftMixerSpace, "--config",
                          "{\"batch_size\": 32, \"ckpt_ratio\": 0.0, \"decompose\": false}"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown model 'shift-mixer-tiny'"), std::string::npos) << unknown.err;
}

// The target: a registered model is measured as a zoo model of the same size. mlp-tiny,
// written again by a program of its own, gives the same statuses, the same first and last loss
// and the same peak tensor memory as the zoo's, through every runner, fitting or out of memory.
TEST(OwnModelTest, ARegisteredTwinOfAZooModelMeasuresTheSame) {
  const auto space_of = [](const std::string& model) {
    return write_temp(model + ".toml", "[workload]\nmodel = \"" + model +
                                           "\"\nbatch_size = 8\nseq_len = 16\nwarmup = 1\n"
                                           "steps = 2\nthreads = 1\n[knobs]\n"
                                           "ckpt_ratio = { values = [0.0, 0.5] }\n");
  };
  const std::string zoo = space_of("mlp-tiny"), twin = space_of("mlp-twin-tiny");
  for (const std::string runner : {"inprocess", "subprocess"}) {
    for (const std::string budget : {"", " --memory-budget 40000"}) {
      const std::string args =
          " --config '{\"ckpt_ratio\": 0.5}' --json --runner " + runner + budget;
      slapo::ProcessOptions o;
      o.timeout_s = 120;
      const slapo::ProcessResult a = slapo::run_process(
          {"/bin/sh", "-c", std::string(SLAPO_TUNE) + " trial --space " + zoo + args}, o);
      const slapo::ProcessResult b = slapo::run_process(
          {"/bin/sh", "-c", std::string(REGISTERED_TWIN) + " trial --space " + twin + args}, o);
      const auto ja = nlohmann::json::parse(last_line(a.out));
      const auto jb = nlohmann::json::parse(last_line(b.out));
      const std::string what = runner + budget;
      EXPECT_EQ(ja["status"], jb["status"]) << what << "\n" << a.out << "\n" << b.out;
      EXPECT_EQ(ja["status"], budget.empty() ? "ok" : "oom") << what << ": " << a.out;
      EXPECT_EQ(ja["metrics"]["peak_bytes"], jb["metrics"]["peak_bytes"]) << what;
      if (budget.empty()) {
        EXPECT_EQ(ja["metrics"]["loss_first"], jb["metrics"]["loss_first"]) << what;
        EXPECT_EQ(ja["metrics"]["loss_last"], jb["metrics"]["loss_last"]) << what;
      }
    }
  }
}

}  // namespace
