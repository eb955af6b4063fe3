// slapo-tune replay: re-measure a recorded configuration from the record alone.

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/metrics_list.h"
#include "cli/tune_run.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/metrics.h"
#include "db/database.h"
#include "models/templates.h"
#include "models/zoo.h"
#include "runners/runner_spec.h"
#include "runners/system_info.h"
#include "schedule/language/schedule.h"

namespace slapo::cli {

namespace {

constexpr const char* kReplayUsage =
    "usage: slapo-tune replay --db FILE [--task ID] [--trial N] [--steps S] [--print-schedule]\n"
    "\n"
    "Rebuilds the best (or the given) configuration of a task from the record alone, measures it\n"
    "again with the task's runner, and prints the recorded and measured figures side by side. Warns\n"
    "when this machine's fingerprint differs from the task's, or when the objective drifted beyond\n"
    "the recorded noise.\n";

// Keys whose values differ between two fingerprints.
std::vector<std::string> fingerprint_changes(const std::string& recorded,
                                             const std::string& current) {
  const auto a = nlohmann::json::parse(recorded, nullptr, false),
             b = nlohmann::json::parse(current, nullptr, false);
  std::vector<std::string> changes;
  if (!a.is_object() || !b.is_object()) return {"(unreadable fingerprint)"};
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (!b.contains(it.key()) || b[it.key()] != it.value()) {
      changes.push_back(it.key() + ": " + it.value().dump() + " → " +
                        (b.contains(it.key()) ? b[it.key()].dump() : "absent"));
    }
  }
  return changes;
}

void declare(ReplayOptions* o, OptionSet& set) {
  o->task.declare(set);
  // clang-format off
  set.visible.add_options()
      ("trial", po::value<int64_t>()->notifier([o](int64_t i) { o->trial = i; }), "the trial's index (default: the best)")
      ("steps", po::value<int>()->notifier([o](int s) { o->steps = s; }), "timed steps (default: as recorded)")
      ("print-schedule", po::bool_switch(&o->print_schedule), "print the primitives the configuration applies");
  // clang-format on
}

}  // namespace

ReplayOptions parse_replay(const Args& args) {
  ReplayOptions o = parse_options<ReplayOptions>(args, declare);
  if (o.help) return o;
  SLAPO_CHECK(!o.task.db.empty(), ErrorCode::kInvalidArgument, "replay: --db FILE is required");
  SLAPO_CHECK(!o.steps || *o.steps >= 1, ErrorCode::kInvalidArgument, "--steps must be at least 1");
  SLAPO_CHECK(!o.trial || *o.trial >= 0, ErrorCode::kInvalidArgument, "--trial ", *o.trial,
              ": a trial index is 0 or more");
  return o;
}

