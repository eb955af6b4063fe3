// slapo-tune db tasks|trials|best|show|export|claims|prune --db FILE ...

#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/config_table.h"
#include "cli/count_option.h"
#include "cli/task_diff.h"
#include "core/error.h"
#include "db/database.h"

namespace slapo::cli {

namespace {

constexpr const char* kDbUsage =
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
    "  claims    the configurations being measured now (a study shared by several tuners): owner,\n"
    "            since when, seconds since its last heartbeat\n"
    "  prune     delete a task's trials with --status S (to measure them again)\n"
    "  profiles  the cost model's stored profiles: what each is of, its machine's slapo revision,\n"
    "            what it cost; --format json prints them whole (docs/cost-model.md)\n";

nlohmann::ordered_json trial_json(const db::TrialRecord& t) {
  nlohmann::ordered_json j;
  j["index"] = t.index;
  j["status"] = to_string(t.result.status);
  j["config"] = nlohmann::ordered_json::parse(t.config.to_json());
  j["objective"] =
      t.objective ? nlohmann::ordered_json(*t.objective) : nlohmann::ordered_json(nullptr);
  if (t.remeasured > 0) {
    j["confirmed"] = t.confirmed_objective ? nlohmann::ordered_json(*t.confirmed_objective)
                                           : nlohmann::ordered_json(nullptr);
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
  j["pruned_by"] =
      t.pruned_by ? nlohmann::ordered_json(*t.pruned_by) : nlohmann::ordered_json(nullptr);
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
  return w.is_object() && w.contains("model") && w["model"].is_string()
             ? w["model"].get<std::string>()
             : "-";
}

// `every_metric`: a column per metric any trial reported and the start time (export).
void print_trials(std::ostream& out, Format format, const std::vector<db::TrialRecord>& trials,
                  bool every_metric = false) {
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
  const bool confirmed =
      std::any_of(trials.begin(), trials.end(), [](const auto& t) { return t.remeasured > 0; });
  std::vector<std::string> header = {"index", "status", "objective"};
  if (confirmed) header.insert(header.end(), {"median", "measured"});
  header.insert(header.end(), knobs.begin(), knobs.end());
  std::vector<std::string> metric_names;
  if (every_metric) {
    for (const auto& t : trials) {
      for (const auto& [name, value] : t.result.metrics) {
        if (std::find(metric_names.begin(), metric_names.end(), name) == metric_names.end())
          metric_names.push_back(name);
      }
    }
    std::sort(metric_names.begin(), metric_names.end());
    header.insert(header.end(), metric_names.begin(), metric_names.end());
    header.push_back("started_at");
  }
  header.insert(header.end(), {"duration_s", "strategy", "error"});
  rows.push_back(header);
  for (const auto& t : trials) {
    std::vector<std::string> row = {std::to_string(t.index), to_string(t.result.status),
                                    number(t.objective)};
    if (confirmed)
      row.insert(row.end(), {number(t.confirmed_objective), std::to_string(1 + t.remeasured)});
    for (const auto& k : knobs) {
      const Value* v = t.config.find(k);
      row.push_back(v ? cell_text(*v) : "");
    }
    for (const std::string& name : metric_names) {
      const auto it = t.result.metrics.find(name);
      row.push_back(it == t.result.metrics.end() ? "" : number(it->second));
    }
    if (every_metric) row.push_back(t.started_at);
    std::string error = t.result.error.substr(0, t.result.error.find('\n'));
    if (format == Format::kTable && error.size() > 60) error = error.substr(0, 57) + "...";
    if (t.pruned_by) error = "implied by trial " + std::to_string(*t.pruned_by);
    row.insert(row.end(), {number(t.duration_s), t.strategy, error});
    rows.push_back(row);
  }
  print_table(out, format, rows);
}

// The stored profiles: JSON whole (a recording's profiles, to replay it: docs/benchmarks.md), or a
// row each: the knobs it is of (or the collectives), its revision, its points, its cost.
void print_profiles(std::ostream& out, Format format, const std::vector<db::StoredProfile>& all) {
  if (format == Format::kJson) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const db::StoredProfile& p : all) {
      j.push_back({{"key", p.key},
                   {"profile", nlohmann::ordered_json::parse(p.profile_json)},
                   {"created_at", p.created_at}});
    }
    out << j.dump() << "\n";
    return;
  }
  std::vector<std::vector<std::string>> rows = {
      {"of", "revision", "points", "derived", "profile_s", "created_at"}};
  for (const db::StoredProfile& p : all) {
    const nlohmann::json key = nlohmann::json::parse(p.key, nullptr, false);
    const nlohmann::json profile = nlohmann::json::parse(p.profile_json, nullptr, false);
    std::string of;
    if (key.is_object() && key.contains("collectives")) {
      of = "the collectives of " + std::to_string(key["collectives"].value("ranks", 0)) + " ranks";
    } else if (key.is_object()) {
      const nlohmann::json workload = key.value("workload", nlohmann::json::object());
      of = workload.value("model", "?");
      const nlohmann::json knobs = key.value("knobs", nlohmann::json::object());
      for (const auto& [name, value] : knobs.items()) of += " " + name + "=" + value.dump();
    }
    size_t points = 0, derived = 0;
    if (profile.is_object() && profile.contains("points")) {
      for (const auto& q : profile["points"]) {
        ++points;
        derived += q.value("derived", false);
      }
    }
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f",
                  profile.is_object() ? profile.value("profile_s", 0.0) : 0.0);
    rows.push_back({of, profile.is_object() ? profile.value("code_revision", "") : "",
                    std::to_string(points), std::to_string(derived), seconds, p.created_at});
  }
  print_table(out, format, rows);
}

