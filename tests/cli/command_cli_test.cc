// A training script as a user brings one, end to end through slapo-tune: the Python example tuned
// on one rank and on two with rank-0-only output, a real out-of-memory under --memory-budget used
// for pruning, early stopping, studies, replay from elsewhere, and interruption at random moments.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_support.h"

extern char** environ;

namespace {

using slapo::testing::last_line;
using slapo::testing::Outcome;
using slapo::testing::run;
using slapo::testing::temp_db;
using slapo::testing::write_temp;

const std::string kExample = std::string(SLAPO_SOURCE_DIR) + "/examples/python/train_gpt.py";

bool have_torch() {
  return access("/usr/bin/python3", X_OK) == 0 &&
         std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

nlohmann::json trials_of(const std::string& db, const std::string& extra = "") {
  const Outcome t = run("db trials --db " + db + " --format json " + extra);
  EXPECT_EQ(t.exit_code, 0) << t.err;
  return nlohmann::json::parse(t.out);
}

// The example's knobs: a batch size that fits and two that cannot under a 2 GiB address space.
// (One that fits only: with two, the example's peak_rss_bytes reports would predict the large ones
// out of memory and they would never run — MemoryReportsPruneWhatWouldNotFit tests that.)
const char* kExampleSpace = R"(
[knobs]
batch_size = { values = [8, 4096, 8192], mem = "up" }
checkpoint = { values = [false, true], mem = "down" }
)";

std::string example_command() {
  return "-- /usr/bin/python3 " + kExample +
         " --batch-size {batch_size} --checkpoint {checkpoint} --steps 3 --warmup 1";
}

TEST(CommandCliTest, ThePythonExampleIsTunedOnOneRankWithARealOutOfMemory) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed (scripts/setup.sh does)";
  const std::string db = temp_db("example1");
  const std::string space = write_temp("example1.toml", kExampleSpace);
  const Outcome r = run("single-device --space " + space + " --db " + db +
                        " --strategy exhaustive --trials 0 --objective samples_per_s "
                        "--memory-budget 2GiB --json " +
                        example_command());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::map<std::string, int> statuses;
  bool allocator_message = false;
  for (const auto& t : trials_of(db)) {
    const std::string status = t["status"];
    ++statuses[status];
    const int batch = t["config"]["batch_size"];
    if (batch <= 8) {
      EXPECT_EQ(status, "ok") << t.dump();
      EXPECT_GT(t["metrics"]["samples_per_s"].get<double>(), 0);
      EXPECT_GT(t["metrics"]["peak_rss_bytes"].get<double>(), 0);  // every metric is recorded
      // What --memory-budget caps (address space) is more than what is resident.
      EXPECT_GT(t["metrics"]["peak_vm_bytes"].get<double>(),
                t["metrics"]["peak_rss_bytes"].get<double>());
      EXPECT_TRUE(t["metrics"].contains("loss"));
    } else {
      EXPECT_TRUE(status == "oom" || status == "pruned") << t.dump();
      if (status == "oom")
        allocator_message |=
            t["error"].get<std::string>().find("can't allocate memory") != std::string::npos;
      if (status == "pruned") {
        EXPECT_FALSE(t["pruned_by"].is_null()) << t.dump();
      }
    }
  }
  EXPECT_EQ(statuses["ok"], 2);
  EXPECT_GE(statuses["oom"], 1);
  EXPECT_GE(statuses["pruned"], 1);  // the out-of-memory trial proved a larger batch out too
  EXPECT_TRUE(allocator_message);
}

TEST(CommandCliTest, ThePythonExampleIsTunedOnTwoRanksThatPrintOnRankZeroOnly) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed (scripts/setup.sh does)";
  const std::string db = temp_db("example2");
  const std::string space = write_temp("example2.toml", R"(
[knobs]
batch_size = { values = [8, 4096], mem = "up" }
checkpoint = { values = [0] }
)");
  const Outcome r = run("single-node --nproc 2 --space " + space + " --db " + db +
                        " --strategy exhaustive --trials 0 --objective samples_per_s "
                        "--memory-budget 2GiB " +
                        example_command());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto trials = trials_of(db);
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0]["status"], "ok") << trials[0].dump();
  EXPECT_EQ(trials[1]["status"], "oom") << trials[1].dump();
  // The best, ready to paste: two ranks the way torchrun starts them.
  EXPECT_NE(r.out.find("reproduce it: cd "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("torchrun --standalone --nproc-per-node 2 " + kExample + " --batch-size 8"),
            std::string::npos)
      << r.out;
}

