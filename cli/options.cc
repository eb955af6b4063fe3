#include "cli/options.h"

#include "cli/commands.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "cli/config_arg.h"
#include "cli/count_option.h"
#include "core/defaults.h"
#include "runners/system_info.h"
#include "space/bind.h"
#include "space/compiled_space.h"

namespace slapo::cli {

std::pair<Args, Args> split_command(const Args& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--")
      return {{args.begin(), args.begin() + i}, {args.begin() + i + 1, args.end()}};
  }
  return {args, {}};
}

void SpaceArgs::declare(OptionSet& set, bool flag) {
  if (flag) set.visible.add_options()("space", po::value<std::string>(&file), "space file");
  // clang-format off
  set.visible.add_options()("param", po::value<std::vector<std::string>>(&params)->composing(),
                            "override a parameter: NAME=VALUE (repeatable)");
  // clang-format on
}

space::Space SpaceArgs::load() const { return load_space(file, params); }

void TaskArgs::declare(OptionSet& set) {
  // clang-format off
  set.visible.add_options()("db", po::value<std::string>(&db), "the database file")(
      "task", po::value<int64_t>()->notifier([this](int64_t id) { task = id; }), "task id (default: the only task)")(
      "study", po::value<std::string>(&study), "the task of this name (see --study of single-device)");
  // clang-format on
}

int64_t TaskArgs::resolve(db::Database& database, const std::string& command) const {
  SLAPO_CHECK(!(task && !study.empty()), ErrorCode::kInvalidArgument, command,
              ": --task and --study both choose a task; give one");
  if (task) return *task;
  if (!study.empty()) {
    const auto named = database.task_by_study(study);
    if (named) return named->id;
    std::string names;
    for (const db::TaskRecord& t : database.tasks())
      if (!t.study.empty()) names += (names.empty() ? "" : ", ") + t.study;
    SLAPO_FAIL(ErrorCode::kNotFound, command, ": --study ", study, ": ", db,
               " has no study of that name (",
               names.empty() ? "it names none" : "studies: " + names, ")");
  }
  const auto tasks = database.tasks();
  SLAPO_CHECK(!tasks.empty(), ErrorCode::kNotFound, command, ": ", db,
              " has no task: nothing was tuned or measured in it (its profiles: 'slapo-tune db "
              "profiles --db ",
              db, "')");
  SLAPO_CHECK(tasks.size() == 1, ErrorCode::kInvalidArgument, command, ": ", db, " has ",
              tasks.size(), " tasks; choose one with --task ID (see 'slapo-tune db tasks --db ", db,
              "')");
  return tasks[0].id;
}

void RunnerArgs::declare(OptionSet& set) {
  timeout_s = defaults::kTrialTimeoutS;
  // clang-format off
  set.visible.add_options()
      ("runner", po::value<std::string>(&runner)->default_value("subprocess"),
       "inprocess, subprocess or single-node (the default with --nproc > 1)")
      ("nproc", po::value<int>(&nproc)->default_value(1), "ranks per trial")
      ("no-fork-server", po::bool_switch(&no_fork_server),
       "subprocess runner: start a new process per trial instead of forking one that has LibTorch loaded")
      ("memory-budget", po::value<std::string>(&memory_budget),
       "e.g. 2GiB. Built-in workloads: tensor memory, past it a trial is oom. Commands: each rank's "
       "address-space limit (RLIMIT_AS: virtual memory, libraries included)")
      ("timeout", po::value<double>(&timeout_s)->default_value(defaults::kTrialTimeoutS),
       "seconds before a trial is killed (0: none)")
      ("metric", po::value<std::vector<std::string>>(&metrics)->composing(),
       "command: NAME=REGEX, a metric read from the output by a regular expression with one "
       "capture group (repeatable; the first names the default objective)")
      ("metric-regex", po::value<std::string>(&metric_regex),
       "command: the objective's regular expression (one capture group)")
      ("metric-rank", po::value<std::string>(&metric_rank)->default_value("0"),
       "command with --nproc: whose metrics count, a rank or 'all' (every rank's, averaged)")
      ("oom-exit-code", po::value<int>()->notifier([this](int code) { oom_exit_code = code; }),
       "command: this exit code means out of memory")
      ("oom-pattern", po::value<std::string>(&oom_pattern),
       "command: a regular expression (any case); output matching it means out of memory")
      ("env", po::value<std::vector<std::string>>(&env)->composing(),
       "command: NAME=VALUE added to its environment (repeatable; recorded with the task)")
      ("bool-format", po::value<std::string>(&bool_format)->default_value("1/0"),
       "command: how a boolean knob is written, TRUE/FALSE (1/0, true/false, True/False)")
      ("early-stop", po::bool_switch(&early_stop),
       "command: stop a trial whose reported intermediate values stay below the median of the "
       "finished trials' (recorded pruned)")
      ("early-stop-warmup", count_value(&early_stop_warmup)->default_value(Count{2}, "2"),
       "reports of a trial before it can be stopped")
      ("early-stop-min-trials", count_value(&early_stop_min_trials)->default_value(Count{3}, "3"),
       "finished trials needed before any is stopped");
  // clang-format on
}

