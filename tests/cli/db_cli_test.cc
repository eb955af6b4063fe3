// slapo-tune trial --db and slapo-tune db, end to end.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "tests/cli/cli_support.h"

namespace {

using slapo::testing::kTrialSpace;
using slapo::testing::last_line;
using slapo::testing::Outcome;
using slapo::testing::run;

class DbCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = ::testing::TempDir() + "/cli_" + std::to_string(getpid()) + "_" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    std::remove(db_.c_str());
    record(R"({"batch_size": 8, "ckpt_ratio": 0.5, "attn": "naive"})");
    record(R"({"batch_size": 16, "ckpt_ratio": 0.0, "attn": "baddbmm"})");
    record(
        R"({"batch_size": 64, "ckpt_ratio": 0.0, "attn": "naive"})");  // ~7.6 MB: over the budget
  }
  void record(const std::string& config, const std::string& extra = "") {
    // The budget is part of the task: every trial of it runs under the same one.
    Outcome r =
        run("trial --space " + kTrialSpace + " --runner inprocess --memory-budget 5MiB --db " +
            db_ + " --config '" + config + "'" + extra);
    ASSERT_NE(r.exit_code, 2) << r.err;
  }
  std::string db_;
};

TEST_F(DbCliTest, TrialsInJsonInTheOrderMeasured) {
  Outcome r = run("db trials --db " + db_ + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto trials = nlohmann::json::parse(r.out);
  ASSERT_EQ(trials.size(), 3u);
  for (size_t i = 0; i < trials.size(); ++i) {
    EXPECT_EQ(trials[i]["index"], i);
    for (const char* key : {"index", "status", "config", "objective", "metrics", "error",
                            "started_at", "duration_s", "strategy", "seed"}) {
      EXPECT_TRUE(trials[i].contains(key)) << key;
    }
  }
  EXPECT_EQ(trials[0]["config"]["batch_size"], 8);
  EXPECT_EQ(trials[2]["status"], "oom");
  EXPECT_TRUE(trials[2]["objective"].is_null());
  EXPECT_GT(trials[1]["objective"].get<double>(), 0);
  Outcome oom = run("db trials --db " + db_ + " --status oom --format csv");
  EXPECT_EQ(std::count(oom.out.begin(), oom.out.end(), '\n'), 2);
}

TEST_F(DbCliTest, RecordingTheSameConfigurationTwiceKeepsOne) {
  record(R"({"batch_size": 8, "ckpt_ratio": 0.5, "attn": "naive"})");
  Outcome r = run("db tasks --db " + db_ + " --format json");
  const auto tasks = nlohmann::json::parse(r.out);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0]["trials"], 3);
  EXPECT_EQ(tasks[0]["model"], "gpt-tiny");
}

TEST_F(DbCliTest, BestIsAConfigurationThatConfigAccepts) {
  Outcome best = run("db best --db " + db_ + " --format json");
  ASSERT_EQ(best.exit_code, 0) << best.err;
  const std::string file = slapo::testing::write_temp("best.json", best.out);
  const auto config = nlohmann::json::parse(best.out);
  EXPECT_TRUE(config.contains("batch_size"));
  Outcome again = run("trial --space " + kTrialSpace +
                      " --runner inprocess --memory-budget 5MiB --config @" + file + " --json");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(last_line(again.out))["config"], config);
}

TEST_F(DbCliTest, ShowExportPrune) {
  Outcome show = run("db show --db " + db_ + " --format json");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const auto task = nlohmann::json::parse(show.out);
  EXPECT_EQ(task["workload"]["model"], "gpt-tiny");
  EXPECT_TRUE(task["fingerprint"].contains("blas"));
  Outcome one = run("db show --db " + db_ + " --trial 2");
  EXPECT_EQ(nlohmann::json::parse(one.out)["status"], "oom");
  Outcome csv = run("db export --db " + db_);
  EXPECT_EQ(csv.out.substr(0, 17), "index,status,obje");
  Outcome prune = run("db prune --db " + db_ + " --status oom");
  EXPECT_EQ(prune.out, "deleted 1 oom trials of task 1\n");
  EXPECT_EQ(nlohmann::json::parse(run("db trials --db " + db_ + " --format json").out).size(), 2u);
}

