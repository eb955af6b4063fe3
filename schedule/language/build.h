#pragma once
// build(): what this rank runs after a schedule — the module, its parameter groups for the
// optimizer, and the plan (what was checkpointed, replaced, sharded, cut).

#include <memory>
#include <string>
#include <vector>

#include "schedule/language/schedule.h"

namespace slapo::schedule {

struct ParamGroup {
  std::string name;  // "decay" (matrices) or "no_decay" (biases, norms, embeddings' positions...)
  std::vector<std::string> names;
  std::vector<torch::Tensor> params;  // each tensor once, even when tied
};

struct BuildResult {
  std::shared_ptr<SlotModule> module;
  std::vector<ParamGroup> param_groups;
  ScheduleRecord plan;
  // A readable summary of the plan.
  std::string plan_text() const;
};

BuildResult build(Schedule& schedule);

// The module's parameters, each tensor once (tied parameters appear under several names, and an
// optimizer given both would update the tensor twice per step).
std::vector<torch::Tensor> unique_parameters(torch::nn::Module& module);

}  // namespace slapo::schedule
