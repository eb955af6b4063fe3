#include "runners/parallel_trainer.h"

#include <chrono>
#include <set>

#include <torch/nn/module.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "core/error.h"
#include "models/model_registry.h"
#include "models/template_knobs.h"
#include "models/templates.h"
#include "models/weights/weights_file.h"
#include "models/zoo.h"
#include "schedule/kernels/fused_adamw.h"
#include "schedule/runtime/data_parallel.h"

namespace slapo::runners {

ParallelTrainer::ParallelTrainer(const TrainerSetup& setup, dist::ParallelGroups groups)
    : groups_(std::move(groups)) {
  const Layout& layout = groups_.layout;
  const models::TemplateConfig config =
      models::parse_template_config(setup.template_name, setup.spec, setup.config, layout.world());
  const models::ParallelKnobs& knobs = config.parallel;
  SLAPO_CHECK(knobs.layout == layout, ErrorCode::kInvalidArgument, "the configuration asks for ",
              knobs.layout.to_string(), " (", knobs.world(), " ranks) but this job is ",
              layout.to_string(), " (", layout.world(), " ranks)");
  model_ = models::build_model(setup.spec, setup.seed);
  loss_ = models::training_loss(setup.spec);
  // A checkpoint is read after the schedule, each rank only its shards and its stage's
  // parameters — unless the schedule renames parameters (fused_qkv's qkv is a copy of q, k and v;
  // a program's own family may do anything), where the whole file is loaded first and the schedule
  // then keeps its part.
  const bool load_after = !setup.weights.empty() &&
                          config.attn != models::AttentionKind::kFusedQkv &&
                          models::registered_family(setup.spec.family) == nullptr;
  if (!setup.weights.empty() && !load_after)
    models::load_weights(*model_, setup.spec, setup.weights);
  schedule::ScheduleOptions options;
  options.tp_group = groups_.tp;
  options.seed = setup.seed;
  auto sch = schedule::create_schedule(model_, options);
  models::apply_template(*sch, setup.spec, config);
  built_ = schedule::build(*sch);
  schedule_text_ = sch->to_string();

  schedule::StagePlan plan = schedule::plan_stages(*model_, built_.plan.cuts);
  schedule::PipelineOptions po;
  po.micro_batches = micro_batches_ = knobs.micro_batches;
  po.schedule = schedule::parse_pipeline_schedule(knobs.pipeline_schedule);
  runner_ = std::make_unique<schedule::PipelineRunner>(model_, plan, groups_.pp, po);
  if (layout.pp == 1) {
    plan.blocks = {{0, plan.blocks.back().second}};
    plan.stages = 1;
  }
  const int64_t stage = groups_.pp_rank();
  params_ = schedule::stage_parameters(*model_, plan, stage);

  if (layout.pp > 1) {
    std::set<const c10::TensorImpl*> mine;
    for (const auto& [name, t] : params_) mine.insert(t.unsafeGetTensorImpl());
    // The tensors both ends of the pipeline hold (a tied embedding and LM head).
    if (stage == 0 || stage == plan.stages - 1) {
      std::set<const c10::TensorImpl*> last;
      for (const auto& [name, t] : schedule::stage_parameters(*model_, plan, plan.stages - 1))
        last.insert(t.unsafeGetTensorImpl());
      for (const auto& [name, t] : schedule::stage_parameters(*model_, plan, 0)) {
        if (last.count(t.unsafeGetTensorImpl())) tied_.push_back(t);
      }
    }
    // Release what other stages own: this rank's memory is its stage's.
    torch::NoGradGuard no_grad;
    for (auto& p : model_->parameters()) {
      if (!mine.count(p.unsafeGetTensorImpl()) && p.numel() > 0) {
        p.set_(torch::empty({0}, p.options()));
        p.requires_grad_(false);
      }
    }
  }
  if (load_after) load_rank_weights(setup);
  for (const auto& [name, t] : params_) tensors_.push_back(t);
  SLAPO_CHECK(!config.fused_adamw || setup.optimizer == "adamw", ErrorCode::kInvalidArgument,
              "knob 'fused_adamw': the workload's optimizer is ", setup.optimizer, ", not adamw");
  if (setup.optimizer == "sgd") {
    optimizer_ = std::make_unique<torch::optim::SGD>(tensors_, torch::optim::SGDOptions(setup.lr));
  } else if (config.fused_adamw) {
    optimizer_ =
        std::make_unique<schedule::FusedAdamW>(tensors_, torch::optim::AdamWOptions(setup.lr));
  } else {
    optimizer_ =
        std::make_unique<torch::optim::AdamW>(tensors_, torch::optim::AdamWOptions(setup.lr));
  }
  model_->train();
}

ParallelTrainer::~ParallelTrainer() = default;

void ParallelTrainer::load_rank_weights(const TrainerSetup& setup) {
  const auto params = model_->named_parameters(/*recurse=*/true);
  models::LoadOptions options;
  options.rank_slice = [&](const std::string& name, const at::Tensor& full) -> at::Tensor {
    const at::Tensor* mine = params.find(name);
    // Released above: another pipeline stage's parameter.
    if (mine != nullptr && mine->numel() == 0 && full.numel() > 0) return at::Tensor();
    const schedule::ShardSpec* shard = shard_of(name);
    if (shard == nullptr) return full;
    const int64_t len = full.size(shard->axis) / shard->parts;
    return full.narrow(shard->axis, groups_.tp_rank() * len, len);
  };
  models::load_weights(*model_, setup.spec, setup.weights, options);
}

const schedule::ShardSpec* ParallelTrainer::shard_of(const std::string& name) const {
  for (const schedule::ShardSpec& s : built_.plan.shards) {
    const std::string full = s.path.empty() ? s.param : s.path + "." + s.param;
    if (full == name) return &s;
    for (const std::string& tied : s.tied) {
      if (tied == name) return &s;
    }
  }
  return nullptr;
}

double ParallelTrainer::step(const torch::Tensor& tokens, const torch::Tensor& targets,
                             uint64_t step_index, bool update) {
  optimizer_->zero_grad();
  const int64_t dp = groups_.layout.dp;
  const int64_t batch = tokens.size(0);
  const std::string uneven = models::batch_split_error(batch, dp, micro_batches_);
  SLAPO_CHECK(uneven.empty(), ErrorCode::kInvalidArgument, uneven);
  const int64_t per_rank = batch / dp;
  const int64_t first = groups_.dp_rank() * per_rank;
  const double loss = runner_->run(tokens.narrow(0, first, per_rank),
                                   targets.narrow(0, first, per_rank), loss_, step_index, first);
  if (!tied_.empty() && groups_.ends) schedule::sum_gradients(tied_, *groups_.ends);
  schedule::average_gradients(tensors_, *groups_.dp);
  if (update) {
    const auto start = std::chrono::steady_clock::now();
    optimizer_->step();
    optimizer_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  // The global mean: each data-parallel replica's last stage (tensor rank 0) contributes its share.
  const bool reports = runner_->last() && groups_.tp_rank() == 0;
  torch::Tensor total =
      torch::full({1}, reports ? loss / static_cast<double>(dp) : 0.0, torch::kDouble);
  groups_.world->all_reduce(total);
  return total.item<double>();
}

double ParallelTrainer::communication_seconds() const {
  double s = 0;
  for (const auto* g : {&groups_.tp, &groups_.dp, &groups_.pp, &groups_.ends}) {
    if (*g) s += (*g)->stats().seconds;
  }
  return s;
}

}  // namespace slapo::runners