// A fake trainer: reports $SLAPO_RATE-like samples/s from its knobs every 50 ms for 1 s.
const char* kRateScript = R"(#!/bin/sh
rate=$(( $1 * 10 ))
[ "$2" = 1 ] && rate=$(( rate / 4 ))
i=0
while [ $i -lt 20 ]; do
  echo "{\"step\": $i, \"samples_per_s\": $rate}" >> "$SLAPO_METRICS_FILE"
  sleep 0.05
  i=$(( i + 1 ))
done
echo "slapo-metrics: {\"samples_per_s\": $rate}"
)";

TEST(CommandCliTest, EarlyStoppingPrunesTheClearlySlowerAndKeepsTheBest) {
  const std::string db = temp_db("early");
  const std::string script = write_temp("rate.sh", kRateScript);
  const std::string space = write_temp("early.toml", R"(
[knobs]
size = { values = [5, 6, 7, 8] }
slow = { values = [0, 1] }
)");
  const Outcome r = run("single-device --space " + space + " --db " + db +
                        " --strategy exhaustive --trials 0 --objective samples_per_s --early-stop "
                        "--json -- sh " +
                        script + " {size} {slow}");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto summary = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(summary["best_objective"], 80);
  int pruned = 0;
  for (const auto& t : trials_of(db)) {
    if (t["status"] == "pruned") {
      ++pruned;
      EXPECT_EQ(t["config"]["slow"], 1) << t.dump();
      EXPECT_NE(t["error"].get<std::string>().find("stopped early at step"), std::string::npos);
      EXPECT_LT(t["metrics"]["wall_s"].get<double>(), 0.9);
    }
  }
  EXPECT_GE(pruned, 2);
}

TEST(CommandCliTest, StudiesNameTasksAndReplayRunsWhereTheTuningRan) {
  const std::string db = temp_db("study");
  const std::string dir =
      std::filesystem::weakly_canonical(::testing::TempDir() + "/study_" + std::to_string(getpid()))
          .string();
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  std::ofstream(dir + "/train.sh") << "echo throughput: $(( $1 * ${SCALE:-1} ))\n";
  const std::string space = write_temp("study.toml", "[knobs]\nbatch = { values = [1, 2, 3] }\n");
  const std::string tune = "cd " + dir + " && " + std::string(SLAPO_TUNE) +
                           " single-device --space " + space + " --db " + db +
                           " --strategy exhaustive --trials 0 --study small --env SCALE=10 -- ";
  ASSERT_EQ(std::system((tune + "sh train.sh {batch} >/dev/null").c_str()), 0);
  // The same name for a run whose measurements would not compare: refused, saying why.
  const int refused = std::system((tune + "sh train.sh {batch} --steps 5 >/dev/null 2>&1").c_str());
  EXPECT_EQ(WEXITSTATUS(refused), 2);
  const Outcome tasks = run("db tasks --db " + db);
  EXPECT_NE(tasks.out.find("small"), std::string::npos) << tasks.out;
  // Replay from another directory: the recorded directory and environment are used.
  const Outcome replay = run("replay --db " + db + " --study small");
  ASSERT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("reproduce cd " + dir + " && SCALE=10 SLAPO_BATCH=3 sh train.sh 3"),
            std::string::npos)
      << replay.out;
  EXPECT_NE(replay.out.find("30"), std::string::npos) << replay.out;
  // Sorting by a metric no trial reported is refused, with the ones there are.
  const Outcome sort = run("db trials --db " + db + " --study small --sort nope");
  EXPECT_EQ(sort.exit_code, 2);
  EXPECT_NE(sort.err.find("--sort nope: no trial of task 1 reported it (metrics: throughput, "
                          "wall_s)"),
            std::string::npos)
      << sort.err;
  // A typo in a placeholder never reaches the script.
  const Outcome typo =
      run("single-device --space " + space + " --db " + db + " -- sh train.sh {bacth}");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("placeholder {bacth}: " + space +
                          " declares no knob 'bacth' (did you "
                          "mean {batch}?)"),
            std::string::npos)
      << typo.err;
}

