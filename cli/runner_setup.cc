#include "cli/runner_setup.h"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "runners/command_runner.h"
#include "runners/inprocess_runner.h"
#include "runners/subprocess_runner.h"
#include "runners/system_info.h"
#include "runners/workload.h"
#include "space/compiled_space.h"

namespace po = boost::program_options;

namespace slapo::cli {

void add_runner_options(po::options_description& options, RunnerFlags* f) {
  options.add_options()
      ("runner", po::value<std::string>(&f->runner)->default_value("subprocess"), "inprocess or subprocess")
      ("nproc", po::value<int>(&f->nproc)->default_value(1), "ranks per trial")
      ("memory-budget", po::value<std::string>(&f->memory_budget), "tensor memory budget, e.g. 2GiB: past it a trial is oom")
      ("timeout", po::value<double>(&f->timeout_s)->default_value(600), "seconds before a trial is killed (0: none)")
      ("metric-regex", po::value<std::string>(&f->metric_regex), "command runner: regex with one group around the metric")
      ("oom-exit-code", po::value<int>(&f->oom_exit_code)->notifier([f](int) { f->has_oom_exit_code = true; }),
       "command runner: this exit code means out of memory")
      ("oom-pattern", po::value<std::string>(&f->oom_pattern), "command runner: output matching this means out of memory");
}

std::pair<std::vector<std::string>, std::vector<std::string>> split_command(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") return {{args.begin(), args.begin() + i}, {args.begin() + i + 1, args.end()}};
  }
  return {args, {}};
}

RunnerSetup make_runner(const RunnerFlags& f, const space::Space& space) {
  SLAPO_CHECK(f.nproc == 1, ErrorCode::kInvalidArgument, "--nproc ", f.nproc,
              ": several ranks per trial need the single-node runner, which is not built yet");
  SLAPO_CHECK(f.runner == "inprocess" || f.runner == "subprocess", ErrorCode::kInvalidArgument, "--runner ", f.runner,
              ": expected inprocess or subprocess");
  RunnerSetup setup;
  if (!f.command.empty()) {
    runners::CommandOptions c;
    c.argv = f.command;
    if (!f.metric_regex.empty()) c.metric_regex = f.metric_regex;
    if (f.has_oom_exit_code) c.oom_exit_code = f.oom_exit_code;
    if (!f.oom_pattern.empty()) c.oom_pattern = f.oom_pattern;
    c.timeout_s = f.timeout_s;
    setup.objective = c.metric_name;
    // Everything the command runner needs to run it again (slapo-tune replay).
    setup.workload_key = nlohmann::ordered_json{{"command", f.command}, {"metric_regex", c.metric_regex},
                                                {"oom_pattern", c.oom_pattern},
                                                {"oom_exit_code", c.oom_exit_code ? nlohmann::ordered_json(*c.oom_exit_code)
                                                                                  : nlohmann::ordered_json(nullptr)},
                                                {"timeout_s", c.timeout_s}}
                             .dump();
    setup.runner = std::make_unique<runners::CommandRunner>(c);
    return setup;
  }
  runners::Workload workload = runners::Workload::from_json(space.workload_json, space.origin);
  if (!f.memory_budget.empty()) workload.memory_budget = parse_bytes(f.memory_budget, "--memory-budget");
  // Every knob must be one the template understands: checked on a point of the space.
  const space::CompiledSpace compiled = space::CompiledSpace::compile(space);
  if (compiled.size() > 0) runners::check_workload(workload, compiled.at(0));
  setup.objective = runners::metric::kSamplesPerS;
  setup.workload_key = workload.to_json();
  if (f.runner == "inprocess") {
    setup.runner = std::make_unique<runners::InProcessRunner>(workload);
  } else {
    runners::SubprocessOptions s;
    s.worker = {self_executable(), "worker"};
    s.workload_json = workload.to_json();
    s.timeout_s = f.timeout_s;
    setup.runner = std::make_unique<runners::SubprocessRunner>(s);
  }
  return setup;
}

db::TaskKey task_key(const RunnerSetup& setup, const space::Space& space) {
  db::TaskKey key;
  key.workload_json = setup.workload_key;
  key.space_hash = space.fingerprint();
  key.runner = setup.runner->kind();
  key.world_size = setup.runner->world_size();
  key.fingerprint_json = runners::fingerprint_json(runners::collect_system_info());
  return key;
}

}  // namespace slapo::cli
