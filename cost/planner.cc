#include "cost/planner.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/metrics.h"

namespace slapo::cost {

double predicted_metric(const Prediction& p, const std::string& metric) {
  if (metric == metric::kSamplesPerS) return p.samples_per_s;
  if (metric == metric::kStepMsMedian || metric == "step_ms") return p.step_ms;
  if (metric == metric::kPeakBytes) return p.peak_bytes;
  SLAPO_FAIL(ErrorCode::kInvalidArgument,
             "the cost model predicts samples_per_s, step_ms_median and peak_bytes, not '", metric,
             "'");
}

Plan plan(const space::CompiledSpace& space, const ConfigPredictor& predictor,
          const PlanOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  predicted_metric(Prediction{}, options.objective.metric);  // an unknown objective fails first
  Plan result;
  std::vector<PlannedConfig> ranked;
  uint64_t index = 0;
  space.for_each([&](const space::PointView& point) {
    const uint64_t i = index++;
    const Config config = point.to_config();
    Predicted p = predictor(config);
    if (!p.prediction) {
      if (result.unpredictable++ == 0) result.unpredictable_reason = p.why_not;
      return true;
    }
    ++result.considered;
    if (options.memory_budget_bytes > 0 && p.prediction->peak_bytes > options.memory_budget_bytes) {
      ++result.predicted_oom;
      return true;
    }
    const double value = predicted_metric(*p.prediction, options.objective.metric);
    ranked.push_back({i, config, std::move(*p.prediction), value});
    // Keep the best `top` only: a partial sort whenever the list doubles.
    if (ranked.size() >= 2 * std::max<size_t>(options.top, 1)) {
      std::nth_element(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(options.top),
                       ranked.end(), [&](const PlannedConfig& a, const PlannedConfig& b) {
                         return options.objective.better(a.objective, b.objective);
                       });
      ranked.resize(options.top);
    }
    return true;
  });
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const PlannedConfig& a, const PlannedConfig& b) {
                     if (a.objective != b.objective)
                       return options.objective.better(a.objective, b.objective);
                     return a.index < b.index;
                   });
  if (ranked.size() > options.top) ranked.resize(options.top);
  result.top = std::move(ranked);
  result.method = "enumeration of all " + std::to_string(index) +
                  " configurations through the compiled space: the plan is the model's optimum "
                  "over the whole space";
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace slapo::cost
