// slapo-tune trial: measure one configuration, and record it when asked.

#include <chrono>
#include <iomanip>
#include <ostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/config_arg.h"
#include "cli/metrics_list.h"
#include "core/error.h"
#include "db/database.h"

namespace slapo::cli {

namespace {

constexpr const char* kTrialUsage =
    "usage: slapo-tune trial --space FILE --config JSON|@FILE [options] [-- CMD ARGS...]\n"
    "\n"
    "Measures one configuration of the space and prints its result. Without a command, the\n"
    "space file's [workload] is trained by the built-in runner (subprocess by default); with a\n"
    "command after --, the command runner runs it ({knob} in its arguments becomes the value,\n"
    "SLAPO_<KNOB> is set in its environment, the metric is read from its output).\n";

void declare(TrialOptions* o, OptionSet& set) {
  o->space.declare(set);
  // clang-format off
  set.visible.add_options()
      ("config", po::value<std::string>(&o->config), "the configuration: JSON text or @FILE")
      ("db", po::value<std::string>(&o->db), "record the trial in this tuning database")
      ("json", po::bool_switch(&o->json), "print the result as one JSON object on the last line");
  // clang-format on
  o->runner.declare(set);
}

}  // namespace

TrialOptions parse_trial(const Args& all_args) {
  auto [args, command] = split_command(all_args);
  TrialOptions o = parse_options<TrialOptions>(args, declare);
  o.runner.command = command;
  if (o.help) return o;
  SLAPO_CHECK(!o.space.file.empty(), ErrorCode::kInvalidArgument,
              "trial: --space FILE is required");
  SLAPO_CHECK(!o.config.empty(), ErrorCode::kInvalidArgument, "trial: --config JSON is required");
  return o;
}

int run_trial(const TrialOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << help_text<TrialOptions>(kTrialUsage, declare);
    return kExitOk;
  }
  const space::Space declared = o.space.load();
  const Config config = config_in_space(declared, o.config);
  const runners::RunnerSpec spec = o.runner.spec(declared);
  const std::unique_ptr<runners::Runner> runner = runners::make_runner(spec);
  const std::string objective_metric = spec.natural_objective();
  std::unique_ptr<db::Database> database;
  db::TaskRecord task;
  if (!o.db.empty()) {
    database = db::Database::open(o.db);
    task =
        database->find_or_create_task(task_key(spec, *runner, declared), {objective_metric, false});
  }
  const std::string started_at = db::utc_now();
  const auto start = std::chrono::steady_clock::now();
  const TrialResult result = runner->run({config})[0];
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
    record.duration_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const bool known = database->find_trial(task.id, config).has_value();
    const int64_t index = database->add_trial(record);
    err << (known ? "already recorded as trial " : "recorded as trial ") << index << " of task "
        << task.id << " in " << o.db << "\n";
  }
  if (o.json) {
    nlohmann::ordered_json j = nlohmann::json::parse(result.to_json());
    j["objective"] =
        has_objective ? nlohmann::ordered_json(objective->second) : nlohmann::ordered_json(nullptr);
    j["config"] = nlohmann::json::parse(config.to_json());
    j["runner"] = runner->kind();
    out << j.dump() << "\n";
  } else {
    out << "config    " << config.to_string() << "\n"
        << "runner    " << runner->kind() << "\n"
        << "status    " << to_string(result.status) << "\n";
    if (!result.error.empty()) out << "error     " << result.error << "\n";
    if (has_objective)
      out << "objective " << objective_metric << " = " << objective->second << "\n";
    write_metrics(out, result.metrics);
    if (!result.log_tail.empty()) out << "log tail:\n" << result.log_tail << "\n";
  }
  return result.status == TrialStatus::kOk ? kExitOk : kExitFailure;
}

}  // namespace slapo::cli
