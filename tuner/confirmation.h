#pragma once
// Confirmation: on a noisy machine, the configuration with the best single measurement is often
// one that was lucky (this machine's step times drift by ±7% between passes over the same
// configurations, while the top few configurations of a space are often closer than that). Once
// the search stops, the best `confirm` trials are measured again, `rounds` times each, in rounds —
// each round measures every one of them once, so a drift of the machine weighs on all alike — and
// the task's best is then the best median (Database::best ranks by it). A trial that fails a
// re-measurement is left out of the ranking, and the next one takes its place in the top, so the
// confirmation goes on until the top `confirm` all have their rounds, or this run has taken
// `2 · confirm` trials into it. On a resumed run the same holds: a new trial whose single
// measurement would rank among the confirmed medians is confirmed before it can be reported best.
//
// Re-measurements are recorded (Database::add_remeasurement); running the task again re-measures
// nothing already recorded.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "db/database.h"
#include "runners/runner.h"
#include "tuner/tuner.h"

namespace slapo::tuner {

struct ConfirmationCounts {
  size_t remeasured = 0;  // measurements made by this call
  size_t failed = 0;      // ... of which failed
  bool out_of_time = false;
  bool interrupted = false;
};

// Measures a recorded trial's configuration once more and records it as the trial's next round,
// reporting it through `on_progress` (an ok one with `note` in its error column). Nullopt, with
// nothing recorded, when the user interrupted it.
std::optional<db::Remeasurement> remeasure(runners::Runner& runner, db::Database& database,
                                           const db::TaskRecord& task, const db::TrialRecord& trial,
                                           const Objective& objective,
                                           const std::function<void(const Progress&)>& on_progress,
                                           const std::string& note = "");

ConfirmationCounts confirm_best(runners::Runner& runner, db::Database& database,
                                const db::TaskRecord& task, const TunerOptions& options,
                                const std::function<bool()>& out_of_time,
                                const std::function<void(const Progress&)>& on_progress);

}  // namespace slapo::tuner
