// The built-in strategies.
//
//   exhaustive  every configuration in index order
//   random      uniform samples without repetition
//   coordinate  coordinate descent: from a random start, measure the neighbours (one knob one
//               step), move to the best improving one; at a local optimum restart at random
//   slapo       Slapo's own heuristic (batch size, then checkpoint ratio by binary search)
//   bayes       model-based: Gaussian processes for the objective and for feasibility, expected
//               improvement (tuner/model_based.h)
//   auto        bayes; exhaustive for spaces of at most 4 configurations (nothing to model)

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "core/named.h"
#include "core/rng.h"
#include "tuner/cost_model.h"
#include "tuner/model_based.h"
#include "tuner/model_strategy.h"
#include "tuner/strategy.h"

namespace slapo::tuner {

namespace {

class Exhaustive : public Strategy {
 public:
  std::string name() const override { return "exhaustive"; }
  void begin(const space::CompiledSpace& space, uint64_t, const Objective&) override {
    space_ = &space;
    next_ = 0;
  }
  std::vector<Config> propose(size_t n, const KnownFn& known) override {
    std::vector<Config> out;
    const uint64_t size = space_->size();
    while (out.size() < n && next_ < size) {
      Config c = space_->at(next_++);
      if (!known(c)) out.push_back(std::move(c));
    }
    return out;
  }
  void observe(const std::vector<Observation>&) override {}

 private:
  const space::CompiledSpace* space_ = nullptr;
  uint64_t next_ = 0;
};

class RandomSearch : public Strategy {
 public:
  std::string name() const override { return "random"; }
  void begin(const space::CompiledSpace& space, uint64_t seed, const Objective&) override {
    space_ = &space;
    rng_ = std::make_unique<Rng>(seed);
    drawn_.clear();
  }
  std::vector<Config> propose(size_t n, const KnownFn& known) override {
    std::vector<Config> out;
    const uint64_t size = space_->size();
    // Draw indices without repetition; every index is drawn at most once.
    while (out.size() < n && drawn_.size() < size) {
      const uint64_t i = rng_->uniform(size);
      if (!drawn_.insert(i).second) continue;
      Config c = space_->at(i);
      if (!known(c)) out.push_back(std::move(c));
    }
    return out;
  }
  void observe(const std::vector<Observation>&) override {}

 private:
  const space::CompiledSpace* space_ = nullptr;
  std::unique_ptr<Rng> rng_;
  std::set<uint64_t> drawn_;
};

class CoordinateDescent : public Strategy {
 public:
  std::string name() const override { return "coordinate"; }
  void begin(const space::CompiledSpace& space, uint64_t seed,
             const Objective& objective) override {
    space_ = &space;
    rng_ = std::make_unique<Rng>(seed);
    objective_ = objective;
    center_.reset();
    center_value_.reset();
    results_.clear();
  }

  std::vector<Config> propose(size_t n, const KnownFn& known) override {
    std::vector<Config> out;
    if (space_->size() == 0) return out;
    for (int attempts = 0; out.size() < n && attempts < 1000; ++attempts) {
      if (!center_) {
        // Start (or restart) at the best result seen so far that still has unexplored
        // neighbours, else at a random unmeasured point.
        if (!restart(known, &out)) return out;
        continue;
      }
      bool proposed = false;
      for (Config& neighbour : space_->neighbours(*center_)) {
        if (!known(neighbour) && !pending(out, neighbour)) {
          out.push_back(std::move(neighbour));
          proposed = true;
          if (out.size() >= n) break;
        }
      }
      if (!proposed) {
        // Every neighbour measured: move to the best of them if it improves, else restart.
        std::optional<Config> best;
        std::optional<double> best_value = center_value_;
        for (const Config& neighbour : space_->neighbours(*center_)) {
          const auto it = results_.find(neighbour.canonical_json());
          if (it != results_.end() && it->second && better(*it->second, best_value)) {
            best = neighbour;
            best_value = it->second;
          }
        }
        // Its whole neighbourhood is measured: never a starting point again.
        exhausted_.insert(center_->canonical_json());
        if (best && !exhausted_.count(best->canonical_json())) {
          center_ = best;
          center_value_ = best_value;
        } else {
          center_.reset();
        }
      }
    }
    return out;
  }

  void observe(const std::vector<Observation>& observations) override {
    for (const Observation& o : observations) {
      results_[o.config.canonical_json()] =
          o.status == TrialStatus::kOk ? o.objective : std::nullopt;
      configs_[o.config.canonical_json()] = o.config;
      if (center_ && o.config == *center_) center_value_ = results_[o.config.canonical_json()];
    }
  }

