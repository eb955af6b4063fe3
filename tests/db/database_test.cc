#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/process.h"
#include "db/database.h"
#include "db/lookup.h"

namespace slapo::db {
namespace {

std::string temp_path(const std::string& name) {
  static int n = 0;
  const std::string p = ::testing::TempDir() + "/db_" + std::to_string(getpid()) + "_" +
                        std::to_string(n++) + "_" + name;
  std::remove(p.c_str());
  return p;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TaskKey key(const std::string& fingerprint = "{\"cpu\":\"x\"}") {
  TaskKey k;
  k.workload_json = "{\"model\":\"gpt-tiny\"}";
  k.space_hash = "abc";
  k.fingerprint_json = fingerprint;
  return k;
}

TrialRecord trial(int64_t task, int64_t bs, TrialStatus status, std::optional<double> objective,
                  double step_ms = 1) {
  TrialRecord t;
  t.task_id = task;
  t.config.set("batch_size", bs);
  t.result.status = status;
  t.result.metrics["step_ms_median"] = step_ms;
  if (objective) t.result.metrics["samples_per_s"] = *objective;
  t.objective = objective;
  t.strategy = "random";
  t.seed = 7;
  t.duration_s = 0.5;
  return t;
}

TEST(DatabaseTest, TasksAreFoundByTheirKey) {
  auto db = Database::in_memory();
  const TaskRecord a = db->find_or_create_task(key(), {"samples_per_s", false});
  EXPECT_EQ(db->find_or_create_task(key(), {"samples_per_s", false}).id, a.id);
  const TaskRecord b = db->find_or_create_task(key("{\"cpu\":\"y\"}"), {"samples_per_s", false});
  EXPECT_NE(b.id, a.id);
  EXPECT_EQ(db->tasks().size(), 2u);
  EXPECT_EQ(db->task(a.id).key.fingerprint_json, "{\"cpu\":\"x\"}");
  try {
    db->task(99);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("no task 99 (tasks: 1, 2)"), std::string::npos);
  }
}

TEST(DatabaseTest, TrialsAreIndexedInOrderAndNeverDuplicated) {
  auto db = Database::in_memory();
  const int64_t task = db->find_or_create_task(key(), {"samples_per_s", false}).id;
  EXPECT_EQ(db->add_trial(trial(task, 8, TrialStatus::kOk, 100, 5)), 0);
  EXPECT_EQ(db->add_trial(trial(task, 16, TrialStatus::kOk, 180, 4)), 1);
  EXPECT_EQ(db->add_trial(trial(task, 32, TrialStatus::kOom, std::nullopt)), 2);
  TrialRecord pruned = trial(task, 64, TrialStatus::kPruned, std::nullopt);
  pruned.pruned_by = 2;
  EXPECT_EQ(db->add_trial(pruned), 3);
  EXPECT_EQ(db->add_trial(trial(task, 16, TrialStatus::kOk, 999)), 1);  // already measured
  const auto all = db->trials(task);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[3].pruned_by, 2);
  EXPECT_EQ(all[1].objective, 180);
  EXPECT_EQ(all[0].strategy, "random");
  EXPECT_EQ(all[0].seed, 7u);
  EXPECT_FALSE(all[0].started_at.empty());
  EXPECT_EQ(db->trials(task, {TrialStatus::kOom}).size(), 1u);
  Config c;
  c.set("batch_size", int64_t{32});
  ASSERT_TRUE(db->find_trial(task, c).has_value());
  EXPECT_EQ(db->find_trial(task, c)->result.status, TrialStatus::kOom);
  c.set("batch_size", int64_t{128});
  EXPECT_FALSE(db->find_trial(task, c).has_value());
  EXPECT_EQ(db->task(task).trial_count, 4);
  // By index.
  EXPECT_EQ(db->trial(task, 2).config.find("batch_size") != nullptr, true);
  EXPECT_EQ(std::get<int64_t>(*db->trial(task, 2).config.find("batch_size")), 32);
  try {
    db->trial(task, 9);
    ADD_FAILURE() << "trial 9 does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_STREQ(e.what(), "task 1 has no trial 9 (4 trials)");
  }
  EXPECT_THROW(db->trial(task + 7, 0), Error);
}

TEST(DatabaseTest, StudiesNameOneTaskEachAndKeepTheRunnerSpec) {
  auto db = Database::in_memory();
  const TaskRecord a = db->find_or_create_task(key(), {"samples_per_s", false});
  const TaskRecord b = db->find_or_create_task(key("{\"cpu\":\"y\"}"), {"samples_per_s", false});
  EXPECT_FALSE(db->task_by_study("small").has_value());
  db->name_task(a.id, "small");
  db->name_task(a.id, "small");  // naming it again is no change
  EXPECT_EQ(db->task_by_study("small")->id, a.id);
  EXPECT_EQ(db->task(a.id).study, "small");
  EXPECT_THROW(db->name_task(b.id, "small"), Error);
  db->set_runner_spec(b.id, "{\"kind\":\"command\"}");
  EXPECT_EQ(db->task(b.id).runner_spec_json, "{\"kind\":\"command\"}");
  EXPECT_EQ(db->task(a.id).runner_spec_json, "");
}

TEST(DatabaseTest, AnInterruptedTrialIsReplacedByItsMeasurement) {
  auto db = Database::in_memory();
  const int64_t task = db->find_or_create_task(key(), {"samples_per_s", false}).id;
  db->add_trial(trial(task, 1, TrialStatus::kOk, 10.0));
  TrialRecord stopped = trial(task, 2, TrialStatus::kInterrupted, std::nullopt);
  stopped.result.error = "interrupted by the user";
  EXPECT_EQ(db->add_trial(stopped), 1);
  EXPECT_EQ(db->add_trial(trial(task, 2, TrialStatus::kOk, 20.0)), 1);  // same index, measured
  const auto all = db->trials(task);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].result.status, TrialStatus::kOk);
  EXPECT_EQ(*all[1].objective, 20.0);
  // An ok trial is never replaced.
  EXPECT_EQ(db->add_trial(trial(task, 2, TrialStatus::kOk, 99.0)), 1);
  EXPECT_EQ(*db->trials(task)[1].objective, 20.0);
}

