#pragma once
// The tuning loop: the strategy proposes, OOM dominance prunes, the runner measures, the
// database records, the strategy observes — until a stop condition holds.
//
//        CompiledSpace ──► Strategy ──propose──► candidate
//                             ▲                     │ proven OOM by a recorded trial? ─► record
//                             `pruned`
//                  observe    │                     ▼
//                             └──── TrialResult ◄── Runner (in-process | subprocess | command)
//                                         │
//                                         ▼
//                                    Database (task: workload + space + runner + machine)
//
// Then, with `confirm`, the best few are measured again and ranked by their median
// (tuner/confirmation.h).
//
// Resume: trials already recorded for the task are fed to the strategy and to the pruning first;
// nothing recorded runs again. The tuner never sees LibTorch.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "db/database.h"
#include "runners/runner.h"
#include "space/compiled_space.h"
#include "tuner/cost_model.h"
#include "tuner/strategy.h"

namespace slapo::tuner {

struct TunerOptions {
  std::string strategy = "auto";
  // Measured trials of the task in all: resumed ones count, and so do those of the other tuners of
  // a shared study (tuner/shared_study.h), recorded or claimed. 0: no limit.
  size_t trials = 20;
  double time_limit_s = 0;  // wall time of this run; 0: none
  size_t patience = 0;      // stop after this many measured trials without a better one; 0: never
  uint64_t seed = 0;
  Objective objective{metric::kDefaultObjective};
  // Once the search stops: measure the best `confirm` trials again, `confirm_rounds` times each,
  // and rank them by their median (tuner/confirmation.h). Not counted in `trials`; bounded by
  // `time_limit_s`. 0: no confirmation.
  size_t confirm = 0;
  size_t confirm_rounds = 2;
  // A cost model (tuner/cost_model.h), for `model` and `auto`; it sees every measured trial. Null:
  // the search measures blindly. Not owned.
  CostModel* cost_model = nullptr;
  // A shared study: a claim whose owner has not renewed its heartbeat for this long is adopted by
  // another tuner (a dead owner on this host is seen at once).
  double claim_timeout_s = 60;
  // A workload without a cost model (an external command) under a memory budget: the memory
  // metric its trials report ("" : the first that looks like one) is learned from, and
  // configurations it predicts over `memory_budget_bytes` are recorded as pruned, never run
  // (tuner/measured_memory.h). 0: off.
  double memory_budget_bytes = 0;
  std::string memory_metric;
  // The first trial of a task is the leanest variant of the strategy's first proposal (every knob
  // with a `mem` trend moved to its memory-saving end where the space allows), so that a run about
  // which nothing is known does not open with out-of-memory trials.
  bool lean_start = false;
  // Stop once this many measured trials in a row, before any succeeded, failed alike (the same
  // status and error: tuner/alike_failures.h). 0: never.
  size_t stop_after_failures = 5;
};

// One line of progress, after each measured or pruned trial.
struct Progress {
  int64_t index = 0;  // the trial's index (for a re-measurement: of the trial measured again)
  int64_t round = 0;  // > 0: a re-measurement, its round
  std::optional<double> confirmed;  // a re-measurement: the trial's median so far
  Config config;
  TrialStatus status = TrialStatus::kOk;
  std::optional<double> objective;
  std::optional<double> best;
  std::string error;
  std::optional<int64_t> pruned_by;
  size_t measured = 0;  // measured trials of the task so far
  size_t trials_left = 0;
  double elapsed_s = 0;
  double eta_s = 0;  // at the mean trial time so far
};

struct TuneSummary {
  int64_t task_id = 0;
  std::optional<db::TrialRecord> best;
  size_t measured = 0;  // in this run
  size_t pruned = 0;
  size_t failed = 0;            // measured but not ok
  size_t resumed = 0;           // recorded before this run
  size_t remeasured = 0;        // confirmation measurements made by this run
  size_t remeasure_failed = 0;  // ... of which failed
  double elapsed_s = 0;
  std::string stopped_because;
  // The median step spread (step_spread) of the ok trials this run measured: how far another
  // measurement of a configuration may land on this machine now. Absent when no trial reported
  // its steps' percentiles (an external command that prints no step times).
  std::optional<double> step_spread;
  // How far the task's configurations measured more than once lay apart across their trials
  // (remeasured_spread, tuner/noise.h): what the machine's speed did between trials, which
  // step_spread cannot show. Absent when no configuration has two ok measurements.
  std::optional<double> remeasured_spread;
  // A run learning memory from its trials' reports (TunerOptions::memory_budget_bytes): the first
  // trial that ran out of memory although the reports' fit predicted it under the budget
  // (MeasuredMemory::misses); "" when none did.
  std::string memory_misses;
};

// A run whose trials' steps spread by more than this (median) ran on a machine too noisy for its
// ranking to be trusted: the recorded tables' passes spread by 1.5-3.2% (docs/benchmarks.md),
// a recording on a noisy night of this 2-core machine (its host, not the project) by 7-8%.
constexpr double kNoisyStepSpread = 0.05;

// Runs the loop. Throws only when the runner or the database cannot work at all; failing trials
// are recorded and the search goes on.
TuneSummary tune(const space::CompiledSpace& space, runners::Runner& runner, db::Database& database,
                 const db::TaskKey& task_key, const TunerOptions& options,
                 const std::function<void(const Progress&)>& on_progress = {});

}  // namespace slapo::tuner
