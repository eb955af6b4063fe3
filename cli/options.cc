#include "cli/options.h"

#include "cli/commands.h"

#include "cli/config_arg.h"
#include "cli/count_option.h"
#include "core/defaults.h"
#include "runners/system_info.h"
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
      "task", po::value<int64_t>()->notifier([this](int64_t id) { task = id; }), "task id (default: the only task)");
  // clang-format on
}

int64_t TaskArgs::resolve(db::Database& database, const std::string& command) const {
  if (task) return *task;
  const auto tasks = database.tasks();
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
      ("memory-budget", po::value<std::string>(&memory_budget), "tensor memory budget, e.g. 2GiB: past it a trial is oom")
      ("timeout", po::value<double>(&timeout_s)->default_value(defaults::kTrialTimeoutS),
       "seconds before a trial is killed (0: none)")
      ("metric-regex", po::value<std::string>(&metric_regex), "command runner: regex with one group around the metric")
      ("oom-exit-code", po::value<int>()->notifier([this](int code) { oom_exit_code = code; }),
       "command runner: this exit code means out of memory")
      ("oom-pattern", po::value<std::string>(&oom_pattern), "command runner: output matching this means out of memory");
  // clang-format on
}

runners::RunnerSpec RunnerArgs::spec(const space::Space& space) const {
  SLAPO_CHECK(nproc >= 1 && nproc <= 1024, ErrorCode::kInvalidArgument, "--nproc ", nproc,
              ": expected a number of ranks from 1 to 1024");
  SLAPO_CHECK(runner == "inprocess" || runner == "subprocess" || runner == "single-node",
              ErrorCode::kInvalidArgument, "--runner ", runner,
              ": expected inprocess, subprocess or single-node");
  SLAPO_CHECK(!(runner == "inprocess" && nproc > 1), ErrorCode::kInvalidArgument,
              "--runner inprocess runs one rank; --nproc ", nproc,
              " needs processes (single-node)");
  if (!command.empty()) {
    runners::CommandOptions c;
    c.argv = command;
    if (!metric_regex.empty()) c.metric_regex = metric_regex;
    c.oom_exit_code = oom_exit_code;
    if (!oom_pattern.empty()) c.oom_pattern = oom_pattern;
    c.timeout_s = timeout_s;
    c.nproc = nproc;
    return runners::RunnerSpec::for_command(c);
  }
  runners::Workload workload = runners::Workload::from_json(space.workload_json, space.origin);
  if (!memory_budget.empty())
    workload.memory_budget = parse_bytes(memory_budget, "--memory-budget");
  // Every knob must be one the template understands: checked on a point of the space.
  const space::CompiledSpace compiled = space::CompiledSpace::compile(space);
  if (compiled.size() > 0) runners::check_workload(workload, compiled.at(0));
  return runners::RunnerSpec::for_workload(workload, runner, nproc, timeout_s, !no_fork_server);
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
