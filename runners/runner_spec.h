#pragma once
// RunnerSpec: everything that makes a runner — its kind, what a trial runs (a built-in workload or
// an external command), ranks per trial, limits — as one value that round-trips through JSON, and
// the factory that makes the runner from it. The CLI maps its flags to a spec; `replay` rebuilds
// the spec of a recorded task from the task's record alone.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/defaults.h"
#include "runners/command_runner.h"
#include "runners/runner.h"
#include "runners/workload.h"

namespace slapo::runners {

struct RunnerSpec {
  // "inprocess" | "subprocess" | "single-node" for a workload; "command" for a command.
  std::string kind = "subprocess";
  std::optional<Workload> workload;       // the built-in workload (kind != "command")
  std::optional<CommandOptions> command;  // the external command (kind == "command")
  int nproc = 1;                          // ranks per trial
  double timeout_s = defaults::kTrialTimeoutS;
  bool fork_server = true;  // subprocess: fork a process that has LibTorch loaded

  // A spec for `workload`: single-node when nproc > 1, else `kind`. Throws
  // Error(kInvalidArgument) for an unknown kind, nproc outside 1..1024, or inprocess with nproc
  // > 1.
  static RunnerSpec for_workload(Workload workload, const std::string& kind, int nproc,
                                 double timeout_s, bool fork_server);
  // A spec for an external command (its nproc and timeout are the command's).
  static RunnerSpec for_command(CommandOptions command);

  // The whole spec as JSON, and back (Error(kParse) naming `origin` for what is not such a spec).
  std::string to_json() const;
  static RunnerSpec from_json(const std::string& json, const std::string& origin);

  // What makes this spec's measurements comparable, for the task key: the workload's canonical
  // JSON, or the command with everything that decides its metric. Stable across versions: tasks
  // recorded earlier are found again.
  std::string workload_key() const;
  // The spec that measures a recorded task again: the inverse of workload_key() with the task's
  // runner kind and world size; `objective` is the task's metric (a command's metric name).
  static RunnerSpec from_task(const std::string& workload_key, const std::string& kind,
                              int world_size, const std::string& objective);

  // The metric this runner optimizes when the user names none.
  std::string natural_objective() const;
};

// Makes the runner. `worker` is the argv that starts a worker (runners/worker.h) for the
// subprocess and single-node runners: by default this program's `worker` command.
std::unique_ptr<Runner> make_runner(const RunnerSpec& spec, std::vector<std::string> worker = {});

}  // namespace slapo::runners
