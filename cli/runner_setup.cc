#include "cli/runner_setup.h"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "runners/command_runner.h"
#include "runners/inprocess_runner.h"
#include "runners/single_node_runner.h"
#include "runners/subprocess_runner.h"
#include "runners/system_info.h"
#include "runners/workload.h"
#include "space/compiled_space.h"

namespace po = boost::program_options;

namespace slapo::cli {

void add_runner_options(po::options_description& options, RunnerFlags* f) {
  options.add_options()
      ("runner", po::value<std::string>(&f->runner)->default_value("subprocess"), "inprocess, subprocess or single-node (the default with --nproc > 1)")
      ("nproc", po::value<int>(&f->nproc)->default_value(1), "ranks per trial")
      ("no-fork-server", po::bool_switch(&f->no_fork_server),
       "subprocess runner: start a new process per trial instead of forking one that has LibTorch loaded")
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

namespace {

// The command runner, with everything it needs to run again recorded in the workload key.
RunnerSetup command_setup(const runners::CommandOptions& c) {
  RunnerSetup setup;
  setup.objective = c.metric_name;
  nlohmann::ordered_json key{{"command", c.argv}, {"metric_regex", c.metric_regex},
                             {"oom_pattern", c.oom_pattern},
                             {"oom_exit_code", c.oom_exit_code ? nlohmann::ordered_json(*c.oom_exit_code)
                                                               : nlohmann::ordered_json(nullptr)},
                             {"timeout_s", c.timeout_s}};
  if (c.nproc > 1) key["nproc"] = c.nproc;  // (absent for one rank: keys recorded before stay the same)
  setup.workload_key = key.dump();
  setup.runner = std::make_unique<runners::CommandRunner>(c);
  return setup;
}

RunnerSetup workload_setup(const runners::Workload& workload, const std::string& kind, double timeout_s, int nproc,
                           bool fork_server) {
  RunnerSetup setup;
  setup.objective = runners::metric::kSamplesPerS;
  setup.workload_key = workload.to_json();
  setup.workload = workload;
  if (kind == "inprocess") {
    setup.runner = std::make_unique<runners::InProcessRunner>(workload);
  } else if (kind == "single-node") {
    runners::SingleNodeOptions s;
    s.worker = {self_executable(), "worker"};
    s.workload_json = workload.to_json();
    s.nproc = nproc;
    s.timeout_s = timeout_s;
    setup.runner = std::make_unique<runners::SingleNodeRunner>(s);
  } else {
    runners::SubprocessOptions s;
    s.worker = {self_executable(), "worker"};
    s.workload_json = workload.to_json();
    s.timeout_s = timeout_s;
    s.fork_server = fork_server;
    setup.runner = std::make_unique<runners::SubprocessRunner>(s);
  }
  return setup;
}

}  // namespace

RunnerSetup make_runner(const RunnerFlags& f, const space::Space& space) {
  SLAPO_CHECK(f.nproc >= 1 && f.nproc <= 1024, ErrorCode::kInvalidArgument, "--nproc ", f.nproc,
              ": expected a number of ranks from 1 to 1024");
  SLAPO_CHECK(f.runner == "inprocess" || f.runner == "subprocess" || f.runner == "single-node",
              ErrorCode::kInvalidArgument, "--runner ", f.runner, ": expected inprocess, subprocess or single-node");
  SLAPO_CHECK(!(f.runner == "inprocess" && f.nproc > 1), ErrorCode::kInvalidArgument,
              "--runner inprocess runs one rank; --nproc ", f.nproc, " needs processes (single-node)");
  if (!f.command.empty()) {
    runners::CommandOptions c;
    c.argv = f.command;
    if (!f.metric_regex.empty()) c.metric_regex = f.metric_regex;
    if (f.has_oom_exit_code) c.oom_exit_code = f.oom_exit_code;
    if (!f.oom_pattern.empty()) c.oom_pattern = f.oom_pattern;
    c.timeout_s = f.timeout_s;
    c.nproc = f.nproc;
    return command_setup(c);
  }
  runners::Workload workload = runners::Workload::from_json(space.workload_json, space.origin);
  if (!f.memory_budget.empty()) workload.memory_budget = parse_bytes(f.memory_budget, "--memory-budget");
  // Every knob must be one the template understands: checked on a point of the space.
  const space::CompiledSpace compiled = space::CompiledSpace::compile(space);
  if (compiled.size() > 0) runners::check_workload(workload, compiled.at(0));
  const std::string kind = f.nproc > 1 ? "single-node" : f.runner;
  return workload_setup(workload, kind, f.timeout_s, f.nproc, !f.no_fork_server);
}

RunnerSetup runner_for_task(const db::TaskRecord& task, int steps) {
  const nlohmann::json key = nlohmann::json::parse(task.key.workload_json, nullptr, false);
  if (key.is_object() && key.contains("command")) {
    runners::CommandOptions c;
    c.argv = key["command"].get<std::vector<std::string>>();
    c.metric_regex = key.value("metric_regex", c.metric_regex);
    c.metric_name = task.objective;
    c.oom_pattern = key.value("oom_pattern", c.oom_pattern);
    if (key["oom_exit_code"].is_number_integer()) c.oom_exit_code = key["oom_exit_code"].get<int>();
    c.timeout_s = key.value("timeout_s", 0.0);
    c.nproc = key.value("nproc", 1);
    return command_setup(c);
  }
  runners::Workload workload = runners::Workload::from_json(task.key.workload_json, "task " + std::to_string(task.id));
  if (steps > 0) workload.steps = steps;
  return workload_setup(workload, task.key.runner, 600, static_cast<int>(task.key.world_size), /*fork_server=*/true);
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
