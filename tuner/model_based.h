#pragma once
// The model-based strategy ("bayes"): Bayesian optimization on the encoded space.
//
//   objective model   a Gaussian process on encode(c) → the objective (log-scaled when positive,
//                     negated when minimizing), over the configurations measured ok
//   feasibility model a Gaussian process on encode(c) → +1 (ok) / −1 (failed: out of memory, ...),
//                     read as P(feasible) = Φ(μ / σ)
//   acquisition       expected improvement × P(feasible), over the unmeasured configurations
//                     (all of them in spaces up to 4,096; otherwise 128 uniform samples plus the
//                     neighbours of the best few measured)
//
// It starts from uniform samples (3; fewer when earlier trials are resumed) — with the memory
// frontier, from the frontier ladder instead (below) — and refits the length scale and noise by
// marginal likelihood every 8 observations.

#include <memory>

#include "tuner/strategy.h"

namespace slapo::tuner {

// With `memory_frontier` (the default strategy, "auto"), knobs that save memory at a price in
// speed (mem = "down") are searched from the least setting that fits: while any configuration is
// on that frontier (for each such knob, the next lower setting does not exist or ran out of
// memory), only frontier configurations are proposed; then the whole space. It starts with the
// frontier ladder: a binary search for the largest value of the batch knob (batch_size with
// mem = "up", else the first mem = "up" knob of numbers: tuner/measured_memory.h) that fits, the
// other knobs as in the first configuration that no saving knob can lower (Slapo's own prior, taken
// where no memory is saved), in spaces small enough to enumerate. Where the trials report memory
// (Observation::memory_share), the knob's lowest value is measured once a rung fits and the next is
// not sure to, so that the run's memory fit prunes the rungs over the budget.
std::unique_ptr<Strategy> make_model_based_strategy(bool memory_frontier = false);

}  // namespace slapo::tuner
