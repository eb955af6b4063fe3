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
#include "runners/workload.h"
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
    "the loss after a few AdamW steps. Exits 0 within --tolerance, 1 beyond it.\n";

}  // namespace

int run_verify(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string space_file, config_arg;
  std::vector<std::string> params;
  int steps = 3;
  double tolerance = 1e-5;
  po::options_description options("options");
  options.add_options()
      ("help,h", "show this help")
      ("space", po::value<std::string>(&space_file), "space file whose [workload] names the model")
      ("config", po::value<std::string>(&config_arg), "the configuration: JSON text or @FILE")
      ("param", po::value<std::vector<std::string>>(&params)->composing(), "override a parameter: NAME=VALUE")
      ("steps", po::value<int>(&steps)->default_value(3), "AdamW steps to compare the loss over")
      ("tolerance", po::value<double>(&tolerance)->default_value(1e-5), "largest absolute difference accepted");
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
  const models::ModelSpec spec = models::model_preset(workload.model);
  const std::string template_name = workload.schedule_template();
  runners::check_workload(workload, config);
  const uint64_t seed = workload.seed;
  const Value* b = config.find("batch_size");
  const int64_t batch = b ? static_cast<int64_t>(as_number(*b)) : workload.batch_size;
  const Value* s = config.find("seq_len");
  const int64_t seq = s ? static_cast<int64_t>(as_number(*s)) : (workload.seq_len > 0 ? workload.seq_len : spec.max_seq);

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
      torch::optim::AdamW optimizer(model.parameters(), torch::optim::AdamWOptions(1e-3));
      std::vector<double> losses;
      model.train();
      for (int step = 0; step < steps; ++step) {
        torch::manual_seed(seed + 1000 + step);
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
