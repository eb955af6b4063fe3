// The tuning run of `slapo-tune single-device` and `single-node`.

#include "cli/tune_run.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cost_setup.h"
#include "cli/count_option.h"
#include "cli/metrics_list.h"
#include "cli/noise_line.h"
#include "cli/task_diff.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/metrics.h"
#include "core/objective_direction.h"
#include "core/text.h"
#include "cost/planner.h"
#include "space/compiled_space.h"
#include "tuner/measured_memory.h"
#include "tuner/model_strategy.h"

namespace slapo::cli {

namespace {

constexpr const char* kTuneUsage =
    "usage: slapo-tune single-device --space FILE [options] [-- CMD ARGS...]\n"
    "       slapo-tune single-node --nproc N --space FILE [options] [-- CMD ARGS...]\n"
    "\n"
    "Tunes the space file's [workload] (or the command after --) on this machine: the strategy\n"
    "proposes configurations, out-of-memory dominance prunes the ones proven to run out of memory,\n"
    "the runner measures the rest, and every trial is recorded in --db. Running the same command\n"
    "again continues the same task and measures nothing twice. With --confirm K, the best K are\n"
    "then measured again (--confirm-rounds times each) and ranked by their median: on a noisy\n"
    "machine the best single measurement is often a lucky one.\n"
    "\n"
    "single-node runs every trial as N ranks (torchrun's variables, Gloo on the CPU): the\n"
    "configuration's tp, pp and dp lay them out (dp fills what tp and pp leave), and a command\n"
    "after -- is started N times the way torchrun starts a script.\n";

std::string format_number(std::optional<double> v) {
  if (!v) return "-";
  std::ostringstream s;
  s << std::setprecision(5) << *v;
  return s.str();
}

nlohmann::ordered_json optional_json(std::optional<double> v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

// The first line of an error, at most 80 characters.
std::string short_error(const std::string& error) {
  return error.substr(0, error.find('\n')).substr(0, 80);
}

void print_progress(const tuner::Progress& p, const TuneOptions& o, std::ostream& out) {
  if (o.json) {
    nlohmann::ordered_json j;
    j["index"] = p.index;
    j["config"] = nlohmann::ordered_json::parse(p.config.to_json());
    j["status"] = to_string(p.status);
    j["objective"] = optional_json(p.objective);
    j["best"] = optional_json(p.best);
    j["error"] = p.error;
    j["measured"] = p.measured;
    if (p.round > 0) {
      j["round"] = p.round;
      j["confirmed"] = optional_json(p.confirmed);
    }
    out << j.dump() << std::endl;
    return;
  }
  std::ostringstream line;
  if (p.round > 0) {
    line << "[" << std::setw(3) << p.index << "] again #" << p.round << "  " << std::left
         << std::setw(5) << to_string(p.status) << std::right << " " << std::setw(10)
         << format_number(p.objective) << "  median " << std::setw(8) << format_number(p.confirmed)
         << "  best " << std::setw(10) << format_number(p.best) << "  " << p.config.to_string();
    if (!p.error.empty()) line << "  (" << short_error(p.error) << ")";
    out << line.str() << "\n" << std::flush;
    return;
  }
  line << "[" << std::setw(3) << p.index << "] " << std::left << std::setw(14)
       << to_string(p.status) << std::right << " " << std::setw(10) << format_number(p.objective)
       << "  best " << std::setw(10) << format_number(p.best) << "  " << p.config.to_string();
  if (p.pruned_by)
    line << "  (implied by trial " << *p.pruned_by << ")";
  else if (!p.error.empty())
    line << "  (" << short_error(p.error) << ")";
  if (o.tuner.trials > 0)
    line << "  left " << p.trials_left << ", eta " << static_cast<int>(p.eta_s) << " s";
  out << line.str() << "\n" << std::flush;
}

void print_summary(const tuner::TuneSummary& summary, const TuneOptions& o,
                   const Objective& objective, std::ostream& out) {
  if (o.json) {
    nlohmann::ordered_json j;
    j["task"] = summary.task_id;
    j["best_config"] = summary.best ? nlohmann::ordered_json::parse(summary.best->config.to_json())
                                    : nlohmann::ordered_json(nullptr);
    j["best_objective"] =
        optional_json(summary.best ? summary.best->ranking_objective() : std::nullopt);
    j["best_measurements"] = summary.best ? 1 + summary.best->remeasured : 0;
    j["measured"] = summary.measured;
    j["pruned"] = summary.pruned;
    j["failed"] = summary.failed;
    j["resumed"] = summary.resumed;
    j["remeasured"] = summary.remeasured;
    j["elapsed_s"] = summary.elapsed_s;
    j["stopped_because"] = summary.stopped_because;
    j["step_spread_median"] = optional_json(summary.step_spread);
    j["remeasured_spread_median"] = optional_json(summary.remeasured_spread);
    j["memory_metric_misses"] = summary.memory_misses.empty()
                                    ? nlohmann::ordered_json(nullptr)
                                    : nlohmann::ordered_json(summary.memory_misses);
    out << j.dump() << "\n";
    return;
  }
  out << "\nstopped: " << summary.stopped_because << "\n"
      << "trials: " << summary.measured << " measured (" << summary.failed << " failed), "
      << summary.pruned << " pruned, " << summary.resumed << " recorded before";
  if (summary.remeasured > 0) {
    out << "; " << summary.remeasured << " re-measured (" << summary.remeasure_failed << " failed)";
  }
  out << "; " << std::fixed << std::setprecision(1) << summary.elapsed_s << " s\n"
      << std::defaultfloat << std::setprecision(6);
  out << noise_line(summary.step_spread, o.tuner.confirm > 0, summary.remeasured_spread);
  if (!summary.memory_misses.empty()) {
    // --memory-budget caps a command's address space (runners/command_runner.h).
    out << "memory: " << summary.memory_misses
        << "; --memory-budget caps address space (VmPeak in /proc/self/status): report that, "
           "so that the fit can prune what it predicts will not fit\n";
  }
  if (!summary.best) {
    out << "no configuration succeeded\n";
    return;
  }
  out << "best: " << summary.best->config.to_string() << "  " << objective.metric << " = "
      << format_number(summary.best->ranking_objective()) << " (trial " << summary.best->index;
  if (summary.best->remeasured > 0) {
    out << "; median of " << 1 + summary.best->remeasured << " measurements, the first "
        << format_number(summary.best->objective);
  }
  out << ")\n";
  write_metrics(out, summary.best->result.metrics);
  out << "replay it: slapo-tune replay --db " << o.db << " --task " << summary.task_id << "\n";
}

}  // namespace

std::string reproduce_line(const runners::RunnerSpec& spec, const db::TrialRecord& trial,
                           const std::string& db, int64_t task) {
  if (spec.command) return runners::CommandRunner(*spec.command).command_line(trial.config);
  return "slapo-tune replay --db " + shell_quote(db) + " --task " + std::to_string(task) +
         " --trial " + std::to_string(trial.index);
}

void declare_tune(TuneOptions* o, OptionSet& set) {
  std::string strategies;
  for (const std::string& name : tuner::strategy_names())
    strategies += (strategies.empty() ? "" : ", ") + name;
  o->space.declare(set);
  // clang-format off
  set.visible.add_options()
      ("db", po::value<std::string>(&o->db)->default_value("tune.db"), "tuning database (created when absent)")
      ("strategy", po::value<std::string>(&o->tuner.strategy)->default_value("auto"), strategies.c_str())
      ("trials", count_value(&o->tuner.trials)->default_value(Count{20}, "20"),
       "measured trials of the task in all, by every tuner of it (0: no limit)")
      ("time-limit", po::value<double>(&o->tuner.time_limit_s)->default_value(0), "seconds for this run (0: none)")
      ("patience", count_value(&o->tuner.patience)->default_value(Count{0}, "0"),
       "stop after N trials without a better one")
      ("stop-after-failures", count_value(&o->tuner.stop_after_failures)->default_value(Count{5}, "5"),
       "stop when the first N measured trials all fail alike (a fault of the workload or command, "
       "not of the configurations; 0: never)")
      ("seed", po::value<uint64_t>(&o->tuner.seed)->default_value(0), "the strategy's seed")
      ("objective", po::value<std::string>(&o->objective),
       "metric to optimize (default: samples_per_s, or the command's)")
      ("minimize", po::bool_switch(&o->tuner.objective.minimize),
       "minimize the objective (default: the built-in metrics' own direction, times and memory "
       "minimized; a command's metric maximized)")
      ("maximize", po::bool_switch(&o->maximize), "maximize the objective")
      ("confirm", count_value(&o->tuner.confirm)->default_value(Count{0}, "0"),
       "then measure the best K again and rank them by their median (0: no)")
      ("confirm-rounds", count_value(&o->tuner.confirm_rounds)->default_value(Count{2}, "2"),
       "re-measurements of each of the best K")
      ("json", po::bool_switch(&o->json), "one JSON object per trial, then the summary")
      ("reprofile", po::bool_switch(&o->reprofile),
       "auto/model: measure the cost model's profiles again even when stored")
      ("study", po::value<std::string>(&o->study),
       "name the task (db, replay and report take --study NAME); refused when the name is "
       "another task's")
      ("claim-timeout", po::value<double>(&o->tuner.claim_timeout_s)->default_value(60),
       "seconds without a heartbeat before another tuner of the task adopts a claim")
      ("memory-metric", po::value<std::string>(&o->tuner.memory_metric),
       "the memory metric the trials report, learned from to skip configurations predicted over "
       "the budget (a command with --memory-budget: by default the first like peak_rss_mib; a "
       "built-in workload with a memory_budget: peak_bytes)");
  // clang-format on
  o->runner.declare(set);
}

TuneOptions parse_tune(const Args& all_args, const char* command) {
  auto [args, cmd] = split_command(all_args);
  TuneOptions o = parse_options<TuneOptions>(args, declare_tune);
  o.runner.command = cmd;
  if (o.help) return o;
  SLAPO_CHECK(!o.space.file.empty(), ErrorCode::kInvalidArgument, command,
              ": --space FILE is required");
  SLAPO_CHECK(std::isfinite(o.tuner.time_limit_s) && o.tuner.time_limit_s >= 0,
              ErrorCode::kInvalidArgument, "--time-limit ", o.tuner.time_limit_s,
              ": expected seconds, at least 0 (0: none)");
  SLAPO_CHECK(std::isfinite(o.tuner.claim_timeout_s) && o.tuner.claim_timeout_s > 0,
              ErrorCode::kInvalidArgument, "--claim-timeout ", o.tuner.claim_timeout_s,
              ": expected seconds, more than 0");
  SLAPO_CHECK(o.tuner.memory_metric.empty() || tuner::metric_bytes(o.tuner.memory_metric, 1),
              ErrorCode::kInvalidArgument, "--memory-metric ", o.tuner.memory_metric,
              ": its name must end in a memory unit (_bytes, _kib, _mib, _gib, _kb, _mb, _gb)");
  // An unknown name fails here, before anything runs (`model` is checked once the runner is known).
  const std::vector<std::string> names = tuner::strategy_names();
  if (std::find(names.begin(), names.end(), o.tuner.strategy) == names.end()) {
    for_flag("--strategy", o.tuner.strategy, [&] { tuner::make_strategy(o.tuner.strategy); });
  }
  return o;
}

std::string tune_help() { return help_text<TuneOptions>(kTuneUsage, declare_tune); }

int run_tune(const TuneOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << tune_help();
    return kExitOk;
  }
  const space::Space declared = o.space.load();
  const space::CompiledSpace compiled = space::CompiledSpace::compile(declared);
  SLAPO_CHECK(compiled.size() > 0, ErrorCode::kInvalidArgument, o.space.file,
              ": the space is empty");
  runners::RunnerSpec spec = o.runner.spec(declared, o.objective, o.tuner.objective.minimize);
  tuner::TunerOptions options = o.tuner;
  const ResolvedObjective objective_of_run =
      resolve_objective(o.objective.empty() ? spec.natural_objective() : o.objective,
                        o.tuner.objective.minimize, o.maximize);
  options.objective = objective_of_run.objective;
  if (spec.command) spec.command->early_stopping.minimize = options.objective.minimize;
  if (!objective_of_run.note.empty())
    (o.json ? err : out) << "note: " << objective_of_run.note << "\n";
  const std::unique_ptr<runners::Runner> runner = runners::make_runner(spec);
  // What the model strategy cannot do is refused before the database holds a task for this run.
  // A built-in workload's model composes a configuration's cuts (runners/cost_model.h).
  const std::string model_cannot_search = tuner::why_model_cannot_search(
      compiled, options.objective, /*can_compose=*/spec.workload.has_value());
  SLAPO_CHECK(options.strategy != "model" || model_cannot_search.empty(),
              ErrorCode::kInvalidArgument, o.space.file, ": ", model_cannot_search,
              " — choose another strategy; `slapo-tune plan` ranks the space without measuring");
  // The model ranks by what it predicts: a run that optimizes another metric (the loss, say) is
  // refused the model strategy before anything runs, and auto searches it without the model.
  const std::string& objective = options.objective.metric;
  if (options.strategy == "model" && spec.workload)
    for_flag("--objective", objective, [&] { cost::check_predicted_metric(objective); });
  const bool predicted = cost::predicts_metric(objective);
  if (options.strategy == "auto" && spec.workload && !predicted)
    (o.json ? err : out) << "auto: the cost model does not predict " << objective
                         << ": searching without it\n";
  SLAPO_CHECK(options.strategy != "model" || spec.workload, ErrorCode::kInvalidArgument,
              "--strategy model: the model strategy needs a cost model: only built-in workloads "
              "are predicted, not a command");
  // A built-in workload's trials report two memory metrics: another name would teach nothing.
  const std::string& memory_metric = options.memory_metric;
  SLAPO_CHECK(!spec.workload || memory_metric.empty() || memory_metric == metric::kPeakBytes ||
                  memory_metric == metric::kMaxRssBytes,
              ErrorCode::kInvalidArgument, "--memory-metric ", memory_metric,
              ": a built-in workload's trials report ", metric::kPeakBytes,
              " (what its budget "
              "caps) and ",
              metric::kMaxRssBytes);
  auto database = db::Database::open(o.db);
  const db::TaskKey key = task_key(spec, *runner, declared);
  if (!o.study.empty()) {
    // A study is one task: a run whose measurements would not compare with its trials is refused.
    if (const auto named = database->task_by_study(o.study);
        named && named->key.hash() != key.hash()) {
      std::string why;
      for (const std::string& d : key_differences(named->key, key)) why += "; " + d;
      SLAPO_FAIL(ErrorCode::kInvalidArgument, "--study ", o.study, ": it is task ", named->id,
                 ", whose measurements this run's would not compare with (", why.substr(2),
                 "); choose another name");
    }
  }
  {
    const db::TaskRecord task = database->find_or_create_task(key, options.objective);
    if (!o.study.empty())
      for_flag("--study", o.study, [&] { database->name_task(task.id, o.study); });
    database->set_runner_spec(task.id, spec.to_json());
  }
  // Ctrl-C or SIGTERM: the running trial's process groups end, it is recorded as interrupted, the
  // summary is printed; a second one exits at once.
  install_interrupt_handlers();