TEST(DatabaseTest, ProfilesAreStoredByKeyAndReplaced) {
  auto db = Database::in_memory();
  EXPECT_FALSE(db->profile("{\"model\":\"gpt-tiny\"}").has_value());
  db->put_profile("{\"model\":\"gpt-tiny\"}", "{\"points\":[1]}");
  db->put_profile("{\"model\":\"gpt-mini\"}", "{\"points\":[2]}");
  EXPECT_EQ(db->profile("{\"model\":\"gpt-tiny\"}"), "{\"points\":[1]}");
  db->put_profile("{\"model\":\"gpt-tiny\"}", "{\"points\":[3]}");
  EXPECT_EQ(db->profile("{\"model\":\"gpt-tiny\"}"), "{\"points\":[3]}");
  EXPECT_EQ(db->profile("{\"model\":\"gpt-mini\"}"), "{\"points\":[2]}");
}

TEST(DatabaseTest, BestByObjectiveAndByAnotherMetric) {
  auto db = Database::in_memory();
  const int64_t up = db->find_or_create_task(key(), {"samples_per_s", false}).id;
  db->add_trial(trial(up, 8, TrialStatus::kOk, 100, 5));
  db->add_trial(trial(up, 16, TrialStatus::kOk, 180, 3));
  db->add_trial(trial(up, 32, TrialStatus::kOk, 150, 4));
  db->add_trial(trial(up, 64, TrialStatus::kOom, std::nullopt));
  const auto top = db->best(up, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].objective, 180);
  EXPECT_EQ(top[1].objective, 150);
  const auto fastest = db->best(up, 1, "step_ms_median");  // times: smallest first
  EXPECT_EQ(fastest[0].result.metrics.at("step_ms_median"), 3);
  const int64_t down = db->find_or_create_task(key("{\"m\":1}"), {"step_ms_median", true}).id;
  db->add_trial(trial(down, 8, TrialStatus::kOk, 5));
  db->add_trial(trial(down, 16, TrialStatus::kOk, 3));
  EXPECT_EQ(db->best(down, 1)[0].objective, 3);
  EXPECT_EQ(db->prune(up, TrialStatus::kOom), 1);
  EXPECT_EQ(db->trials(up).size(), 3u);
}

