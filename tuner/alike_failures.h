#pragma once
// Trials that fail alike from the start of a run. A workload or command that fails whatever the
// configuration — a command not found, no metric printed, a crash at start-up — is a fault to fix,
// not a property of the space: measuring every configuration into the same error costs a trial's
// time each and tells nothing more. So a run stops once at least `limit` measured trials in a row
// failed with the same status and the same first line of error before any trial of the task
// succeeded — and those trials took two values or more of every knob that has them (a failure of
// large batches alone, say, is the configurations', however many trials it takes first). Every
// one of them is recorded, with its reason.
//
// Only failures that do not depend on the configuration as a rule count: runtime errors, crashes
// and unreadable metrics. Out of memory, timeouts, invalid configurations and schedule errors are
// what some configurations are, and a space may open with many of them.

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/trial.h"

namespace slapo::tuner {

class AlikeFailures {
 public:
  // `knobs`: the knobs of the space that take two values or more. `limit` 0: never stops.
  AlikeFailures(size_t limit, std::vector<std::string> knobs)
      : limit_(limit), knobs_(std::move(knobs)) {}
  // A trial of the task succeeded (one recorded before this run included): nothing stops the run
  // for failures after it — they are the configurations'.
  void succeeded() { succeeded_ = true; }
  // A trial measured by this run (not pruned); true once the run should stop.
  bool observe(const Config& config, TrialStatus status, const std::string& error);
  // The run's reason to stop, once observe() said so.
  std::string why() const;

 private:
  size_t limit_;
  std::vector<std::string> knobs_;
  bool succeeded_ = false;
  std::string failure_;  // "<status>: <first line of the error>" of the trials in a row
  size_t in_a_row_ = 0;
  std::map<std::string, std::set<std::string>> values_;  // each knob's, in the row
};

}  // namespace slapo::tuner
