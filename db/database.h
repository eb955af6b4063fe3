#pragma once
// The tuning database: every trial of every task, in SQLite.
//
// A *task* is everything that makes two measurements comparable: the workload, the space, the
// runner and its world size, and the fingerprint of the machine and software. A *trial* is one
// configuration of a task and what became of it. Re-running a task finds its trials by the
// configuration's stable hash (an indexed lookup) and measures nothing twice by accident; a
// *re-measurement* is a deliberate further measurement of a recorded trial (the tuner's
// confirmation of its best few), kept apart so the first measurement is never overwritten.
//
// The file uses WAL, a busy timeout, one transaction per write, and PRAGMA user_version for its
// schema (forward migrations). A file that is not a slapo database, has a newer schema, or is
// corrupt is refused with a clear error and never modified. sqlite3.h stays out of this header.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/metrics.h"
#include "core/objective.h"
#include "core/trial.h"

namespace slapo::db {

struct TaskKey {
  std::string workload_json;  // canonical JSON of the [workload] table
  std::string space_hash;     // Space::fingerprint()
  std::string runner = "inprocess";
  int world_size = 1;
  std::string fingerprint_json;  // machine and software: CPU, cores, memory, LibTorch, BLAS, slapo
  // A stable hash of all of the above: the task's identity.
  std::string hash() const;
};

struct TaskRecord {
  int64_t id = 0;
  TaskKey key;
  Objective objective{
      metric::kDefaultObjective};  // the metric the tuner optimizes, and its direction
  std::string created_at;          // UTC, ISO 8601
  int64_t trial_count = 0;
  std::string study;             // the task's name (--study), empty when unnamed
  std::string runner_spec_json;  // the runner spec of its last run (replay), empty before v4
};

struct TrialRecord {
  int64_t task_id = 0;
  int64_t index = -1;  // order of measurement within the task, from 0; assigned by add_trial
  Config config;
  TrialResult result;
  std::optional<double> objective;  // the task's objective metric when the trial is ok
  std::string strategy;
  uint64_t seed = 0;
  std::string started_at;  // UTC, ISO 8601
  double duration_s = 0;
  std::optional<int64_t> pruned_by;  // for pruned points: the index of the trial that proves it
  // Once the trial has been measured again (Remeasurement): the median objective over its ok
  // measurements, the first included, and how many re-measurements it has.
  std::optional<double> confirmed_objective;
  int64_t remeasured = 0;
  int64_t remeasure_failed = 0;  // re-measurements that were not ok: the trial is not ranked

  std::string config_hash() const { return config.hash(); }
  // What ranks the trial: the confirmed objective when there is one, else the first measurement.
  std::optional<double> ranking_objective() const {
    return confirmed_objective ? confirmed_objective : objective;
  }
};

// One more measurement of a recorded trial's configuration (the tuner's confirmation of its best
// few: a single measurement on a noisy machine favours the configurations that were lucky).
struct Remeasurement {
  int64_t task_id = 0;
  int64_t trial_index = 0;
  int64_t round = 0;  // 1, 2, ... per trial; assigned by add_remeasurement
  TrialResult result;
  std::optional<double> objective;  // the task's objective metric when ok
  std::string started_at;           // UTC, ISO 8601
  double duration_s = 0;
};

struct TrialFilter {
  std::optional<TrialStatus> status;
};

class Database {
 public:
  // Opens (creating when absent) a database file. Throws Error(kInvalidArgument) for a path that
  // is not a regular file, a file that is not a slapo database or has a newer schema,
  // Error(kParse) for a corrupt one, Error(kNotFound) for a missing folder, Error(kIo) when the
  // system refuses; such files are not modified. Several processes may open one new file at once.
  static std::unique_ptr<Database> open(const std::string& path);
  // Opens an existing database to change it (migrating an older schema). Error(kNotFound) when
  // the file does not exist.
  static std::unique_ptr<Database> open_existing(const std::string& path);
  // Opens an existing database for queries: nothing is written, and a read-only file or folder
  // is left without -wal or -shm files. Error(kInvalidArgument) for an older schema (a tuning
  // command upgrades it).
  static std::unique_ptr<Database> open_read_only(const std::string& path);
  // A private in-memory database (tests).
  static std::unique_ptr<Database> in_memory();

  virtual ~Database() = default;

  // The task with this key, created when new (with `objective`).
  virtual TaskRecord find_or_create_task(const TaskKey& key, const Objective& objective) = 0;
  virtual std::vector<TaskRecord> tasks() = 0;
  // Throws Error(kNotFound) listing the task ids when absent.
  virtual TaskRecord task(int64_t id) = 0;
  // The task named `study`, if any.
  virtual std::optional<TaskRecord> task_by_study(const std::string& study) = 0;
  // Names a task; Error(kInvalidArgument) when another task has that name.
  virtual void name_task(int64_t id, const std::string& study) = 0;
  // Records the runner spec (runners/runner_spec.h, JSON) the task's run used: what replay runs.
  virtual void set_runner_spec(int64_t id, const std::string& runner_spec_json) = 0;

  // Records a trial; assigns and returns its index. A configuration already recorded in the task
  // is not recorded twice: its existing index is returned — except over an `interrupted` trial,
  // which was never measured: the new record replaces it under the same index.
  virtual int64_t add_trial(TrialRecord trial) = 0;
  // The recorded trial of `config` in `task`, if any (indexed by the config's hash).
  virtual std::optional<TrialRecord> find_trial(int64_t task, const Config& config) = 0;
  // Trial `index` of `task`. Throws Error(kNotFound) naming the task and its trial count when
  // there is no such trial.
  virtual TrialRecord trial(int64_t task, int64_t index) = 0;
  // Trials of a task in the order they were measured.
  virtual std::vector<TrialRecord> trials(int64_t task, const TrialFilter& filter = {}) = 0;
  // The top `k` ok trials by `metric` (the task's objective when empty), best first: smallest
  // first when the task minimizes its objective, or, for another metric, when
  // lower_is_better(metric) (core/trial.h). By the objective, a re-measured trial ranks by its
  // confirmed objective, and one that failed a re-measurement (out of memory near the budget, say)
  // is left out: it cannot be relied on.
  virtual std::vector<TrialRecord> best(int64_t task, size_t k, const std::string& metric = "") = 0;
  // Records one more measurement of trial `m.trial_index` of `m.task_id` as its next round, and
  // sets the trial's confirmed objective (the median over its ok measurements). Returns the round.
  // Error(kNotFound) when the trial is not recorded or is not ok.
  virtual int64_t add_remeasurement(Remeasurement m) = 0;
  // The re-measurements of a task (of one trial when `trial_index` is given), by trial and round.
  virtual std::vector<Remeasurement> remeasurements(int64_t task,
                                                    std::optional<int64_t> trial_index = {}) = 0;
  // The cost model's profile stored under `key` (cost/profile.h: what it depends on), if any.
  virtual std::optional<std::string> profile(const std::string& key) = 0;
  // Stores (or replaces) the profile under `key`.
  virtual void put_profile(const std::string& key, const std::string& profile_json) = 0;
  // Deletes the trials of `task` with `status` (e.g. timeouts, to measure them again), and their
  // re-measurements. Returns how many trials were deleted.
  virtual int64_t prune(int64_t task, TrialStatus status) = 0;
};

// The current UTC time, ISO 8601 with milliseconds.
std::string utc_now();

}  // namespace slapo::db
