#include "runners/runner.h"

#include "core/error.h"

namespace slapo::runners {

TrialResult combine_ranks(const std::vector<TrialResult>& ranks) {
  SLAPO_INTERNAL_ASSERT(!ranks.empty(), "a job without ranks");
  // The cause over its consequences: a rank out of memory or crashed makes its peers fail too. An
  // interrupt or an early stop ended every rank on purpose.
  for (TrialStatus status :
       {TrialStatus::kInterrupted, TrialStatus::kPruned, TrialStatus::kOom, TrialStatus::kCrashed,
        TrialStatus::kTimeout, TrialStatus::kInvalid, TrialStatus::kScheduleError,
        TrialStatus::kRuntimeError, TrialStatus::kInvalidMetric}) {
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i].status != status || ranks[i].error == kEndedByPeerError) continue;
      TrialResult r = ranks[i];
      r.error = "rank " + std::to_string(i) + ": " + r.error;
      return r;
    }
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].status == TrialStatus::kOk) continue;
    TrialResult r = ranks[i];
    r.error = "rank " + std::to_string(i) + ": " + r.error;
    return r;
  }
  return ranks[0];
}

}  // namespace slapo::runners
