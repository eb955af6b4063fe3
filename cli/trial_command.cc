// slapo-tune trial: measure one configuration. slapo-tune worker: what the subprocess runner runs.

#include <unistd.h>

#include <chrono>
#include <climits>
#include <iomanip>
#include <iostream>
#include <memory>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/config_arg.h"
#include "core/error.h"
#include "db/database.h"
#include "runners/command_runner.h"
#include "runners/inprocess_runner.h"
#include "runners/subprocess_runner.h"
#include "runners/system_info.h"
#include "runners/workload.h"
#include "space/compiled_space.h"
#include "space/space_file.h"

namespace po = boost::program_options;

namespace slapo::cli {

namespace {

constexpr const char* kTrialUsage =
    "usage: slapo-tune trial --space FILE --config JSON|@FILE [options] [-- CMD ARGS...]\n"
    "\n"
    "Measures one configuration of the space and prints its result. Without a command, the\n"
    "space file's [workload] is trained by the built-in runner (subprocess by default); with a\n"
    "command after --, the command runner runs it ({knob} in its arguments becomes the value,\n"
    "SLAPO_<KNOB> is set in its environment, the metric is read from its output).\n";

}  // namespace

std::string self_executable() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  SLAPO_CHECK(n > 0, ErrorCode::kIo, "cannot find the slapo-tune executable (/proc/self/exe)");
  return std::string(path, static_cast<size_t>(n));
}

namespace {

// Splits `args` at the first "--".
std::pair<std::vector<std::string>, std::vector<std::string>> split_command(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") return {{args.begin(), args.begin() + i}, {args.begin() + i + 1, args.end()}};
  }
  return {args, {}};
}

}  // namespace

