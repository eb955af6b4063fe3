// slapo-tune verify --space FILE --config JSON: the scheduled model computes what the original does.

#include <cmath>
#include <iostream>

#include <boost/program_options.hpp>
#include <torch/torch.h>

#include "cli/command.h"
#include "cli/config_arg.h"
#include "core/error.h"
#include "models/templates.h"
#include "models/zoo.h"
#include "core/process.h"
#include "dist/launcher.h"
#include "dist/world.h"
#include "runners/parallel_trainer.h"
#include "runners/parallel_verify.h"
#include "runners/workload.h"
#include "schedule/keyed_dropout.h"
#include "schedule/build.h"
#include "schedule/primitives.h"
#include "schedule/verify.h"
#include "space/compiled_space.h"
#include "space/space_file.h"

namespace po = boost::program_options;

namespace slapo::cli {

namespace {

constexpr const char* kUsage =
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

// The ranks' verdicts, launched by this process.
int verify_launch(const std::vector<std::string>& args, int nproc, std::ostream& out, std::ostream& err) {
  dist::LaunchOptions launch;
  launch.nproc = nproc;
  launch.argv = {self_executable(), "verify"};
  launch.argv.insert(launch.argv.end(), args.begin(), args.end());
  // Oversubscribed cores: one thread per rank, and OpenMP threads that sleep instead of spinning.
  launch.env = {{"OMP_NUM_THREADS", "1"}, {"OMP_WAIT_POLICY", "passive"}};
  launch.timeout_s = 600;
  const dist::LaunchResult result = dist::launch_ranks(launch);
  bool usage = false;
  for (size_t rank = 0; rank < result.ranks.size(); ++rank) {
    const ProcessResult& r = result.ranks[rank];
    if (rank == 0) out << r.out;
    else if (!r.out.empty()) out << tail_lines(r.out, 1);
    if (r.exit_code == kExitUsage) usage = true;
  }
  if (result.ok()) return kExitOk;
  const std::string why = result.failure();
  // A mismatch is exit 1 on the rank that saw it; anything else is a failed run.
  err << "verify: " << why << "\n";
  return usage ? kExitUsage : kExitFailure;
}

// One rank of a verification job.
int verify_rank(const runners::Workload& workload, Config config, int steps, double lr, double tolerance,
                double curve_tolerance, std::ostream& out) {
  torch::set_num_threads(1);
  const dist::RankEnv env = dist::RankEnv::from_env();
  const dist::Layout layout = runners::parallel_layout(workload.spec(), &config, env.world_size);
  const dist::ParallelGroups groups = dist::connect(env, layout);
  const runners::ParallelVerifyReport report = runners::verify_parallel(workload, config, groups, steps, lr);
  const bool ok = report.within(tolerance, curve_tolerance);
  if (groups.rank == 0) {
    out << "model " << workload.model << ", config " << config.to_string() << ", " << layout.to_string() << "\n";
    out << "schedule (rank 0):\n" << report.schedule_text;
    for (size_t i = 0; i < report.grads.size() && i < 5; ++i) {
      const runners::GradDiff& g = report.grads[i];
      out << "  grad " << g.name << ": max |diff| " << g.max_abs << " of " << g.max_ref << " (rel " << g.relative() << ")\n";
    }
  }
  out << (ok ? "verified " : "MISMATCH ") << report.summary() << "\n";
  out.flush();
  return ok ? kExitOk : kExitFailure;
}

}  // namespace

int run_verify(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string space_file, config_arg;
  std::vector<std::string> params;
  int steps = 3;
  int nproc = 0;
  double tolerance = 1e-5, curve_tolerance = 1e-4, lr = 1e-3;
  po::options_description options("options");
  options.add_options()
      ("help,h", "show this help")
      ("space", po::value<std::string>(&space_file), "space file whose [workload] names the model")
      ("config", po::value<std::string>(&config_arg), "the configuration: JSON text or @FILE")
      ("param", po::value<std::vector<std::string>>(&params)->composing(), "override a parameter: NAME=VALUE")
      ("steps", po::value<int>(&steps)->default_value(3), "AdamW steps to compare the loss over")
      ("tolerance", po::value<double>(&tolerance)->default_value(1e-5),
       "largest difference accepted (absolute on one process; relative across ranks)")
      ("curve-tolerance", po::value<double>(&curve_tolerance)->default_value(1e-4),
       "largest loss difference over the steps, across ranks")
      ("lr", po::value<double>(&lr)->default_value(1e-3), "AdamW's learning rate for the loss curve")
      ("nproc", po::value<int>(&nproc), "launch this many ranks (tp·pp·dp of the configuration)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(options).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    out << kUsage << "\n" << options;
    return kExitOk;
  }
  SLAPO_CHECK(!space_file.empty(), ErrorCode::kInvalidArgument, "verify: --space FILE is required");
  SLAPO_CHECK(!config_arg.empty(), ErrorCode::kInvalidArgument, "verify: --config JSON is required");
  SLAPO_CHECK(steps >= 0, ErrorCode::kInvalidArgument, "--steps must be >= 0");

  const space::Space declared = load_space(space_file, params);
  const Config config = config_in_space(declared, config_arg);

  const runners::Workload workload = runners::Workload::from_json(declared.workload_json, space_file);
  const models::ModelSpec spec = workload.spec();
  const std::string template_name = workload.schedule_template();
  runners::check_workload(workload, config);
  const models::ParallelKnobs knobs = models::parallel_knobs(spec, config);
  if (knobs.world() > 1 || nproc > 1) {
    if (dist::RankEnv::present()) return verify_rank(workload, config, steps, lr, tolerance, curve_tolerance, out);
    SLAPO_CHECK(nproc == knobs.world(), ErrorCode::kInvalidArgument, "verify: the configuration needs tp·pp·dp = ",
                knobs.world(), " ranks: pass --nproc ", knobs.world(), nproc > 0 ? " (not " + std::to_string(nproc) + ")" : "",
                " or launch it with torchrun");
    return verify_launch(args, nproc, out, err);
  }
  const uint64_t seed = workload.seed;
  const int64_t batch = workload.batch_size_for(config);
  const int64_t seq = workload.seq_len_for(config);

  auto original = models::build_model(spec, seed);
  auto scheduled = models::build_model(spec, seed);
  auto sch = schedule::create_schedule(scheduled);
  models::apply_template(*sch, spec, template_name, config);
  const schedule::BuildResult built = schedule::build(*sch);

  torch::manual_seed(seed + 1);
  const torch::Tensor tokens = torch::randint(spec.vocab, {batch, seq}, torch::kLong);
  const torch::Tensor targets = torch::randint(spec.vocab, {batch, seq}, torch::kLong);
  auto run = [&](torch::nn::Module& m) {
    torch::Tensor logits = models::model_forward(dynamic_cast<schedule::SlotModule&>(m), tokens);
    return std::make_pair(logits, models::language_model_loss(logits, targets));
  };
  const schedule::VerifyReport report = schedule::verify(*original, *scheduled, run, seed);

  out << "model " << spec.preset << ", template " << template_name << ", batch " << batch << ", seq " << seq
      << ", config " << config.to_string() << "\n";
  out << "schedule:\n" << (sch->to_string().empty() ? "  (no primitives)\n" : sch->to_string());
  out << built.plan_text();
  out << report.to_string();

  // The same training steps on both: the loss curves must agree.
  double loss_diff = 0;
  if (steps > 0) {
    auto train = [&](schedule::SlotModule& model) {
      // Each tensor once: a tied embedding and LM head are one tensor under two names.
      torch::optim::AdamW optimizer(schedule::unique_parameters(model), torch::optim::AdamWOptions(lr));
      std::vector<double> losses;
      model.train();
      for (int step = 0; step < steps; ++step) {
        torch::manual_seed(seed + 1000 + step);
        schedule::DropoutScope scope(static_cast<uint64_t>(step), 0);
        optimizer.zero_grad();
        torch::Tensor loss = run(model).second;
        loss.backward();
        optimizer.step();
        losses.push_back(loss.item<double>());
      }
      return losses;
    };
    const auto a = train(*original), b = train(*scheduled);
    for (size_t i = 0; i < a.size(); ++i) loss_diff = std::max(loss_diff, std::fabs(a[i] - b[i]));
    out << "loss over " << steps << " AdamW steps: max |diff| " << loss_diff << " (original " << a.front() << " → "
        << a.back() << ")\n";
  }
  const bool ok = report.within(tolerance) && loss_diff <= tolerance;
  out << (ok ? "verified" : "MISMATCH") << ": tolerance " << tolerance << "\n";
  return ok ? kExitOk : kExitFailure;
}

int run_primitives(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    out << "usage: slapo-tune primitives [NAME]\n\nLists the schedule primitives, or prints one's full help.\n";
    return kExitOk;
  }
  SLAPO_CHECK(args.size() <= 1, ErrorCode::kInvalidArgument, "primitives: expected at most one NAME");
  if (args.size() == 1) {
    const schedule::PrimitiveDoc& doc = schedule::find_primitive(args[0]);
    out << doc.name << ": " << doc.summary << "\n\n" << doc.help << "\n";
    return kExitOk;
  }
  for (const auto& doc : schedule::list_primitives()) {
    std::string name = doc.name;
    name.resize(20, ' ');
    out << name << doc.summary << "\n";
  }
  return kExitOk;
}

}  // namespace slapo::cli
