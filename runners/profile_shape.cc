#include "runners/profile_shape.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "core/stats.h"
#include "models/fused_lm_head.h"
#include "models/templates.h"
#include "models/training_batch.h"
#include "runners/parallel_trainer.h"
#include "runners/simulated_group.h"
#include "runners/token_batches.h"
#include "runners/tracking_allocator.h"
#include "schedule/kernels/fused_adamw.h"
#include "schedule/kernels/fused_lm_loss.h"
#include "schedule/runtime/pipeline.h"

namespace slapo::runners {

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double median_ms(int repeats, F&& f) {
  std::vector<double> ms;
  f();  // warm-up
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return median(ms);
}

int64_t numel(const std::vector<std::pair<std::string, torch::Tensor>>& params) {
  int64_t n = 0;
  for (const auto& [name, t] : params) n += t.numel();
  return n;
}

}  // namespace

void measure_input_bytes(const Workload& w, const models::ModelSpec& spec, int64_t seq,
                         cost::ModelShape& shape) {
  TrackingAllocator& tracker = TrackingAllocator::instance();
  const auto live = [&] { return static_cast<double>(tracker.live_bytes()); };
  double trial[2] = {0, 0}, profiled[2] = {0, 0};
  for (int64_t samples : {1, 2}) {
    double before = live();
    {
      TokenBatches batches(w, spec, samples, seq);
      const models::TrainingBatch held = batches.next();
      trial[samples - 1] = live() - before;
    }
    before = live();
    {
      const models::TrainingBatch held = models::training_batch(
          spec, torch::randint(spec.vocab, {samples, seq + 1}, torch::kLong));
      profiled[samples - 1] = live() - before;
    }
  }
  shape.input_bytes_per_sample = trial[1] - trial[0];
  shape.input_bytes_at0 = trial[0] - shape.input_bytes_per_sample;
  shape.profiled_input_bytes_per_sample = profiled[1] - profiled[0];
}

cost::ModelShape model_shape(const Workload& w, const Config& knobs, int tp) {
  models::ModelSpec spec = w.spec();
  spec.layers = 2;
  std::shared_ptr<SimulatedGroup> group;
  ParallelTrainer trainer({spec, w.schedule_template(), knobs, w.seed, w.optimizer, w.lr, {}},
                          simulated_groups(tp, &group));
  schedule::StagePlan plan;
  plan.stages = 2;
  plan.blocks = {{0, 1}, {1, 2}};
  const auto first = schedule::stage_parameters(trainer.model(), plan, 0);
  const auto last = schedule::stage_parameters(trainer.model(), plan, 1);
  const std::string block0 = spec.traits().blocks + ".0.", block1 = spec.traits().blocks + ".1.";
  int64_t block = 0;
  cost::ModelShape shape;
  for (const auto& [name, t] : first) {
    const double n = static_cast<double>(t.numel());
    if (name.rfind(block0, 0) == 0) {
      block += t.numel();
      shape.largest_block_tensor = std::max(shape.largest_block_tensor, n);
    } else {
      shape.largest_prologue_tensor = std::max(shape.largest_prologue_tensor, n);
    }
  }
  for (const auto& [name, t] : last) {
    if (name.rfind(block1, 0) != 0)
      shape.largest_epilogue_tensor =
          std::max(shape.largest_epilogue_tensor, static_cast<double>(t.numel()));
  }
  std::set<const c10::TensorImpl*> in_last;
  for (const auto& [name, t] : last) in_last.insert(t.unsafeGetTensorImpl());
  int64_t tied = 0;
  for (const auto& [name, t] : first) {
    if (in_last.count(t.unsafeGetTensorImpl())) tied += t.numel();
  }
  shape.block_params = static_cast<double>(block);
  shape.prologue_params = static_cast<double>(numel(first) - block);
  shape.epilogue_params = static_cast<double>(numel(last) - block);
  shape.tied_params = static_cast<double>(tied);
  shape.message_bytes_per_sample =
      static_cast<double>(w.seq_len_for(knobs) * spec.hidden) * sizeof(float);
  // The fused LM loss's chunk (its rank's rows of the vocabulary), in samples of the tokens the
  // loss reads: a sequence's, or a masked model's masked positions.
  for (const auto& module : trainer.model().modules()) {
    const auto* head = dynamic_cast<const models::FusedLmHeadImpl*>(module.get());
    if (head == nullptr) continue;
    const int64_t seq = w.seq_len_for(knobs);
    const int64_t tokens = spec.traits().masked_lm ? models::masked_positions(seq) : seq;
    const int64_t rows = head->named_parameters(/*recurse=*/false)["weight"].size(0);
    shape.loss_chunk_samples = static_cast<double>(schedule::default_chunk_tokens(rows)) /
                               static_cast<double>(std::max<int64_t>(1, tokens));
  }
  return shape;
}

double optimizer_temp_bytes_per_element(const Workload& w, const models::TemplateConfig& tc,
                                        double params) {
  const int64_t elements = std::min(static_cast<int64_t>(params), kOptimizerProbeElements);
  torch::Tensor p = torch::zeros({elements}).requires_grad_();
  p.mutable_grad() = torch::full_like(p, 1e-3);
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (w.optimizer == "sgd")
    optimizer = std::make_unique<torch::optim::SGD>(std::vector<torch::Tensor>{p},
                                                    torch::optim::SGDOptions(w.lr));
  else if (tc.fused_adamw)
    optimizer = std::make_unique<schedule::FusedAdamW>(std::vector<torch::Tensor>{p},
                                                       torch::optim::AdamWOptions(w.lr));
  else
    optimizer = std::make_unique<torch::optim::AdamW>(std::vector<torch::Tensor>{p},
                                                      torch::optim::AdamWOptions(w.lr));
  optimizer->step();  // the state
  TrackingAllocator& tracker = TrackingAllocator::instance();
  const size_t before = tracker.live_bytes();
  tracker.reset_peak();
  optimizer->step();
  return static_cast<double>(tracker.peak_bytes() - before) / static_cast<double>(elements);
}

double prologue_ms_per_sample(const Workload& w, const Config& knobs, int64_t batch) {
  models::ModelSpec spec = w.spec();
  spec.layers = 1;
  auto model = models::build_model(spec, w.seed);
  auto* pipelined = dynamic_cast<schedule::Pipelined*>(model.get());
  if (!pipelined) return 0;
  const torch::Tensor tokens =
      torch::randint(spec.vocab, {batch, w.seq_len_for(knobs)}, torch::kLong);
  return median_ms(3,
                   [&] {
                     model->zero_grad();
                     pipelined->prologue(tokens).sum().backward();
                   }) /
         static_cast<double>(batch);
}

}  // namespace slapo::runners