TEST_F(DbCliTest, ReplayReMeasuresFromTheRecordAlone) {
  // Which recorded configuration is fastest depends on the machine's timing: ask the database.
  const auto best_config = nlohmann::json::parse(run("db best --db " + db_ + " --format json").out);
  const bool one_pass = best_config["attn"] == "baddbmm";
  Outcome best = run("replay --db " + db_ + " --print-schedule --steps 2");
  ASSERT_EQ(best.exit_code, 0) << best.out << best.err;
  EXPECT_EQ(best.out.find("sch[\"h.0.attn\"].replace(slapo::models::OnePassAttentionImpl)") !=
                std::string::npos,
            one_pass)
      << best.out;
  EXPECT_NE(best.out.find("status    recorded ok, measured ok"), std::string::npos);
  EXPECT_NE(best.out.find("samples_per_s"), std::string::npos);
  Outcome oom = run("replay --db " + db_ + " --trial 2");
  EXPECT_EQ(oom.exit_code, 1);  // still out of memory under the task's budget
  EXPECT_NE(oom.out.find("status    recorded oom, measured oom"), std::string::npos) << oom.out;
  EXPECT_EQ(run("replay --db " + db_ + " --trial 7").exit_code, 2);
}

TEST_F(DbCliTest, ReplayOfACommandTask) {
  const std::string db = db_ + ".command";
  std::remove(db.c_str());
  Outcome r = run("trial --space " + kTrialSpace + " --db " + db +
                  " --config '{\"batch_size\": 8, \"ckpt_ratio\": 0.5, \"attn\": \"naive\"}'"
                  " --metric-regex 'speed=([0-9]+)' -- sh -c 'echo speed=$SLAPO_BATCH_SIZE'");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Outcome replay = run("replay --db " + db);
  EXPECT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("throughput"), std::string::npos) << replay.out;
  EXPECT_NE(replay.out.find("8"), std::string::npos);
  Outcome schedule = run("replay --db " + db + " --print-schedule");
  EXPECT_EQ(schedule.exit_code, 2);
  EXPECT_NE(schedule.err.find("runs an external command; slapo does not know its schedule"),
            std::string::npos);
}

TEST_F(DbCliTest, AProgramStartsWithTheTunedSchedule) {
  // SetUp recorded under a 5MiB budget: the same workload key needs the same budget.
  const std::string space = slapo::testing::write_temp(
      "tuned.toml",
      "[workload]\nmodel = \"gpt-tiny\"\nbatch_size = 8\nseq_len = 16\nwarmup = 1\nsteps = 3\n"
      "threads = 1\nmemory_budget = 5242880\n[knobs]\nbatch_size = { pow2 = [4, 64] }\n");
  const std::string command =
      std::string(TUNED_EXAMPLE) + " " + space + " " + db_ + " > " + db_ + ".out 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  std::ifstream in(db_ + ".out");
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const slapo::Config best =
      slapo::Config::from_json(run("db best --db " + db_ + " --format json").out);
  EXPECT_NE(output.find("using the tuned configuration: " + best.to_string()), std::string::npos)
      << output;
  EXPECT_NE(output.find("step 2 loss"), std::string::npos);
}

TEST_F(DbCliTest, BadInput) {
  EXPECT_EQ(run("db trials --db /nonexistent.db").exit_code, 2);
  EXPECT_EQ(run("db frobnicate --db " + db_).exit_code, 2);
  Outcome task = run("db trials --db " + db_ + " --task 9");
  EXPECT_EQ(task.exit_code, 2);
  EXPECT_NE(task.err.find("no task 9 (tasks: 1)"), std::string::npos) << task.err;
  EXPECT_EQ(run("db prune --db " + db_).exit_code, 2);
  EXPECT_EQ(run("db trials --db " + db_ + " --status fine").exit_code, 2);
  const std::string text = slapo::testing::write_temp("notes.db", "hello\n");
  Outcome foreign = run("db tasks --db " + text);
  EXPECT_EQ(foreign.exit_code, 2);
  EXPECT_NE(foreign.err.find("not a slapo database"), std::string::npos);
}

