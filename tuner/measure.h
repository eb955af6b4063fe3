#pragma once
// One measurement of one configuration, as the tuner takes it (search trials and re-measurements
// alike): run it, time it, and read the task's objective from its metrics.

#include <optional>
#include <string>

#include "core/config.h"
#include "core/objective.h"
#include "core/trial.h"
#include "runners/runner.h"

namespace slapo::tuner {

struct Measurement {
  TrialResult result;
  std::optional<double> objective;  // set when the trial is ok
  double duration_s = 0;
};

// An ok trial that reports no `objective` metric becomes a runtime error saying so.
Measurement measure(runners::Runner& runner, const Config& config, const Objective& objective);

}  // namespace slapo::tuner