// A command that fails whatever the configuration (here: prints no metric) stops the run after
// five trials alike, each recorded with its reason, exit 1; --stop-after-failures 0 goes on.
TEST(CommandCliTest, ACommandThatAlwaysFailsAlikeStopsTheRun) {
  const std::string space =
      write_temp("alike.toml", "[knobs]\nx = { range = [1, 6] }\ny = { choice = ['a', 'b'] }\n");
  const std::string db = temp_db("alike");
  const Outcome stopped = run("single-device --space " + space + " --db " + db +
                              " --trials 0 --json -- sh -c 'echo nothing'");
  EXPECT_EQ(stopped.exit_code, 1) << stopped.err;
  const nlohmann::json summary = nlohmann::json::parse(last_line(stopped.out));
  EXPECT_EQ(summary["measured"], 5) << summary.dump();
  EXPECT_NE(summary["stopped_because"].get<std::string>().find(
                "5 trials in a row failed alike (runtime_error: the command reported no metric"),
            std::string::npos)
      << summary.dump();
  EXPECT_EQ(trials_of(db).size(), 5u);
  const Outcome on = run("single-device --space " + space + " --db " + db +
                         " --trials 0 --json --stop-after-failures 0 -- sh -c 'echo nothing'");
  EXPECT_EQ(nlohmann::json::parse(last_line(on.out))["measured"], 7) << on.out;
}

// The processes whose command line holds `marker`, other than ps and grep themselves.
int processes_with(const std::string& marker) {
  const std::string command = "ps -eo args | grep -F -- '" + marker + "' | grep -v grep | wc -l";
  FILE* p = popen(command.c_str(), "r");
  int n = -1;
  if (p) {
    if (fscanf(p, "%d", &n) != 1) n = -1;
    pclose(p);
  }
  return n;
}

// Under --memory-budget a command's memory reports are learned from: the run starts at the lean
// corner, and what the reports predict over the budget is pruned with the prediction, not run.
TEST(CommandCliTest, MemoryReportsPruneWhatWouldNotFit) {
  const std::string db = temp_db("memory_reports");
  const std::string tag = "slapo_memory_" + std::to_string(getpid());
  // 100 MiB + 40 MiB per sample; past 1536 MiB the "script" runs out of memory.
  const std::string script =
      write_temp(tag + ".sh",
                 "mib=$((100 + 40 * $1))\n"
                 "if [ $mib -gt 1536 ]; then echo 'MemoryError' >&2; exit 1; fi\n"
                 "echo \"slapo-metrics: {\\\"peak_rss_mib\\\": $mib, \\\"throughput\\\": $1}\"\n");
  const std::string space = write_temp(
      tag + ".toml",
      "[knobs]\nbatch_size = { range = [1, 64], mem = \"up\" }\nmode = { choice = [\"a\", \"b\"] }\n");
  const Outcome r = run("single-device --space " + space + " --db " + db +
                        " --strategy random --trials 0 --memory-budget 1536MiB --json -- sh " +
                        script + " {batch_size} {mode}");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json trials = trials_of(db);
  ASSERT_EQ(trials.size(), 128u);
  EXPECT_EQ(trials[0]["config"]["batch_size"], 1) << "the run did not start at the lean corner";
  size_t predicted = 0, oom = 0;
  for (const auto& t : trials) {
    const int batch = t["config"]["batch_size"];
    if (t["status"] == "oom") ++oom;
    if (t["error"].get<std::string>().find("predicted out of memory") != std::string::npos) {
      ++predicted;
      EXPECT_GT(100 + 40 * batch, 1536) << t.dump();  // only what truly does not fit
    }
  }
  // 2 × 29 configurations do not fit; the reports and the trends leave at most a few to run.
  EXPECT_GT(predicted, 0u);
  EXPECT_LE(oom, 4u) << "out-of-memory trials run despite the reports";
  // Reports of what the budget caps: no out of memory came as a surprise to the fit.
  const nlohmann::json summary = nlohmann::json::parse(last_line(r.out));
  EXPECT_TRUE(summary["memory_metric_misses"].is_null()) << summary.dump();
}

