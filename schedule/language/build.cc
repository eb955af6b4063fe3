#include "schedule/language/build.h"

#include <set>
#include <sstream>

namespace slapo::schedule {

BuildResult build(Schedule& schedule) {
  BuildResult result;
  result.module = schedule.model();
  result.plan = schedule.record();
  ParamGroup decay{"decay", {}, {}}, no_decay{"no_decay", {}, {}};
  std::set<const c10::TensorImpl*> seen;
  for (const auto& p : result.module->named_parameters()) {
    if (!seen.insert(p.value().unsafeGetTensorImpl()).second) continue;
    ParamGroup& group = p.value().dim() >= 2 ? decay : no_decay;
    group.names.push_back(p.key());
    group.params.push_back(p.value());
  }
  result.param_groups = {decay, no_decay};
  return result;
}

std::vector<torch::Tensor> unique_parameters(torch::nn::Module& module) {
  std::vector<torch::Tensor> out;
  std::set<const c10::TensorImpl*> seen;
  for (const auto& p : module.parameters()) {
    if (seen.insert(p.unsafeGetTensorImpl()).second) out.push_back(p);
  }
  return out;
}

std::string BuildResult::plan_text() const {
  std::ostringstream out;
  auto list = [&](const char* what, const std::vector<std::string>& items) {
    out << what << ":";
    if (items.empty()) out << " none";
    for (const auto& i : items) out << " " << i;
    out << "\n";
  };
  list("checkpointed", plan.checkpointed);
  list("forked rng", plan.forked);
  out << "replaced:";
  if (plan.replaced.empty()) out << " none";
  for (const auto& [path, type] : plan.replaced) out << " " << path << " (" << type << ")";
  out << "\nsharded:";
  if (plan.shards.empty()) out << " none";
  for (const auto& s : plan.shards)
    out << " " << s.path << "." << s.param << "@" << s.axis << "/" << s.parts;
  out << "\n";
  out << "synced:";
  if (plan.syncs.empty()) out << " none";
  for (const auto& s : plan.syncs) out << " " << s.path << " " << s.mode << " " << s.op;
  out << "\n";
  list("pipeline cuts after", plan.cuts);
  size_t params = 0;
  for (const auto& g : param_groups) {
    for (const auto& t : g.params) params += static_cast<size_t>(t.numel());
  }
  out << "parameters: " << params << "\n";
  return out.str();
}

}  // namespace slapo::schedule
