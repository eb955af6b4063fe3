#pragma once
// SubprocessRunner: one fresh worker process per trial (`slapo-tune worker`), the result as JSON
// on its last line of output. A time-out kills the worker's whole process group; a crash, abort,
// signal, non-zero exit or garbled output becomes a failed trial with the reason and the tail of
// its output kept. The default runner for real tuning: a candidate that crashes, hangs or leaks
// cannot take the tuner with it.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/coprocess.h"
#include "core/defaults.h"
#include "core/process.h"
#include "runners/runner.h"

namespace slapo::runners {

struct SubprocessOptions {
  // The worker's argv before `--workload JSON --config JSON`: {"/path/slapo-tune", "worker"}.
  std::vector<std::string> worker;
  std::string workload_json;                    // handed to the worker as is
  double timeout_s = defaults::kTrialTimeoutS;  // per trial; 0: none
  std::map<std::string, std::string> env;
  size_t log_lines = 30;  // how much of the output a failed trial keeps
  // Through a fork server (`worker --serve`, started once with `worker` + {"--serve"}): each trial
  // is a fork of a process that has LibTorch loaded, not a new process that loads it. The trial is
  // as isolated (its own process, its own group); a fork server that dies is started again.
  bool fork_server = false;
};

// What a worker process's run says about its trial: its JSON result (last line of output), or the
// failure (time limit, signal, non-zero exit, garbled output) with the tail of its log.
TrialResult worker_result(const ProcessResult& p, double timeout_s, size_t log_lines);

class SubprocessRunner : public Runner {
 public:
  explicit SubprocessRunner(SubprocessOptions options);
  ~SubprocessRunner() override;
  // Throws Error(kNotFound) only when the worker cannot be started at all.
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override;
  std::string kind() const override { return "subprocess"; }

 private:
  // One trial through the fork server; nullopt when the server stopped answering (it is started
  // again by the next call).
  std::optional<ProcessResult> run_forked(const Config& config);

  SubprocessOptions options_;
  std::unique_ptr<Coprocess> server_;
};

}  // namespace slapo::runners
