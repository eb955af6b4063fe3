#include "cost/planner.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <unordered_map>

#include "core/error.h"
#include "core/metrics.h"
#include "cost/cut_search.h"

namespace slapo::cost {

double predicted_metric(const Prediction& p, const std::string& metric) {
  // Called for every configuration a plan ranks: one comparison chain, the default first.
  if (metric == metric::kSamplesPerS) return p.samples_per_s;
  if (metric == metric::kStepMsMedian || metric == "step_ms") return p.step_ms;
  if (metric == metric::kPeakBytes) return p.peak_bytes;
  if (metric == metric::kTokensPerS) return p.tokens_per_s;
  if (metric == metric::kTflops) return p.tflops;
  check_predicted_metric(metric);  // throws: not predicted
  return 0;
}

bool predicts_metric(const std::string& metric) {
  return metric == metric::kSamplesPerS || metric == metric::kTokensPerS ||
         metric == metric::kTflops || metric == metric::kStepMsMedian || metric == "step_ms" ||
         metric == metric::kPeakBytes;
}

void check_predicted_metric(const std::string& metric) {
  SLAPO_CHECK(predicts_metric(metric), ErrorCode::kInvalidArgument,
              "the cost model predicts samples_per_s, tokens_per_s, tflops, step_ms_median and "
              "peak_bytes, not '",
              metric, "'");
}

namespace {

// The metrics that follow the step time alone at fixed other knobs: what the cut search minimizes.
bool is_time(const std::string& metric) {
  return predicts_metric(metric) && metric != metric::kPeakBytes;
}

bool predicted_alike(const Prediction& a, const Prediction& b) {
  return a.step_ms == b.step_ms && a.peak_bytes == b.peak_bytes && a.time_ms == b.time_ms &&
         a.memory_bytes == b.memory_bytes;
}

// The names of the knobs whose values differ between `a` and `b` (a knob one of them lacks too).
std::set<std::string> differing_knobs(const Config& a, const Config& b) {
  std::set<std::string> out;
  for (const auto& [name, value] : a.entries()) {
    const Value* other = b.find(name);
    if (other == nullptr || !(*other == value)) out.insert(name);
  }
  for (const auto& [name, value] : b.entries()) {
    if (a.find(name) == nullptr) out.insert(name);
  }
  return out;
}

// The best `top` plans of what is offered, kept as it comes; a configuration predicted alike with
// one kept joins it. Ranked by the objective, then by the first index: a plan evicted from the
// best never comes back (what it would come back with is as good and later), so the alike
// configurations of the plans kept are all counted when they are offered in the space's order.
class TopK {
 public:
  TopK(const PlanOptions& options) : options_(options) {}
  void offer(PlannedConfig c) {
    if (options_.group_alike && join_alike(c)) return;
    by_objective_.emplace(c.objective, ranked_.size());
    ranked_.push_back({std::move(c), {}});
    // A partial sort whenever the list doubles.
    if (ranked_.size() >= 2 * std::max<size_t>(options_.top, 1)) {
      std::nth_element(ranked_.begin(), ranked_.begin() + static_cast<std::ptrdiff_t>(options_.top),
                       ranked_.end(), [&](const Kept& a, const Kept& b) { return before(a, b); });
      ranked_.resize(options_.top);
      by_objective_.clear();
      for (size_t i = 0; i < ranked_.size(); ++i)
        by_objective_.emplace(ranked_[i].plan.objective, i);
    }
  }
  std::vector<PlannedConfig> take() {
    std::sort(ranked_.begin(), ranked_.end(),
              [&](const Kept& a, const Kept& b) { return before(a, b); });
    if (ranked_.size() > options_.top) ranked_.resize(options_.top);
    std::vector<PlannedConfig> out;
    for (Kept& k : ranked_) {
      k.plan.alike_knobs.assign(k.knobs.begin(), k.knobs.end());
      out.push_back(std::move(k.plan));
    }
    ranked_.clear();
    by_objective_.clear();
    return out;
  }

 private:
  struct Kept {
    PlannedConfig plan;
    std::set<std::string> knobs;  // that differ among its alike configurations
  };
  // Joins `c` to a kept plan predicted alike, if one is.
  bool join_alike(PlannedConfig& c) {
    auto same = by_objective_.equal_range(c.objective);
    for (auto it = same.first; it != same.second; ++it) {
      Kept& kept = ranked_[it->second];
      if (!predicted_alike(kept.plan.prediction, c.prediction)) continue;
      ++kept.plan.alike;
      for (const std::string& knob : differing_knobs(kept.plan.config, c.config))
        kept.knobs.insert(knob);
      if (c.index < kept.plan.index) {
        kept.plan.index = c.index;
        kept.plan.config = std::move(c.config);
      }
      return true;
    }
    return false;
  }
  bool before(const Kept& a, const Kept& b) const {
    if (a.plan.objective != b.plan.objective)
      return options_.objective.better(a.plan.objective, b.plan.objective);
    return a.plan.index < b.plan.index;
  }

