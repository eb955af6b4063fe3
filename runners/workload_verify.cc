#include "runners/workload_verify.h"

#include <cmath>
#include <sstream>

#include <torch/torch.h>

#include "models/templates.h"
#include "models/training_batch.h"
#include "models/weights/weights_file.h"
#include "models/zoo.h"
#include "schedule/kernels/fused_adamw.h"
#include "schedule/language/build.h"
#include "schedule/language/schedule.h"
#include "schedule/runtime/keyed_dropout.h"

namespace slapo::runners {

double WorkloadVerifyReport::curve_max_abs() const {
  double worst = 0;
  for (size_t i = 0; i < curve.size() && i < curve_ref.size(); ++i) {
    worst = std::max(worst, std::fabs(curve[i] - curve_ref[i]));
  }
  return worst;
}

bool WorkloadVerifyReport::within(double tolerance) const {
  return outputs_and_grads.within(tolerance) && curve_max_abs() <= tolerance;
}

std::string WorkloadVerifyReport::to_string(double tolerance) const {
  std::ostringstream out;
  out << header << "\n"
      << "schedule:\n"
      << (schedule_text.empty() ? "  (no primitives)\n" : schedule_text) << plan_text
      << outputs_and_grads.to_string();
  if (!curve.empty()) {
    out << "loss over " << curve.size() << " AdamW steps: max |diff| " << curve_max_abs()
        << " (original " << curve_ref.front() << " → " << curve_ref.back() << ")\n";
  }
  out << (within(tolerance) ? "verified" : "MISMATCH") << ": tolerance " << tolerance << "\n";
  return out.str();
}

WorkloadVerifyReport verify_workload(const Workload& workload, const Config& config, int steps,
                                     double lr) {
  check_workload(workload, config);
  const models::ModelSpec spec = workload.spec();
  const std::string template_name = workload.schedule_template();
  const uint64_t seed = workload.seed;
  const int64_t batch = workload.batch_size_for(config);
  const int64_t seq = workload.seq_len_for(config);

  auto original = models::build_model(spec, seed);
  auto scheduled = models::build_model(spec, seed);
  if (!workload.weights.empty()) {
    models::load_weights(*original, spec, workload.weights);
    models::load_weights(*scheduled, spec, workload.weights);
  }
  auto sch = schedule::create_schedule(scheduled);
  models::apply_template(*sch, spec, template_name, config);
  const schedule::BuildResult built = schedule::build(*sch);

  torch::manual_seed(seed + 1);
  const models::TrainingBatch data =
      models::training_batch(spec, torch::randint(spec.vocab, {batch, seq + 1}, torch::kLong));
  const torch::Tensor& tokens = data.inputs;
  const torch::Tensor& targets = data.targets;
  // The loss as a training step computes it (a fused LM head skips the logits), the logits by a
  // forward of their own: keyed dropout draws the same masks in both.
  auto run = [&](torch::nn::Module& m) {
    auto& model = dynamic_cast<schedule::SlotModule&>(m);
    torch::Tensor loss = models::model_loss(model, tokens, targets, models::training_loss(spec));
    torch::NoGradGuard no_grad;
    return std::make_pair(models::model_forward(model, tokens), loss);
  };
  WorkloadVerifyReport report;
  report.outputs_and_grads = schedule::verify(*original, *scheduled, run, seed);
  report.header = "model " + spec.preset + ", template " + template_name + ", batch " +
                  std::to_string(batch) + ", seq " + std::to_string(seq) + ", config " +
                  config.to_string();
  report.schedule_text = sch->to_string();
  report.plan_text = built.plan_text();

  // The same training steps on both: the loss curves must agree. The scheduled model steps with
  // the optimizer its configuration asks for (fused_adamw), the original with LibTorch's.
  const bool fused_adamw = models::parse_template_config(template_name, spec, config).fused_adamw;
  auto train = [&](schedule::SlotModule& model, bool fused) {
    // Each tensor once: a tied embedding and LM head are one tensor under two names.
    const auto params = schedule::unique_parameters(model);
    std::unique_ptr<torch::optim::Optimizer> optimizer;
    if (fused)
      optimizer = std::make_unique<schedule::FusedAdamW>(params, torch::optim::AdamWOptions(lr));
    else
      optimizer = std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(lr));
    std::vector<double> losses;
    model.train();
    for (int step = 0; step < steps; ++step) {
      torch::manual_seed(seed + 1000 + step);
      schedule::DropoutScope scope(static_cast<uint64_t>(step), 0);
      optimizer->zero_grad();
      torch::Tensor loss = run(model).second;
      loss.backward();
      optimizer->step();
      losses.push_back(loss.item<double>());
    }
    return losses;
  };
  report.curve_ref = train(*original, false);
  report.curve = train(*scheduled, fused_adamw);
  return report;
}

}  // namespace slapo::runners
