#include "tests/space/brute_force.h"

#include <functional>

namespace slapo::space::testing {

namespace {
// Ascending subsets of 1..max_layers-1 in lexicographic order of the sequences.
void subsets(int64_t next, int64_t limit, IntList* current, std::vector<IntList>* out) {
  out->push_back(*current);
  for (int64_t v = next; v < limit; ++v) {
    current->push_back(v);
    subsets(v + 1, limit, current, out);
    current->pop_back();
  }
}
}  // namespace

std::vector<Config> brute_force(const CompiledSpace& space, int max_layers) {
  const auto& knobs = space.knobs();
  std::vector<std::vector<Value>> domains;
  for (const KnobInfo& k : knobs) {
    if (k.kind == KnobKind::kCuts) {
      std::vector<IntList> all;
      IntList current;
      subsets(1, max_layers, &current, &all);
      std::vector<Value> values(all.begin(), all.end());
      domains.push_back(values);
    } else {
      domains.push_back(k.domain);
    }
  }
  std::vector<Config> out;
  Config config;
  std::function<void(size_t)> walk = [&](size_t level) {
    if (level == knobs.size()) {
      if (space.contains(config).ok) out.push_back(config);
      return;
    }
    for (const Value& v : domains[level]) {
      config.set(knobs[level].name, v);
      walk(level + 1);
    }
  };
  walk(0);
  return out;
}

}  // namespace slapo::space::testing