Remeasurement again(int64_t task, int64_t trial_index, TrialStatus status,
                    std::optional<double> objective) {
  Remeasurement m;
  m.task_id = task;
  m.trial_index = trial_index;
  m.result.status = status;
  if (objective) m.result.metrics["samples_per_s"] = *objective;
  m.objective = objective;
  return m;
}

TEST(DatabaseTest, ReMeasuredTrialsRankByTheirMedian) {
  auto db = Database::in_memory();
  const int64_t task = db->find_or_create_task(key(), {"samples_per_s", false}).id;
  const int64_t lucky = db->add_trial(trial(task, 8, TrialStatus::kOk, 200));  // truly ~150
  const int64_t steady = db->add_trial(trial(task, 16, TrialStatus::kOk, 180));
  db->add_trial(trial(task, 32, TrialStatus::kOk, 170));
  db->add_trial(trial(task, 64, TrialStatus::kOom, std::nullopt));
  EXPECT_EQ(db->best(task, 1)[0].index, lucky);

  EXPECT_EQ(db->add_remeasurement(again(task, lucky, TrialStatus::kOk, 150)), 1);
  EXPECT_EQ(db->add_remeasurement(again(task, lucky, TrialStatus::kOk, 140)), 2);
  EXPECT_EQ(db->add_remeasurement(again(task, steady, TrialStatus::kOk, 178)), 1);
  EXPECT_EQ(db->add_remeasurement(again(task, steady, TrialStatus::kOk, 184)), 2);
  const auto top = db->best(task, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].index, steady);
  EXPECT_EQ(top[0].confirmed_objective, 180);  // median of 180, 178, 184
  EXPECT_EQ(top[0].objective, 180);            // the first measurement stays what it was
  EXPECT_EQ(top[0].remeasured, 2);
  EXPECT_EQ(top[1].index, 2);  // 170, measured once
  EXPECT_EQ(top[2].index, lucky);
  EXPECT_EQ(top[2].confirmed_objective, 150);  // median of 200, 150, 140
  EXPECT_EQ(std::get<int64_t>(best_config(*db, task)->at("batch_size")), 16);

  // A trial that fails a re-measurement (out of memory near the budget) is not ranked any more.
  EXPECT_EQ(db->add_remeasurement(again(task, steady, TrialStatus::kOom, std::nullopt)), 3);
  EXPECT_EQ(db->best(task, 1)[0].index, 2);
  EXPECT_EQ(db->trials(task)[static_cast<size_t>(steady)].remeasure_failed, 1);
  const auto rounds = db->remeasurements(task, steady);
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_EQ(rounds[2].round, 3);
  EXPECT_EQ(rounds[2].result.status, TrialStatus::kOom);
  EXPECT_EQ(db->remeasurements(task).size(), 5u);

  // Only measured, ok trials can be confirmed; the error names the trial.
  try {
    db->add_remeasurement(again(task, 3, TrialStatus::kOk, 1));
    ADD_FAILURE() << "re-measured an out-of-memory trial";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trial 3 of task 1 is oom"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(db->add_remeasurement(again(task, 99, TrialStatus::kOk, 1)), Error);

  // Pruning trials removes their re-measurements: a new trial may reuse the index.
  const int64_t other = db->find_or_create_task(key("{\"m\":2}"), {"samples_per_s", false}).id;
  const int64_t flaky = db->add_trial(trial(other, 8, TrialStatus::kOk, 10));
  db->add_remeasurement(again(other, flaky, TrialStatus::kOk, 11));
  db->add_trial(trial(other, 16, TrialStatus::kTimeout, std::nullopt));
  EXPECT_EQ(db->prune(other, TrialStatus::kOk), 1);
  EXPECT_TRUE(db->remeasurements(other).empty());
}

