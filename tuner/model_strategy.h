#pragma once
// The `model` strategy: measures configurations in the order a cost model predicts them best,
// skipping what it predicts out of memory or cannot predict, recalibrated by every measurement,
// and stops when no remaining configuration could beat the measured best by more than the
// measurement noise (as the trials' own steps show it), were its prediction off by the model's own
// error — the error its predictions made of the trials measured so far (each predicted before its
// own measurement calibrated the model), a prior until there are some — but not before every value
// of an unordered knob (a choice, a bool: an attention variant, a fusion) that is predicted to fit
// has been measured once, its predicted best: the error of the others' trials is not its own.
// `auto` uses it whenever the tuner has a cost model that predicts the space.

#include <cstdint>
#include <memory>
#include <string>

#include "tuner/cost_model.h"
#include "tuner/strategy.h"

namespace slapo::tuner {

// The model strategy ranks the whole space after every measurement: spaces up to this size (the
// same bound under which the tuner records predicted out-of-memory configurations as pruned).
// A larger space is ranked by the planner where it chooses the cut points (cost::plan's dynamic
// programming): its candidates are then, for each configuration of the other knobs (at most this
// many), the cuts the model predicts best. Any other space of up to cost::kMaxEnumerated
// configurations is predicted once, before the first trial, and ranked after every measurement
// within the pool of this many predicted best. Each is measured and stopped as a small space's.
constexpr uint64_t kMaxModelRanked = 100'000;

// Why the model strategy cannot search `space` for `objective`, or "" when it can: more than
// cost::kMaxEnumerated configurations, where the planner's cut search does not apply (no cut
// knob, not a time objective, a model that cannot compose a configuration's cuts — `can_compose`
// —, or more than kMaxModelRanked configurations of the other knobs).
std::string why_model_cannot_search(const space::CompiledSpace& space, const Objective& objective,
                                    bool can_compose);

struct ModelStrategyOptions {
  // A remaining configuration is worth measuring only if its prediction, raised by the model's
  // error, beats the measured best by more than the noise of a measurement: the median step
  // spread of the trials measured so far (tuner::step_spread — on the recorded tables 1.6-3.0%,
  // where two whole passes' medians differed by 0.9-2.5%: docs/benchmarks.md), `noise` until a
  // trial reports one; the model's error is the median of |log(measured / predicted)| over the
  // trials measured so far and `prior_error` counted twice (its median step-time error
  // uncalibrated was 5.5-20% on held-out spaces and recorded tables: docs/benchmarks.md).
  double noise = 0.05;
  double prior_error = 0.10;
};

// REQUIRES: `model` outlives the strategy.
std::unique_ptr<Strategy> make_model_strategy(CostModel* model, ModelStrategyOptions options = {});

}  // namespace slapo::tuner
