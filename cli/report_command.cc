// slapo-tune report --db FILE [--task ID] --out report.html: a task's tuning as one HTML file.

#include <cerrno>
#include <cstring>
#include <fstream>
#include <ostream>

#include "cli/commands.h"
#include "cli/count_option.h"
#include "cli/tune_run.h"
#include "core/error.h"
#include "db/database.h"
#include "tuner/noise.h"

namespace slapo::cli {

namespace {

constexpr const char* kReportUsage =
    "usage: slapo-tune report --db FILE [--task ID] --out report.html [--x KNOB] [--y KNOB] [--top K]\n"
    "\n"
    "Writes one self-contained HTML file (inline SVG, nothing fetched): the line that reproduces\n"
    "the best, a heat map of the objective over two knobs with a legend (out-of-memory, pruned,\n"
    "failed and unmeasured cells marked), a panel per knob with the re-measurements' spread, the\n"
    "convergence over time, and the top configurations.\n";

void declare(ReportCommandOptions* o, OptionSet& set) {
  o->task.declare(set);
  // clang-format off
  set.visible.add_options()
      ("out", po::value<std::string>(&o->out), "the HTML file to write")
      ("x", po::value<std::string>(&o->report.x_knob), "the heat map's horizontal knob (default: the knob of numbers with the most values)")
      ("y", po::value<std::string>(&o->report.y_knob), "the heat map's vertical knob (default: the next one)")
      ("top", count_value(&o->report.top)->default_value(Count{10}, "10"), "rows of the top-configurations table");
  // clang-format on
}

}  // namespace

ReportCommandOptions parse_report(const Args& args) {
  ReportCommandOptions o = parse_options<ReportCommandOptions>(args, declare);
  if (o.help) return o;
  SLAPO_CHECK(!o.task.db.empty(), ErrorCode::kInvalidArgument, "report: --db FILE is required");
  SLAPO_CHECK(!o.out.empty(), ErrorCode::kInvalidArgument, "report: --out FILE is required");
  return o;
}

int run_report(const ReportCommandOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << help_text<ReportCommandOptions>(kReportUsage, declare);
    return kExitOk;
  }
  auto database = db::Database::open_read_only(o.task.db);
  const int64_t task_id = o.task.resolve(*database, "report");
  ReportData data;
  data.task = database->task(task_id);
  data.trials = database->trials(task_id);
  data.remeasurements = database->remeasurements(task_id);
  // The noise as the tuning run's summary says it, over every trial of the task.
  data.step_spread = tuner::median_step_spread(data.trials);
  data.remeasured_spread = tuner::remeasured_spread(data.trials, data.remeasurements);
  const auto best = database->best(task_id, 1);
  if (!best.empty()) {
    const runners::RunnerSpec spec =
        data.task.runner_spec_json.empty()
            ? runners::RunnerSpec::from_task(data.task.key.workload_json, data.task.key.runner,
                                             data.task.key.world_size, data.task.objective.metric)
            : runners::RunnerSpec::from_json(data.task.runner_spec_json, o.task.db);
    data.reproduce = reproduce_line(spec, best[0], o.task.db, task_id);
  }
  const db::TaskRecord& task = data.task;
  const std::string html = render_report(data, o.report);
  std::ofstream file(o.out, std::ios::binary | std::ios::trunc);
  // A path that cannot be written is the user's to fix (exit 2), with the system's reason.
  SLAPO_CHECK(file.good(), ErrorCode::kInvalidArgument, "report: --out ", o.out,
              ": cannot write it (", std::strerror(errno), ")");
  file << html;
  file.close();
  SLAPO_CHECK(file.good(), ErrorCode::kIo, "report: writing ", o.out, " failed");
  out << "wrote " << o.out << " (task " << task_id << ", " << task.trial_count << " trials)\n";
  return kExitOk;
}

}  // namespace slapo::cli
