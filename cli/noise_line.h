#pragma once
// The summary's `noise:` line: how far a tuning run's trials spread their steps, and what that
// means for its ranking when the machine is noisy.

#include <optional>
#include <string>

namespace slapo::cli {

// The line (newline included) for a run whose ok trials' steps spread by a median `spread`
// ((p90 - p10) / median) and whose configurations measured more than once lay a median
// `remeasured` apart across their trials ((max - min) / median: tuner::remeasured_spread); "" when
// both are unknown. Over tuner::kNoisyStepSpread — either — it calls the machine noisy (the steps
// quiet but the trials apart: its speed moved between trials) and suggests an idle machine, and
// `--confirm K` unless the run already `confirmed` its best.
std::string noise_line(std::optional<double> spread, bool confirmed,
                       std::optional<double> remeasured = std::nullopt);

}  // namespace slapo::cli