 private:
  bool better(double a, const std::optional<double>& b) const { return objective_.better(a, b); }
  static bool pending(const std::vector<Config>& out, const Config& c) {
    return std::find(out.begin(), out.end(), c) != out.end();
  }
  bool restart(const KnownFn& known, std::vector<Config>* out) {
    // The best measured point not yet exhausted.
    std::optional<std::string> best_key;
    std::optional<double> best_value;
    for (const auto& [key, value] : results_) {
      if (value && !exhausted_.count(key) && better(*value, best_value)) {
        best_key = key;
        best_value = value;
      }
    }
    if (best_key) {
      center_ = configs_.at(*best_key);
      center_value_ = best_value;
      return true;
    }
    // A random unmeasured point (a bounded number of draws).
    for (int i = 0; i < 1000; ++i) {
      Config c = space_->sample(*rng_);
      if (known(c) || pending(*out, c)) continue;
      out->push_back(c);
      center_ = c;
      center_value_.reset();
      return true;
    }
    return false;  // nothing unmeasured could be found
  }

  const space::CompiledSpace* space_ = nullptr;
  std::unique_ptr<Rng> rng_;
  Objective objective_;
  std::optional<Config> center_;
  std::optional<double> center_value_;
  std::map<std::string, std::optional<double>>
      results_;  // canonical JSON → objective (nullopt: failed)
  std::map<std::string, Config> configs_;
  std::set<std::string> exhausted_;
};

// Slapo's own tuner (awslabs/slapo, autotune/tune.py), for comparison: binary search for the
// largest batch size that fits at full checkpointing; then, for each batch size from that one
// down, binary search for the smallest checkpoint ratio that fits; stop after 5 measured trials
// without improvement. Other knobs stay at the space's first configuration.
class SlapoHeuristic : public Strategy {
 public:
  std::string name() const override { return "slapo"; }
  void begin(const space::CompiledSpace& space, uint64_t, const Objective& objective) override {
    space_ = &space;
    objective_ = objective;
    for (const auto& knob : space.knobs()) {
      if (knob.name == "batch_size") batch_ = knob;
      if (knob.name == "ckpt_ratio" || knob.name == "ckpt_layers") ckpt_ = knob;
    }
    SLAPO_CHECK(!batch_.name.empty() && !ckpt_.name.empty(), ErrorCode::kInvalidArgument,
                "strategy slapo needs a knob batch_size and a knob ckpt_ratio (or ckpt_layers)");
    base_ = space.at(0);
    lo_ = 0;
    hi_ = static_cast<int64_t>(batch_.domain.size()) - 1;
    phase_ = Phase::kBatch;
  }

  std::vector<Config> propose(size_t n, const KnownFn& known) override {
    while (phase_ != Phase::kDone) {
      const Config c = candidate();
      const auto it = results_.find(c.canonical_json());
      if (it != results_.end()) {
        advance(it->second);  // measured before (or in an earlier run)
        continue;
      }
      if (!space_->contains(c).ok || known(c)) {
        advance(
            std::nullopt);  // not a valid point, or recorded without a result here: as if it failed
        continue;
      }
      pending_ = c;
      return {c};
    }
    return {};
  }

  void observe(const std::vector<Observation>& observations) override {
    for (const Observation& o : observations) {
      const std::optional<double> value = o.status == TrialStatus::kOk ? o.objective : std::nullopt;
      results_[o.config.canonical_json()] = value;
      if (pending_ && o.config == *pending_) {
        pending_.reset();
        advance(value);
      }
    }
  }

 private:
  enum class Phase { kBatch, kCkpt, kDone };

  int64_t ckpt_max() const { return static_cast<int64_t>(ckpt_.domain.size()) - 1; }
  Config candidate() const {
    Config c = base_;
    const int64_t b = phase_ == Phase::kBatch ? (lo_ + hi_) / 2 : batch_index_;
    const int64_t k = phase_ == Phase::kBatch ? ckpt_max() : (lo_ + hi_) / 2;
    c.set(batch_.name, batch_.domain[static_cast<size_t>(b)]);
    c.set(ckpt_.name, ckpt_.domain[static_cast<size_t>(k)]);
    return c;
  }

  // Moves the searches on after the candidate's result (nullopt: out of memory or failed).
  void advance(const std::optional<double>& value) {
    const bool fits = value.has_value();
    if (fits) {
      if (objective_.better(value, best_)) {
        best_ = value;
        without_improvement_ = 0;
      } else {
        ++without_improvement_;
      }
    } else {
      ++without_improvement_;
    }
    const int64_t mid = (lo_ + hi_) / 2;
    if (phase_ == Phase::kBatch) {
      if (fits) {
        largest_fitting_ = mid;
        lo_ = mid + 1;
      } else {
        hi_ = mid - 1;
      }
      if (lo_ > hi_) {
        batch_index_ = largest_fitting_;
        start_ckpt_search();
      }
    } else {
      if (fits)
        hi_ = mid - 1;  // fits: try less recomputation
      else
        lo_ = mid + 1;
      if (lo_ > hi_) {
        --batch_index_;
        start_ckpt_search();
      }
    }
    if (without_improvement_ >= 5) phase_ = Phase::kDone;
  }