// Reports that miss part of what the budget caps (resident memory under an address-space cap,
// say): the summary names the trial that ran out of memory where their fit said it fits.
TEST(CommandCliTest, ASummarySaysWhenTheMemoryReportsMissPartOfTheBudget) {
  const std::string db = temp_db("memory_misses");
  const std::string tag = "slapo_misses_" + std::to_string(getpid());
  // Reports 100 MiB + 10 MiB per sample, and runs out of memory past batch 6: by its reports,
  // far under the budget of 1 GiB.
  const std::string script =
      write_temp(tag + ".sh",
                 "if [ $1 -gt 6 ]; then echo 'MemoryError' >&2; exit 1; fi\n"
                 "echo \"slapo-metrics: {\\\"peak_rss_mib\\\": $((100 + 10 * $1)), "
                 "\\\"throughput\\\": $1}\"\n");
  const std::string space =
      write_temp(tag + ".toml", "[knobs]\nbatch_size = { range = [1, 8], mem = \"up\" }\n");
  const Outcome r = run("single-device --space " + space + " --db " + db +
                        " --strategy exhaustive --trials 0 --memory-budget 1GiB -- sh " + script +
                        " {batch_size}");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("memory: peak_rss_mib under-predicts what the budget caps: trial 6 "
                       "(batch_size=7) ran out of memory where its fit over batch_size predicted "
                       "170 MiB, under the budget of 1024 MiB; --memory-budget caps address space"),
            std::string::npos)
      << r.out;
}

TEST(CommandCliTest, InterruptedTenTimesAtRandomNothingIsLostOrOrphanedOrMeasuredTwice) {
  const std::string db = temp_db("interrupt");
  const std::string tag = "slapo_interrupt_" + std::to_string(getpid());
  const std::string log = ::testing::TempDir() + "/" + tag + ".log";
  std::remove(log.c_str());
  // A trial: a child that would outlive it (sleep in the background), 0.2-0.4 s of work, then a
  // line in the log of completed measurements, its metric, and exit.
  const std::string script = write_temp(tag + ".sh",
                                        "sleep 30 &\nsleep 0.$(( 2 + $1 % 3 ))\n"
                                        "echo $1 >> " +
                                            log +
                                            "\n"
                                            "echo throughput: $1\n");
  const std::string space = write_temp(tag + ".toml", "[knobs]\nx = { range = [1, 24] }\n");
  const std::vector<std::string> argv = {SLAPO_TUNE,   "single-device",
                                         "--space",    space,
                                         "--db",       db,
                                         "--strategy", "random",
                                         "--trials",   "0",
                                         "--confirm",  "1",
                                         "--",         "sh",
                                         script,       "{x}"};
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> when(0.05, 2.0);
  for (int i = 0; i < 10; ++i) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, SLAPO_TUNE, &actions, nullptr, args.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    std::this_thread::sleep_for(std::chrono::duration<double>(when(rng)));
    kill(pid, SIGINT);
    int status = 0;
    waitpid(pid, &status, 0);
    // It exits by itself (130 when its handler ran; killed by SIGINT when it came before).
    EXPECT_TRUE((WIFEXITED(status) && (WEXITSTATUS(status) == 130 || WEXITSTATUS(status) == 0)) ||
                (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT))
        << "interrupt " << i << ": status " << status;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(processes_with(script), 0) << "interrupt " << i << " left a trial's process behind";
  }
  // Resumed to the end: every configuration measured, none of them twice.
  const Outcome done = run("single-device --space " + space + " --db " + db +
                           " --strategy random --trials 0 --confirm 1 -- sh " + script + " {x}");
  ASSERT_EQ(done.exit_code, 0) << done.out << done.err;
  std::set<std::string> ok;
  for (const auto& t : trials_of(db)) {
    EXPECT_EQ(t["status"], "ok") << t.dump();
    ok.insert(t["config"].dump());
  }
  EXPECT_EQ(ok.size(), 24u);
  std::ifstream in(log);
  std::map<std::string, int> completed;
  for (std::string line; std::getline(in, line);) ++completed[line];
  int remeasured = 0;
  for (const auto& [x, n] : completed) {
    EXPECT_LE(n, 3) << "x=" << x;  // at most: measured, and twice more by a confirmation
    remeasured += n - 1;
  }
  EXPECT_EQ(completed.size(), 24u);
  // Only the confirmation measures a configuration again (1 trial, 2 rounds, per run that reached
  // it); the search never does.
  EXPECT_LE(remeasured, 2 * 11);
}

}  // namespace
