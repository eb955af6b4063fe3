#include "core/trial.h"

namespace slapo {

namespace {
constexpr struct {
  TrialStatus status;
  const char* name;
} kStatusNames[] = {
    {TrialStatus::kOk, "ok"},
    {TrialStatus::kOom, "oom"},
    {TrialStatus::kInvalid, "invalid"},
    {TrialStatus::kScheduleError, "schedule_error"},
    {TrialStatus::kRuntimeError, "runtime_error"},
    {TrialStatus::kTimeout, "timeout"},
    {TrialStatus::kCrashed, "crashed"},
    {TrialStatus::kPruned, "pruned"},
};
}  // namespace

const char* to_string(TrialStatus status) {
  for (const auto& entry : kStatusNames) {
    if (entry.status == status) return entry.name;
  }
  return "unknown";
}

std::optional<TrialStatus> trial_status_from_string(const std::string& name) {
  for (const auto& entry : kStatusNames) {
    if (name == entry.name) return entry.status;
  }
  return std::nullopt;
}

}  // namespace slapo
