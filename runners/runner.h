#pragma once
// Runner: measures candidates. The tuner sees only this interface (no LibTorch).
//
// run() never throws for a failing candidate: a failure is a TrialResult with a closed status
// (oom, schedule_error, runtime_error, timeout, crashed, invalid) and the reason kept. It throws
// only when the runner itself cannot work (a bad option, a missing executable).

#include <string>
#include <vector>

#include "core/config.h"
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

// One trial run as several ranks: the result of the rank that shows the cause (out of memory,
// crashed, timed out, ... in that order, its error prefixed by "rank N: "), else rank 0's.
TrialResult combine_ranks(const std::vector<TrialResult>& ranks);

// Metric names shared by runners, the database and the CLI.
namespace metric {
inline constexpr const char* kSamplesPerS = "samples_per_s";
inline constexpr const char* kTokensPerS = "tokens_per_s";
inline constexpr const char* kStepMsMedian = "step_ms_median";
inline constexpr const char* kStepMsP10 = "step_ms_p10";
inline constexpr const char* kStepMsP90 = "step_ms_p90";
inline constexpr const char* kPeakBytes = "peak_bytes";
inline constexpr const char* kTflops = "tflops";
inline constexpr const char* kLossFirst = "loss_first";
inline constexpr const char* kLossLast = "loss_last";
inline constexpr const char* kBuildMs = "build_ms";
inline constexpr const char* kMaxRssBytes = "max_rss_bytes";
inline constexpr const char* kThroughput = "throughput";  // the command runner's default metric
inline constexpr const char* kCommShare = "comm_share";      // share of step time in collectives (ranks > 1)
inline constexpr const char* kBubbleShare = "bubble_share";  // share of step time waiting on a pipeline neighbour
}  // namespace metric

}  // namespace slapo::runners
