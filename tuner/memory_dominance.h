#pragma once
// OOM dominance: knobs declare how peak memory moves with them (mem = "up" | "down"). If c runs
// out of memory, every configuration that is at least as hungry in every trended knob (larger or
// equal where memory goes up, smaller or equal where it goes down) and equal in all the other
// knobs runs out of memory too: it is recorded as `pruned`, with the trial that proves it, and
// never run. (A success proves the reverse for the less hungry ones, which still need measuring.)

#include <cstdint>
#include <optional>
#include <vector>

#include "core/config.h"
#include "space/compiled_space.h"

namespace slapo::tuner {

class MemoryDominance {
 public:
  explicit MemoryDominance(const space::CompiledSpace& space);

  // Whether any knob has a memory trend (without one, nothing can be pruned).
  bool enabled() const { return !trended_.empty(); }
  // Records an out-of-memory trial (its index in the task).
  void add_oom(const Config& config, int64_t index);
  // The index of a recorded OOM trial that proves `config` runs out of memory too.
  std::optional<int64_t> proof_of_oom(const Config& config) const;
  // Whether `hungry` needs at least as much memory as `lean` (same untrended knobs).
  bool at_least_as_hungry(const Config& hungry, const Config& lean) const;

 private:
  std::vector<std::pair<std::string, bool>> trended_;  // knob, memory goes up with it
  std::vector<std::string> others_;
  std::vector<std::pair<Config, int64_t>> ooms_;
};

}  // namespace slapo::tuner
