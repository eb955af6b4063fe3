#pragma once
// InProcessRunner: measures each candidate in this process (measure_trial). Fastest; for tests
// and tiny models — a candidate that crashes takes the process with it.

#include "runners/runner.h"
#include "runners/workload.h"

namespace slapo::runners {

class InProcessRunner : public Runner {
 public:
  explicit InProcessRunner(Workload workload) : workload_(std::move(workload)) {}
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override {
    std::vector<TrialResult> results;
    for (const Config& c : candidates) results.push_back(measure_trial(workload_, c));
    return results;
  }
  std::string kind() const override { return "inprocess"; }

 private:
  Workload workload_;
};

}  // namespace slapo::runners
