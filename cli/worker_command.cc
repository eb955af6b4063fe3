// slapo-tune worker: the worker end of the worker protocol (runners/worker_protocol.h), what the
// subprocess and single-node runners start.

#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "runners/collective_profile.h"
#include "runners/profiler.h"
#include "runners/worker.h"

namespace slapo::cli {

namespace {

constexpr const char* kWorkerUsage =
    "usage: slapo-tune worker --workload JSON --config JSON\n"
    "       slapo-tune worker --serve\n"
    "       slapo-tune worker --collectives\n"
    "       slapo-tune worker --profile REQUEST\n"
    "\n"
    "Measures one trial and prints its result as JSON on the last line (the subprocess runner's\n"
    "worker; exits 0 whenever it could report, whatever the trial's status). With --serve, a fork\n"
    "server: one trial per request line on standard input. With --collectives, one rank of the job\n"
    "that times this machine's collectives; with --profile, one of the copies of a profiling run\n"
    "that run side by side (both started by the cost model).\n";

void declare(WorkerOptions* o, OptionSet& set) {
  // clang-format off
  set.visible.add_options()
      ("workload", po::value<std::string>(&o->workload_json), "the workload as JSON")
      ("config", po::value<std::string>(&o->config_json), "the configuration as JSON")
      ("serve", po::bool_switch(&o->serve), "fork server: one trial per request line on standard input")
      ("collectives", po::bool_switch(&o->collectives), "one rank of the collective profiling job")
      ("profile", po::value<std::string>(&o->profile_json), "one copy of a profiling run (JSON request)");
  // clang-format on
}

}  // namespace

WorkerOptions parse_worker(const Args& args) {
  WorkerOptions o = parse_options<WorkerOptions>(args, declare);
  SLAPO_CHECK(o.help || o.serve || o.collectives || !o.profile_json.empty() ||
                  (!o.workload_json.empty() && !o.config_json.empty()),
              ErrorCode::kInvalidArgument, "worker: --workload and --config are required");
  return o;
}

int run_worker(const WorkerOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << help_text<WorkerOptions>(kWorkerUsage, declare);
    return kExitOk;
  }
  if (!o.profile_json.empty()) {
    runners::run_profile_worker(o.profile_json, out);
    return kExitOk;
  }
  if (o.collectives) {
    runners::run_collective_worker(out);
    return kExitOk;
  }
  if (o.serve) {
    runners::serve_trials(std::cin, out);
    return kExitOk;
  }
  out << runners::run_worker_trial(o.workload_json, o.config_json).to_json() << std::endl;
  return kExitOk;
}

}  // namespace slapo::cli