TEST(DatabaseTest, AVersionOneFileIsMigratedWithItsTrials) {
  const std::string path = temp_path("v1.db");
  {
    // The schema of the first release, as its files are on disk.
    sqlite3* raw = nullptr;
    sqlite3_open(path.c_str(), &raw);
    const char* v1 =
        "CREATE TABLE tasks (id INTEGER PRIMARY KEY, key_hash TEXT NOT NULL UNIQUE, workload TEXT NOT NULL, "
        "space_hash TEXT NOT NULL, runner TEXT NOT NULL, world_size INTEGER NOT NULL, fingerprint TEXT NOT NULL, "
        "objective TEXT NOT NULL, minimize INTEGER NOT NULL, created_at TEXT NOT NULL);"
        "CREATE TABLE trials (id INTEGER PRIMARY KEY, task_id INTEGER NOT NULL REFERENCES tasks(id), "
        "idx INTEGER NOT NULL, config TEXT NOT NULL, config_hash TEXT NOT NULL, status TEXT NOT NULL, "
        "objective REAL, metrics TEXT NOT NULL, error TEXT NOT NULL, log_tail TEXT NOT NULL, strategy TEXT NOT NULL, "
        "seed INTEGER NOT NULL, started_at TEXT NOT NULL, duration_s REAL NOT NULL, pruned_by INTEGER, "
        "UNIQUE (task_id, idx), UNIQUE (task_id, config_hash));"
        "CREATE INDEX trials_by_objective ON trials (task_id, status, objective);"
        "INSERT INTO tasks VALUES (1, 'h', '{}', 's', 'inprocess', 1, '{}', 'samples_per_s', 0, 'then');"
        "INSERT INTO trials VALUES (1, 1, 0, '{\"batch_size\":8}', 'x', 'ok', 42.0, '{}', '', '', 'random', 0, "
        "'then', 1.0, NULL);"
        "PRAGMA application_id = 1397506384; PRAGMA user_version = 1;";
    ASSERT_EQ(sqlite3_exec(raw, v1, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);
  }
  auto db = Database::open(path);
  const auto trials = db->trials(1);
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].objective, 42.0);
  EXPECT_FALSE(trials[0].confirmed_objective.has_value());
  EXPECT_EQ(db->add_remeasurement(again(1, 0, TrialStatus::kOk, 40.0)), 1);
  EXPECT_EQ(db->best(1, 1)[0].confirmed_objective, 41.0);
}

TEST(DatabaseTest, LooksUpTheBestConfigurationForAProgram) {
  auto db = Database::in_memory();
  const int64_t here =
      db->find_or_create_task(key("{\"cpu\":\"here\"}"), {"samples_per_s", false}).id;
  const int64_t there =
      db->find_or_create_task(key("{\"cpu\":\"there\"}"), {"samples_per_s", false}).id;
  db->add_trial(trial(here, 8, TrialStatus::kOk, 100));
  db->add_trial(trial(here, 16, TrialStatus::kOk, 300));
  db->add_trial(trial(there, 32, TrialStatus::kOk, 900));
  EXPECT_EQ(std::get<int64_t>(best_config(*db, here)->at("batch_size")), 16);
  const std::string workload = key().workload_json;
  EXPECT_EQ(
      std::get<int64_t>(best_config_for(*db, workload, "{\"cpu\":\"here\"}")->at("batch_size")),
      16);
  EXPECT_FALSE(best_config_for(*db, workload, "{\"cpu\":\"new\"}").has_value());
  EXPECT_EQ(std::get<int64_t>(
                best_config_for(*db, workload, "{\"cpu\":\"new\"}", true)->at("batch_size")),
            32);
  EXPECT_FALSE(best_config_for(*db, "{\"model\":\"other\"}", "{\"cpu\":\"here\"}").has_value());
}

TEST(DatabaseTest, PersistsAcrossOpens) {
  const std::string path = temp_path("persist.db");
  {
    auto db = Database::open(path);
    const int64_t task = db->find_or_create_task(key(), {"samples_per_s", false}).id;
    db->add_trial(trial(task, 8, TrialStatus::kOk, 100));
  }
  auto db = Database::open_existing(path);
  ASSERT_EQ(db->tasks().size(), 1u);
  EXPECT_EQ(db->trials(db->tasks()[0].id).size(), 1u);
  EXPECT_THROW(Database::open_existing(temp_path("absent.db")), Error);
}