int run_trial(const std::vector<std::string>& all_args, std::ostream& out, std::ostream& err) {
  const auto [args, command] = split_command(all_args);
  std::string space_file, config_arg, runner = "subprocess", budget, metric_regex, oom_pattern, db_path;
  std::vector<std::string> params;
  double timeout_s = 600;
  int nproc = 1, oom_exit_code = -1;
  bool json = false;
  po::options_description options("options");
  options.add_options()
      ("help,h", "show this help")
      ("space", po::value<std::string>(&space_file), "space file")
      ("config", po::value<std::string>(&config_arg), "the configuration: JSON text or @FILE")
      ("param", po::value<std::vector<std::string>>(&params)->composing(), "override a parameter: NAME=VALUE")
      ("runner", po::value<std::string>(&runner)->default_value("subprocess"), "inprocess or subprocess")
      ("nproc", po::value<int>(&nproc)->default_value(1), "ranks per trial")
      ("memory-budget", po::value<std::string>(&budget), "tensor memory budget, e.g. 2GiB: past it the trial is oom")
      ("timeout", po::value<double>(&timeout_s)->default_value(600), "seconds before a trial is killed (0: none)")
      ("metric-regex", po::value<std::string>(&metric_regex), "command runner: regex with one group around the metric")
      ("oom-exit-code", po::value<int>(&oom_exit_code), "command runner: this exit code means out of memory")
      ("oom-pattern", po::value<std::string>(&oom_pattern), "command runner: output matching this means out of memory")
      ("db", po::value<std::string>(&db_path), "record the trial in this tuning database")
      ("json", po::bool_switch(&json), "print the result as one JSON object on the last line");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(options).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    out << kTrialUsage << "\n" << options;
    return kExitOk;
  }
  SLAPO_CHECK(!space_file.empty(), ErrorCode::kInvalidArgument, "trial: --space FILE is required");
  SLAPO_CHECK(!config_arg.empty(), ErrorCode::kInvalidArgument, "trial: --config JSON is required");
  SLAPO_CHECK(nproc == 1, ErrorCode::kInvalidArgument,
              "--nproc ", nproc, ": several ranks per trial need the single-node runner, which is not built yet");
  SLAPO_CHECK(runner == "inprocess" || runner == "subprocess", ErrorCode::kInvalidArgument, "--runner ", runner,
              ": expected inprocess or subprocess");

  const space::Space declared = load_space(space_file, params);
  const Config config = config_in_space(declared, config_arg);

  std::unique_ptr<runners::Runner> r;
  std::string workload_key;  // what, besides the space and machine, makes trials comparable
  std::string objective_metric = runners::metric::kSamplesPerS;
  if (!command.empty()) {
    runners::CommandOptions c;
    c.argv = command;
    if (!metric_regex.empty()) c.metric_regex = metric_regex;
    if (vm.count("oom-exit-code")) c.oom_exit_code = oom_exit_code;
    if (!oom_pattern.empty()) c.oom_pattern = oom_pattern;
    c.timeout_s = timeout_s;
    objective_metric = c.metric_name;
    // Everything the command runner needs to run it again (slapo-tune replay).
    workload_key = nlohmann::ordered_json{{"command", command}, {"metric_regex", c.metric_regex},
                                          {"oom_pattern", c.oom_pattern},
                                          {"oom_exit_code", c.oom_exit_code ? nlohmann::ordered_json(*c.oom_exit_code)
                                                                            : nlohmann::ordered_json(nullptr)},
                                          {"timeout_s", c.timeout_s}}
                       .dump();
    r = std::make_unique<runners::CommandRunner>(c);
  } else {
    runners::Workload workload = runners::Workload::from_json(declared.workload_json, space_file);
    if (!budget.empty()) workload.memory_budget = parse_bytes(budget, "--memory-budget");
    runners::check_workload(workload, config);  // a knob the template does not know: before anything runs
    workload_key = workload.to_json();
    if (runner == "inprocess") {
      r = std::make_unique<runners::InProcessRunner>(workload);
    } else {
      runners::SubprocessOptions s;
      s.worker = {self_executable(), "worker"};
      s.workload_json = workload.to_json();
      s.timeout_s = timeout_s;
      r = std::make_unique<runners::SubprocessRunner>(s);
    }
  }
  std::unique_ptr<db::Database> database;
  db::TaskRecord task;
  if (!db_path.empty()) {
    database = db::Database::open(db_path);
    db::TaskKey key;
    key.workload_json = workload_key;
    key.space_hash = declared.fingerprint();
    key.runner = r->kind();
    key.world_size = r->world_size();
    key.fingerprint_json = runners::fingerprint_json(runners::collect_system_info());
    task = database->find_or_create_task(key, objective_metric, false);
  }
  const std::string started_at = db::utc_now();
  const auto start = std::chrono::steady_clock::now();
  const TrialResult result = r->run({config})[0];
  const auto objective = result.metrics.find(objective_metric);
  const bool has_objective = result.status == TrialStatus::kOk && objective != result.metrics.end();
  if (database) {
    db::TrialRecord record;
    record.task_id = task.id;
    record.config = config;
    record.result = result;
    if (has_objective) record.objective = objective->second;
    record.strategy = "manual";
    record.started_at = started_at;
    record.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const bool known = database->find_trial(task.id, config).has_value();
    const int64_t index = database->add_trial(record);
    err << (known ? "already recorded as trial " : "recorded as trial ") << index << " of task " << task.id << " in "
        << db_path << "\n";
  }
  if (json) {
    nlohmann::ordered_json j = nlohmann::json::parse(result.to_json());
    j["objective"] = has_objective ? nlohmann::ordered_json(objective->second) : nlohmann::ordered_json(nullptr);
    j["config"] = nlohmann::json::parse(config.to_json());
    j["runner"] = r->kind();
    out << j.dump() << "\n";
  } else {
    out << "config    " << config.to_string() << "\n"
        << "runner    " << r->kind() << "\n"
        << "status    " << to_string(result.status) << "\n";
    if (!result.error.empty()) out << "error     " << result.error << "\n";
    if (has_objective) out << "objective " << objective_metric << " = " << objective->second << "\n";
    for (const auto& [name, value] : result.metrics) out << "  " << std::left << std::setw(16) << name << value << "\n";
    if (!result.log_tail.empty()) out << "log tail:\n" << result.log_tail << "\n";
  }
  return result.status == TrialStatus::kOk ? kExitOk : kExitFailure;
}

int run_worker(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string workload_json, config_json;
  po::options_description options("options");
  options.add_options()
      ("help,h", "show this help")
      ("workload", po::value<std::string>(&workload_json), "the workload as JSON")
      ("config", po::value<std::string>(&config_json), "the configuration as JSON");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(options).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    out << "usage: slapo-tune worker --workload JSON --config JSON\n\n"
           "Measures one trial and prints its result as JSON on the last line (the subprocess runner's\n"
           "worker; exits 0 whenever it could report, whatever the trial's status).\n";
    return kExitOk;
  }
  SLAPO_CHECK(!workload_json.empty() && !config_json.empty(), ErrorCode::kInvalidArgument,
              "worker: --workload and --config are required");
  const runners::Workload workload = runners::Workload::from_json(workload_json, "--workload");
  const Config config = Config::from_json(config_json, "--config");
  const TrialResult result = runners::measure_trial(workload, config);
  out << result.to_json() << std::endl;
  return kExitOk;
}

}  // namespace slapo::cli