std::string slurp(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) return "";
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// docs/cli.md: a malformed or unreadable file exits 2 — databases too — with one line naming it,
// and the file is left as it was.
TEST_F(DbCliTest, UnusableDatabaseFilesExitTwoAndStayUntouched) {
  const std::string bytes = slurp(db_);
  ASSERT_GT(bytes.size(), 4096u);
  const std::string truncated = slapo::testing::write_temp("truncated.db", bytes.substr(0, 4096));
  const std::string fake_header =
      slapo::testing::write_temp("fake.db", std::string("SQLite format 3\0", 16) + "garbage");
  const std::string cases[][2] = {
      {truncated, "is corrupt"},
      {fake_header, "is corrupt"},
      {"/dev/null", "not a regular file"},
      {::testing::TempDir(), "not a regular file"},
      {::testing::TempDir() + "/no/such/folder/x.db", "no such"},
  };
  for (const auto& [path, why] : cases) {
    const std::string before = slurp(path);
    for (const std::string& command :
         {"db tasks --db " + path, "db trials --db " + path, "report --db " + path + " --out -",
          "trial --space " + kTrialSpace + " --runner inprocess --db " + path +
              " --config '{\"batch_size\": 8, \"ckpt_ratio\": 0.0, \"attn\": \"naive\"}'"}) {
      const Outcome r = run(command);
      EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.err;
      EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(why), std::string::npos) << command << "\n" << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
    EXPECT_EQ(slurp(path), before) << path;
  }
}

// Queries write nothing: no -wal or -shm file stays behind, and the file is byte-identical.
TEST_F(DbCliTest, QueriesLeaveTheFileAsTheyFoundIt) {
  std::remove((db_ + "-wal").c_str());
  std::remove((db_ + "-shm").c_str());
  const std::string before = slurp(db_);
  for (const std::string& command :
       {"db tasks --db " + db_, "db trials --db " + db_, "db best --db " + db_,
        "db export --db " + db_, "report --db " + db_ + " --out " + db_ + ".html"}) {
    ASSERT_EQ(run(command).exit_code, 0) << command;
    EXPECT_NE(access((db_ + "-wal").c_str(), F_OK), 0) << command << " left a -wal file";
    EXPECT_NE(access((db_ + "-shm").c_str(), F_OK), 0) << command << " left a -shm file";
  }
  EXPECT_EQ(slurp(db_), before);
}

// A database on a read-only file system (a read-only bind mount of its folder: the only way to
// make a folder read-only for root, who runs CI) is queried; writing it fails in one line.
TEST_F(DbCliTest, ADatabaseInAReadOnlyFolderIsQueried) {
  const std::string folder = ::testing::TempDir() + "/rw_" + std::to_string(getpid());
  const std::string frozen = ::testing::TempDir() + "/ro_" + std::to_string(getpid());
  ASSERT_EQ(
      std::system(
          ("mkdir -p " + folder + " " + frozen + " && cp " + db_ + " " + folder + "/t.db").c_str()),
      0);
  if (std::system(("mount --bind " + folder + " " + frozen + " 2>/dev/null && mount -o " +
                   "remount,ro,bind " + frozen + " 2>/dev/null")
                      .c_str()) != 0) {
    std::system(("umount " + frozen + " 2>/dev/null").c_str());
    GTEST_SKIP() << "cannot make a read-only bind mount here (not root?)";
  }
  const std::string path = frozen + "/t.db";
  const Outcome trials = run("db trials --db " + path);
  const Outcome report = run("report --db " + path + " --out " + folder + "/r.html");
  const Outcome prune = run("db prune --status oom --db " + path);
  std::system(("umount " + frozen).c_str());
  EXPECT_EQ(trials.exit_code, 0) << trials.err;
  EXPECT_NE(trials.out.find("batch_size"), std::string::npos) << trials.out;
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(prune.exit_code, 1);
  EXPECT_NE(prune.err.find("cannot be written"), std::string::npos) << prune.err;
  EXPECT_NE(access((folder + "/t.db-wal").c_str(), F_OK), 0);
  EXPECT_NE(access((folder + "/t.db-shm").c_str(), F_OK), 0);
}

}  // namespace