std::string open_error(const std::string& path) {
  try {
    Database::open(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DatabaseTest, ForeignNewerAndCorruptFilesAreRefusedAndUntouched) {
  const std::string text = temp_path("notes.txt");
  std::ofstream(text) << "just some text, not a database\n";
  const std::string before = slurp(text);
  EXPECT_NE(open_error(text).find("not a slapo database (not an SQLite file)"), std::string::npos);
  EXPECT_EQ(slurp(text), before);

  const std::string foreign = temp_path("foreign.db");
  {
    sqlite3* raw = nullptr;
    sqlite3_open(foreign.c_str(), &raw);
    sqlite3_exec(raw, "CREATE TABLE t (x); INSERT INTO t VALUES (1);", nullptr, nullptr, nullptr);
    sqlite3_close(raw);
  }
  const std::string foreign_before = slurp(foreign);
  EXPECT_NE(open_error(foreign).find("another application's SQLite file"), std::string::npos);
  EXPECT_EQ(slurp(foreign), foreign_before);

  const std::string newer = temp_path("newer.db");
  Database::open(newer).reset();
  {
    sqlite3* raw = nullptr;
    sqlite3_open(newer.c_str(), &raw);
    sqlite3_exec(
        raw,
        "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE; PRAGMA user_version = 99;",
        nullptr, nullptr, nullptr);
    sqlite3_close(raw);
  }
  const std::string newer_before = slurp(newer);
  EXPECT_NE(open_error(newer).find("written by a newer slapo (schema 99"), std::string::npos);
  EXPECT_EQ(slurp(newer), newer_before);

  // Truncated: the header survives but the pages do not.
  const std::string full = temp_path("full.db");
  {
    auto db = Database::open(full);
    const int64_t task = db->find_or_create_task(key(), {"samples_per_s", false}).id;
    for (int i = 0; i < 200; ++i) db->add_trial(trial(task, i, TrialStatus::kOk, i));
  }
  const std::string bytes = slurp(full);
  const std::string truncated = temp_path("truncated.db");
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  const std::string truncated_before = slurp(truncated);
  std::string error;
  try {
    auto db = Database::open(truncated);
    for (const auto& t : db->tasks()) db->trials(t.id);
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_FALSE(error.empty()) << "a truncated database was read without complaint";
  EXPECT_EQ(slurp(truncated), truncated_before);
}

std::set<std::string> committed_lines(const std::string& out) {
  std::set<std::string> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("committed ", 0) == 0) lines.insert(line);
  }
  return lines;
}

bool integrity_ok(const std::string& path) {
  sqlite3* raw = nullptr;
  sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(raw, "PRAGMA integrity_check", -1, &s, nullptr);
  const bool ok = sqlite3_step(s) == SQLITE_ROW &&
                  std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 0))) == "ok";
  sqlite3_finalize(s);
  sqlite3_close(raw);
  return ok;
}

TEST(DatabaseReliabilityTest, SigkillInTheMiddleOfWritingLosesNothingCommitted) {
  std::mt19937 rng(1234);
  for (int round = 0; round < 5; ++round) {
    const std::string path = temp_path("killed.db");
    // Kill the writer at a random moment while it writes thousands of trials.
    const double delay_s = 0.05 + std::uniform_real_distribution<double>(0, 0.4)(rng);
    ProcessOptions o;
    o.timeout_s = delay_s;  // run_process kills the whole group with SIGKILL at the limit
    const ProcessResult p = run_process({DB_WRITER, path, "w", "100000"}, o);
    ASSERT_TRUE(p.timed_out) << "the writer finished before it could be killed";
    const auto committed = committed_lines(p.out);
    EXPECT_TRUE(integrity_ok(path)) << "round " << round;
    auto db = Database::open(path);
    const auto tasks = db->tasks();
    ASSERT_EQ(tasks.size(), committed.empty() ? tasks.size() : 1u);
    std::set<int64_t> stored;
    if (!tasks.empty()) {
      for (const auto& t : db->trials(tasks[0].id)) stored.insert(t.index);
    }
    for (const std::string& line : committed) {
      const int64_t index = std::stoll(line.substr(line.rfind(' ') + 1));
      EXPECT_TRUE(stored.count(index))
          << "round " << round << ": committed trial " << index << " was lost";
    }
  }
}

