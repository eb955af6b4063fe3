#include "tuner/memory_dominance.h"

namespace slapo::tuner {

MemoryDominance::MemoryDominance(const space::CompiledSpace& space) {
  for (const auto& knob : space.knobs()) {
    const bool numeric =
        knob.kind != space::KnobKind::kChoice && knob.kind != space::KnobKind::kCuts;
    if (knob.mem != space::MemTrend::kNone && numeric)
      trended_.emplace_back(knob.name, knob.mem == space::MemTrend::kUp);
    else
      others_.push_back(knob.name);
  }
}

bool MemoryDominance::at_least_as_hungry(const Config& hungry, const Config& lean) const {
  for (const std::string& name : others_) {
    const Value* a = hungry.find(name);
    const Value* b = lean.find(name);
    if (!a || !b ||
        !(*a == *b || (is_number(*a) && is_number(*b) && as_number(*a) == as_number(*b))))
      return false;
  }
  for (const auto& [name, up] : trended_) {
    const Value* a = hungry.find(name);
    const Value* b = lean.find(name);
    if (!a || !b) return false;
    const double x = as_number(*a), y = as_number(*b);
    if (up ? x < y : x > y) return false;
  }
  return true;
}

void MemoryDominance::add_oom(const Config& config, int64_t index) {
  ooms_.emplace_back(config, index);
}

std::optional<int64_t> MemoryDominance::proof_of_oom(const Config& config) const {
  if (!enabled()) return std::nullopt;
  for (const auto& [oom, index] : ooms_) {
    if (at_least_as_hungry(config, oom)) return index;
  }
  return std::nullopt;
}

}  // namespace slapo::tuner
