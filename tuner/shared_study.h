#pragma once
// A study shared by several tuners (what Optuna calls distributed optimisation): any number of
// `slapo-tune` processes, on this machine or on others that share the database file, tune one
// task together. The database is the only channel between them:
//
//   - a tuner claims a configuration in the database before it measures it (a `claims` row with
//     its owner and a heartbeat, db/database.h); the others do not propose claimed ones, and a
//     claim is refused once the task's measured trials and live claims reach `--trials`, which is
//     so the task's total across tuners;
//   - recording the trial ends the claim; before each proposal a tuner reads what the others
//     recorded since and gives it to its strategy, so every tuner learns from every trial;
//   - a thread with its own connection renews this tuner's heartbeat every quarter of the
//     timeout while it measures; a claim whose owner is gone (its process no longer exists on this
//     host, or its heartbeat is older than the timeout) is adopted by the next tuner that looks,
//     and measured by it.
//
// A tuner alone on its task pays one small transaction per trial for this.

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "db/database.h"

namespace slapo::tuner {

class SharedStudy {
 public:
  // `stale_after_s`: how long a claim's owner may stay silent before its claim is adopted.
  SharedStudy(db::Database& database, int64_t task, double stale_after_s);
  // Stops the heartbeat, and releases a claim still held (the run ended by an error).
  ~SharedStudy();
  SharedStudy(const SharedStudy&) = delete;
  SharedStudy& operator=(const SharedStudy&) = delete;

  // The trials recorded since the last call (the first call: all of the task's), by any tuner.
  std::vector<db::TrialRecord> news();
  // The configurations other tuners hold claims on (canonical JSON), refreshed.
  const std::unordered_set<std::string>& claimed_by_others();
  // A configuration whose claimer is gone, now claimed by this tuner.
  std::optional<Config> adopt_orphan();
  // Claims `config` (db::Database::claim) against a budget of `budget` measured trials (0: none).
  db::ClaimOutcome claim(const Config& config, size_t budget);
  // The claimed configuration was recorded (add_trial ended its claim).
  void recorded() { held_.reset(); }
  // Sleeps about half a second while other tuners finish (returns at once on an interrupt).
  static void wait_for_others();

  const db::ClaimOwner& owner() const { return owner_; }

 private:
  void beat();

  db::Database& database_;
  const int64_t task_;
  const double stale_after_s_;
  const db::ClaimOwner owner_;
  int64_t cursor_ = 0;
  std::unordered_set<std::string> claimed_;
  std::optional<Config> held_;

  std::unique_ptr<db::Database> heartbeat_db_;  // the heartbeat thread's own connection
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread heartbeat_;
};

}  // namespace slapo::tuner
