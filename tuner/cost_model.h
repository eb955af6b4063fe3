#pragma once
// What the tuner asks of a cost model (runners/cost_model.h implements it for the built-in
// workloads; the tuner never sees LibTorch): a prediction per configuration, the measurements to
// correct itself with, and the memory budget its predictions are held to.

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
};

}  // namespace slapo::tuner
