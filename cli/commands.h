#pragma once
// Every command's options, parser and runner (cli/command.h describes the shape). Each is
// implemented in cli/<name>_command.cc.

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cli/command.h"
#include "cli/html_report.h"
#include "cli/options.h"
#include "tuner/tuner.h"

namespace slapo::cli {

// slapo-tune single-device | single-node: tune a space.
struct TuneOptions {
  bool help = false;
  bool single_node = false;  // which of the two commands
  SpaceArgs space;
  std::string db = "tune.db";
  tuner::TunerOptions tuner;
  std::string objective;  // empty: the runner's natural objective
  bool maximize = false;  // --maximize (--minimize is tuner.objective.minimize); neither: the
                          // metric's own direction (core/objective_direction.h)
  bool json = false;
  bool reprofile = false;  // the cost model measures its profiles again
  std::string study;       // the task's name
  RunnerArgs runner;
  auto tie() const {
    return std::tie(help, single_node, space, db, tuner.strategy, tuner.trials, tuner.time_limit_s,
                    tuner.patience, tuner.stop_after_failures, tuner.seed, tuner.objective.minimize,
                    tuner.confirm, tuner.confirm_rounds, objective, maximize, json, reprofile,
                    study, runner);
  }
};
TuneOptions parse_single_device(const Args& args);
TuneOptions parse_single_node(const Args& args);
int run_tune(const TuneOptions& options, std::ostream& out, std::ostream& err);

// slapo-tune predict: one configuration's predicted step time and peak memory, with the breakdown.
struct PredictOptions {
  bool help = false;
  SpaceArgs space;
  std::string config;
  std::string db;  // where profiles are kept (empty: measured and dropped)
  bool reprofile = false;
  bool json = false;
  int nproc = 0;  // the job's ranks (0: the configuration's own layout)
  auto tie() const { return std::tie(help, space, config, db, reprofile, json, nproc); }
};
PredictOptions parse_predict(const Args& args);
int run_predict(const PredictOptions& options, std::ostream& out, std::ostream& err);

// slapo-tune plan: the whole space ranked by prediction.
struct PlanOptions {
  bool help = false;
  SpaceArgs space;
  size_t top = 10;
  std::string objective;  // empty: samples_per_s
  bool minimize = false;  // neither flag: the metric's own direction
  bool maximize = false;
  std::string db;
  bool reprofile = false;
  bool json = false;
  bool each_config = false;  // alike configurations each on a row of their own
  int nproc = 0;             // 0: layouts of any number of ranks
  auto tie() const {
    return std::tie(help, space, top, objective, minimize, maximize, db, reprofile, json,
                    each_config, nproc);
  }
};
PlanOptions parse_plan(const Args& args);
int run_plan(const PlanOptions& options, std::ostream& out, std::ostream& err);

// slapo-tune trial: measure one configuration.
struct TrialOptions {
  bool help = false;
  SpaceArgs space;
  std::string config;  // JSON or @FILE
  std::string db;      // empty: not recorded
  bool json = false;
  RunnerArgs runner;
  auto tie() const { return std::tie(help, space, config, db, json, runner); }
};
TrialOptions parse_trial(const Args& args);
int run_trial(const TrialOptions& options, std::ostream& out, std::ostream& err);

// slapo-tune worker: the worker end of the worker protocol.
struct WorkerOptions {
  bool help = false;
  std::string workload_json;
  std::string config_json;
  bool serve = false;
  bool collectives = false;  // one rank of the collective profiling job
  std::string profile_json;  // one copy of a profiling run beside its peers
  auto tie() const {
    return std::tie(help, workload_json, config_json, serve, collectives, profile_json);
  }
};
WorkerOptions parse_worker(const Args& args);
int run_worker(const WorkerOptions& options, std::ostream& out, std::ostream& err);

// slapo-tune verify: the scheduled model computes what the original does.
struct VerifyOptions {
  bool help = false;
  SpaceArgs space;
  std::string config;
  int steps = 3;
  double tolerance = 1e-5;
  double curve_tolerance = 1e-4;
  double lr = 1e-3;
  int nproc = 0;  // 0: not given
  Args args;      // as given, to launch the ranks with
  auto tie() const {
    return std::tie(help, space, config, steps, tolerance, curve_tolerance, lr, nproc);
  }
};
VerifyOptions parse_verify(const Args& args);
int run_verify(const VerifyOptions& options, std::ostream& out, std::ostream& err);

// slapo-tune primitives | templates [list | show NAME | reference]: a catalogue from a table.
struct CatalogueOptions {
  bool help = false;
  std::string action = "list";
  std::string name;
  auto tie() const { return std::tie(help, action, name); }
};
using PrimitivesOptions = CatalogueOptions;
using TemplatesOptions = CatalogueOptions;
PrimitivesOptions parse_primitives(const Args& args);
int run_primitives(const PrimitivesOptions& options, std::ostream& out, std::ostream& err);
TemplatesOptions parse_templates(const Args& args);
int run_templates(const TemplatesOptions& options, std::ostream& out, std::ostream& err);

// slapo-tune space show|count|list|sample FILE.
struct SpaceOptions {
  bool help = false;
  std::string action;
  SpaceArgs space;
  size_t limit = 50;
  size_t offset = 0;
  size_t n = 10;
  uint64_t seed = 0;
  std::string format = "table";
  auto tie() const { return std::tie(help, action, space, limit, offset, n, seed, format); }
};
SpaceOptions parse_space(const Args& args);
int run_space(const SpaceOptions& options, std::ostream& out, std::ostream& err);

// slapo-tune db tasks|trials|best|show|export|prune.
struct DbOptions {
  bool help = false;
  std::string action;
  TaskArgs task;
  std::optional<int64_t> trial;
  std::string status;
  size_t top = 0;
  std::string sort;
  std::string format;  // empty: table (csv for export)
  auto tie() const { return std::tie(help, action, task, trial, status, top, sort, format); }
};
DbOptions parse_db(const Args& args);
int run_db(const DbOptions& options, std::ostream& out, std::ostream& err);

// slapo-tune replay: measure a recorded configuration again.
struct ReplayOptions {
  bool help = false;
  TaskArgs task;
  std::optional<int64_t> trial;  // default: the best
  std::optional<int> steps;      // default: as recorded
  bool print_schedule = false;
  auto tie() const { return std::tie(help, task, trial, steps, print_schedule); }
};
ReplayOptions parse_replay(const Args& args);
int run_replay(const ReplayOptions& options, std::ostream& out, std::ostream& err);

// slapo-tune report: a task's tuning as one HTML file.
struct ReportCommandOptions {
  bool help = false;
  TaskArgs task;
  std::string out;
  ReportOptions report;
  auto tie() const { return std::tie(help, task, out, report.x_knob, report.y_knob, report.top); }
};
ReportCommandOptions parse_report(const Args& args);
int run_report(const ReportCommandOptions& options, std::ostream& out, std::ostream& err);

// slapo-tune weights show FILE | convert IN OUT | init OUT (docs/weights.md).
struct WeightsOptions {
  bool help = false;
  std::string action;
  std::vector<std::string> files;
  std::string model;            // a zoo preset: what the names are mapped onto
  std::string layout = "auto";  // the checkpoint's names (models/weights/hf_layouts.h)
  std::string to = "zoo";       // the names convert and init write under
  uint64_t seed = 0;
  auto tie() const { return std::tie(help, action, files, model, layout, to, seed); }
};
WeightsOptions parse_weights(const Args& args);
int run_weights(const WeightsOptions& options, std::ostream& out, std::ostream& err);

// slapo-tune version (and --version).
struct VersionOptions {
  bool help = false;
  auto tie() const { return std::tie(help); }
};
VersionOptions parse_version(const Args& args);
int run_version(const VersionOptions& options, std::ostream& out, std::ostream& err);

}  // namespace slapo::cli
