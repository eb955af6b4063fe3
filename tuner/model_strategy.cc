#include "tuner/model_strategy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "core/error.h"
#include "core/stats.h"
#include "cost/planner.h"
#include "space/compiled_space.h"

namespace slapo::tuner {

namespace {

// Whether `space` has at most `most` configurations (a count over 2^64 has not).
bool within(const space::CompiledSpace& space, uint64_t most) {
  try {
    return space.size() <= most;
  } catch (const Error&) {
    return false;
  }
}

// Whether the planner's cut search ranks `space` (more than kMaxModelRanked configurations):
// it has a cut knob, the objective is a time, the model composes a configuration's cuts, and the
// other knobs take at most kMaxModelRanked configurations — each planned after every trial.
bool cut_search_applies(const space::CompiledSpace& space, const Objective& objective,
                        bool can_compose) {
  cost::PlanOptions options;
  options.objective = objective;
  if (!cost::searches_cuts(space, options, can_compose)) return false;
  uint64_t others = 0;
  space.for_each_cut_family(
      [&](const Config&, const space::StageSplits&) { return ++others <= kMaxModelRanked; });
  return others <= kMaxModelRanked;
}

// How the model strategy ranks a space after every measurement: whole (up to kMaxModelRanked
// configurations); by the planner's cut search (rank_planned); or, up to cost::kMaxEnumerated,
// within the pool of the kMaxModelRanked configurations predicted best before the first trial
// (best_predicted). None: it cannot (why_model_cannot_search says why).
enum class Ranking { kWhole, kPlanned, kPooled };
std::optional<Ranking> ranking_of(const space::CompiledSpace& space, const Objective& objective,
                                  bool can_compose) {
  if (within(space, kMaxModelRanked)) return Ranking::kWhole;
  if (cut_search_applies(space, objective, can_compose)) return Ranking::kPlanned;
  if (within(space, cost::kMaxEnumerated)) return Ranking::kPooled;
  return std::nullopt;
}

class ModelStrategy : public Strategy {
 public:
  ModelStrategy(CostModel* model, ModelStrategyOptions options) : model_(model), options_(options) {
    SLAPO_CHECK(model_ != nullptr, ErrorCode::kInvalidArgument,
                "the model strategy needs a cost model");
  }
  std::string name() const override { return "model"; }

  void begin(const space::CompiledSpace& space, uint64_t, const Objective& objective) override {
    const bool can_compose = static_cast<bool>(model_->composer());
    const std::optional<Ranking> ranking = ranking_of(space, objective, can_compose);
    if (!ranking)
      SLAPO_FAIL(ErrorCode::kInvalidArgument,
                 "the model strategy: ", why_model_cannot_search(space, objective, can_compose));
    ranking_ = *ranking;
    space_ = &space;
    objective_ = objective;
    best_.reset();
    pool_.clear();
  }

  std::vector<Config> propose(size_t n, const KnownFn& known) override {
    // Ranked afresh each time: every measurement recalibrates the model.
    alike_skipped_ = 0;
    std::vector<Ranked> ranked =
        ranking_ == Ranking::kPlanned ? rank_planned(known) : rank_whole(known);
    std::vector<Config> out;
    const double noise = this->noise();
    size_t left = 0;  // configurations that could still beat the best
    for (Ranked& r : ranked) {
      // Could it beat the best measured by more than the noise, were its prediction off by the
      // model's error so far — a calibrated key's, or an uncalibrated one's?
      const double error = this->error(r.time_calibrated);
      const double optimistic = objective_.minimize ? r.value * (1 - error) : r.value * (1 + error);
      if (best_ &&
          !objective_.better(optimistic, *best_ * (objective_.minimize ? 1 - noise : 1 + noise)))
        continue;
      ++left;
      if (out.size() == n) break;
      predicted_[r.config.canonical_json()] = {r.value, r.time_calibrated};
      out.push_back(std::move(r.config));
    }
    // Before the rule stops: a value of an unordered knob no trial has had. The model's error
    // so far says nothing of it — an attention variant's or a fusion's step is its own block
    // probe's difference from the base, and the trials of the others do not check it (table 4 of
    // docs/benchmarks.md: the fused bias-GELU predicted 2.5–4% slower against the unfused than it
    // runs, and the rule stopped after three unfused trials) — so its predicted best is measured
    // once.
    if (left == 0 && best_) {
      for (Ranked& r : ranked) {
        if (!has_an_unmeasured_value(r.config)) continue;
        predicted_[r.config.canonical_json()] = {r.value, r.time_calibrated};
        out.push_back(std::move(r.config));
        return out;
      }
    }
    // Stopped by the rule, not because everything predicted to fit was measured.
    converged_ = left == 0 && !ranked.empty() && best_.has_value();
    return out;
  }

