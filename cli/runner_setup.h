#pragma once
// What `trial` and `single-device` share: the runner options, making the runner (built-in
// workload or a command after --), and the task key that makes its measurements comparable.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options/options_description.hpp>

#include "core/config.h"
#include "db/database.h"
#include "runners/runner.h"
#include "runners/workload.h"
#include "space/space.h"

namespace slapo::cli {

struct RunnerFlags {
  std::string runner = "subprocess";
  std::string memory_budget;
  double timeout_s = 600;
  int nproc = 1;
  bool no_fork_server = false;  // the subprocess runner starts a new process per trial
  std::string metric_regex;
  std::string oom_pattern;
  int oom_exit_code = -1;
  bool has_oom_exit_code = false;
  std::vector<std::string> command;  // after --
};

// Adds --runner, --nproc, --memory-budget, --timeout, --metric-regex, --oom-exit-code,
// --oom-pattern.
void add_runner_options(boost::program_options::options_description& options, RunnerFlags* flags);

// Splits arguments at the first "--": (options, command).
std::pair<std::vector<std::string>, std::vector<std::string>> split_command(const std::vector<std::string>& args);

struct RunnerSetup {
  std::unique_ptr<runners::Runner> runner;
  std::string workload_key;  // canonical: what, with the space and the machine, makes trials comparable
  std::string objective;     // the runner's natural objective metric
  std::optional<runners::Workload> workload;  // the built-in workload (none for a command)
};

// Makes the runner. With the built-in workload, every knob of `space` is checked against the
// template first (Error(kInvalidArgument) before anything runs).
RunnerSetup make_runner(const RunnerFlags& flags, const space::Space& space);

// The runner that measures a recorded task again, from its record alone (its workload key and
// runner kind; the inverse of make_runner). `steps` > 0 overrides the timed steps.
RunnerSetup runner_for_task(const db::TaskRecord& task, int steps);

// The task key of `setup` for `space` on this machine.
db::TaskKey task_key(const RunnerSetup& setup, const space::Space& space);

}  // namespace slapo::cli
