#pragma once
// SingleNodeRunner: one trial is `nproc` worker processes on this machine, started together as
// the ranks of one job (torchrun's variables; a rendezvous store the runner hosts on a port the
// kernel picks; Gloo on the CPU). Each rank measures its part of the trial (runners/workload.h
// with its process groups); the trial's result is rank 0's, unless a rank shows the cause of a
// failure (combine_ranks). A rank that fails or hangs fails that trial — its peers fail at their
// next collective or at the collective time limit — never the tuner.

#include <map>
#include <string>
#include <vector>

#include "core/defaults.h"
#include "runners/runner.h"

namespace slapo::runners {

struct SingleNodeOptions {
  std::vector<std::string> worker;  // {"/path/slapo-tune", "worker"}
  std::string workload_json;
  int nproc = 2;
  double timeout_s = defaults::kTrialTimeoutS;  // per trial, for every rank
  int collective_timeout_s = 60;                // a rank waiting longer than this on a peer fails
  std::map<std::string, std::string> env;
  size_t log_lines = 30;
};

class SingleNodeRunner : public Runner {
 public:
  explicit SingleNodeRunner(SingleNodeOptions options);
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override;
  std::string kind() const override { return "single-node"; }
  int world_size() const override { return options_.nproc; }

 private:
  SingleNodeOptions options_;
};

}  // namespace slapo::runners
