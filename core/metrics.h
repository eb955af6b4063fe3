#pragma once
// Metric names shared by the runners that measure them, the database that stores them, the tuner
// that optimizes one of them and the CLI and report that show them.

namespace slapo::metric {

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
inline constexpr const char* kTrainMs = "train_ms";  // the warm-up and timed steps, end to end
inline constexpr const char* kMaxRssBytes = "max_rss_bytes";
// Pages the process faulted in per timed step, the largest rank's: near 0 when a step finds its
// memory resident (the heap and its large blocks kept, runners/heap_policy.h).
inline constexpr const char* kPageFaultsPerStep = "page_faults_per_step";
inline constexpr const char* kWallS = "wall_s";           // a trial's whole process, start to exit
inline constexpr const char* kThroughput = "throughput";  // the command runner's default metric
inline constexpr const char* kCommShare =
    "comm_share";  // share of step time in collectives (ranks > 1)
inline constexpr const char* kBubbleShare =
    "bubble_share";  // share of step time waiting on a pipeline neighbour

// The built-in runners' objective when a task names none.
inline constexpr const char* kDefaultObjective = kSamplesPerS;

}  // namespace slapo::metric
