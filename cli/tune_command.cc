// slapo-tune single-device: search the space, measure each candidate, record every trial.

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/config_arg.h"
#include "cli/count_option.h"
#include "cli/runner_setup.h"
#include "core/error.h"
#include "db/database.h"
#include "space/compiled_space.h"
#include "tuner/tuner.h"

namespace po = boost::program_options;

namespace slapo::cli {

namespace {

constexpr const char* kUsage =
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

}  // namespace

namespace {

int tune(const std::vector<std::string>& all_args, std::ostream& out, std::ostream& err, bool single_node) {
  const char* name = single_node ? "single-node" : "single-device";
  auto [args, command] = split_command(all_args);
  RunnerFlags flags;
  flags.command = command;
  std::string space_file, db_path = "tune.db", objective;
  std::vector<std::string> params;
  tuner::TunerOptions options;
  bool json = false;
  po::options_description desc("options");
  desc.add_options()
      ("help,h", "show this help")
      ("space", po::value<std::string>(&space_file), "space file")
      ("db", po::value<std::string>(&db_path)->default_value("tune.db"), "tuning database (created when absent)")
      ("strategy", po::value<std::string>(&options.strategy)->default_value("auto"), "auto, bayes, exhaustive, random, coordinate, slapo")
      ("trials", count_value(&options.trials)->default_value(Count{20}, "20"), "measured trials of the task in all (0: no limit)")
      ("time-limit", po::value<double>(&options.time_limit_s)->default_value(0), "seconds for this run (0: none)")
      ("patience", count_value(&options.patience)->default_value(Count{0}, "0"), "stop after N trials without a better one")
      ("seed", po::value<uint64_t>(&options.seed)->default_value(0), "the strategy's seed")
      ("objective", po::value<std::string>(&objective), "metric to optimize (default: samples_per_s, or the command's)")
      ("minimize", po::bool_switch(&options.minimize), "minimize the objective (step times, memory)")
      ("confirm", count_value(&options.confirm)->default_value(Count{0}, "0"),
       "then measure the best K again and rank them by their median (0: no)")
      ("confirm-rounds", count_value(&options.confirm_rounds)->default_value(Count{2}, "2"),
       "re-measurements of each of the best K")
      ("param", po::value<std::vector<std::string>>(&params)->composing(), "override a parameter: NAME=VALUE")
      ("json", po::bool_switch(&json), "one JSON object per trial, then the summary");
  add_runner_options(desc, &flags);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    out << kUsage << "\n" << desc;
    return kExitOk;
  }
  SLAPO_CHECK(!space_file.empty(), ErrorCode::kInvalidArgument, name, ": --space FILE is required");
  if (single_node) {
    SLAPO_CHECK(vm["nproc"].defaulted() == false && flags.nproc >= 2, ErrorCode::kInvalidArgument,
                "single-node: --nproc N (2 or more ranks per trial) is required");
  } else {
    SLAPO_CHECK(flags.nproc == 1, ErrorCode::kInvalidArgument, "single-device: --nproc ", flags.nproc,
                " runs several ranks per trial: use slapo-tune single-node");
  }
  const space::Space declared = load_space(space_file, params);
  const space::CompiledSpace compiled = space::CompiledSpace::compile(declared);
  SLAPO_CHECK(compiled.size() > 0, ErrorCode::kInvalidArgument, space_file, ": the space is empty");
  tuner::make_strategy(options.strategy);  // an unknown strategy fails before anything runs
  const RunnerSetup setup = make_runner(flags, declared);
  options.objective = objective.empty() ? setup.objective : objective;
  auto database = db::Database::open(db_path);

