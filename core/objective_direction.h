#pragma once
// Which way an objective is optimized when the command line does not say. The metrics the
// built-in runners report have a known direction — `--objective step_ms_median` alone used to
// maximize the step time (and `plan --objective peak_bytes` ranked the hungriest configuration
// first) —; a command's own metric is maximized unless --minimize says otherwise, with a note
// when its name reads like a loss, a time or a size.

#include <optional>
#include <string>

#include "core/objective.h"

namespace slapo {

// Whether a metric the built-in runners report (core/metrics.h) is minimized: times, memory,
// losses, page faults and shares of the step are; rates are not. nullopt for any other name.
std::optional<bool> builtin_minimize(const std::string& metric);

// Whether a name reads like a smaller-is-better quantity (loss, error, latency, time, memory, a
// name ending in a time or size unit). Only ever a note's reason, never a decision.
bool reads_smaller_is_better(const std::string& metric);

struct ResolvedObjective {
  Objective objective;
  std::string note;  // one line (no newline) when the direction was guessed, else ""
};

// The objective for `metric` from the flags: --minimize or --maximize as given (both: an error
// naming them), else the built-in direction, else maximize — with a note when the name reads
// smaller-is-better.
ResolvedObjective resolve_objective(const std::string& metric, bool minimize, bool maximize);

}  // namespace slapo
