#pragma once
// What the tuner asks of a cost model (runners/cost_model.h implements it for the built-in
// workloads; the tuner never sees LibTorch): a prediction per configuration, the measurements to
// correct itself with, and the memory budget its predictions are held to.

#include <string>

#include "core/config.h"
#include "core/trial.h"
#include "cost/planner.h"

namespace slapo::tuner {

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual cost::Predicted predict(const Config& config) = 0;
  // A measured (or failed) trial: calibrates the predictions of its neighbours.
  virtual void observe(const Config& config, const TrialResult& result) = 0;
  // 0: none.
  virtual double memory_budget_bytes() const = 0;
  // What that budget is when it is not the space's own, for a reason's text ("this machine's
  // memory (…)"); empty when it is the space's.
  virtual std::string memory_limit_note() const { return ""; }
  // What `config` computes, as the model knows it: configurations with the same non-empty text
  // run the same steps (knobs that change nothing where they are set differ between them, such as
  // how tp = 1 would split the model). Empty: not known — every configuration its own.
  virtual std::string computation(const Config& /*config*/) { return ""; }
  // For the planner's cut-point search (cost::plan), which lets the model strategy search spaces
  // too large to rank whole: the predictor and input of a configuration whose cuts the search
  // chooses. Empty: the model cannot compose one — such spaces are not searched with it.
  virtual cost::ConfigComposer composer() { return {}; }
};

}  // namespace slapo::tuner