TEST(DatabaseReliabilityTest, FourWritersAtOnce) {
  const std::string path = temp_path("concurrent.db");
  Database::open(path).reset();  // create the schema once
  std::vector<pid_t> pids;
  for (int w = 0; w < 4; ++w) {
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string id = std::to_string(w);
      execl(DB_WRITER, DB_WRITER, path.c_str(), id.c_str(), "60", static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "a writer failed (database is locked?)";
  }
  auto db = Database::open(path);
  ASSERT_EQ(db->tasks().size(), 1u);
  const auto trials = db->trials(db->tasks()[0].id);
  EXPECT_EQ(trials.size(), 240u);
  std::set<int64_t> indices;
  std::set<std::string> configs;
  for (const auto& t : trials) {
    indices.insert(t.index);
    configs.insert(t.config.canonical_json());
  }
  EXPECT_EQ(indices.size(), 240u);
  EXPECT_EQ(*indices.rbegin(), 239);
  EXPECT_EQ(configs.size(), 240u);
  EXPECT_TRUE(integrity_ok(path));
}

// Tuners started at the same instant on a file that does not exist yet: one creates it, migrates
// it and switches it to WAL; the others wait and find it done. 100 tries of 4 processes.
TEST(DatabaseReliabilityTest, FourProcessesCreateOneNewFileAtOnce) {
  const std::string path = temp_path("created.db");
  for (int attempt = 0; attempt < 100; ++attempt) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
    std::vector<pid_t> pids;
    for (int w = 0; w < 4; ++w) {
      const pid_t pid = fork();
      if (pid == 0) {
        const std::string id = std::to_string(w);
        const int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        execl(DB_WRITER, DB_WRITER, path.c_str(), id.c_str(), "2", static_cast<char*>(nullptr));
        _exit(127);
      }
      pids.push_back(pid);
    }
    for (pid_t pid : pids) {
      int status = 0;
      waitpid(pid, &status, 0);
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "attempt " << attempt << ": a process failed to open the new database";
    }
    auto db = Database::open(path);
    ASSERT_EQ(db->tasks().size(), 1u) << "attempt " << attempt;
    EXPECT_EQ(db->trials(db->tasks()[0].id).size(), 8u) << "attempt " << attempt;
  }
}

Config batch(int64_t bs) {
  Config c;
  c.set("batch_size", bs);
  return c;
}

// A pid that no process has now: a child that has exited and been reaped.
int64_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

