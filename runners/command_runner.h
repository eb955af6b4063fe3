#pragma once
// CommandRunner: tunes any external training command (a Python PyTorch script included).
//
// The command is exec'd with an argv, never through a shell. In each argument, `{knob}` is
// replaced by the knob's value; every knob is also exported as SLAPO_<KNOB> (upper case; cut
// points as "4,8,12"). The metric is the last match of `metric_regex` (one capture group) in the
// output. The trial is `oom` when the exit code equals `oom_exit_code` or the output matches
// `oom_pattern` (case-insensitive); a non-zero exit is `runtime_error`, a signal `crashed`, the
// time limit `timeout`, and an exit without the metric `runtime_error`.

#include <optional>
#include <string>
#include <vector>

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
};

class CommandRunner : public Runner {
 public:
  // Throws Error(kInvalidArgument) for an empty command or a regex that does not compile or has
  // no capture group.
  explicit CommandRunner(CommandOptions options);
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override;
  std::string kind() const override { return "command"; }

  // The argv and environment a configuration runs with (for tests and --dry-run).
  std::vector<std::string> argv_for(const Config& config) const;
  static std::map<std::string, std::string> env_for(const Config& config);

 private:
  CommandOptions options_;
};

}  // namespace slapo::runners