  // The cost model, for `model` and for `auto` on a built-in workload (one rank or a layout of
  // several): profiled first, its time counted against the run's time limit.
  std::unique_ptr<runners::WorkloadCostModel> cost_model;
  // auto: the model where it can rank the space, its own search elsewhere.
  const bool wants_model = options.strategy == "model" ||
                           (options.strategy == "auto" && predicted && model_cannot_search.empty());
  if (wants_model && spec.workload) {
    cost_model =
        make_cost_model(declared, compiled, database.get(), o.reprofile, o.json ? err : out);
    cost_model->set_ranks_per_trial(spec.nproc);
    const double profile_s = cost_model->profile_space(compiled);
    if (options.time_limit_s > 0)
      options.time_limit_s = std::max(1e-3, options.time_limit_s - profile_s);
    options.cost_model = cost_model.get();
  }

  // A command is a workload slapo knows nothing about: it learns memory from what the trials
  // report, and starts where the first trial is most likely to fit. A built-in workload's trials
  // report their peak exactly as its budget caps it (the tracking allocator's `peak_bytes`, the
  // largest rank's): what the model does not prune, or where no model runs, they prune from
  // (tuner/measured_memory.h).
  if (spec.command) {
    options.memory_budget_bytes = static_cast<double>(spec.command->memory_budget_bytes);
    options.lean_start = true;
  } else if (spec.workload && spec.workload->memory_budget > 0) {
    options.memory_budget_bytes = static_cast<double>(spec.workload->memory_budget);
    if (options.memory_metric.empty()) options.memory_metric = metric::kPeakBytes;
  }

  if (!o.json) {
    out << "tuning " << o.space.file << ": " << compiled.size() << " configurations, strategy "
        << options.strategy << ", runner " << runner->kind() << ", " << options.objective.verb()
        << " " << options.objective.metric << ", db " << o.db << "\n";
  }
  const tuner::TuneSummary summary =
      tuner::tune(compiled, *runner, *database, key, options,
                  [&](const tuner::Progress& p) { print_progress(p, o, out); });
  print_summary(summary, o, options.objective, out);
  if (summary.best && !o.json)
    out << "reproduce it: " << reproduce_line(spec, *summary.best, o.db, summary.task_id) << "\n";
  if (interrupt_requested()) {
    if (!o.json)
      out << "interrupted: run the same command again to resume (nothing recorded is measured again)\n";
    return kExitInterrupted;
  }
  return summary.best ? kExitOk : kExitFailure;
}

}  // namespace slapo::cli
