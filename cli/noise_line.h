#pragma once
// The summary's `noise:` line: how far a tuning run's trials spread their steps, and what that
// means for its ranking when the machine is noisy.

#include <optional>
#include <string>

namespace slapo::cli {

// The line (newline included) for a run whose ok trials' steps spread by a median `spread`
// ((p90 - p10) / median); "" when unknown. Over tuner::kNoisyStepSpread it calls the machine noisy
// and suggests an idle machine, and `--confirm K` unless the run already `confirmed` its best.
std::string noise_line(std::optional<double> spread, bool confirmed);

}  // namespace slapo::cli
