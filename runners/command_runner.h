#pragma once
// CommandRunner: tunes any external training command (a Python PyTorch script included).
//
// The command is exec'd with an argv, never through a shell, in `cwd` with `env` added. In each
// argument, `{knob}` is replaced by the knob's value (booleans as `bool_true`/`bool_false`, cut
// points as "4,8,12"); every knob is also exported as SLAPO_<KNOB>. What it reports is read three
// ways (runners/metric_reports.h): named regexes over its output, `slapo-metrics: {json}` lines,
// and the JSON lines of the file named by $SLAPO_METRICS_FILE (a fresh file per rank and trial).
//
// A trial is `oom` when the exit code equals `oom_exit_code`, the output matches `oom_pattern`
// (the allocator messages of LibTorch on the CPU and CUDA, Python's MemoryError, any case), or the
// kernel's OOM killer ended it; `memory_budget_bytes` caps each rank's address space (RLIMIT_AS),
// so a script that asks for more fails its allocation and says so. A time limit kill is `timeout`,
// another signal `crashed`, a non-zero exit `runtime_error`, an interrupt of the tuner
// `interrupted`, and a trial stopped early on its intermediate values (runners/early_stopping.h)
// `pruned`.
//
// With nproc > 1 each trial starts that many copies at once, the way torchrun does (RANK,
// LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT on a free port; rank 0 hosts
// the store, as torch.distributed's env:// expects). The metrics are `metric_rank`'s (rank 0 by
// default, as most scripts print on rank 0 only); with metric_rank = kAllRanks every rank must
// report, and each metric is their mean. A rank that failed explains the trial (runner.h,
// combine_ranks).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/metrics.h"
#include "core/process.h"
#include "runners/early_stopping.h"
#include "runners/metric_reports.h"
#include "runners/runner.h"

namespace slapo::runners {

// default_metric_pattern(kThroughput)'s: what a command is read with when nothing names its metric.
inline constexpr const char* kDefaultMetricRegex = R"(throughput:\s*([-+0-9.eE]+))";
// LibTorch's CPU allocator, CUDA's caching allocator, torch.OutOfMemoryError, Python's MemoryError,
// C++'s bad_alloc, and any "out of memory".
inline constexpr const char* kDefaultOomPattern =
    R"(out of memory|can't allocate memory|OutOfMemoryError|\bMemoryError\b|std::bad_alloc)";
inline constexpr int kAllRanks = -1;

struct CommandOptions {
  std::vector<std::string> argv;
  // The named regexes; the default reads `throughput: N`.
  std::vector<MetricPattern> metrics = {{metric::kThroughput, kDefaultMetricRegex}};
  // The metric a task of this command optimizes when the user names none.
  std::string metric_name = metric::kThroughput;
  int metric_rank = 0;  // whose metrics count; kAllRanks: every rank's, averaged
  std::optional<int> oom_exit_code;
  std::string oom_pattern = kDefaultOomPattern;
  uint64_t memory_budget_bytes = 0;        // each rank's address-space limit; 0: none
  std::string cwd;                         // where it runs; empty: here
  std::map<std::string, std::string> env;  // added to its environment (recorded with the task)
  std::string bool_true = "1", bool_false = "0";  // how a boolean knob is written
  double timeout_s = 0;                           // 0: none
  size_t log_lines = 30;
  int nproc = 1;  // ranks per trial
  EarlyStoppingOptions early_stopping;
};

class CommandRunner : public Runner {
 public:
  // Throws Error(kInvalidArgument) for an empty command, a metric regex that does not compile or
  // has no capture group, an OOM pattern that does not compile, or a metric rank out of range.
  explicit CommandRunner(CommandOptions options);
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override;
  std::string kind() const override { return "command"; }
  int world_size() const override { return options_.nproc; }

  // The argv and environment a configuration runs with (for tests and --dry-run).
  std::vector<std::string> argv_for(const Config& config) const;
  std::map<std::string, std::string> env_for(const Config& config) const;
  // A shell command line that runs `config` by hand as a trial runs it (directory, environment,
  // arguments; for several ranks, how torchrun would start them), ready to paste.
  std::string command_line(const Config& config) const;

 private:
  TrialResult run_one(const Config& config);
  // What one rank's run says about the trial; `reports_metrics`: whether its metrics count.
  TrialResult judge(const ProcessResult& p, const MetricReports& reports, bool reports_metrics,
                    const std::string& stop_reason) const;

  CommandOptions options_;
  MedianStopping stopping_;
};

// The names of the `{name}` placeholders in `argv` (a name: [A-Za-z_][A-Za-z0-9_]*), in order, each
// once: the CLI refuses one that names no knob before anything runs.
std::vector<std::string> placeholders(const std::vector<std::string>& argv);

}  // namespace slapo::runners
