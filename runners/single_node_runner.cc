#include "runners/single_node_runner.h"

#include "core/error.h"
#include "dist/launcher.h"
#include "runners/subprocess_runner.h"
#include "runners/worker_protocol.h"

namespace slapo::runners {

SingleNodeRunner::SingleNodeRunner(SingleNodeOptions options) : options_(std::move(options)) {
  SLAPO_CHECK(!options_.worker.empty(), ErrorCode::kInvalidArgument,
              "single-node runner: no worker command");
  SLAPO_CHECK(options_.nproc >= 1, ErrorCode::kInvalidArgument,
              "single-node runner: ", options_.nproc, " ranks per trial; at least 1 is needed");
}

std::vector<TrialResult> SingleNodeRunner::run(const std::vector<Config>& candidates) {
  std::vector<TrialResult> results;
  for (const Config& config : candidates) {
    dist::LaunchOptions launch;
    launch.nproc = options_.nproc;
    launch.argv = worker_argv(options_.worker, options_.workload_json, config);
    launch.env = options_.env;
    // Ranks share the cores: OpenMP threads that sleep instead of spinning while waiting.
    launch.env.emplace("OMP_WAIT_POLICY", "passive");
    launch.timeout_s = options_.timeout_s;
    launch.collective_timeout_s = options_.collective_timeout_s;
    const dist::LaunchResult job = dist::launch_ranks(launch);
    std::vector<TrialResult> ranks;
    for (const ProcessResult& p : job.ranks)
      ranks.push_back(worker_result(p, options_.timeout_s, options_.log_lines));
    TrialResult r = combine_ranks(ranks);
    r.metrics[metric::kWallS] = ranks[0].metrics[metric::kWallS];
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace slapo::runners