const char* const kActions[] = {"tasks",  "trials", "best",  "show",
                                "export", "claims", "prune", "profiles"};

void declare(DbOptions* o, OptionSet& set) {
  o->task.declare(set);
  // clang-format off
  set.visible.add_options()
      ("trial", po::value<int64_t>()->notifier([o](int64_t i) { o->trial = i; }), "show: a trial's index")
      ("status", po::value<std::string>(&o->status), "only trials with this status (ok, oom, pruned, ...)")
      ("top", count_value(&o->top), "at most K trials (best: default 1)")
      ("sort", po::value<std::string>(&o->sort), "sort ok trials by this metric (default: the task's objective)")
      ("format", po::value<std::string>(&o->format), "table, csv or json (default: table; csv for export)");
  // clang-format on
  set.hidden.add_options()("action", po::value<std::string>(&o->action));
  set.positional.add("action", 1);
}

std::optional<TrialStatus> status_filter(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const std::optional<TrialStatus> status = trial_status_from_string(text);
  SLAPO_CHECK(
      status.has_value(), ErrorCode::kInvalidArgument, "--status ", text,
      ": expected ok, oom, invalid, schedule_error, runtime_error, timeout, crashed or pruned");
  return status;
}

}  // namespace

DbOptions parse_db(const Args& args) {
  DbOptions o = parse_options<DbOptions>(args, declare);
  if (o.help) return o;
  SLAPO_CHECK(
      !o.action.empty(), ErrorCode::kInvalidArgument,
      "db: missing ACTION (tasks, trials, best, show, export, claims, prune or profiles; see "
      "'slapo-tune db --help')");
  SLAPO_CHECK(std::find(std::begin(kActions), std::end(kActions), o.action) != std::end(kActions),
              ErrorCode::kInvalidArgument, "db: unknown action '", o.action,
              "' (expected tasks, trials, best, show, export, claims, prune or profiles)");
  SLAPO_CHECK(!o.task.db.empty(), ErrorCode::kInvalidArgument, "db ", o.action,
              ": --db FILE is required");
  if (!o.format.empty()) parse_format(o.format);
  status_filter(o.status);
  SLAPO_CHECK(o.action != "prune" || !o.status.empty(), ErrorCode::kInvalidArgument,
              "db prune: --status S is required (which trials to delete)");
  return o;
}

