// slapo-tune db tasks|trials|best|show|export|prune --db FILE ...

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/config_table.h"
#include "cli/count_option.h"
#include "core/error.h"
#include "db/database.h"

namespace po = boost::program_options;

namespace slapo::cli {

namespace {

constexpr const char* kUsage =
    "usage: slapo-tune db ACTION --db FILE [options]\n"
    "\n"
    "Query the tuning database.\n"
    "\n"
    "actions:\n"
    "  tasks     every task: id, model, runner, objective, trial count\n"
    "  trials    a task's trials in the order they were measured   [--status S] [--sort M --top K]\n"
    "  best      the best configuration (--top K for more; re-measured trials rank by their median);\n"
    "            --format json prints it as --config takes it\n"
    "  show      a task (workload, space, fingerprint) or one trial (--trial N) in full\n"
    "  export    every trial of a task, csv (default) or json\n"
    "  prune     delete a task's trials with --status S (to measure them again)\n";

nlohmann::ordered_json trial_json(const db::TrialRecord& t) {
  nlohmann::ordered_json j;
  j["index"] = t.index;
  j["status"] = to_string(t.result.status);
  j["config"] = nlohmann::ordered_json::parse(t.config.to_json());
  j["objective"] = t.objective ? nlohmann::ordered_json(*t.objective) : nlohmann::ordered_json(nullptr);
  if (t.remeasured > 0) {
    j["confirmed"] = t.confirmed_objective ? nlohmann::ordered_json(*t.confirmed_objective) : nlohmann::ordered_json(nullptr);
    j["remeasured"] = t.remeasured;
  }
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  for (const auto& [k, v] : t.result.metrics) metrics[k] = v;
  j["metrics"] = metrics;
  j["error"] = t.result.error;
  j["started_at"] = t.started_at;
  j["duration_s"] = t.duration_s;
  j["strategy"] = t.strategy;
  j["seed"] = t.seed;
  j["pruned_by"] = t.pruned_by ? nlohmann::ordered_json(*t.pruned_by) : nlohmann::ordered_json(nullptr);
  j["log_tail"] = t.result.log_tail;
  return j;
}

std::string number(std::optional<double> v) {
  if (!v) return "";
  std::ostringstream s;
  s << *v;
  return s.str();
}

std::string model_of(const db::TaskRecord& t) {
  const auto w = nlohmann::json::parse(t.key.workload_json, nullptr, false);
  return w.is_object() && w.contains("model") && w["model"].is_string() ? w["model"].get<std::string>() : "-";
}

void print_trials(std::ostream& out, Format format, const std::vector<db::TrialRecord>& trials) {
  if (format == Format::kJson) {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const auto& t : trials) all.push_back(trial_json(t));
    out << all.dump(1) << "\n";
    return;
  }
  std::vector<std::string> knobs;
  for (const auto& t : trials) {
    for (const auto& [name, value] : t.config.entries()) {
      if (std::find(knobs.begin(), knobs.end(), name) == knobs.end()) knobs.push_back(name);
    }
  }
  std::vector<std::vector<std::string>> rows;
  // The median of the re-measured ones (tuner --confirm), when there are any.
  const bool confirmed = std::any_of(trials.begin(), trials.end(), [](const auto& t) { return t.remeasured > 0; });
  std::vector<std::string> header = {"index", "status", "objective"};
  if (confirmed) header.insert(header.end(), {"median", "measured"});
  header.insert(header.end(), knobs.begin(), knobs.end());
  header.insert(header.end(), {"duration_s", "strategy", "error"});
  rows.push_back(header);
  for (const auto& t : trials) {
    std::vector<std::string> row = {std::to_string(t.index), to_string(t.result.status), number(t.objective)};
    if (confirmed) row.insert(row.end(), {number(t.confirmed_objective), std::to_string(1 + t.remeasured)});
    for (const auto& k : knobs) {
      const Value* v = t.config.find(k);
      row.push_back(v ? cell_text(*v) : "");
    }
    std::string error = t.result.error.substr(0, t.result.error.find('\n'));
    if (format == Format::kTable && error.size() > 60) error = error.substr(0, 57) + "...";
    if (t.pruned_by) error = "implied by trial " + std::to_string(*t.pruned_by);
    row.insert(row.end(), {number(t.duration_s), t.strategy, error});
    rows.push_back(row);
  }
  print_table(out, format, rows);
}

}  // namespace