  std::string why_done() const override {
    return converged_
               ? "no configuration left could beat the best measured by more than the noise (" +
                     percent(noise()) + ") were its prediction off by the model's error so far (" +
                     percent(error(true)) + "; " + percent(error(false)) +
                     " for a key no trial has calibrated)"
               : "every configuration that is predicted to fit was measured" +
                     (alike_skipped_ > 0 ? " (or one that computes what it does: " +
                                               std::to_string(alike_skipped_) + " not measured)"
                                         : std::string());
  }

  void observe(const std::vector<Observation>& observations) override {
    for (const Observation& o : observations) {
      if (o.ran) {
        for (auto& [knob, value] : unordered_values(o.config)) {
          std::vector<Value>& measured = measured_values_[knob];
          if (std::find(measured.begin(), measured.end(), value) == measured.end())
            measured.push_back(std::move(value));
        }
        // Run to its end, ok or out of memory: what any configuration that computes the same
        // would show (another failure may be the machine's, not the configuration's).
        if (o.status == TrialStatus::kOk || o.status == TrialStatus::kOom) {
          if (std::string c = model_->computation(o.config); !c.empty())
            measured_computations_.insert(std::move(c));
        }
      }
      if (o.status != TrialStatus::kOk || !o.objective) continue;
      if (o.step_spread) spreads_.push_back(*o.step_spread);
      if (objective_.better(o.objective, best_)) best_ = o.objective;
      auto it = predicted_.find(o.config.canonical_json());
      if (it != predicted_.end() && it->second.value > 0 && *o.objective > 0) {
        const double e = std::abs(std::log(*o.objective / it->second.value));
        (it->second.time_calibrated ? errors_ : uncalibrated_errors_).push_back(e);
      }
    }
  }

 private:
  struct Ranked {
    double value;  // predicted
    bool time_calibrated;
    Config config;
  };
  // What a measured configuration computes is known: its alike ones (knobs that change nothing
  // there) would measure it again.
  bool alike_a_measured(const Config& config) {
    if (measured_computations_.empty() ||
        measured_computations_.count(model_->computation(config)) == 0)
      return false;
    ++alike_skipped_;
    return true;
  }
  // Every configuration not yet known that is predicted to fit — of the space, or of the pool —
  // best first.
  std::vector<Ranked> rank_whole(const KnownFn& known) {
    std::vector<Ranked> ranked;
    const double budget = model_->memory_budget_bytes();
    const auto offer = [&](Config config) {
      if (known(config) || alike_a_measured(config)) return;
      const cost::Predicted p = model_->predict(config);
      if (!p.prediction) return;
      if (budget > 0 && p.prediction->peak_bytes > budget) return;
      ranked.push_back({cost::predicted_metric(*p.prediction, objective_.metric), p.time_calibrated,
                        std::move(config)});
    };
    if (ranking_ == Ranking::kPooled) {
      if (pool_.empty()) pool_ = best_predicted(kMaxModelRanked);
      for (const Config& config : pool_) offer(config);
    } else {
      space_->for_each([&](const space::PointView& point) {
        offer(point.to_config());
        return true;
      });
    }
    std::stable_sort(ranked.begin(), ranked.end(), [&](const Ranked& a, const Ranked& b) {
      return objective_.better(a.value, b.value);
    });
    return ranked;
  }
  // A space too large to rank whole: for each configuration of the other knobs, the cuts the
  // model predicts best (the planner's dynamic programming, with the model as calibrated so far),
  // best first. Once measured, a configuration's other cuts are not candidates unless calibration
  // moves its optimum to them.
  std::vector<Ranked> rank_planned(const KnownFn& known) {
    cost::PlanOptions options;
    options.top = kMaxModelRanked;  // every configuration of the other knobs (one plan each)
    options.objective = objective_;
    options.memory_budget_bytes = model_->memory_budget_bytes();
    options.group_alike = false;
    cost::Plan plan = cost::plan(
        *space_, [&](const Config& c) { return model_->predict(c); }, options, model_->composer());
    std::vector<Ranked> ranked;
    for (cost::PlannedConfig& p : plan.top) {
      if (known(p.config) || alike_a_measured(p.config)) continue;
      ranked.push_back(
          {p.objective, model_->predict(p.config).time_calibrated, std::move(p.config)});
    }
    return ranked;
  }

  // The `count` configurations predicted best that fit, in one pass over the space — the pool a
  // space too large to rank after every trial is ranked within. Outside it, a configuration would
  // need calibration to lift it above `count` others to matter.
  std::vector<Config> best_predicted(size_t count) {
    struct Kept {
      double value;
      uint64_t order;  // ties: the earlier in the space first
      Config config;
    };
    const auto before = [&](const Kept& a, const Kept& b) {
      if (a.value != b.value) return objective_.better(a.value, b.value);
      return a.order < b.order;
    };
    std::vector<Kept> heap;  // the worst kept on top
    const double budget = model_->memory_budget_bytes();
    uint64_t order = 0;
    space_->for_each([&](const space::PointView& point) {
      Config config = point.to_config();
      const cost::Predicted p = model_->predict(config);
      const uint64_t at = order++;
      if (!p.prediction || (budget > 0 && p.prediction->peak_bytes > budget)) return true;
      Kept k{cost::predicted_metric(*p.prediction, objective_.metric), at, std::move(config)};
      if (heap.size() == count) {
        if (!before(k, heap.front())) return true;
        std::pop_heap(heap.begin(), heap.end(), before);
        heap.back() = std::move(k);
      } else {
        heap.push_back(std::move(k));
      }
      std::push_heap(heap.begin(), heap.end(), before);
      return true;
    });
    std::sort_heap(heap.begin(), heap.end(), before);
    std::vector<Config> out;
    out.reserve(heap.size());
    for (Kept& k : heap) out.push_back(std::move(k.config));
    return out;
  }