  if (!json) {
    out << "tuning " << space_file << ": " << compiled.size() << " configurations, strategy " << options.strategy
        << ", runner " << setup.runner->kind() << ", " << (options.minimize ? "minimize " : "maximize ")
        << options.objective << ", db " << db_path << "\n";
  }
  const auto progress = [&](const tuner::Progress& p) {
    if (json) {
      nlohmann::ordered_json j;
      j["index"] = p.index;
      j["config"] = nlohmann::ordered_json::parse(p.config.to_json());
      j["status"] = to_string(p.status);
      j["objective"] = p.objective ? nlohmann::ordered_json(*p.objective) : nlohmann::ordered_json(nullptr);
      j["best"] = p.best ? nlohmann::ordered_json(*p.best) : nlohmann::ordered_json(nullptr);
      j["error"] = p.error;
      j["measured"] = p.measured;
      if (p.round > 0) {
        j["round"] = p.round;
        j["confirmed"] = p.confirmed ? nlohmann::ordered_json(*p.confirmed) : nlohmann::ordered_json(nullptr);
      }
      out << j.dump() << std::endl;
      return;
    }
    std::ostringstream line;
    if (p.round > 0) {
      line << "[" << std::setw(3) << p.index << "] again #" << p.round << "  " << std::left << std::setw(5)
           << to_string(p.status) << std::right << " " << std::setw(10) << format_number(p.objective) << "  median "
           << std::setw(8) << format_number(p.confirmed) << "  best " << std::setw(10) << format_number(p.best) << "  "
           << p.config.to_string();
      if (!p.error.empty()) line << "  (" << p.error.substr(0, p.error.find('\n')).substr(0, 80) << ")";
      out << line.str() << "\n" << std::flush;
      return;
    }
    line << "[" << std::setw(3) << p.index << "] " << std::left << std::setw(14) << to_string(p.status) << std::right
         << " " << std::setw(10) << format_number(p.objective) << "  best " << std::setw(10) << format_number(p.best)
         << "  " << p.config.to_string();
    if (p.pruned_by) line << "  (implied by trial " << *p.pruned_by << ")";
    else if (!p.error.empty()) line << "  (" << p.error.substr(0, p.error.find('\n')).substr(0, 80) << ")";
    if (options.trials > 0) line << "  left " << p.trials_left << ", eta " << static_cast<int>(p.eta_s) << " s";
    out << line.str() << "\n" << std::flush;
  };
  const tuner::TuneSummary summary = tuner::tune(compiled, *setup.runner, *database, task_key(setup, declared), options, progress);

  if (json) {
    nlohmann::ordered_json j;
    j["task"] = summary.task_id;
    j["best_config"] = summary.best ? nlohmann::ordered_json::parse(summary.best->config.to_json()) : nlohmann::ordered_json(nullptr);
    const std::optional<double> best_objective = summary.best ? summary.best->ranking_objective() : std::nullopt;
    j["best_objective"] = best_objective ? nlohmann::ordered_json(*best_objective) : nlohmann::ordered_json(nullptr);
    j["best_measurements"] = summary.best ? 1 + summary.best->remeasured : 0;
    j["measured"] = summary.measured;
    j["pruned"] = summary.pruned;
    j["failed"] = summary.failed;
    j["resumed"] = summary.resumed;
    j["remeasured"] = summary.remeasured;
    j["elapsed_s"] = summary.elapsed_s;
    j["stopped_because"] = summary.stopped_because;
    out << j.dump() << "\n";
  } else {
    out << "\nstopped: " << summary.stopped_because << "\n"
        << "trials: " << summary.measured << " measured (" << summary.failed << " failed), " << summary.pruned
        << " pruned, " << summary.resumed << " recorded before";
    if (summary.remeasured > 0) {
      out << "; " << summary.remeasured << " re-measured (" << summary.remeasure_failed << " failed)";
    }
    out << "; " << std::fixed << std::setprecision(1)
        << summary.elapsed_s << " s\n" << std::defaultfloat << std::setprecision(6);
    if (summary.best) {
      out << "best: " << summary.best->config.to_string() << "  " << options.objective << " = "
          << format_number(summary.best->ranking_objective()) << " (trial " << summary.best->index;
      if (summary.best->remeasured > 0) {
        out << "; median of " << 1 + summary.best->remeasured << " measurements, the first "
            << format_number(summary.best->objective);
      }
      out << ")\n";
      for (const auto& [name, value] : summary.best->result.metrics) out << "  " << std::left << std::setw(16) << name << value << "\n";
      out << "replay it: slapo-tune replay --db " << db_path << " --task " << summary.task_id << "\n";
    } else {
      out << "no configuration succeeded\n";
    }
  }
  return summary.best ? kExitOk : kExitFailure;
}

}  // namespace

int run_single_device(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return tune(args, out, err, /*single_node=*/false);
}

int run_single_node(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return tune(args, out, err, /*single_node=*/true);
}

}  // namespace slapo::cli
