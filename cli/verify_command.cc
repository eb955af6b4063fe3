// slapo-tune verify: the scheduled model computes what the original does — in this process, or as
// the ranks of the configuration's layout.

#include <ostream>

#include "cli/commands.h"
#include "cli/config_arg.h"
#include "core/defaults.h"
#include "core/error.h"
#include "core/process.h"
#include "dist/launcher.h"
#include "dist/world.h"
#include "models/templates.h"
#include "runners/parallel_verify.h"
#include "runners/workload.h"
#include "runners/workload_verify.h"

namespace slapo::cli {

namespace {

constexpr const char* kVerifyUsage =
    "usage: slapo-tune verify --space FILE --config JSON|@FILE [options]\n"
    "\n"
    "Builds the space file's [workload] model twice — original, and scheduled with the\n"
    "configuration's template — runs both on the same inputs with the same random seed (dropout\n"
    "on), and prints the largest difference of the outputs, of every parameter gradient, and of\n"
    "the loss after a few AdamW steps. Exits 0 within --tolerance, 1 beyond it.\n"
    "\n"
    "A configuration with tp, pp or dp above 1 runs as that many ranks (tp·pp·dp, over Gloo on\n"
    "this machine): with --nproc N, slapo-tune launches them itself (or run it under torchrun,\n"
    "mpirun or Slurm, which set RANK and WORLD_SIZE). Each rank compares the gradients of the\n"
    "parameters it holds (its shards, its stage) with the single-process original's, relative to\n"
    "their magnitude, the loss, and the loss curve over --steps AdamW steps (--curve-tolerance).\n";

void declare(VerifyOptions* o, OptionSet& set) {
  o->space.declare(set);
  // clang-format off
  set.visible.add_options()
      ("config", po::value<std::string>(&o->config), "the configuration: JSON text or @FILE")
      ("steps", po::value<int>(&o->steps)->default_value(3), "AdamW steps to compare the loss over")
      ("tolerance", po::value<double>(&o->tolerance)->default_value(1e-5),
       "largest difference accepted (absolute on one process; relative across ranks)")
      ("curve-tolerance", po::value<double>(&o->curve_tolerance)->default_value(1e-4),
       "largest loss difference over the steps, across ranks")
      ("lr", po::value<double>(&o->lr)->default_value(1e-3), "AdamW's learning rate for the loss curve")
      ("nproc", po::value<int>(&o->nproc), "launch this many ranks (tp·pp·dp of the configuration)");
  // clang-format on
}

// The ranks' verdicts, launched by this process.
int verify_launch(const Args& args, int nproc, std::ostream& out, std::ostream& err) {
  dist::LaunchOptions launch;
  launch.nproc = nproc;
  launch.argv = {self_executable(), "verify"};
  launch.argv.insert(launch.argv.end(), args.begin(), args.end());
  // Oversubscribed cores: one thread per rank, and OpenMP threads that sleep instead of spinning.
  launch.env = {{"OMP_NUM_THREADS", "1"}, {"OMP_WAIT_POLICY", "passive"}};
  launch.timeout_s = defaults::kTrialTimeoutS;
  const dist::LaunchResult result = dist::launch_ranks(launch);
  bool usage = false;
  for (size_t rank = 0; rank < result.ranks.size(); ++rank) {
    const ProcessResult& r = result.ranks[rank];
    if (rank == 0)
      out << r.out;
    else if (!r.out.empty())
      out << tail_lines(r.out, 1);
    if (r.exit_code == kExitUsage) usage = true;
  }
  if (result.ok()) return kExitOk;
  // A mismatch is exit 1 on the rank that saw it; anything else is a failed run.
  err << "verify: " << result.failure() << "\n";
  return usage ? kExitUsage : kExitFailure;
}

// One rank of a verification job.
int verify_rank(const runners::Workload& workload, const Config& config, const VerifyOptions& o,
                std::ostream& out) {
  const runners::ParallelVerifyReport report =
      runners::verify_this_rank(workload, config, o.steps, o.lr);
  const bool ok = report.within(o.tolerance, o.curve_tolerance);
  if (report.rank == 0) {
    out << "model " << workload.model << ", config " << config.to_string() << ", " << report.layout
        << "\n";
    out << "schedule (rank 0):\n" << report.schedule_text;
    for (size_t i = 0; i < report.grads.size() && i < 5; ++i) {
      const runners::GradDiff& g = report.grads[i];
      out << "  grad " << g.name << ": max |diff| " << g.max_abs << " of " << g.max_ref << " (rel "
          << g.relative() << ")\n";
    }
  }
  out << (ok ? "verified " : "MISMATCH ") << report.summary() << "\n";
  out.flush();
  return ok ? kExitOk : kExitFailure;
}

}  // namespace

VerifyOptions parse_verify(const Args& args) {
  VerifyOptions o = parse_options<VerifyOptions>(args, declare);
  o.args = args;
  if (o.help) return o;
  SLAPO_CHECK(!o.space.file.empty(), ErrorCode::kInvalidArgument,
              "verify: --space FILE is required");
  SLAPO_CHECK(!o.config.empty(), ErrorCode::kInvalidArgument, "verify: --config JSON is required");
  SLAPO_CHECK(o.steps >= 0, ErrorCode::kInvalidArgument, "--steps must be >= 0");
  return o;
}

int run_verify(const VerifyOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << help_text<VerifyOptions>(kVerifyUsage, declare);
    return kExitOk;
  }
  const space::Space declared = o.space.load();
  const Config config = config_in_space(declared, o.config);
  const runners::Workload workload =
      runners::Workload::from_json(declared.workload_json, o.space.file);
  check_workload_of(o.space.file, workload, config);
  const int world = models::parallel_knobs(workload.spec(), config).world();
  if (world > 1 || o.nproc > 1) {
    if (dist::RankEnv::present()) return verify_rank(workload, config, o, out);
    SLAPO_CHECK(o.nproc == world, ErrorCode::kInvalidArgument,
                "verify: the configuration needs tp·pp·dp = ", world, " ranks: pass --nproc ",
                world, o.nproc > 0 ? " (not " + std::to_string(o.nproc) + ")" : "",
                " or launch it with torchrun");
    return verify_launch(o.args, o.nproc, out, err);
  }
  const runners::WorkloadVerifyReport report =
      runners::verify_workload(workload, config, o.steps, o.lr);
  out << report.to_string(o.tolerance);
  return report.within(o.tolerance) ? kExitOk : kExitFailure;
}

}  // namespace slapo::cli