runners::CommandOptions RunnerArgs::command_options(const space::Space& space,
                                                    const std::string& objective,
                                                    bool minimize) const {
  runners::CommandOptions c;
  c.argv = command;
  // The metrics: --metric NAME=REGEX, and --metric-regex for the objective.
  std::vector<runners::MetricPattern> patterns;
  for (const std::string& m : metrics)
    patterns.push_back(runners::parse_metric_pattern(m, "--metric"));
  c.metric_name = !objective.empty()  ? objective
                  : !patterns.empty() ? patterns[0].name
                                      : std::string(metric::kThroughput);
  if (!metric_regex.empty()) {
    for_flag("--metric-regex", metric_regex, [&] {
      runners::check_metric_pattern({c.metric_name, metric_regex});
    });
    patterns.insert(patterns.begin(), {c.metric_name, metric_regex});
  }
  if (patterns.empty()) patterns.push_back(runners::default_metric_pattern(c.metric_name));
  c.metrics = patterns;
  if (metric_rank == "all") {
    c.metric_rank = runners::kAllRanks;
  } else {
    char* end = nullptr;
    const long rank = std::strtol(metric_rank.c_str(), &end, 10);
    SLAPO_CHECK(!metric_rank.empty() && *end == '\0' && rank >= 0 && rank < nproc,
                ErrorCode::kInvalidArgument, "--metric-rank ", metric_rank,
                ": expected a rank from 0 to ", nproc - 1, " or 'all'");
    c.metric_rank = static_cast<int>(rank);
  }
  c.oom_exit_code = oom_exit_code;
  if (!oom_pattern.empty()) c.oom_pattern = oom_pattern;
  if (!memory_budget.empty()) c.memory_budget_bytes = parse_bytes(memory_budget, "--memory-budget");
  for (const std::string& e : env) {
    const size_t eq = e.find('=');
    SLAPO_CHECK(eq != std::string::npos && eq > 0, ErrorCode::kInvalidArgument, "--env ", e,
                ": expected NAME=VALUE");
    c.env[e.substr(0, eq)] = e.substr(eq + 1);
  }
  const size_t slash = bool_format.find('/');
  SLAPO_CHECK(slash != std::string::npos && slash > 0 && slash + 1 < bool_format.size() &&
                  bool_format.find('/', slash + 1) == std::string::npos,
              ErrorCode::kInvalidArgument, "--bool-format ", bool_format,
              ": expected TRUE/FALSE, e.g. 1/0 or true/false");
  c.bool_true = bool_format.substr(0, slash);
  c.bool_false = bool_format.substr(slash + 1);
  c.cwd = std::filesystem::current_path().string();
  c.timeout_s = timeout_s;
  c.nproc = nproc;
  c.early_stopping.enabled = early_stop;
  c.early_stopping.metric = c.metric_name;
  c.early_stopping.minimize = minimize;
  c.early_stopping.warmup = early_stop_warmup;
  c.early_stopping.min_trials = early_stop_min_trials;
  // Every {placeholder} must name a knob: a typo would reach the script literally.
  std::vector<std::string> knobs;
  for (const auto& knob : space.knobs) knobs.push_back(knob.name);
  for (const std::string& name : runners::placeholders(command)) {
    if (std::find(knobs.begin(), knobs.end(), name) != knobs.end()) continue;
    const std::string near = space::nearest_name(name, knobs);
    SLAPO_FAIL(ErrorCode::kInvalidArgument, "the command's placeholder {", name,
               "}: ", space.origin, " declares no knob '", name, "'",
               near.empty() ? "" : " (did you mean {" + near + "}?)");
  }
  return c;
}

