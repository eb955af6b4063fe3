#include "tuner/model_based.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/rng.h"
#include "tuner/gaussian_process.h"
#include "tuner/measured_memory.h"

namespace slapo::tuner {

namespace {

// Uniform samples before the model takes over. With the memory frontier (after its ladder, when
// that found nothing that fits) one is enough: before the ladder, on the first two recorded
// tables, 1, 2 and 3 starts reached the optimum in a median of 6.0, 8.5 and 10.0 trials (table 1)
// and 3.0 each (table 2); the plain model needs 3 (with 1 it took 35 on table 1).
constexpr size_t kInitialPlain = 3;
constexpr size_t kInitialFrontier = 1;
constexpr uint64_t kEnumerateUpTo = 4096;
constexpr size_t kSampledCandidates = 128;
// The models learn from at most this many observations (the best and the most recent ones):
// tuning-sized solves keep a proposal well under a millisecond at 200 trials.
constexpr size_t kMaxModelPoints = 64;
constexpr size_t kRefitEvery = 8;

class ModelBased : public Strategy {
  struct Candidate {
    Config config;
    std::string key;  // canonical JSON
  };

 public:
  explicit ModelBased(bool memory_frontier) : memory_frontier_(memory_frontier) {}
  std::string name() const override { return memory_frontier_ ? "auto" : "bayes"; }

  void begin(const space::CompiledSpace& space, uint64_t seed,
             const Objective& objective) override {
    space_ = &space;
    rng_ = std::make_unique<Rng>(seed);
    minimize_ = objective.minimize;
    observed_.clear();
    proposed_.clear();
    observations_ = last_refit_ = 0;
    all_.clear();
    lower_.clear();
    saving_domains_.clear();
    trended_.clear();
    for (const auto& k : space.knobs()) {
      if (k.mem != space::MemTrend::kNone && k.kind != space::KnobKind::kChoice &&
          k.kind != space::KnobKind::kCuts) {
        trended_.emplace_back(k.name, k.mem == space::MemTrend::kUp ? 1.0 : -1.0);
      }
      if (k.mem == space::MemTrend::kDown && k.kind != space::KnobKind::kChoice &&
          k.kind != space::KnobKind::kCuts) {
        saving_domains_.emplace_back(k.name, &k.domain);
      }
    }
    if (space.size() <= kEnumerateUpTo) {
      for (uint64_t i = 0; i < space.size(); ++i) all_.push_back(space.at(i));
    }
    ladder_ = Ladder{};
    // The knob the run's memory fit is over, so that the ladder's anchor gives the fit its points.
    const space::KnobInfo* batch = batch_knob(space);
    if (memory_frontier_ && !all_.empty() && batch && batch->domain.size() >= 2) {
      ladder_.knob = batch->name;
      ladder_.domain = &batch->domain;
      ladder_.hi = static_cast<int64_t>(batch->domain.size()) - 1;
      ladder_.active = true;
    }
  }

