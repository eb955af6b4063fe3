#pragma once
// CommandRunner: tunes any external training command (a Python PyTorch script included).
//
// The command is exec'd with an argv, never through a shell. In each argument, `{knob}` is
// replaced by the knob's value; every knob is also exported as SLAPO_<KNOB> (upper case; cut
// points as "4,8,12"). The metric is the last match of `metric_regex` (one capture group) in the
// output. The trial is `oom` when the exit code equals `oom_exit_code` or the output matches
// `oom_pattern` (case-insensitive); a non-zero exit is `runtime_error`, a signal `crashed`, the
// time limit `timeout`, and an exit without the metric `runtime_error`.
//
// With nproc > 1 each trial starts that many copies at once, the way torchrun does (RANK,
// LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT on a free port; rank 0 hosts
// the store, as torch.distributed's env:// expects). The metric is rank 0's; any rank out of
// memory makes the trial `oom`, any rank that crashed `crashed`, and so on.

#include <optional>
#include <string>
#include <vector>

#include "core/process.h"
#include "runners/runner.h"

namespace slapo::runners {

struct CommandOptions {
  std::vector<std::string> argv;
  std::string metric_regex = R"(throughput:\s*([-+0-9.eE]+))";
  std::string metric_name = metric::kThroughput;
  std::optional<int> oom_exit_code;
  std::string oom_pattern = "out of memory";
  double timeout_s = 0;  // 0: none
  size_t log_lines = 30;
  int nproc = 1;  // ranks per trial
};

class CommandRunner : public Runner {
 public:
  // Throws Error(kInvalidArgument) for an empty command or a regex that does not compile or has
  // no capture group.
  explicit CommandRunner(CommandOptions options);
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override;
  std::string kind() const override { return "command"; }
  int world_size() const override { return options_.nproc; }

  // The argv and environment a configuration runs with (for tests and --dry-run).
  std::vector<std::string> argv_for(const Config& config) const;
  static std::map<std::string, std::string> env_for(const Config& config);

 private:
  // What one process's run says about the trial.
  TrialResult judge(const ProcessResult& p) const;

  CommandOptions options_;
};

}  // namespace slapo::runners
