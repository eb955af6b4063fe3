#pragma once
// ParallelTrainer: one rank's part of training a zoo model under a schedule template — the same
// code for one process and for tp × pp × dp ranks.
//
//   build the model (same seed on every rank) → schedule it with this rank's tensor-parallel group
//   → apply the template (shards, syncs, checkpoints, cuts) → build → this rank's pipeline stage
//   → per step: this data-parallel rank's slice of the global batch, micro-batches through the
//     pipeline, gradients of the tied embedding summed between the first and the last stage,
//     gradients averaged over the data-parallel group, the optimizer on this stage's parameters.
//
// Parameters that belong to other stages are released (set to empty), so a rank's memory is its
// stage's. The loss returned by step() is the global batch's mean on every rank (one all-reduce
// over the world, which also lines the ranks up for timing).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "dist/world.h"
#include "models/model_spec.h"
#include "models/training_batch.h"
#include "schedule/language/build.h"
#include "schedule/runtime/pipeline.h"

namespace torch::optim {
class Optimizer;
}

namespace slapo::runners {

struct TrainerSetup {
  models::ModelSpec spec;
  std::string template_name;
  Config config;
  uint64_t seed = 0;
  std::string optimizer = "adamw";  // | "sgd"
  double lr = 1e-4;
  std::string weights;  // a checkpoint loaded before the schedule (models/weights/weights_file.h)
};

class ParallelTrainer {
 public:
  // Throws Error(kInvalidArgument) when the configuration's tp/pp/dp do not match `groups` (a
  // configuration without dp fills the ranks tp and pp leave), and whatever the schedule throws
  // when it cannot be applied.
  ParallelTrainer(const TrainerSetup& setup, dist::ParallelGroups groups);
  ~ParallelTrainer();

  // One step on the global batch [batch, seq] (the same tensors on every rank). With update false,
  // the gradients are left in place and the optimizer does not step (for verification).
  double step(const torch::Tensor& tokens, const torch::Tensor& targets, uint64_t step_index,
              bool update = true);

  schedule::SlotModule& model() { return *model_; }
  const schedule::BuildResult& built() const { return built_; }
  const std::string& schedule_text() const { return schedule_text_; }
  // This rank's parameters (its stage, its shards), each tensor once, by name.
  const std::vector<std::pair<std::string, torch::Tensor>>& parameters() const { return params_; }
  // The shard of a parameter name, if the schedule sharded it (axis, parts), for comparisons.
  const schedule::ShardSpec* shard_of(const std::string& name) const;
  const dist::ParallelGroups& groups() const { return groups_; }
  const schedule::PipelineTiming& pipeline_timing() const { return runner_->timing(); }
  // Seconds spent in collectives and point-to-point messages since construction, over all groups.
  double communication_seconds() const;
  // Seconds the optimizer's steps took since construction: the profile times the optimizer on the
  // model's own parameters, in the step (runners/profiler.h).
  double optimizer_seconds() const { return optimizer_seconds_; }

 private:
  // Reads the workload's checkpoint into the scheduled model: of each parameter this rank holds
  // its shard, nothing of the other stages'.
  void load_rank_weights(const TrainerSetup& setup);

  dist::ParallelGroups groups_;
  std::shared_ptr<schedule::SlotModule> model_;
  schedule::BuildResult built_;
  std::string schedule_text_;
  std::unique_ptr<schedule::PipelineRunner> runner_;
  int64_t micro_batches_ = 1;  // a data-parallel rank's, each step
  std::vector<std::pair<std::string, torch::Tensor>> params_;
  std::vector<torch::Tensor> tensors_;  // params_' tensors, in the same order
  std::vector<torch::Tensor> tied_;     // held by the first and the last stage: gradients summed
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  double optimizer_seconds_ = 0;
  models::LossFn loss_;  // the family's (models/training_batch.h)
};

}  // namespace slapo::runners
