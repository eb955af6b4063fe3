#pragma once
// How noisy a task's measurements were, in the two figures a run's summary and its report give:
// how far a trial's own timed steps lay apart, and how far the trials of one configuration
// measured again lay apart. The first is the measurement's noise within a trial; only the second
// shows the machine's speed moving between trials.

#include <optional>
#include <vector>

#include "db/database.h"

namespace slapo::tuner {

// The median over the ok trials of their step spread ((p90 - p10) / median of the timed steps:
// step_spread, tuner/strategy.h); nullopt when no ok trial reports one.
std::optional<double> median_step_spread(const std::vector<db::TrialRecord>& trials);

// How far the machine's speed moved between trials, as the task's re-measured configurations
// show it (the confirmation's rounds, an outlier's check): for each trial measured again, the
// range of its ok measurements (its first one and its re-measurements) over their median,
// (max - min) / median, and the median over those trials. Nullopt when no trial has two ok
// measurements. A trial's own steps cannot show it: on the host of 2026-11-29 one configuration
// ran at 59.8 to 104.9 samples/s in four trials seconds apart — a range of 54% of their median —
// while the steps within each lay 1-11% apart (docs/benchmarks.md). `trials`: the task's, each
// re-measured one among them.
std::optional<double> remeasured_spread(const std::vector<db::TrialRecord>& trials,
                                        const std::vector<db::Remeasurement>& remeasurements);

}  // namespace slapo::tuner
