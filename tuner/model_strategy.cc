#include "tuner/model_strategy.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <unordered_map>

#include "core/error.h"
#include "core/stats.h"

namespace slapo::tuner {

namespace {

class ModelStrategy : public Strategy {
 public:
  ModelStrategy(CostModel* model, ModelStrategyOptions options) : model_(model), options_(options) {
    SLAPO_CHECK(model_ != nullptr, ErrorCode::kInvalidArgument,
                "the model strategy needs a cost model");
  }
  std::string name() const override { return "model"; }

  void begin(const space::CompiledSpace& space, uint64_t, const Objective& objective) override {
    space_ = &space;
    objective_ = objective;
    best_.reset();
  }

  std::vector<Config> propose(size_t n, const KnownFn& known) override {
    // Ranked afresh each time: every measurement recalibrates the model.
    std::vector<std::pair<double, Config>> ranked;
    const double budget = model_->memory_budget_bytes();
    space_->for_each([&](const space::PointView& point) {
      Config config = point.to_config();
      if (known(config)) return true;
      const cost::Predicted p = model_->predict(config);
      if (!p.prediction) return true;
      if (budget > 0 && p.prediction->peak_bytes > budget) return true;
      ranked.emplace_back(cost::predicted_metric(*p.prediction, objective_.metric),
                          std::move(config));
      return true;
    });
    std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
      return objective_.better(a.first, b.first);
    });
    std::vector<Config> out;
    converged_ = false;
    const double error = this->error();
    for (auto& [value, config] : ranked) {
      if (out.size() == n) break;
      // Nothing left that could beat the best measured by more than the noise, were its prediction
      // off by the model's error so far.
      const double optimistic = objective_.minimize ? value * (1 - error) : value * (1 + error);
      const double noise = this->noise();
      if (best_ &&
          !objective_.better(optimistic, *best_ * (objective_.minimize ? 1 - noise : 1 + noise))) {
        converged_ = true;
        break;
      }
      predicted_[config.canonical_json()] = value;
      out.push_back(std::move(config));
    }
    return out;
  }

  std::string why_done() const override {
    return converged_
               ? "no configuration left could beat the best measured by more than the noise (" +
                     percent(noise()) + ") were its prediction off by the model's error so far (" +
                     percent(error()) + ")"
               : "every configuration that is predicted to fit was measured";
  }

  void observe(const std::vector<Observation>& observations) override {
    for (const Observation& o : observations) {
      if (o.status != TrialStatus::kOk || !o.objective) continue;
      if (o.step_spread) spreads_.push_back(*o.step_spread);
      if (objective_.better(o.objective, best_)) best_ = o.objective;
      auto it = predicted_.find(o.config.canonical_json());
      if (it != predicted_.end() && it->second > 0 && *o.objective > 0)
        errors_.push_back(std::abs(std::log(*o.objective / it->second)));
    }
  }

 private:
  CostModel* model_;
  ModelStrategyOptions options_;
  const space::CompiledSpace* space_ = nullptr;
  Objective objective_;
  // The model's error so far: the median of its errors of measured trials, the prior counted as
  // two of them (one lucky prediction does not end the search).
  double error() const {
    std::vector<double> errors = errors_;
    errors.insert(errors.end(), 2, options_.prior_error);
    return median(errors);
  }

  // The noise of a measurement: the median step spread of the trials measured so far — how far
  // apart each one's own timed steps lay — the constant until one reports it.
  double noise() const { return spreads_.empty() ? options_.noise : median(spreads_); }
  static std::string percent(double share) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f%%", 100 * share);
    return text;
  }

  std::optional<double> best_;
  bool converged_ = false;  // propose() stopped at the noise rule
  // What the model predicted of each configuration it proposed, when it proposed it; the errors of
  // those predictions once measured (|log(measured / predicted)|).
  std::unordered_map<std::string, double> predicted_;
  std::vector<double> errors_;
  std::vector<double> spreads_;  // the measured trials' step spreads
};

}  // namespace

std::unique_ptr<Strategy> make_model_strategy(CostModel* model, ModelStrategyOptions options) {
  return std::make_unique<ModelStrategy>(model, options);
}

}  // namespace slapo::tuner
