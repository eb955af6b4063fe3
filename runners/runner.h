#pragma once
// Runner: measures candidates. The tuner sees only this interface (no LibTorch).
//
// run() never throws for a failing candidate: a failure is a TrialResult with a closed status
// (oom, schedule_error, runtime_error, timeout, crashed, invalid) and the reason kept. It throws
// only when the runner itself cannot work (a bad option, a missing executable).

#include <string>
#include <vector>

#include "core/config.h"
#include "core/metrics.h"
#include "core/trial.h"

namespace slapo::runners {

class Runner {
 public:
  virtual ~Runner() = default;
  // Measures each configuration, in order, one at a time (never two at once on this machine).
  virtual std::vector<TrialResult> run(const std::vector<Config>& candidates) = 0;
  // "inprocess", "subprocess", "single-node", "command": recorded with every task.
  virtual std::string kind() const = 0;
  // Ranks per trial.
  virtual int world_size() const { return 1; }
};

// One trial run as several ranks: the result of the rank that shows the cause (interrupted, stopped
// early, out of memory, crashed, timed out, ... in that order, its error prefixed by "rank N: "),
// else rank 0's. A rank's peers that were ended because it failed (core/ranks.h) are never the
// explanation.
TrialResult combine_ranks(const std::vector<TrialResult>& ranks);

// The error of a rank ended because another rank of its job failed.
inline constexpr const char* kEndedByPeerError = "ended after another rank failed";

}  // namespace slapo::runners
