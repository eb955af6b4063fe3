#include "runners/parallel_verify.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include <torch/torch.h>

#include "models/templates.h"
#include "models/training_batch.h"
#include "models/weights/weights_file.h"
#include "models/zoo.h"
#include "runners/parallel_trainer.h"
#include "schedule/language/build.h"
#include "schedule/runtime/keyed_dropout.h"

namespace slapo::runners {

namespace {

std::pair<torch::Tensor, torch::Tensor> batch_for_step(const models::ModelSpec& spec, uint64_t seed,
                                                       int step, int64_t batch, int64_t seq) {
  torch::manual_seed(seed + 1000 + static_cast<uint64_t>(step));
  models::TrainingBatch b =
      models::training_batch(spec, torch::randint(spec.vocab, {batch, seq + 1}, torch::kLong));
  return {b.inputs, b.targets};
}

}  // namespace

double ParallelVerifyReport::loss_relative() const {
  return std::fabs(loss - loss_ref) / std::max(std::fabs(loss_ref), 1e-30);
}

double ParallelVerifyReport::curve_max_abs() const {
  double worst = curve.size() == curve_ref.size() ? 0 : INFINITY;
  for (size_t i = 0; i < curve.size() && i < curve_ref.size(); ++i)
    worst = std::max(worst, std::fabs(curve[i] - curve_ref[i]));
  return worst;
}

bool ParallelVerifyReport::within(double tolerance, double curve_tolerance) const {
  return loss_relative() <= tolerance && worst_grad_relative() <= tolerance &&
         curve_max_abs() <= curve_tolerance && !grads.empty();
}

std::string ParallelVerifyReport::summary() const {
  std::ostringstream out;
  out << "rank " << rank << " (" << layout << "): loss " << loss << " vs " << loss_ref << " (rel "
      << loss_relative() << "), " << grads.size() << " gradients, worst rel "
      << worst_grad_relative();
  if (!grads.empty()) out << " (" << grads.front().name << ")";
  out << ", loss curve over " << curve.size() << " steps max |diff| " << curve_max_abs();
  if (!unmatched.empty()) out << ", " << unmatched.size() << " parameters not in the original";
  return out.str();
}

ParallelVerifyReport verify_parallel(const Workload& w, const Config& config,
                                     const dist::ParallelGroups& groups, int steps, double lr) {
  check_workload(w, config);
  const models::ModelSpec spec = w.spec();
  const int64_t batch = w.batch_size_for(config);
  const int64_t seq = w.seq_len_for(config);

  ParallelVerifyReport report;
  report.rank = groups.rank;
  report.layout = groups.layout.to_string();

  // The original, alone, on the whole batch.
  auto original = models::build_model(spec, w.seed);
  if (!w.weights.empty()) models::load_weights(*original, spec, w.weights);
  original->train();
  std::vector<torch::Tensor> original_params = schedule::unique_parameters(*original);
  torch::optim::AdamW ref_optimizer(original_params, torch::optim::AdamWOptions(lr));
  auto reference_step = [&](int step) {
    auto [tokens, targets] = batch_for_step(spec, w.seed, step, batch, seq);
    ref_optimizer.zero_grad();
    schedule::DropoutScope scope(static_cast<uint64_t>(step), 0);
    torch::Tensor loss =
        models::training_loss(spec)(models::model_forward(*original, tokens), targets);
    loss.backward();
    return loss.item<double>();
  };

  TrainerSetup setup{spec, w.schedule_template(), config, w.seed, "adamw", lr, w.weights};
  ParallelTrainer trainer(setup, groups);
  report.schedule_text = trainer.schedule_text();

  // Step 0: gradients.
  report.loss_ref = reference_step(0);
  {
    auto [tokens, targets] = batch_for_step(spec, w.seed, 0, batch, seq);
    report.loss = trainer.step(tokens, targets, 0, /*update=*/false);
  }
  std::map<std::string, torch::Tensor> reference;
  for (const auto& p : original->named_parameters()) reference[p.key()] = p.value();
  const int64_t tp_rank = groups.tp_rank();
  for (const auto& [name, param] : trainer.parameters()) {
    auto it = reference.find(name);
    if (it == reference.end()) {
      report.unmatched.push_back(name);
      continue;
    }
    torch::Tensor ref = it->second.grad();
    if (const schedule::ShardSpec* shard = trainer.shard_of(name)) {
      const int64_t len = ref.size(shard->axis) / shard->parts;
      ref = ref.narrow(shard->axis, tp_rank * len, len);
    }
    GradDiff d;
    d.name = name;
    const torch::Tensor got = param.grad();
    if (!ref.defined() || !got.defined() || ref.sizes() != got.sizes()) {
      d.max_abs = INFINITY;
    } else {
      d.max_abs = (ref.to(torch::kDouble) - got.to(torch::kDouble)).abs().max().item<double>();
      d.max_ref = ref.to(torch::kDouble).abs().max().item<double>();
    }
    report.grads.push_back(d);
  }
  double largest = 0;
  for (const GradDiff& d : report.grads) largest = std::max(largest, d.max_ref);
  for (GradDiff& d : report.grads) d.floor = 1e-3 * largest;
  std::sort(report.grads.begin(), report.grads.end(),
            [](const GradDiff& a, const GradDiff& b) { return a.relative() > b.relative(); });

  // The loss curve: the same optimizer steps on both, from the same weights.
  ref_optimizer.step();
  for (int step = 1; step <= steps; ++step) {
    report.curve_ref.push_back(reference_step(step));
    ref_optimizer.step();
  }
  {
    // Step 0 again with the update this time (the gradients above were left in place).
    auto [tokens, targets] = batch_for_step(spec, w.seed, 0, batch, seq);
    trainer.step(tokens, targets, 0, /*update=*/true);
  }
  for (int step = 1; step <= steps; ++step) {
    auto [tokens, targets] = batch_for_step(spec, w.seed, step, batch, seq);
    report.curve.push_back(trainer.step(tokens, targets, static_cast<uint64_t>(step)));
  }
  return report;
}

ParallelVerifyReport verify_this_rank(const Workload& workload, const Config& config, int steps,
                                      double lr) {
  torch::set_num_threads(1);
  const dist::RankEnv env = dist::RankEnv::from_env();
  const Layout layout = models::parallel_knobs(workload.spec(), config, env.world_size).layout;
  return verify_parallel(workload, config, dist::connect(env, layout), steps, lr);
}

}  // namespace slapo::runners
