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
#include "db/claim_owner.h"

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

// A configuration claimed by a tuner that is measuring it (a study shared by several tuners:
// tuner/shared_study.h). The claim ends when the trial is recorded, or is released when its owner
// is gone: dead on this host, or silent on any host for longer than the heartbeat timeout.
struct Claim {
  int64_t task_id = 0;
  Config config;
  ClaimOwner owner;
  std::string claimed_at;      // UTC, ISO 8601
  double heartbeat_age_s = 0;  // since the owner last said it is alive
};

enum class ClaimOutcome {
  kClaimed,         // the caller owns it now: measure it, then add_trial
  kRecorded,        // a trial of it is recorded already
  kClaimedByOther,  // another live tuner is measuring it
  kBudgetSpent,     // recorded measurements and live claims already reach the budget
};

struct TrialFilter {
  std::optional<TrialStatus> status;
};

// A cost-model profile as stored (cost/profile.h; the collectives' too): its key, the profile's
// JSON and when it was stored (UTC, ISO 8601).
struct StoredProfile {
  std::string key, profile_json, created_at;
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

  // --- A study shared by several tuners ---
  // Claims `config` of `task` for `owner` before it is measured, in one transaction that first
  // releases the claims whose owner is gone (known_gone(), or no heartbeat for `stale_after_s`).
  // `budget` > 0: refused when the task's measured trials (db::counts_as_measured) and the live
  // claims of others reach it.
  virtual ClaimOutcome claim(int64_t task, const Config& config, const ClaimOwner& owner,
                             size_t budget, double stale_after_s) = 0;
  // Takes over a claim of `task` whose owner is gone, if any: it is `owner`'s now, and its
  // configuration is returned to be measured.
  virtual std::optional<Config> adopt_orphan(int64_t task, const ClaimOwner& owner,
                                             double stale_after_s) = 0;
  // The owner is alive: its claims' heartbeats are now.
  virtual void heartbeat(const ClaimOwner& owner) = 0;
  // Gives a claim up without a result (add_trial ends a claim by itself).
  virtual void release(int64_t task, const Config& config, const ClaimOwner& owner) = 0;
  // The claims of `task` (live or not), oldest first.
  virtual std::vector<Claim> claims(int64_t task) = 0;
  // The trials of `task` recorded since `*cursor` (0: all), in the order they were written;
  // advances the cursor. How a tuner sees what the others of its study recorded.
  virtual std::vector<TrialRecord> trials_since(int64_t task, int64_t* cursor) = 0;
  // Another connection to the same file (the heartbeat's, which runs on its own thread); null for
  // an in-memory database, which no other process can share.
  virtual std::unique_ptr<Database> reopen() = 0;

  // Records a trial; assigns and returns its index. A configuration already recorded in the task
  // is not recorded twice: its existing index is returned — except over an `interrupted` trial,
  // which was never measured: the new record replaces it under the same index. Ends the
  // configuration's claim, whoever holds it.
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
  // Every stored profile, by key.
  virtual std::vector<StoredProfile> profiles() = 0;
  // Deletes the trials of `task` with `status` (e.g. timeouts, to measure them again), and their
  // re-measurements. Returns how many trials were deleted.
  virtual int64_t prune(int64_t task, TrialStatus status) = 0;
};

// Whether a recorded trial counts as a measurement against a trial budget: it ran (pruned early
// while running counts; pruned by proof without running, and interrupted, do not).
bool counts_as_measured(const TrialRecord& trial);

// The current UTC time, ISO 8601 with milliseconds.
std::string utc_now();

}  // namespace slapo::db