  CostModel* model_;
  ModelStrategyOptions options_;
  const space::CompiledSpace* space_ = nullptr;
  Objective objective_;
  // The model's error so far: the median of its errors of measured trials, the prior counted as
  // two of them (one lucky prediction does not end the search). A configuration of a key no trial
  // has calibrated yet is predicted as the first trials of every key were: from the errors of the
  // trials predicted uncalibrated alone (the machine's level and the profile's noise, which a
  // calibration takes away); a calibrated one from all of them.
  double error(bool time_calibrated) const {
    std::vector<double> errors = uncalibrated_errors_;
    if (time_calibrated) errors.insert(errors.end(), errors_.begin(), errors_.end());
    errors.insert(errors.end(), 2, options_.prior_error);
    return median(errors);
  }

  // The values of `config`'s unordered knobs (a choice, a bool), with their knobs' names.
  std::vector<std::pair<std::string, Value>> unordered_values(const Config& config) const {
    std::vector<std::pair<std::string, Value>> out;
    for (const space::KnobInfo& k : space_->knobs()) {
      if (k.kind != space::KnobKind::kChoice && k.kind != space::KnobKind::kBool) continue;
      if (const Value* v = config.find(k.name)) out.emplace_back(k.name, *v);
    }
    return out;
  }
  // Whether `config` has a value of an unordered knob no trial has had — and that changes what it
  // computes: a value alike a measured one there (how tp = 1 would split the model) is not news.
  bool has_an_unmeasured_value(const Config& config) {
    for (const auto& [knob, value] : unordered_values(config)) {
      const std::vector<Value>& measured = measured_values_[knob];
      if (std::find(measured.begin(), measured.end(), value) != measured.end()) continue;
      const std::string computes = model_->computation(config);
      const bool alike_a_measured =
          !computes.empty() && std::any_of(measured.begin(), measured.end(), [&](const Value& had) {
            Config with_it = config;
            with_it.set(knob, had);
            return model_->computation(with_it) == computes;
          });
      if (!alike_a_measured) return true;
    }
    return false;
  }

  // The noise of a measurement: the median step spread of the trials measured so far — how far
  // apart each one's own timed steps lay — the constant until one reports it.
  double noise() const { return spreads_.empty() ? options_.noise : median(spreads_); }
  static std::string percent(double share) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f%%", 100 * share);
    return text;
  }

  Ranking ranking_ = Ranking::kWhole;
  std::vector<Config> pool_;  // Ranking::kPooled: filled by the first propose()
  std::optional<double> best_;
  bool converged_ = false;  // propose() stopped at the noise rule
  // What the model predicted of each configuration it proposed, when it proposed it, and whether
  // its key was calibrated then; the errors of those predictions once measured
  // (|log(measured / predicted)|), of calibrated keys and of uncalibrated ones.
  struct Proposed {
    double value;
    bool time_calibrated;
  };
  std::unordered_map<std::string, Proposed> predicted_;
  std::vector<double> errors_, uncalibrated_errors_;
  std::vector<double> spreads_;  // the measured trials' step spreads
  // By knob: the values of the unordered knobs of every trial run, whatever its end.
  std::map<std::string, std::vector<Value>> measured_values_;
  std::set<std::string> measured_computations_;  // CostModel::computation of the trials run
  size_t alike_skipped_ = 0;                     // by the last propose()
};

}  // namespace

std::string why_model_cannot_search(const space::CompiledSpace& space, const Objective& objective,
                                    bool can_compose) {
  if (ranking_of(space, objective, can_compose)) return "";
  std::string size = "over 2^64";
  try {
    size = std::to_string(space.size());
  } catch (const Error&) {
  }
  return size + " configurations are too many to predict each (at most " +
         std::to_string(cost::kMaxEnumerated) +
         "), and the planner's cut-point search, which searches larger spaces, needs a cut knob, "
         "a time objective, a built-in workload and at most " +
         std::to_string(kMaxModelRanked) + " configurations of the other knobs";
}

std::unique_ptr<Strategy> make_model_strategy(CostModel* model, ModelStrategyOptions options) {
  return std::make_unique<ModelStrategy>(model, options);
}

}  // namespace slapo::tuner