  void start_ckpt_search() {
    phase_ = batch_index_ < 0 ? Phase::kDone : Phase::kCkpt;
    lo_ = 0;
    hi_ = ckpt_max();
  }

  const space::CompiledSpace* space_ = nullptr;
  Objective objective_;
  space::KnobInfo batch_, ckpt_;
  Config base_;
  Phase phase_ = Phase::kDone;
  int64_t lo_ = 0, hi_ = -1;
  int64_t largest_fitting_ = -1;
  int64_t batch_index_ = -1;
  std::optional<double> best_;
  int without_improvement_ = 0;
  std::optional<Config> pending_;
  std::map<std::string, std::optional<double>> results_;
};

// The default: the model strategy where a cost model predicts the space and can search it (ranked
// whole, or by the planner's cut search: why_model_cannot_search); else the model-based search
// from the memory frontier, started by the frontier ladder, which reached the optimum of every
// recorded objective table in the fewest trials (docs/benchmarks.md); a space of a handful of
// points is simply measured.
class Auto : public Strategy {
 public:
  explicit Auto(CostModel* cost_model) : cost_model_(cost_model) {}
  // "auto/model" once it searches with the cost model: recorded with every trial.
  std::string name() const override {
    return inner_ && inner_->name() == "model" ? "auto/model" : "auto";
  }
  void begin(const space::CompiledSpace& space, uint64_t seed,
             const Objective& objective) override {
    if (space.size() <= 4) {
      inner_ = std::make_unique<Exhaustive>();
    } else if (cost_model_ &&
               why_model_cannot_search(space, objective, static_cast<bool>(cost_model_->composer()))
                   .empty() &&
               predicts_any(space)) {
      inner_ = make_model_strategy(cost_model_);
    } else {
      inner_ = make_model_based_strategy(/*memory_frontier=*/true);
    }
    inner_->begin(space, seed, objective);
  }
  std::vector<Config> propose(size_t n, const KnownFn& known) override {
    return inner_->propose(n, known);
  }
  void observe(const std::vector<Observation>& o) override { inner_->observe(o); }
  std::string why_done() const override { return inner_->why_done(); }

 private:
  // Whether the model predicts a configuration of the space: it covers the workload, though not
  // every configuration (one of another world than the run's ranks, say) — the first is enough.
  bool predicts_any(const space::CompiledSpace& space) const {
    bool found = false;
    space.for_each([&](const space::PointView& point) {
      found = cost_model_->predict(point.to_config()).prediction.has_value();
      return !found;
    });
    return found;
  }

  CostModel* cost_model_;
  std::unique_ptr<Strategy> inner_;
};

}  // namespace

namespace {

// The registry: every strategy by name, in the order the help lists them.
struct StrategyEntry {
  const char* name;
  std::unique_ptr<Strategy> (*make)(CostModel* cost_model);
};

const std::vector<StrategyEntry>& registry() {
  static const std::vector<StrategyEntry> entries = {
      {"auto", [](CostModel* m) { return std::unique_ptr<Strategy>(std::make_unique<Auto>(m)); }},
      {"model",
       [](CostModel* m) {
         SLAPO_CHECK(m != nullptr, ErrorCode::kInvalidArgument,
                     "the model strategy needs a cost model: only built-in workloads are "
                     "predicted");
         return make_model_strategy(m);
       }},
      {"bayes", [](CostModel*) { return make_model_based_strategy(); }},
      {"exhaustive",
       [](CostModel*) { return std::unique_ptr<Strategy>(std::make_unique<Exhaustive>()); }},
      {"random",
       [](CostModel*) { return std::unique_ptr<Strategy>(std::make_unique<RandomSearch>()); }},
      {"coordinate",
       [](CostModel*) { return std::unique_ptr<Strategy>(std::make_unique<CoordinateDescent>()); }},
      {"slapo",
       [](CostModel*) { return std::unique_ptr<Strategy>(std::make_unique<SlapoHeuristic>()); }},
  };
  return entries;
}

}  // namespace

std::optional<double> step_spread(const std::map<std::string, double>& metrics) {
  const auto p10 = metrics.find(metric::kStepMsP10), p90 = metrics.find(metric::kStepMsP90),
             mid = metrics.find(metric::kStepMsMedian);
  if (p10 == metrics.end() || p90 == metrics.end() || mid == metrics.end()) return std::nullopt;
  if (!(p90->second > p10->second) || !(mid->second > 0)) return std::nullopt;
  return (p90->second - p10->second) / mid->second;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const StrategyEntry& e : registry()) names.push_back(e.name);
  return names;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, CostModel* cost_model) {
  return find_named(registry(), name, "strategy", "strategies").make(cost_model);
}

}  // namespace slapo::tuner
