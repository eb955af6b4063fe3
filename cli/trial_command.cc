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
#include "core/process.h"
#include "db/database.h"
#include "cli/runner_setup.h"
#include "dist/world.h"
#include "models/templates.h"
#include "runners/parallel_trainer.h"
#include "runners/workload.h"

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

int run_trial(const std::vector<std::string>& all_args, std::ostream& out, std::ostream& err) {
  auto [args, command] = split_command(all_args);
  RunnerFlags flags;
  flags.command = command;
  std::string space_file, config_arg, db_path;
  std::vector<std::string> params;
  bool json = false;
  po::options_description options("options");
  options.add_options()
      ("help,h", "show this help")
      ("space", po::value<std::string>(&space_file), "space file")
      ("config", po::value<std::string>(&config_arg), "the configuration: JSON text or @FILE")
      ("param", po::value<std::vector<std::string>>(&params)->composing(), "override a parameter: NAME=VALUE")
      ("db", po::value<std::string>(&db_path), "record the trial in this tuning database")
      ("json", po::bool_switch(&json), "print the result as one JSON object on the last line");
  add_runner_options(options, &flags);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(options).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    out << kTrialUsage << "\n" << options;
    return kExitOk;
  }
  SLAPO_CHECK(!space_file.empty(), ErrorCode::kInvalidArgument, "trial: --space FILE is required");
  SLAPO_CHECK(!config_arg.empty(), ErrorCode::kInvalidArgument, "trial: --config JSON is required");
  const space::Space declared = load_space(space_file, params);
  const Config config = config_in_space(declared, config_arg);

  const RunnerSetup setup = make_runner(flags, declared);
  runners::Runner* r = setup.runner.get();
  const std::string& objective_metric = setup.objective;
  std::unique_ptr<db::Database> database;
  db::TaskRecord task;
  if (!db_path.empty()) {
    database = db::Database::open(db_path);
    task = database->find_or_create_task(task_key(setup, declared), objective_metric, false);
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

namespace {

// `worker --serve`: the fork server. This process has loaded LibTorch but runs no tensor operation
// (a fork after an OpenMP parallel region deadlocks): per request line {"workload", "config",
// "timeout_s"} it forks a child that measures the trial, and answers one line with what the child
// did (its output, exit code or signal, whether it timed out). A trial costs a fork instead of a
// process start that loads LibTorch.
int serve(std::ostream& out) {
  std::string line;
  while (std::getline(std::cin, line)) {
    nlohmann::json request = nlohmann::json::parse(line, nullptr, false);
    nlohmann::json response;
    if (!request.is_object() || !request.contains("workload") || !request.contains("config")) {
      response = {{"started", false}, {"error", "fork server: not a request: " + line.substr(0, 200)}};
    } else {
      const std::string workload_json = request["workload"].get<std::string>();
      const std::string config_json = request["config"].get<std::string>();
      ProcessOptions po;
      po.timeout_s = request.value("timeout_s", 0.0);
      const ProcessResult r = fork_and_run(
          [&] {
            const runners::Workload workload = runners::Workload::from_json(workload_json, "--workload");
            const Config config = Config::from_json(config_json, "--config");
            std::cout << runners::measure_trial(workload, config).to_json() << std::endl;
            return 0;
          },
          po);
      response = {{"started", r.started},    {"error", r.error},   {"timed_out", r.timed_out},
                  {"exit_code", r.exit_code}, {"signal", r.signal}, {"out", r.out},
                  {"err", r.err},             {"duration_s", r.duration_s}};
    }
    out << response.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
  }
  return kExitOk;
}

}  // namespace

int run_worker(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string workload_json, config_json;
  bool serve_requests = false;
  po::options_description options("options");
  options.add_options()
      ("help,h", "show this help")
      ("workload", po::value<std::string>(&workload_json), "the workload as JSON")
      ("config", po::value<std::string>(&config_json), "the configuration as JSON")
      ("serve", po::bool_switch(&serve_requests), "fork server: one trial per request line on standard input");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(options).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    out << "usage: slapo-tune worker --workload JSON --config JSON\n\n"
           "Measures one trial and prints its result as JSON on the last line (the subprocess runner's\n"
           "worker; exits 0 whenever it could report, whatever the trial's status).\n";
    return kExitOk;
  }
  if (serve_requests) return serve(out);
  SLAPO_CHECK(!workload_json.empty() && !config_json.empty(), ErrorCode::kInvalidArgument,
              "worker: --workload and --config are required");
  runners::Workload workload = runners::Workload::from_json(workload_json, "--workload");
  Config config = Config::from_json(config_json, "--config");
  if (!dist::RankEnv::present()) {
    out << runners::measure_trial(workload, config).to_json() << std::endl;
    return kExitOk;
  }
  // One rank of a single-node (or torchrun-launched) trial.
  TrialResult result;
  try {
    const dist::RankEnv env = dist::RankEnv::from_env();
    // Data parallelism fills the ranks the configuration does not name.
    const dist::Layout layout = runners::parallel_layout(workload.spec(), &config, env.world_size);
    // The workload's threads are the trial's budget, shared by its ranks.
    workload.threads = std::max(1, workload.threads / env.world_size);
    if (layout.world() != env.world_size) {
      result = failed_trial(TrialStatus::kInvalid, "the configuration (" + layout.to_string() + ") needs " +
                                                       std::to_string(layout.world()) + " ranks; this trial has " +
                                                       std::to_string(env.world_size) + " (--nproc)");
    } else {
      result = runners::measure_trial(workload, config, dist::connect(env, layout));
    }
  } catch (const Error& e) {
    result = failed_trial(is_user_error(e.code()) ? TrialStatus::kInvalid : TrialStatus::kRuntimeError, e.what());
  }
  out << result.to_json() << std::endl;
  return kExitOk;
}

}  // namespace slapo::cli
