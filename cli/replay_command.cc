// slapo-tune replay: re-measure a recorded configuration from the record alone.

#include <cmath>
#include <iomanip>
#include <iostream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "db/database.h"
#include "models/templates.h"
#include "models/zoo.h"
#include "cli/runner_setup.h"
#include "runners/system_info.h"
#include "schedule/schedule.h"

namespace po = boost::program_options;

namespace slapo::cli {

namespace {

constexpr const char* kUsage =
    "usage: slapo-tune replay --db FILE [--task ID] [--trial N] [--steps S] [--print-schedule]\n"
    "\n"
    "Rebuilds the best (or the given) configuration of a task from the record alone, measures it\n"
    "again with the task's runner, and prints the recorded and measured figures side by side. Warns\n"
    "when this machine's fingerprint differs from the task's, or when the objective drifted beyond\n"
    "the recorded noise.\n";

// Keys whose values differ between two fingerprints.
std::vector<std::string> fingerprint_changes(const std::string& recorded, const std::string& current) {
  const auto a = nlohmann::json::parse(recorded, nullptr, false), b = nlohmann::json::parse(current, nullptr, false);
  std::vector<std::string> changes;
  if (!a.is_object() || !b.is_object()) return {"(unreadable fingerprint)"};
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (!b.contains(it.key()) || b[it.key()] != it.value()) {
      changes.push_back(it.key() + ": " + it.value().dump() + " → " + (b.contains(it.key()) ? b[it.key()].dump() : "absent"));
    }
  }
  return changes;
}

}  // namespace

int run_replay(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string path;
  int64_t task_id = -1, trial_index = -1;
  int steps = 0;
  bool print_schedule = false;
  po::options_description options("options");
  options.add_options()
      ("help,h", "show this help")
      ("db", po::value<std::string>(&path), "the database file")
      ("task", po::value<int64_t>(&task_id), "task id (default: the only task)")
      ("trial", po::value<int64_t>(&trial_index), "the trial's index (default: the best)")
      ("steps", po::value<int>(&steps), "timed steps (default: as recorded)")
      ("print-schedule", po::bool_switch(&print_schedule), "print the primitives the configuration applies");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(options).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    out << kUsage << "\n" << options;
    return kExitOk;
  }
  SLAPO_CHECK(!path.empty(), ErrorCode::kInvalidArgument, "replay: --db FILE is required");
  SLAPO_CHECK(!vm.count("steps") || steps >= 1, ErrorCode::kInvalidArgument, "--steps must be at least 1");
  auto database = db::Database::open_existing(path);
  if (task_id < 0) {
    const auto tasks = database->tasks();
    SLAPO_CHECK(tasks.size() == 1, ErrorCode::kInvalidArgument, "replay: ", path, " has ", tasks.size(),
                " tasks; choose one with --task ID");
    task_id = tasks[0].id;
  }
  const db::TaskRecord task = database->task(task_id);
  db::TrialRecord recorded;
  if (trial_index >= 0) {
    const auto trials = database->trials(task_id);
    const auto it = std::find_if(trials.begin(), trials.end(), [&](const auto& t) { return t.index == trial_index; });
    SLAPO_CHECK(it != trials.end(), ErrorCode::kNotFound, "replay: task ", task_id, " has no trial ", trial_index);
    recorded = *it;
  } else {
    const auto best = database->best(task_id, 1);
    SLAPO_CHECK(!best.empty(), ErrorCode::kNotFound, "replay: task ", task_id, " has no successful trial");
    recorded = best[0];
  }

  const RunnerSetup setup = runner_for_task(task, steps);
  if (print_schedule) {
    SLAPO_CHECK(setup.workload.has_value(), ErrorCode::kInvalidArgument, "--print-schedule: task ", task_id,
                " runs an external command; slapo does not know its schedule");
    const runners::Workload& workload = *setup.workload;
    const models::ModelSpec spec = models::model_preset(workload.model);
    auto sch = schedule::create_schedule(models::build_model(spec, workload.seed));
    models::apply_template(*sch, spec, workload.schedule_template(), recorded.config);
    out << "schedule of " << recorded.config.to_string() << ":\n"
        << (sch->to_string().empty() ? "  (no primitives)\n" : sch->to_string());
  }
  runners::Runner* runner = setup.runner.get();

  const std::string fingerprint = runners::fingerprint_json(runners::collect_system_info());
  for (const std::string& change : fingerprint_changes(task.key.fingerprint_json, fingerprint)) {
    err << "warning: this machine differs from the one recorded: " << change << "\n";
  }
  const TrialResult measured = runner->run({recorded.config})[0];
  out << "task " << task_id << ", trial " << recorded.index << ": " << recorded.config.to_string() << "\n"
      << "status    recorded " << to_string(recorded.result.status) << ", measured " << to_string(measured.status) << "\n";
  if (!measured.error.empty()) out << "error     " << measured.error << "\n";
  out << std::left << std::setw(18) << "metric" << std::right << std::setw(14) << "recorded" << std::setw(14) << "measured"
      << std::setw(10) << "change" << "\n";
  for (const auto& [name, value] : recorded.result.metrics) {
    const auto m = measured.metrics.find(name);
    out << std::left << std::setw(18) << name << std::right << std::setw(14) << value;
    if (m == measured.metrics.end()) {
      out << std::setw(14) << "-" << "\n";
      continue;
    }
    out << std::setw(14) << m->second;
    if (value != 0) out << std::setw(9) << std::fixed << std::setprecision(1) << 100 * (m->second / value - 1) << "%" << std::defaultfloat << std::setprecision(6);
    out << "\n";
  }
  // Drift: beyond the recorded step-time spread (p10..p90 around the median), and at least 5%.
  const auto& rm = recorded.result.metrics;
  const auto objective = measured.metrics.find(task.objective);
  if (recorded.objective && objective != measured.metrics.end() && *recorded.objective != 0) {
    double noise = 0.05;
    if (rm.count("step_ms_p10") && rm.count("step_ms_p90") && rm.count("step_ms_median") && rm.at("step_ms_median") > 0) {
      noise = std::max(noise, (rm.at("step_ms_p90") - rm.at("step_ms_p10")) / rm.at("step_ms_median"));
    }
    const double drift = std::fabs(objective->second / *recorded.objective - 1);
    if (drift > noise) {
      err << "warning: " << task.objective << " drifted " << std::fixed << std::setprecision(1) << 100 * drift
          << "% from the record, beyond the recorded noise of " << 100 * noise << "%\n";
    }
  }
  return measured.status == TrialStatus::kOk ? kExitOk : kExitFailure;
}

}  // namespace slapo::cli