  std::vector<Config> propose(size_t n, const KnownFn& known) override {
    std::vector<Config> out;
    // Every candidate is unknown and distinct (candidate_set); keys are computed once.
    std::vector<Candidate> candidates = candidate_set();
    candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                    [&](const Candidate& c) { return proposed_.count(c.key) > 0; }),
                     candidates.end());
    // With the memory frontier: only frontier configurations while any is left.
    if (memory_frontier_ && !saving_domains_.empty()) {
      std::vector<Candidate> frontier;
      for (const Candidate& c : candidates) {
        if (on_frontier(c)) frontier.push_back(c);
      }
      if (!frontier.empty()) candidates = std::move(frontier);
    }
    if (candidates.empty()) return out;
    if (ladder_.active) {
      if (std::optional<Config> rung = ladder_rung(known)) {
        out.push_back(std::move(*rung));
        return out;
      }
    }
    size_t ok = 0;
    for (const auto& [key, o] : observed_) ok += o.objective ? 1 : 0;
    // Start: uniform among the candidates until the model has something to stand on.
    const size_t initial = memory_frontier_ ? kInitialFrontier : kInitialPlain;
    if (ok < initial) {
      std::vector<size_t> order(candidates.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      for (size_t i = 0; i < order.size() && out.size() < n && ok + out.size() < initial; ++i) {
        std::swap(order[i], order[i + rng_->uniform(order.size() - i)]);  // a partial shuffle
        if (known(candidates[order[i]].config)) {
          proposed_.insert(candidates[order[i]].key);
          continue;
        }
        out.push_back(candidates[order[i]].config);
      }
      if (out.size() >= n || ok + out.size() < initial) return out;
      // (the rest of this batch comes from the model below, without the ones just drawn)
      std::set<std::string> drawn;
      for (size_t i = 0; i < out.size(); ++i) drawn.insert(candidates[order[i]].key);
      candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                      [&](const Candidate& c) { return drawn.count(c.key) > 0; }),
                       candidates.end());
      if (candidates.empty()) return out;
    }
    const std::vector<double> score = acquisition(candidates);
    std::vector<size_t> order(candidates.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return score[a] > score[b]; });
    for (size_t i = 0; i < order.size() && out.size() < n; ++i) {
      const Candidate& c = candidates[order[i]];
      if (known(c.config)) {
        proposed_.insert(c.key);  // known elsewhere: never a candidate again
        continue;
      }
      out.push_back(c.config);
    }
    return out;
  }

  void observe(const std::vector<Observation>& observations) override {
    for (const Observation& o : observations) {
      Seen s;
      s.x = space_->encode(o.config);
      if (o.status == TrialStatus::kOk && o.objective && std::isfinite(*o.objective))
        s.objective = *o.objective;
      s.failed = o.status != TrialStatus::kOk;
      s.oom = o.status == TrialStatus::kOom;
      s.order = observations_++;
      s.config = o.config;
      s.memory_share = o.memory_share;
      std::string key = o.config.canonical_json();
      if (ladder_.pending == key) {
        ladder_.pending.clear();
        ladder_.climb(s.objective.has_value());
      }
      observed_[std::move(key)] = std::move(s);
    }
    dirty_ = true;
  }

 private:
  struct Seen {
    std::vector<double> x;
    std::optional<double> objective;
    bool failed = false;
    bool oom = false;
    size_t order = 0;  // when it was observed
    Config config;
    std::optional<double> memory_share;  // ok, its reported peak / the budget (strategy.h)
  };

  // The frontier ladder, auto's start: a binary search for the largest value of the batch knob
  // (the one the run's memory fit is over: batch_knob()) that fits, from the first frontier
  // configuration — the least memory saving (no checkpointing), the other knobs as the space's
  // first point has them. It is Slapo's own prior (the largest batch that fits is usually the
  // fastest; checkpointing costs recomputation), taken on the frontier instead of at full
  // checkpointing, and the model learns from every rung.
  //
  // Where the trials report their memory, the ladder gives the run's memory fit
  // (tuner/measured_memory.h) its second point before a rung could run out of memory: once one
  // rung fits and the next is not sure to, the knob's lowest value is measured (the anchor), which
  // fits if anything does. From then on the tuner prunes every rung the fit over the two puts more
  // than its margin over the budget, as out of memory that costs no trial, so the binary search
  // above the rung that fits runs out of memory only between the budget and the margin (table 5
  // replayed as a command: rungs at batch 40, 20, 28, 24, three out of memory, became 40, 20, 4
  // and two pruned). The next rung is sure to fit, as far as the reports tell, when the rung's
  // peak scaled by the ratio of their batches is within the budget (a peak a + b·batch with
  // a ≥ 0 grows no faster than the batch; a command's reports may miss part of what its budget
  // caps, docs/scripts.md); the anchor waits while it is, and costs no trial where memory never
  // binds.
  struct Ladder {
    bool active = false;
    std::string knob;
    const std::vector<Value>* domain = nullptr;
    std::optional<Config> reference;
    int64_t lo = 0, hi = -1, mid = 0;
    std::string pending;    // the rung proposed, not yet observed
    bool anchored = false;  // the anchor was proposed (or was not needed)
    // fits: climb above mid, else below it.
    void climb(bool fits) {
      if (fits)
        lo = mid + 1;
      else
        hi = mid - 1;
    }
  };

  std::optional<Config> ladder_rung(const KnownFn& known) {
    if (!ladder_.reference) {
      // The first configuration in index order that no saving knob can lower: the same one on a
      // resumed run as on the first.
      for (const Config& c : all_) {
        if (lower_settings({c, c.canonical_json()}).empty()) {
          ladder_.reference = c;
          break;
        }
      }
      if (!ladder_.reference) {
        ladder_.active = false;
        return std::nullopt;
      }
    }
    if (std::optional<Config> anchor = ladder_anchor(known)) return anchor;
    while (ladder_.lo <= ladder_.hi) {
      ladder_.mid = (ladder_.lo + ladder_.hi) / 2;
      Config rung = *ladder_.reference;
      rung.set(ladder_.knob, (*ladder_.domain)[static_cast<size_t>(ladder_.mid)]);
      std::string key = rung.canonical_json();
      const auto seen = observed_.find(key);
      if (seen != observed_.end()) {
        ladder_.climb(
            seen->second.objective.has_value());  // measured already (resumed, or an earlier rung)
        continue;
      }
      if (!space_->contains(rung).ok || known(rung)) {
        ladder_.climb(false);  // not a point of the space (a constraint): look lower
        continue;
      }
      ladder_.pending = std::move(key);
      return rung;
    }
    ladder_.active = false;
    return std::nullopt;
  }

  // The ladder's anchor (above), when it is due: one rung fitted and reported its memory, the next
  // is not sure to fit, and the lowest value of the knob there is new.
  std::optional<Config> ladder_anchor(const KnownFn& known) {
    if (ladder_.anchored || ladder_.lo > ladder_.hi) return std::nullopt;
    size_t reported = 0;       // rungs of the ladder's line that fitted, with their memory
    double share = 0, at = 0;  // one of them: its peak / the budget, its value of the knob
    for (const auto& [key, s] : observed_) {
      const Value* value = s.config.find(ladder_.knob);
      if (!s.memory_share || !s.objective || !value) continue;
      Config rung = *ladder_.reference;
      rung.set(ladder_.knob, *value);
      if (rung.canonical_json() != key) continue;
      ++reported;
      share = *s.memory_share;
      at = as_number(*value);
    }
    if (reported == 0) return std::nullopt;  // not yet: a rung that fits comes first
    if (reported >= 2) {                     // the fit has its points already
      ladder_.anchored = true;
      return std::nullopt;
    }
    const double next =
        as_number((*ladder_.domain)[static_cast<size_t>((ladder_.lo + ladder_.hi) / 2)]);
    if (at > 0 && share * next / at <= 1) return std::nullopt;  // the next rung is sure to fit
    ladder_.anchored = true;
    for (const Value& lowest : *ladder_.domain) {
      Config anchor = *ladder_.reference;
      anchor.set(ladder_.knob, lowest);
      if (!space_->contains(anchor).ok) continue;  // a constraint: the next value up
      if (observed_.count(anchor.canonical_json()) || known(anchor)) return std::nullopt;
      return anchor;
    }
    return std::nullopt;
  }

  // A knob that saves memory at a price in speed (mem = "down": checkpointing, for one) is best
  // at the least setting that fits. A configuration is on the frontier when, for each such knob,
  // the next lower setting (the others equal) does not exist or ran out of memory.
  bool on_frontier(const Candidate& candidate) {
    for (const std::string& l : lower_settings(candidate)) {
      auto seen = observed_.find(l);
      if (seen == observed_.end() || !seen->second.oom) return false;
    }
    return true;
  }

  // For each saving knob, the next lower value of its domain that is valid with the others.
  const std::vector<std::string>& lower_settings(const Candidate& candidate) {
    auto it = lower_.find(candidate.key);
    if (it != lower_.end()) return it->second;
    const Config& c = candidate.config;
    std::vector<std::string> lower;
    for (const auto& [knob, domain] : saving_domains_) {
      const Value& current = c.at(knob);
      auto at = std::find(domain->begin(), domain->end(), current);
      while (at != domain->begin()) {
        --at;
        Config l = c;
        l.set(knob, *at);
        if (space_->contains(l).ok) {
          lower.push_back(l.canonical_json());
          break;
        }
      }
    }
    return lower_.emplace(candidate.key, std::move(lower)).first->second;
  }

  // Memory dominance relaxed: a configuration at least as hungry in every trended knob as one that
  // ran out of memory, whatever its untrended knobs, probably runs out too (it is not proven — an
  // attention implementation may need a little less —, so it is only ranked down).
  bool likely_oom(const Config& c) const {
    if (trended_.empty()) return false;
    for (const auto& [key, s] : observed_) {
      if (!s.oom) continue;
      bool hungrier = true;
      for (const auto& [knob, direction] : trended_) {
        if (direction * (as_number(c.at(knob)) - as_number(s.config.at(knob))) < 0) {
          hungrier = false;
          break;
        }
      }
      if (hungrier) return true;
    }
    return false;
  }

  // The unknown configurations the acquisition ranks: all of them in a small space, else uniform
  // samples and the neighbours of the best three measured.
  std::vector<Candidate> candidate_set() {
    std::vector<Candidate> out;
    std::unordered_set<std::string> seen;
    auto add = [&](Config c) {
      std::string key = c.canonical_json();
      // Everything the tuner knows it has also shown this strategy (observe); known() is asked
      // again only of the configurations finally proposed.
      if (observed_.count(key) || !seen.insert(key).second) return;
      out.push_back({std::move(c), std::move(key)});
    };
    if (!all_.empty()) {
      for (const Config& c : all_) add(c);
      return out;
    }
    for (size_t i = 0; i < kSampledCandidates; ++i) add(space_->sample(*rng_));
    std::vector<std::pair<double, const Seen*>> best;
    for (const auto& [key, s] : observed_) {
      if (s.objective) best.emplace_back(sign() * *s.objective, &s);
    }
    const size_t top = std::min<size_t>(3, best.size());
    std::partial_sort(best.begin(), best.begin() + static_cast<long>(top), best.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t i = 0; i < top; ++i) {
      for (Config& c : space_->neighbours(best[i].second->config)) add(std::move(c));
    }
    return out;
  }

  double sign() const { return minimize_ ? -1.0 : 1.0; }
  // Throughputs and times vary over orders of magnitude: model their logarithm when positive.
  double transform(double v) const { return positive_ ? std::log(v) : v; }

  void refit() {
    if (!dirty_) return;
    dirty_ = false;
    positive_ = true;
    std::vector<const Seen*> ok, all;
    for (const auto& [key, s] : observed_) {
      all.push_back(&s);
      if (s.objective) {
        ok.push_back(&s);
        positive_ = positive_ && *s.objective > 0;
      }
    }
    // Beyond kMaxModelPoints: the objective model keeps the best three quarters and the most
    // recent quarter; the feasibility model the most recent.
    auto recent_first = [](const Seen* a, const Seen* b) { return a->order > b->order; };
    if (ok.size() > kMaxModelPoints) {
      const double sg = sign();
      std::sort(ok.begin(), ok.end(), [&](const Seen* a, const Seen* b) {
        return sg * *a->objective > sg * *b->objective;
      });
      std::vector<const Seen*> kept(ok.begin(), ok.begin() + kMaxModelPoints * 3 / 4);
      std::vector<const Seen*> rest(ok.begin() + kMaxModelPoints * 3 / 4, ok.end());
      std::sort(rest.begin(), rest.end(), recent_first);
      kept.insert(kept.end(), rest.begin(), rest.begin() + (kMaxModelPoints - kept.size()));
      ok = std::move(kept);
    }
    if (all.size() > kMaxModelPoints) {
      std::sort(all.begin(), all.end(), recent_first);
      all.resize(kMaxModelPoints);
    }
    const bool refit_hyper = observations_ >= last_refit_ + kRefitEvery || !objective_.fitted();
    if (refit_hyper) last_refit_ = observations_;
    const long d = static_cast<long>(space_->encoded_size());
    has_objective_ = !ok.empty();
    if (has_objective_) {
      Eigen::MatrixXd x(static_cast<long>(ok.size()), d);
      Eigen::VectorXd y(static_cast<long>(ok.size()));
      best_ = -INFINITY;
      for (size_t i = 0; i < ok.size(); ++i) {
        x.row(static_cast<long>(i)) = Eigen::Map<const Eigen::VectorXd>(ok[i]->x.data(), d);
        y(static_cast<long>(i)) = sign() * transform(*ok[i]->objective);
        best_ = std::max(best_, y(static_cast<long>(i)));
      }
      objective_.fit(x, y, /*reuse_hyper=*/!refit_hyper && objective_.fitted());
    }
    has_failures_ = std::any_of(all.begin(), all.end(), [](const Seen* s) { return s->failed; });
    if (has_failures_) {
      Eigen::MatrixXd x(static_cast<long>(all.size()), d);
      Eigen::VectorXd y(static_cast<long>(all.size()));
      for (size_t i = 0; i < all.size(); ++i) {
        x.row(static_cast<long>(i)) = Eigen::Map<const Eigen::VectorXd>(all[i]->x.data(), d);
        y(static_cast<long>(i)) = all[i]->failed ? -1.0 : 1.0;
      }
      feasibility_.fit(x, y, /*reuse_hyper=*/!refit_hyper && feasibility_.fitted());
    }
  }

  std::vector<double> acquisition(const std::vector<Candidate>& candidates) {
    refit();
    const long d = static_cast<long>(space_->encoded_size());
    Eigen::MatrixXd x(static_cast<long>(candidates.size()), d);
    for (size_t i = 0; i < candidates.size(); ++i) {
      const std::vector<double> e = space_->encode(candidates[i].config);
      x.row(static_cast<long>(i)) = Eigen::Map<const Eigen::VectorXd>(e.data(), d);
    }
    std::vector<double> score(candidates.size(), 1.0);
    if (has_objective_) {
      Eigen::VectorXd mean, var;
      objective_.predict(x, &mean, &var);
      for (size_t i = 0; i < candidates.size(); ++i) {
        const double sd = std::sqrt(var(static_cast<long>(i)));
        const double gain = mean(static_cast<long>(i)) - best_ - 1e-3;
        const double z = gain / sd;
        score[i] = gain * normal_cdf(z) + sd * normal_pdf(z);  // expected improvement
      }
    }
    if (has_failures_) {
      Eigen::VectorXd mean, var;
      feasibility_.predict(x, &mean, &var);
      for (size_t i = 0; i < candidates.size(); ++i) {
        score[i] *= normal_cdf(mean(static_cast<long>(i)) / std::sqrt(var(static_cast<long>(i))));
        if (memory_frontier_ && likely_oom(candidates[i].config)) score[i] *= 0.01;
      }
    }
    return score;
  }

  const bool memory_frontier_;
  Ladder ladder_;
  const space::CompiledSpace* space_ = nullptr;
  std::unique_ptr<Rng> rng_;
  bool minimize_ = false;
  std::vector<std::pair<std::string, const std::vector<Value>*>>
      saving_domains_;                                   // into space_->knobs()
  std::vector<std::pair<std::string, double>> trended_;  // knob, +1 (mem up) or −1 (mem down)
  std::unordered_map<std::string, std::vector<std::string>>
      lower_;                // configuration → its lower settings
  std::vector<Config> all_;  // every configuration, when the space is small enough
  std::unordered_map<std::string, Seen> observed_;
  std::unordered_set<std::string> proposed_;  // known to the tuner without having been observed
  size_t observations_ = 0, last_refit_ = 0;
  bool dirty_ = true, positive_ = true, has_objective_ = false, has_failures_ = false;
  double best_ = -INFINITY;
  GaussianProcess objective_, feasibility_;
};

}  // namespace

std::unique_ptr<Strategy> make_model_based_strategy(bool memory_frontier) {
  return std::make_unique<ModelBased>(memory_frontier);
}

}  // namespace slapo::tuner
