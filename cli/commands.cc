// The list of commands: each one's parse and run, joined.

#include "cli/commands.h"

namespace slapo::cli {

namespace {

// parse then run: what every command's main is.
template <typename Options, Options (*Parse)(const Args&),
          int (*Run)(const Options&, std::ostream&, std::ostream&)>
int main_of(const Args& args, std::ostream& out, std::ostream& err) {
  return Run(Parse(args), out, err);
}

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> list = {
      {"single-device", "tune: search the space, measure, record every trial, report the best",
       main_of<TuneOptions, parse_single_device, run_tune>},
      {"single-node", "tune with N ranks per trial on this machine (tp, pp, dp)",
       main_of<TuneOptions, parse_single_node, run_tune>},
      {"predict", "one configuration's predicted step time and peak memory (the cost model)",
       main_of<PredictOptions, parse_predict, run_predict>},
      {"plan", "the whole space ranked by predicted step time, out-of-memory left out",
       main_of<PlanOptions, parse_plan, run_plan>},
      {"report", "a task's tuning as one HTML file: heat map, convergence, top configurations",
       main_of<ReportCommandOptions, parse_report, run_report>},
      {"space", "inspect a search space: show, count, list, sample",
       main_of<SpaceOptions, parse_space, run_space>},
      {"verify", "check that a scheduled model computes what the original does",
       main_of<VerifyOptions, parse_verify, run_verify>},
      {"primitives", "the schedule primitives: list, show NAME, reference",
       main_of<PrimitivesOptions, parse_primitives, run_primitives>},
      {"templates", "the schedule templates and their knobs: list, show NAME, reference",
       main_of<TemplatesOptions, parse_templates, run_templates>},
      {"trial", "measure one configuration (built-in workload or any command)",
       main_of<TrialOptions, parse_trial, run_trial>},
      {"worker", "measure one trial and print it as JSON (used by the subprocess runner)",
       main_of<WorkerOptions, parse_worker, run_worker>},
      {"db", "query the tuning database: tasks, trials, best, show, export, prune",
       main_of<DbOptions, parse_db, run_db>},
      {"replay", "re-measure a recorded configuration and compare with the record",
       main_of<ReplayOptions, parse_replay, run_replay>},
      {"weights", "checkpoints: show FILE, convert IN OUT (to the zoo's names), init OUT",
       main_of<WeightsOptions, parse_weights, run_weights>},
      {"version", "print the version, LibTorch, BLAS and machine facts",
       main_of<VersionOptions, parse_version, run_version>},
  };
  return list;
}

}  // namespace slapo::cli