  const PlanOptions& options_;
  std::vector<Kept> ranked_;
  std::unordered_multimap<double, size_t> by_objective_;  // positions in ranked_
};

// Counts `count` configurations without a prediction: invalid ones (no trial could run them) apart
// from those the model cannot predict, each kind with its first reason.
void left_out(bool invalid, const std::string& why, uint64_t count, Plan* result) {
  uint64_t& counted = invalid ? result->invalid : result->unpredictable;
  std::string& reason = invalid ? result->invalid_reason : result->unpredictable_reason;
  if (counted == 0) reason = why;
  counted += count;
}

void search_cuts(const space::CompiledSpace& space, const ConfigComposer& composer,
                 const PlanOptions& options, Plan* result, TopK* top) {
  const std::string knob = space.cut_knob();
  uint64_t families = 0;
  space.for_each_cut_family([&](const Config& config, const space::StageSplits& splits) {
    const uint64_t count = splits.count();
    if (count == 0) return true;
    ++families;
    const Composable c = composer(config);
    if (!c.predictor) {
      left_out(c.invalid, c.why_not, count, result);
      return true;
    }
    std::optional<CutSearch> found;
    try {
      found = best_cuts(*c.predictor, c.input, splits, options.memory_budget_bytes);
    } catch (const Error& e) {
      if (result->unpredictable == 0) result->unpredictable_reason = e.what();
      result->unpredictable += count;
      return true;
    }
    result->considered += count;
    if (!found) {
      result->predicted_oom += count;  // no split of this family fits
      return true;
    }
    Config chosen = config;
    chosen.set(knob, Value(found->cuts));
    const double value = predicted_metric(found->prediction, options.objective.metric);
    top->offer({space.index_of(chosen), chosen, std::move(found->prediction), value, 0, {}});
    return true;
  });
  result->method = "the cut points of '" + knob + "' by dynamic programming for each of the " +
                   std::to_string(families) +
                   " configurations of the other knobs (enumerated): each plan's cuts are the "
                   "model's optimum (the slowest stage and the slowest tail bounded in turn, the "
                   "sum of the stages minimised under them; where there are fewer splits than "
                   "bounds, each split's stages summed); predicted_oom counts only the "
                   "configurations of other knobs that no split fits";
}

}  // namespace

bool searches_cuts(const space::CompiledSpace& space, const PlanOptions& options,
                   bool can_compose) {
  return can_compose && !space.cut_knob().empty() && is_time(options.objective.metric);
}

void check_plannable(const space::CompiledSpace& space, const PlanOptions& options,
                     bool can_compose) {
  check_predicted_metric(options.objective.metric);  // an unknown objective fails first
  if (searches_cuts(space, options, can_compose)) return;
  uint64_t size = 0;
  try {
    size = space.size();
  } catch (const Error&) {
    size = UINT64_MAX;
  }
  SLAPO_CHECK(size <= kMaxEnumerated, ErrorCode::kInvalidArgument, "the space has ",
              size == UINT64_MAX ? std::string("over 2^64") : std::to_string(size),
              " configurations, too many to enumerate (at most ", kMaxEnumerated,
              "); the cut-point search applies to spaces with a cut knob and a time objective");
}

Plan plan(const space::CompiledSpace& space, const ConfigPredictor& predictor,
          const PlanOptions& options, const ConfigComposer& composer) {
  const auto start = std::chrono::steady_clock::now();
  check_plannable(space, options, static_cast<bool>(composer));
  Plan result;
  TopK top(options);
  if (searches_cuts(space, options, static_cast<bool>(composer))) {
    search_cuts(space, composer, options, &result, &top);
    result.top = top.take();
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }
  uint64_t index = 0;
  space.for_each([&](const space::PointView& point) {
    const uint64_t i = index++;
    const Config config = point.to_config();
    Predicted p = predictor(config);
    if (!p.prediction) {
      left_out(p.invalid, p.why_not, 1, &result);
      return true;
    }
    ++result.considered;
    if (options.memory_budget_bytes > 0 && p.prediction->peak_bytes > options.memory_budget_bytes) {
      ++result.predicted_oom;
      return true;
    }
    const double value = predicted_metric(*p.prediction, options.objective.metric);
    top.offer({i, config, std::move(*p.prediction), value, 0, {}});
    return true;
  });
  result.top = top.take();
  result.method = "enumeration of all " + std::to_string(index) +
                  " configurations through the compiled space: the plan is the model's optimum "
                  "over the whole space";
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace slapo::cost