runners::RunnerSpec RunnerArgs::spec(const space::Space& space, const std::string& objective,
                                     bool minimize) const {
  SLAPO_CHECK(nproc >= 1 && nproc <= 1024, ErrorCode::kInvalidArgument, "--nproc ", nproc,
              ": expected a number of ranks from 1 to 1024");
  SLAPO_CHECK(runner == "inprocess" || runner == "subprocess" || runner == "single-node",
              ErrorCode::kInvalidArgument, "--runner ", runner,
              ": expected inprocess, subprocess or single-node");
  SLAPO_CHECK(!(runner == "inprocess" && nproc > 1), ErrorCode::kInvalidArgument,
              "--runner inprocess runs one rank; --nproc ", nproc,
              " needs processes (single-node)");
  SLAPO_CHECK(std::isfinite(timeout_s) && timeout_s >= 0, ErrorCode::kInvalidArgument, "--timeout ",
              timeout_s, ": expected seconds, at least 0 (0: none)");
  SLAPO_CHECK(command.empty() || runner == "subprocess", ErrorCode::kInvalidArgument, "--runner ",
              runner,
              ": a command after -- runs under the command runner; leave "
              "--runner out");
  if (!command.empty())
    return runners::RunnerSpec::for_command(command_options(space, objective, minimize));
  SLAPO_CHECK(metrics.empty() && metric_regex.empty() && env.empty() && !early_stop,
              ErrorCode::kInvalidArgument,
              "--metric, --metric-regex, --env and --early-stop are for a command (after --); the "
              "space's [workload] reports its own metrics");
  runners::Workload workload = runners::Workload::from_json(space.workload_json, space.origin);
  if (!memory_budget.empty())
    workload.memory_budget = parse_bytes(memory_budget, "--memory-budget");
  // Every knob must be one the template understands: checked on a point of the space.
  const space::CompiledSpace compiled = space::CompiledSpace::compile(space);
  if (compiled.size() > 0) check_workload_of(space.origin, workload, compiled.at(0));
  return runners::RunnerSpec::for_workload(workload, runner, nproc, timeout_s, !no_fork_server);
}

void check_workload_of(const std::string& origin, const runners::Workload& workload,
                       const Config& config) {
  try {
    runners::check_workload(workload, config);
  } catch (const Error& e) {
    throw Error(e.code(), origin + ": " + e.what());
  }
}

db::TaskKey task_key(const runners::RunnerSpec& spec, const runners::Runner& runner,
                     const space::Space& space) {
  db::TaskKey key;
  key.workload_json = spec.workload_key();
  key.space_hash = space.fingerprint();
  key.runner = runner.kind();
  key.world_size = runner.world_size();
  key.fingerprint_json = runners::fingerprint_json(runners::collect_system_info());
  return key;
}

namespace {

void declare_catalogue(CatalogueOptions* o, OptionSet& set) {
  set.hidden.add_options()("action", po::value<std::string>(&o->action))(
      "name", po::value<std::string>(&o->name));
  set.positional.add("action", 1).add("name", 1);
}

}  // namespace

CatalogueOptions parse_catalogue(const Args& args, const char* noun) {
  CatalogueOptions o = parse_options<CatalogueOptions>(args, declare_catalogue);
  if (o.help) return o;
  SLAPO_CHECK(o.action == "list" || o.action == "show" || o.action == "reference",
              ErrorCode::kInvalidArgument, noun, ": unknown action '", o.action,
              "' (expected list, show NAME or reference)");
  SLAPO_CHECK(o.action != "show" || !o.name.empty(), ErrorCode::kInvalidArgument, noun,
              " show: missing NAME");
  SLAPO_CHECK(o.action == "show" || o.name.empty(), ErrorCode::kInvalidArgument, noun, " ",
              o.action, ": takes no NAME");
  return o;
}

std::string catalogue_help(const char* usage) {
  return help_text<CatalogueOptions>(usage, declare_catalogue);
}

}  // namespace slapo::cli
