#include "tuner/noise.h"

#include <algorithm>
#include <map>

#include "core/stats.h"
#include "tuner/strategy.h"

namespace slapo::tuner {

std::optional<double> median_step_spread(const std::vector<db::TrialRecord>& trials) {
  std::vector<double> spreads;
  for (const db::TrialRecord& t : trials) {
    if (t.result.status != TrialStatus::kOk) continue;
    if (const auto spread = step_spread(t.result.metrics)) spreads.push_back(*spread);
  }
  if (spreads.empty()) return std::nullopt;
  return median(spreads);
}

std::optional<double> remeasured_spread(const std::vector<db::TrialRecord>& trials,
                                        const std::vector<db::Remeasurement>& remeasurements) {
  const auto usable = [](TrialStatus status, const std::optional<double>& objective) {
    return status == TrialStatus::kOk && objective && *objective > 0;
  };
  std::map<int64_t, std::vector<double>> measurements;  // by trial: its ok objectives
  for (const db::Remeasurement& r : remeasurements) {
    if (usable(r.result.status, r.objective)) measurements[r.trial_index].push_back(*r.objective);
  }
  for (const db::TrialRecord& t : trials) {
    const auto again = measurements.find(t.index);
    if (again != measurements.end() && usable(t.result.status, t.objective))
      again->second.push_back(*t.objective);
  }
  std::vector<double> spreads;
  for (const auto& [index, values] : measurements) {
    if (values.size() < 2) continue;
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    spreads.push_back((*hi - *lo) / median(values));
  }
  if (spreads.empty()) return std::nullopt;
  return median(spreads);
}

}  // namespace slapo::tuner
