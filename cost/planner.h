#pragma once
// The planner: ranks a whole space by prediction, without measuring anything.
//
// Every configuration of the compiled space is predicted (the caller maps a configuration to a
// Prediction, or says why it cannot); those predicted over the memory budget are left out and
// counted, as are those the model cannot predict; the rest are ranked by the objective.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/objective.h"
#include "cost/predictor.h"
#include "space/compiled_space.h"

namespace slapo::cost {

// A configuration's prediction, or why there is none (`why_not`).
struct Predicted {
  std::optional<Prediction> prediction;
  std::string why_not;
  // Without a prediction: whether no trial could run the configuration either — the template
  // refuses it, or the run's ranks are not its layout's —, as against one the model cannot
  // predict. Its trial would be recorded invalid.
  bool invalid = false;
  // Whether a measured trial of the same profile key had calibrated its time when it was predicted:
  // a key no trial has touched yet is predicted as uncertainly as the first trials were.
  bool time_calibrated = false;
};
using ConfigPredictor = std::function<Predicted(const Config& config)>;

// For the cut-point search: the predictor and input of a configuration without its cut knob (the
// search chooses the cuts), or why there is none.
struct Composable {
  const Predictor* predictor = nullptr;
  PredictInput input;
  std::string why_not;
  bool invalid = false;  // as Predicted::invalid
};
using ConfigComposer = std::function<Composable(const Config& config)>;

// Whether the cost model predicts `metric`: samples_per_s, tokens_per_s, tflops (those two where
// the input names what a sample is), step_ms_median (or step_ms), peak_bytes. A tuning run
// optimizing another metric (the loss, say) searches without the model (cli/tune_run.cc).
bool predicts_metric(const std::string& metric);
// Throws Error(kInvalidArgument) naming `metric` when the model does not predict it.
void check_predicted_metric(const std::string& metric);
// The value of `metric` in a prediction; throws as check_predicted_metric.
double predicted_metric(const Prediction& p, const std::string& metric);

struct PlanOptions {
  size_t top = 10;
  Objective objective{"samples_per_s", false};
  double memory_budget_bytes = 0;  // 0: none
  // Configurations predicted exactly alike are one plan (PlannedConfig::alike); else each is its
  // own.
  bool group_alike = true;
};

struct PlannedConfig {
  uint64_t index = 0;  // in the compiled space
  Config config;
  Prediction prediction;
  double objective = 0;
  // Configurations predicted exactly alike — the same step, peak and breakdowns — are one plan:
  // the model cannot tell them apart (the split knobs at tp = 1, a checkpoint ratio that rounds
  // to the same blocks). `config` is the first of them in the space; `alike` counts the others
  // and `alike_knobs` names the knobs whose values differ among them.
  uint64_t alike = 0;
  std::vector<std::string> alike_knobs;
};

struct Plan {
  std::vector<PlannedConfig> top;    // best first, alike configurations one plan each
  uint64_t considered = 0;           // configurations predicted
  uint64_t predicted_oom = 0;        // left out: over the memory budget
  uint64_t invalid = 0;              // left out: no trial could run them (Predicted::invalid)
  std::string invalid_reason;        // the first one's
  uint64_t unpredictable = 0;        // left out: the model cannot predict them
  std::string unpredictable_reason;  // the first one's
  std::string method;                // how the plan was found, and what it guarantees
  double seconds = 0;
};

// Enumerates `space` through its loop nest — or, when the space has a cut-point knob, `composer`
// is given and the objective is a time (samples_per_s, step_ms), enumerates the other knobs and
// chooses each one's cuts by cost/cut_search.h, so that spaces of 10^10 cut sets plan in
// milliseconds. Throws Error(kInvalidArgument) for an objective the model does not predict, and
// for a space too large to enumerate that the cut search does not apply to.
Plan plan(const space::CompiledSpace& space, const ConfigPredictor& predictor,
          const PlanOptions& options, const ConfigComposer& composer = {});

// Spaces larger than this are not enumerated.
constexpr uint64_t kMaxEnumerated = 100'000'000;

// Whether plan() chooses the cuts of `space` by its cut-point search — the space has a cut knob,
// the objective is a time and a composer is given (`can_compose`) — rather than enumerating them.
bool searches_cuts(const space::CompiledSpace& space, const PlanOptions& options, bool can_compose);

// What plan() checks before it predicts anything, for callers that profile first: throws its
// Error(kInvalidArgument) for an objective the model does not predict and for a space too large
// to enumerate that the cut search (`can_compose`: a composer is given) does not apply to.
void check_plannable(const space::CompiledSpace& space, const PlanOptions& options,
                     bool can_compose);

}  // namespace slapo::cost
