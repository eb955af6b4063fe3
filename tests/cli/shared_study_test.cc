// A study shared by several tuners (tuner/shared_study.h), end to end: four slapo-tune processes
// on one task and one database file, one of them killed with SIGKILL in the middle of a trial.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_support.h"

extern char** environ;

namespace {

using slapo::testing::Outcome;
using slapo::testing::run;
using slapo::testing::temp_db;
using slapo::testing::write_temp;

// Starts slapo-tune with `argv` and TUNER=`tuner` in its environment (the command line must be the
// same for all: it is part of the task).
pid_t spawn(const std::vector<std::string>& argv, int tuner) {
  std::vector<std::string> env_text = {"TUNER=" + std::to_string(tuner)};
  for (char** e = environ; *e; ++e) env_text.push_back(*e);
  std::vector<char*> env;
  for (const std::string& e : env_text) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), env.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(SharedStudyTest, FourTunersMeasureTheBudgetOnceEachAndRecoverAKilledOnesClaim) {
  const std::string db = temp_db("shared");
  const std::string tag = "slapo_shared_" + std::to_string(getpid());
  const std::string started = ::testing::TempDir() + "/" + tag + ".started";
  const std::string completed = ::testing::TempDir() + "/" + tag + ".completed";
  std::remove(started.c_str());
  std::remove(completed.c_str());
  // A trial: "x TUNER" when it starts, 0.3 s of work, "x" when it completes, then its metric.
  const std::string script =
      write_temp(tag + ".sh", "echo \"$1 $TUNER\" >> " + started + "\nsleep 0.3\necho $1 >> " +
                                  completed + "\necho throughput: $1\n");
  const std::string space = write_temp(tag + ".toml", "[knobs]\nx = { range = [1, 60] }\n");
  constexpr int kTuners = 4;
  constexpr int kBudget = 24;
  std::vector<pid_t> tuners;
  for (int k = 0; k < kTuners; ++k) {
    tuners.push_back(spawn({SLAPO_TUNE, "single-device", "--space", space, "--db", db, "--strategy",
                            "random", "--seed", std::to_string(k), "--trials",
                            std::to_string(kBudget), "--", "sh", script, "{x}"},
                           k));
  }
  // Tuner 0 is killed as its third trial starts (0.3 s of work still ahead of it).
  std::string killed_x;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (killed_x.empty() && std::chrono::steady_clock::now() < deadline) {
    int mine = 0;
    for (const std::string& line : lines_of(started)) {
      if (line.size() > 2 && line.substr(line.size() - 2) == " 0" && ++mine == 3)
        killed_x = line.substr(0, line.size() - 2);
    }
    if (killed_x.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(killed_x.empty()) << "tuner 0 never started its third trial";
  kill(tuners[0], SIGKILL);
  for (int k = 0; k < kTuners; ++k) {
    int status = 0;
    waitpid(tuners[k], &status, 0);
    if (k == 0) continue;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "tuner " << k << ": " << status;
  }

  const Outcome trials = run("db trials --db " + db + " --format json");
  ASSERT_EQ(trials.exit_code, 0) << trials.err;
  std::set<std::string> recorded;
  bool recovered = false;
  for (const auto& t : nlohmann::json::parse(trials.out)) {
    EXPECT_EQ(t["status"], "ok") << t.dump();
    recorded.insert(t["config"]["x"].dump());
    if (t["config"]["x"].dump() == killed_x) recovered = t["strategy"] == "adopted claim";
  }
  // The budget is the task's: exactly kBudget trials, each configuration once.
  EXPECT_EQ(recorded.size(), static_cast<size_t>(kBudget));
  EXPECT_TRUE(recovered) << "the killed tuner's trial (x=" << killed_x << ") was not adopted";
  // Measured to completion once each: the killed trial never completed in tuner 0.
  std::map<std::string, int> times;
  for (const std::string& x : lines_of(completed)) ++times[x];
  EXPECT_EQ(times.size(), static_cast<size_t>(kBudget));
  for (const auto& [x, n] : times)
    EXPECT_EQ(n, 1) << "x=" << x << " was measured " << n << " times";
  const Outcome claims = run("db claims --db " + db + " --format json");
  ASSERT_EQ(claims.exit_code, 0) << claims.err;
  EXPECT_EQ(nlohmann::json::parse(claims.out).size(), 0u) << claims.out;
}

}  // namespace