int run_db(const DbOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << help_text<DbOptions>(kDbUsage, declare);
    return kExitOk;
  }
  const std::string& action = o.action;
  // export defaults to CSV; everything else to a table.
  const Format format = !o.format.empty()    ? parse_format(o.format)
                        : action == "export" ? Format::kCsv
                                             : Format::kTable;
  const std::optional<TrialStatus> status = status_filter(o.status);
  const size_t top = o.top;
  const std::string& sort = o.sort;
  // Only prune writes: the queries open the file read-only (a read-only database in a read-only
  // folder can be queried, and nothing is left behind).
  auto database = action == "prune" ? db::Database::open_existing(o.task.db)
                                    : db::Database::open_read_only(o.task.db);
  if (action == "profiles") {
    print_profiles(out, format, database->profiles());
    return kExitOk;
  }
  if (action == "tasks") {
    const std::vector<db::TaskRecord> tasks = database->tasks();
    if (format == Format::kJson) {
      nlohmann::ordered_json j = nlohmann::ordered_json::array();
      for (const auto& t : tasks) {
        j.push_back(
            {{"id", t.id},
             {"model", model_of(t)},
             {"runner", t.key.runner},
             {"world_size", t.key.world_size},
             {"objective", t.objective.metric},
             {"minimize", t.objective.minimize},
             {"trials", t.trial_count},
             {"created_at", t.created_at},
             {"study",
              t.study.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(t.study)},
             {"workload", nlohmann::ordered_json::parse(t.key.workload_json, nullptr, false)}});
      }
      out << j.dump(1) << "\n";
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows = {
        {"id", "study", "model", "runner", "world", "objective", "trials", "created_at"}};
    for (const auto& t : tasks) {
      rows.push_back({std::to_string(t.id), t.study.empty() ? "-" : t.study, model_of(t),
                      t.key.runner, std::to_string(t.key.world_size), t.objective.to_string(),
                      std::to_string(t.trial_count), t.created_at});
    }
    print_table(out, format, rows);
    if (format != Format::kTable) return kExitOk;
    // Tasks of one space look alike in the table: say what tells each from the first of them.
    for (size_t i = 0; i < tasks.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (tasks[j].key.space_hash != tasks[i].key.space_hash) continue;
        out << "task " << tasks[i].id << " differs from task " << tasks[j].id << " (same space):\n";
        for (const std::string& d : key_differences(tasks[j].key, tasks[i].key))
          out << "  " << d << "\n";
        break;
      }
    }
    return kExitOk;
  }

  const int64_t task_id = o.task.resolve(*database, "db " + action);
  const db::TaskRecord task = database->task(task_id);
  if (!sort.empty()) {
    // A metric no trial reported sorts nothing: say so, with the ones there are.
    std::set<std::string> reported;
    for (const db::TrialRecord& t : database->trials(task_id))
      for (const auto& [name, value] : t.result.metrics) reported.insert(name);
    if (!reported.count(sort)) {
      std::string names;
      for (const std::string& n : reported) names += (names.empty() ? "" : ", ") + n;
      SLAPO_FAIL(ErrorCode::kInvalidArgument, "--sort ", sort, ": no trial of task ", task_id,
                 " reported it", names.empty() ? std::string() : " (metrics: " + names + ")");
    }
  }

  if (action == "trials" || action == "export") {
    std::vector<db::TrialRecord> trials;
    if (!sort.empty() || (top > 0 && action == "trials")) {
      trials = database->best(task_id, top > 0 ? top : SIZE_MAX / 2, sort);
    } else {
      trials = database->trials(task_id, {status});
    }
    if (status) {
      trials.erase(std::remove_if(trials.begin(), trials.end(),
                                  [&](const auto& t) { return t.result.status != *status; }),
                   trials.end());
    }
    print_trials(out, format, trials, action == "export");
    return kExitOk;
  }
  if (action == "claims") {
    const std::vector<db::Claim> claims = database->claims(task_id);
    if (format == Format::kJson) {
      nlohmann::ordered_json j = nlohmann::ordered_json::array();
      for (const db::Claim& c : claims) {
        j.push_back({{"config", nlohmann::ordered_json::parse(c.config.to_json())},
                     {"owner", c.owner.id()},
                     {"claimed_at", c.claimed_at},
                     {"heartbeat_age_s", c.heartbeat_age_s}});
      }
      out << j.dump(1) << "\n";
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows = {{"config", "owner", "claimed_at", "heartbeat_s"}};
    for (const db::Claim& c : claims) {
      char age[32];
      std::snprintf(age, sizeof age, "%.1f", c.heartbeat_age_s);
      rows.push_back({c.config.to_json(), c.owner.id(), c.claimed_at, age});
    }
    print_table(out, format, rows);
    return kExitOk;
  }
  if (action == "best") {
    const auto best = database->best(task_id, top > 0 ? top : 1, sort);
    SLAPO_CHECK(!best.empty(), ErrorCode::kNotFound, "db best: task ", task_id,
                " has no successful trial yet");
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
    if (o.trial) {
      const db::TrialRecord t = for_flag("--trial", std::to_string(*o.trial),
                                         [&] { return database->trial(task_id, *o.trial); });
      nlohmann::ordered_json j = trial_json(t);
      if (t.remeasured > 0) {
        nlohmann::ordered_json again = nlohmann::ordered_json::array();
        for (const db::Remeasurement& r : database->remeasurements(task_id, t.index)) {
          nlohmann::ordered_json m;
          m["round"] = r.round;
          m["status"] = to_string(r.result.status);
          m["objective"] =
              r.objective ? nlohmann::ordered_json(*r.objective) : nlohmann::ordered_json(nullptr);
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
    j["objective"] = task.objective.metric;
    j["minimize"] = task.objective.minimize;
    j["runner"] = task.key.runner;
    j["world_size"] = task.key.world_size;
    j["space_hash"] = task.key.space_hash;
    j["workload"] = nlohmann::ordered_json::parse(task.key.workload_json, nullptr, false);
    j["fingerprint"] = nlohmann::ordered_json::parse(task.key.fingerprint_json, nullptr, false);
    j["created_at"] = task.created_at;
    j["trials"] = task.trial_count;
    if (!task.study.empty()) j["study"] = task.study;
    if (!task.runner_spec_json.empty())
      j["runner_spec"] = nlohmann::ordered_json::parse(task.runner_spec_json, nullptr, false);
    out << j.dump(2) << "\n";
    return kExitOk;
  }
  // prune
  const int64_t n = database->prune(task_id, *status);
  out << "deleted " << n << " " << to_string(*status) << " trials of task " << task_id << "\n";
  return kExitOk;
}

}  // namespace slapo::cli
