#include "tuner/measure.h"

#include <chrono>

namespace slapo::tuner {

Measurement measure(runners::Runner& runner, const Config& config, const Objective& objective) {
  const auto start = std::chrono::steady_clock::now();
  Measurement m;
  m.result = runner.run({config})[0];
  m.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto it = m.result.metrics.find(objective.metric);
  if (m.result.status == TrialStatus::kOk && it != m.result.metrics.end()) {
    m.objective = it->second;
  } else if (m.result.status == TrialStatus::kOk) {
    std::string reported;
    for (const auto& [name, value] : m.result.metrics)
      reported += (reported.empty() ? "" : ", ") + name;
    m.result = failed_trial(TrialStatus::kRuntimeError,
                            "the trial reported no '" + objective.metric + "' (it reported: " +
                                (reported.empty() ? "nothing" : reported) + ")");
  }
  return m;
}

}  // namespace slapo::tuner