int run_db(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string action, path, status_text, sort, format_text = "table";
  int64_t task_id = -1, trial_index = -1;
  size_t top = 0;
  po::options_description options("options");
  options.add_options()
      ("help,h", "show this help")
      ("db", po::value<std::string>(&path), "the database file")
      ("task", po::value<int64_t>(&task_id), "task id (default: the only task)")
      ("trial", po::value<int64_t>(&trial_index), "show: a trial's index")
      ("status", po::value<std::string>(&status_text), "only trials with this status (ok, oom, pruned, ...)")
      ("top", count_value(&top), "at most K trials (best: default 1)")
      ("sort", po::value<std::string>(&sort), "sort ok trials by this metric (default: the task's objective)")
      ("format", po::value<std::string>(&format_text)->default_value("table"), "table, csv or json");
  po::options_description all;
  all.add(options).add_options()("action", po::value<std::string>(&action));
  po::positional_options_description positional;
  positional.add("action", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help") || args.empty()) {
    out << kUsage << "\n" << options;
    return vm.count("help") ? kExitOk : kExitUsage;
  }
  static const char* kActions[] = {"tasks", "trials", "best", "show", "export", "prune"};
  SLAPO_CHECK(std::find_if(std::begin(kActions), std::end(kActions), [&](const char* a) { return action == a; }) !=
                  std::end(kActions),
              ErrorCode::kInvalidArgument, "db: unknown action '", action, "' (expected tasks, trials, best, show, export or prune)");
  SLAPO_CHECK(!path.empty(), ErrorCode::kInvalidArgument, "db ", action, ": --db FILE is required");
  // export defaults to CSV; everything else to a table.
  const Format format = action == "export" && vm["format"].defaulted() ? Format::kCsv : parse_format(format_text);
  std::optional<TrialStatus> status;
  if (!status_text.empty()) {
    status = trial_status_from_string(status_text);
    SLAPO_CHECK(status.has_value(), ErrorCode::kInvalidArgument, "--status ", status_text,
                ": expected ok, oom, invalid, schedule_error, runtime_error, timeout, crashed or pruned");
  }

  auto database = db::Database::open_existing(path);
  const std::vector<db::TaskRecord> tasks = database->tasks();
  if (action == "tasks") {
    if (format == Format::kJson) {
      nlohmann::ordered_json j = nlohmann::ordered_json::array();
      for (const auto& t : tasks) {
        j.push_back({{"id", t.id}, {"model", model_of(t)}, {"runner", t.key.runner}, {"world_size", t.key.world_size},
                     {"objective", t.objective}, {"minimize", t.minimize}, {"trials", t.trial_count},
                     {"created_at", t.created_at},
                     {"workload", nlohmann::ordered_json::parse(t.key.workload_json, nullptr, false)}});
      }
      out << j.dump(1) << "\n";
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows = {{"id", "model", "runner", "world", "objective", "trials", "created_at"}};
    for (const auto& t : tasks) {
      rows.push_back({std::to_string(t.id), model_of(t), t.key.runner, std::to_string(t.key.world_size),
                      (t.minimize ? "min " : "max ") + t.objective, std::to_string(t.trial_count), t.created_at});
    }
    print_table(out, format, rows);
    return kExitOk;
  }

  if (task_id < 0) {
    SLAPO_CHECK(tasks.size() == 1, ErrorCode::kInvalidArgument, "db ", action, ": ", path, " has ", tasks.size(),
                " tasks; choose one with --task ID (see 'slapo-tune db tasks --db ", path, "')");
    task_id = tasks[0].id;
  }
  const db::TaskRecord task = database->task(task_id);

  if (action == "trials" || action == "export") {
    std::vector<db::TrialRecord> trials;
    if (!sort.empty() || (top > 0 && action == "trials")) {
      trials = database->best(task_id, top > 0 ? top : SIZE_MAX / 2, sort);
    } else {
      trials = database->trials(task_id, {status});
    }
    if (status) {
      trials.erase(std::remove_if(trials.begin(), trials.end(), [&](const auto& t) { return t.result.status != *status; }),
                   trials.end());
    }
    print_trials(out, format, trials);
    return kExitOk;
  }
  if (action == "best") {
    const auto best = database->best(task_id, top > 0 ? top : 1, sort);
    SLAPO_CHECK(!best.empty(), ErrorCode::kNotFound, "db best: task ", task_id, " has no successful trial yet");
    if (format == Format::kJson) {
      // What --config @FILE takes: the configuration itself (an array of them with --top K > 1).
      if (best.size() == 1 && top <= 1) {
        out << best[0].config.to_json() << "\n";
      } else {
        nlohmann::ordered_json j = nlohmann::ordered_json::array();
        for (const auto& t : best) j.push_back(nlohmann::ordered_json::parse(t.config.to_json()));
        out << j.dump() << "\n";
      }
      return kExitOk;
    }
    print_trials(out, format, best);
    return kExitOk;
  }
  if (action == "show") {
    if (trial_index >= 0) {
      const auto trials = database->trials(task_id);
      const auto it = std::find_if(trials.begin(), trials.end(), [&](const auto& t) { return t.index == trial_index; });
      SLAPO_CHECK(it != trials.end(), ErrorCode::kNotFound, "db show: task ", task_id, " has no trial ", trial_index,
                  " (", trials.size(), " trials)");
      nlohmann::ordered_json j = trial_json(*it);
      if (it->remeasured > 0) {
        nlohmann::ordered_json again = nlohmann::ordered_json::array();
        for (const db::Remeasurement& r : database->remeasurements(task_id, trial_index)) {
          nlohmann::ordered_json m;
          m["round"] = r.round;
          m["status"] = to_string(r.result.status);
          m["objective"] = r.objective ? nlohmann::ordered_json(*r.objective) : nlohmann::ordered_json(nullptr);
          m["error"] = r.result.error;
          m["started_at"] = r.started_at;
          m["duration_s"] = r.duration_s;
          again.push_back(m);
        }
        j["remeasurements"] = again;
      }
      out << j.dump(2) << "\n";
      return kExitOk;
    }
    nlohmann::ordered_json j;
    j["id"] = task.id;
    j["objective"] = task.objective;
    j["minimize"] = task.minimize;
    j["runner"] = task.key.runner;
    j["world_size"] = task.key.world_size;
    j["space_hash"] = task.key.space_hash;
    j["workload"] = nlohmann::ordered_json::parse(task.key.workload_json, nullptr, false);
    j["fingerprint"] = nlohmann::ordered_json::parse(task.key.fingerprint_json, nullptr, false);
    j["created_at"] = task.created_at;
    j["trials"] = task.trial_count;
    out << j.dump(2) << "\n";
    return kExitOk;
  }
  // prune
  SLAPO_CHECK(status.has_value(), ErrorCode::kInvalidArgument, "db prune: --status S is required (which trials to delete)");
  const int64_t n = database->prune(task_id, *status);
  out << "deleted " << n << " " << to_string(*status) << " trials of task " << task_id << "\n";
  return kExitOk;
}

}  // namespace slapo::cli