int run_replay(const ReplayOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << help_text<ReplayOptions>(kReplayUsage, declare);
    return kExitOk;
  }
  auto database = db::Database::open_read_only(o.task.db);
  const int64_t task_id = o.task.resolve(*database, "replay");
  const db::TaskRecord task = database->task(task_id);
  db::TrialRecord recorded;
  if (o.trial) {
    recorded = for_flag("--trial", std::to_string(*o.trial),
                        [&] { return database->trial(task_id, *o.trial); });
  } else {
    const auto best = database->best(task_id, 1);
    SLAPO_CHECK(!best.empty(), ErrorCode::kNotFound, "replay: task ", task_id,
                " has no successful trial");
    recorded = best[0];
  }

  // The spec the task's last run used (its directory, environment, limits), else the one its key
  // implies (tasks recorded before specs were kept).
  runners::RunnerSpec spec =
      task.runner_spec_json.empty()
          ? runners::RunnerSpec::from_task(task.key.workload_json, task.key.runner,
                                           task.key.world_size, task.objective.metric)
          : runners::RunnerSpec::from_json(task.runner_spec_json,
                                           o.task.db + ": task " + std::to_string(task_id));
  if (spec.command) spec.command->early_stopping.enabled = false;  // one measurement, whole
  if (spec.workload && o.steps) spec.workload->steps = *o.steps;
  if (o.print_schedule) {
    SLAPO_CHECK(spec.workload.has_value(), ErrorCode::kInvalidArgument, "--print-schedule: task ",
                task_id, " runs an external command; slapo does not know its schedule");
    const runners::Workload& workload = *spec.workload;
    const models::ModelSpec model = workload.spec();
    auto sch = schedule::create_schedule(models::build_model(model, workload.seed));
    models::apply_template(*sch, model, workload.schedule_template(), recorded.config);
    out << "schedule of " << recorded.config.to_string() << ":\n"
        << (sch->to_string().empty() ? "  (no primitives)\n" : sch->to_string());
  }
  const std::unique_ptr<runners::Runner> runner = runners::make_runner(spec);

  const std::string fingerprint = runners::fingerprint_json(runners::collect_system_info());
  for (const std::string& change : fingerprint_changes(task.key.fingerprint_json, fingerprint)) {
    err << "warning: this machine differs from the one recorded: " << change << "\n";
  }
  install_interrupt_handlers();
  const TrialResult measured = runner->run({recorded.config})[0];
  out << "task " << task_id << ", trial " << recorded.index << ": " << recorded.config.to_string()
      << "\n"
      << "reproduce " << reproduce_line(spec, recorded, o.task.db, task_id) << "\n"
      << "status    recorded " << to_string(recorded.result.status) << ", measured "
      << to_string(measured.status) << "\n";
  if (!measured.error.empty()) out << "error     " << measured.error << "\n";
  const int name_width = static_cast<int>(metric_name_width(recorded.result.metrics, 18));
  out << std::left << std::setw(name_width) << "metric" << std::right << std::setw(14) << "recorded"
      << std::setw(14) << "measured" << std::setw(10) << "change"
      << "\n";
  for (const auto& [name, value] : recorded.result.metrics) {
    const auto m = measured.metrics.find(name);
    out << std::left << std::setw(name_width) << name << std::right << std::setw(14) << value;
    if (m == measured.metrics.end()) {
      out << std::setw(14) << "-"
          << "\n";
      continue;
    }
    out << std::setw(14) << m->second;
    if (value != 0)
      out << std::setw(9) << std::fixed << std::setprecision(1) << 100 * (m->second / value - 1)
          << "%" << std::defaultfloat << std::setprecision(6);
    out << "\n";
  }
  // Drift: against what ranked the trial (the median of its measurements when re-measured), beyond
  // the noise the record shows — the spread of those measurements, or of its step times — and at
  // least 5%.
  const auto& rm = recorded.result.metrics;
  const auto objective = measured.metrics.find(task.objective.metric);
  const std::optional<double> reference = recorded.ranking_objective();
  if (reference && objective != measured.metrics.end() && *reference != 0) {
    double noise = 0.05;
    std::vector<double> values = {*recorded.objective};
    for (const db::Remeasurement& r : database->remeasurements(task_id, recorded.index))
      if (r.objective) values.push_back(*r.objective);
    if (values.size() > 1) {
      const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
      noise = std::max(noise, (*hi - *lo) / std::fabs(*reference));
    }
    if (rm.count(metric::kStepMsP10) && rm.count(metric::kStepMsP90) &&
        rm.count(metric::kStepMsMedian) && rm.at(metric::kStepMsMedian) > 0) {
      noise = std::max(noise, (rm.at(metric::kStepMsP90) - rm.at(metric::kStepMsP10)) /
                                  rm.at(metric::kStepMsMedian));
    }
    const double drift = std::fabs(objective->second / *reference - 1);
    out << "against  "
        << (values.size() > 1 ? "the median of " + std::to_string(values.size()) + " measurements, "
                              : std::string("the measurement, "))
        << *reference << "; recorded noise " << std::fixed << std::setprecision(1) << 100 * noise
        << "%" << std::defaultfloat << std::setprecision(6) << "\n";
    if (drift > noise) {
      err << "warning: " << task.objective.metric << " drifted " << std::fixed
          << std::setprecision(1) << 100 * drift
          << "% from the record, beyond the recorded noise of " << 100 * noise << "%\n";
    }
  }
  if (interrupt_requested()) return kExitInterrupted;
  return measured.status == TrialStatus::kOk ? kExitOk : kExitFailure;
}

}  // namespace slapo::cli
