#pragma once
// What every command's parser shares: the parse itself (declare options bound to the fields of an
// options struct, store, notify) and the option groups several commands take — a space file with
// --param overrides, a database with the task to use, the runner flags.

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <boost/program_options.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "db/database.h"
#include "runners/runner_spec.h"
#include "space/space.h"

namespace slapo::cli {

namespace po = boost::program_options;

// The options a command declares: the ones `--help` shows, hidden ones (positional arguments),
// and which of them are positional.
struct OptionSet {
  po::options_description visible{"options"};
  po::options_description hidden;
  po::positional_options_description positional;
};

// Parses `args` into a fresh Options with `declare(&options, set)` (which binds options to its
// fields) after --help/-h, bound to `options.help`. Throws boost's errors for unknown or
// malformed options.
template <typename Options>
Options parse_options(const Args& args, void (*declare)(Options*, OptionSet&)) {
  Options options;
  OptionSet set;
  set.visible.add_options()("help,h", po::bool_switch(&options.help), "show this help");
  declare(&options, set);
  po::options_description all;
  all.add(set.visible).add(set.hidden);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(set.positional).run(), vm);
  po::notify(vm);
  return options;
}

// `usage` and the options `declare` shows, as `--help` prints them.
template <typename Options>
std::string help_text(const char* usage, void (*declare)(Options*, OptionSet&)) {
  Options scratch;
  OptionSet set;
  set.visible.add_options()("help,h", po::bool_switch(&scratch.help), "show this help");
  declare(&scratch, set);
  std::ostringstream text;
  text << usage << "\n" << set.visible;
  return text.str();
}

// Splits arguments at the first "--": (options, command).
std::pair<Args, Args> split_command(const Args& args);

// Runs `f`; a slapo::Error it throws is thrown again with "FLAG VALUE: " before its message (a
// library names the problem, the CLI names the flag that brought it).
template <typename F>
auto for_flag(const std::string& flag, const std::string& value, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(e.code(), flag + " " + value + ": " + e.what());
  }
}

// --space FILE (or a positional FILE) and --param NAME=VALUE.
struct SpaceArgs {
  std::string file;
  std::vector<std::string> params;
  auto tie() const { return std::tie(file, params); }
  // Adds --space (when `flag`) and --param.
  void declare(OptionSet& set, bool flag = true);
  // Loads the file and applies the --param overrides. Throws naming the file or the --param.
  space::Space load() const;
};

// --db FILE and --task ID or --study NAME: the database and the task a query is about.
struct TaskArgs {
  std::string db;
  std::optional<int64_t> task;
  std::string study;
  auto tie() const { return std::tie(db, task, study); }
  void declare(OptionSet& set);
  // --task, --study, or the only task of the database; Error(kInvalidArgument) for a database of
  // several tasks, saying how to choose, Error(kNotFound) for one of none or an unknown study
  // (`command` names the command).
  int64_t resolve(db::Database& database, const std::string& command) const;
};

// The runner flags: --runner, --nproc, --no-fork-server, --memory-budget, --timeout, and the
// command runner's --metric, --metric-regex, --metric-rank, --oom-exit-code, --oom-pattern, --env,
// --bool-format, --early-stop*; the command after --.
struct RunnerArgs {
  std::string runner = "subprocess";
  int nproc = 1;
  bool no_fork_server = false;
  std::string memory_budget;
  double timeout_s = 0;              // set from defaults::kTrialTimeoutS by declare
  std::vector<std::string> metrics;  // NAME=REGEX
  std::string metric_regex;          // the objective's regex
  std::string metric_rank = "0";     // a rank, or "all"
  std::string oom_pattern;
  std::optional<int> oom_exit_code;
  std::vector<std::string> env;  // NAME=VALUE
  std::string bool_format = "1/0";
  bool early_stop = false;
  size_t early_stop_warmup = 2;
  size_t early_stop_min_trials = 3;
  Args command;  // after --
  auto tie() const {
    return std::tie(runner, nproc, no_fork_server, memory_budget, timeout_s, metrics, metric_regex,
                    metric_rank, oom_pattern, oom_exit_code, env, bool_format, early_stop,
                    early_stop_warmup, early_stop_min_trials, command);
  }
  void declare(OptionSet& set);
  // The runner spec these flags ask for on `space` (its [workload], or the command) to optimize
  // `objective` (empty: the runner's natural one; its direction for early stopping). With the
  // built-in workload, every knob of the space is checked against the template first; with a
  // command, every {placeholder} against the space's knobs (Error(kInvalidArgument) before
  // anything runs). Errors name the flag at fault.
  runners::RunnerSpec spec(const space::Space& space, const std::string& objective = "",
                           bool minimize = false) const;

 private:
  runners::CommandOptions command_options(const space::Space& space, const std::string& objective,
                                          bool minimize) const;
};

struct CatalogueOptions;
// The arguments of a catalogue command (`NOUN [list | show NAME | reference]`), checked: an unknown
// action, show without NAME, or a NAME after list or reference is Error(kInvalidArgument) naming
// `noun`.
CatalogueOptions parse_catalogue(const Args& args, const char* noun);
// Its help: `usage` and no options beyond --help.
std::string catalogue_help(const char* usage);

// runners::check_workload(workload, config) — the model known, every knob one the template
// understands —, its error naming `origin` (the space file) first: what no trial of the space could
// run is refused before anything runs, and the file it comes from is named.
void check_workload_of(const std::string& origin, const runners::Workload& workload,
                       const Config& config);

// The task key of measurements made by `runner` (from `spec`) on `space` on this machine.
db::TaskKey task_key(const runners::RunnerSpec& spec, const runners::Runner& runner,
                     const space::Space& space);

}  // namespace slapo::cli
