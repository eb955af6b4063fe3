#pragma once
// Strategy: proposes which configurations to measure next. It sees the compiled space (indices,
// samples, neighbours) and the observations, never the runner or the database.
//
//   begin(space, seed, objective) → { propose(n, known) → observe(observations) }*
//
// A strategy never proposes a configuration `known` reports (measured, pruned or recorded in an
// earlier run) and proposes nothing when it has nothing left.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/metrics.h"
#include "core/objective.h"
#include "core/trial.h"
#include "space/compiled_space.h"

namespace slapo::tuner {

struct Observation {
  Config config;
  TrialStatus status = TrialStatus::kOk;
  std::optional<double> objective;  // when ok
  // How far apart the trial's own timed steps lay (step_spread): how far another measurement of
  // the same configuration may land — the measurement's noise as the trial itself shows it.
  std::optional<double> step_spread;
  // Whether it ran: false for a point pruned by proof or prediction (observed as out of memory).
  bool ran = true;
  // When it finished and reported the memory metric the run learns from under its budget
  // (tuner/measured_memory.h): that peak as a share of the budget. Two such trials at the same
  // other knobs let the run fit its peak over the batch size, and prune what the fit puts over
  // the budget without running it.
  std::optional<double> memory_share;
};

// (p90 − p10) / median of a trial's timed steps (metric::kStepMsP10, kStepMsP90, kStepMsMedian),
// when it reports all three and they differ (one timed step shows no spread).
std::optional<double> step_spread(const std::map<std::string, double>& metrics);

using KnownFn = std::function<bool(const Config&)>;

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // REQUIRES: `space` outlives the strategy's use.
  virtual void begin(const space::CompiledSpace& space, uint64_t seed,
                     const Objective& objective) = 0;
  virtual std::vector<Config> propose(size_t n, const KnownFn& known) = 0;
  virtual void observe(const std::vector<Observation>& observations) = 0;
  // Why propose() returned nothing, for the run's summary.
  virtual std::string why_done() const { return "the strategy has nothing left to try"; }
};

class CostModel;

// auto | model | bayes | exhaustive | random | coordinate | slapo. `model` needs a cost model;
// `auto` uses it (the model strategy) when the cost model predicts the space, and searches without
// one otherwise. Throws Error(kInvalidArgument) listing the strategies for an unknown name.
std::unique_ptr<Strategy> make_strategy(const std::string& name, CostModel* cost_model = nullptr);
std::vector<std::string> strategy_names();

}  // namespace slapo::tuner
