#include "runners/machine_memory.h"

#include <algorithm>
#include <cstdio>

#include "core/text.h"
#include "runners/available_memory.h"

namespace slapo::runners {

double MachineMemory::tensor_budget() const {
  return std::max(1.0, (available / std::max(1, ranks) - kProcessBytes) / kResidentPerTensorByte);
}

double MachineMemory::tensor_ceiling() const {
  return kCeilingShare * available / std::max(1, ranks);
}

std::string MachineMemory::describe() const {
  return "this machine's memory (" + format_bytes(tensor_budget()) +
         " of tensors a rank: " + format_bytes(available) + " available, " + std::to_string(ranks) +
         (ranks == 1 ? " rank)" : " ranks)");
}

std::string MachineMemory::ceiling_reason() const {
  char share[16];
  std::snprintf(share, sizeof share, "%g", kCeilingShare);
  return "this machine's memory: past " + format_bytes(tensor_ceiling()) + " of tensors a rank (" +
         share + " of " + format_bytes(available) + " available, " + std::to_string(ranks) +
         (ranks == 1 ? " rank)" : " ranks)");
}

std::optional<MachineMemory> machine_memory(int ranks) {
  const std::optional<long long> available = available_memory_bytes();
  if (!available) return std::nullopt;
  return MachineMemory{static_cast<double>(*available), std::max(1, ranks)};
}

}  // namespace slapo::runners
