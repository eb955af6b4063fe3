#pragma once
// Trials that fail alike from the start of a run. A workload or command that fails whatever the
// configuration — a command not found, no metric printed, a crash at start-up, a bug in a
// template — is a fault to fix, not a property of the space: measuring every configuration into
// the same error costs a trial's time each and tells nothing more. So `limit` measured trials in a
// row that failed with the same status and the same first line of error, before any trial of the
// task succeeded, stop the run (every one of them recorded, with its reason).
//
// Only failures that do not depend on the configuration as a rule count: runtime errors, crashes,
// schedule errors and unreadable metrics. Out of memory, timeouts and invalid configurations are
// what some configurations are, and a space may open with many of them.

#include <cstddef>
#include <string>

#include "core/trial.h"

namespace slapo::tuner {

class AlikeFailures {
 public:
  // 0: never stops.
  explicit AlikeFailures(size_t limit) : limit_(limit) {}
  // A trial of the task succeeded (one recorded before this run included): nothing stops the run
  // for failures after it — they are the configurations'.
  void succeeded() { succeeded_ = true; }
  // A trial measured by this run (not pruned); true once the run should stop.
  bool observe(TrialStatus status, const std::string& error);
  // The run's reason to stop, once observe() said so.
  std::string why() const;

 private:
  size_t limit_;
  bool succeeded_ = false;
  std::string failure_;  // "<status>: <first line of the error>" of the trials in a row
  size_t in_a_row_ = 0;
};

}  // namespace slapo::tuner