// The claim protocol of a shared study (tuner/shared_study.h), with owners made up: a live one
// (this process), a dead one on this host, and one on another host known only by its heartbeat.
TEST(DatabaseTest, ClaimsAreExclusiveCountAgainstTheBudgetAndAreAdoptedWhenTheirOwnerIsGone) {
  auto db = Database::open(temp_path("claims.db"));
  const int64_t task = db->find_or_create_task(key(), {"samples_per_s", false}).id;
  const ClaimOwner me = ClaimOwner::self();
  ClaimOwner dead = me;
  dead.pid = dead_pid();
  ClaimOwner remote = me;
  remote.host = "another-host";
  EXPECT_FALSE(me.known_gone());
  EXPECT_TRUE(dead.known_gone());
  EXPECT_FALSE(remote.known_gone());

  db->add_trial(trial(task, 1, TrialStatus::kOk, 10));
  EXPECT_EQ(db->claim(task, batch(1), me, 0, 60), ClaimOutcome::kRecorded);
  EXPECT_EQ(db->claim(task, batch(2), remote, 0, 60), ClaimOutcome::kClaimed);
  EXPECT_EQ(db->claim(task, batch(2), me, 0, 60), ClaimOutcome::kClaimedByOther);
  EXPECT_EQ(db->claim(task, batch(3), dead, 0, 60), ClaimOutcome::kClaimed);
  // Budget 4: one measured trial and two claims leave room for one more claim, not two.
  EXPECT_EQ(db->claim(task, batch(4), me, 4, 60), ClaimOutcome::kClaimed);
  EXPECT_EQ(db->claim(task, batch(5), me, 4, 60), ClaimOutcome::kBudgetSpent);
  ASSERT_EQ(db->claims(task).size(), 3u);

  // The dead owner's claim is adopted at once; the remote one's only once its heartbeat is old.
  const auto adopted = db->adopt_orphan(task, me, 60);
  ASSERT_TRUE(adopted.has_value());
  EXPECT_EQ(*adopted, batch(3));
  EXPECT_FALSE(db->adopt_orphan(task, me, 60).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  db->heartbeat(me);
  const auto stale = db->adopt_orphan(task, me, 0.2);
  ASSERT_TRUE(stale.has_value());
  EXPECT_EQ(*stale, batch(2));
  for (const Claim& c : db->claims(task)) {
    EXPECT_EQ(c.owner.id(), me.id());
    EXPECT_LT(c.heartbeat_age_s, 0.2);  // renewed by heartbeat or adoption
  }

  // Recording a trial ends its claim; release gives one up.
  db->add_trial(trial(task, 2, TrialStatus::kOk, 20));
  db->release(task, batch(3), me);
  ASSERT_EQ(db->claims(task).size(), 1u);
  EXPECT_EQ(db->claims(task)[0].config, batch(4));

  // What others recorded, once each, in the order written.
  int64_t cursor = 0;
  EXPECT_EQ(db->trials_since(task, &cursor).size(), 2u);
  EXPECT_TRUE(db->trials_since(task, &cursor).empty());
  db->add_trial(trial(task, 4, TrialStatus::kOom, std::nullopt));
  const auto news = db->trials_since(task, &cursor);
  ASSERT_EQ(news.size(), 1u);
  EXPECT_EQ(news[0].config, batch(4));
  EXPECT_TRUE(db->claims(task).empty());
  EXPECT_NE(db->reopen(), nullptr);
  EXPECT_EQ(Database::in_memory()->reopen(), nullptr);
}

// A damaged cell names the file, the trial and the task.
TEST(DatabaseTest, ACorruptCellNamesItsTrial) {
  const std::string path = temp_path("cell.db");
  int64_t task = 0;
  {
    auto db = Database::open(path);
    task = db->find_or_create_task(key(), {"samples_per_s", false}).id;
    db->add_trial(trial(task, 8, TrialStatus::kOk, 100));
    db->add_trial(trial(task, 16, TrialStatus::kOk, 100));
  }
  sqlite3* raw = nullptr;
  sqlite3_open(path.c_str(), &raw);
  sqlite3_exec(raw, "UPDATE trials SET config = '{\"batch_size\": ' WHERE idx = 1", nullptr,
               nullptr, nullptr);
  sqlite3_close(raw);
  try {
    Database::open_read_only(path)->trials(task);
    ADD_FAILURE() << "a corrupt configuration was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_NE(std::string(e.what()).find(path + ": trial 1 of task " + std::to_string(task)),
              std::string::npos)
        << e.what();
  }
}

// A cell longer than any slapo writes is refused, not allocated.
TEST(DatabaseTest, AnOversizedCellIsRefusedNotRead) {
  const std::string path = temp_path("huge.db");
  int64_t task = 0;
  {
    auto db = Database::open(path);
    task = db->find_or_create_task(key(), {"samples_per_s", false}).id;
    db->add_trial(trial(task, 8, TrialStatus::kOk, 100));
  }
  sqlite3* raw = nullptr;
  sqlite3_open(path.c_str(), &raw);
  ASSERT_EQ(sqlite3_exec(raw, "UPDATE trials SET log_tail = zeroblob(80 * 1024 * 1024)", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  try {
    Database::open_read_only(path)->trials(task);
    ADD_FAILURE() << "an 80 MiB cell was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_NE(std::string(e.what()).find("a cell is longer than 64 MiB"), std::string::npos)
        << e.what();
  }
}

// A read-only open writes nothing: not through the API, and no -wal or -shm file stays behind.
TEST(DatabaseTest, ReadOnlyOpenWritesNothing) {
  const std::string path = temp_path("queried.db");
  int64_t task = 0;
  {
    auto db = Database::open(path);
    task = db->find_or_create_task(key(), {"samples_per_s", false}).id;
    db->add_trial(trial(task, 8, TrialStatus::kOk, 100));
  }
  auto db = Database::open_read_only(path);
  EXPECT_EQ(db->trials(task).size(), 1u);
  EXPECT_THROW(db->add_trial(trial(task, 16, TrialStatus::kOk, 50)), Error);
  db.reset();
  EXPECT_NE(access((path + "-wal").c_str(), F_OK), 0);
  EXPECT_NE(access((path + "-shm").c_str(), F_OK), 0);
  EXPECT_EQ(Database::open(path)->trials(task).size(), 1u);
  EXPECT_THROW(Database::open_read_only(temp_path("absent.db")), Error);
}

}  // namespace
}  // namespace slapo::db
