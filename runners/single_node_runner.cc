#include "runners/single_node_runner.h"

#include "core/error.h"
#include "dist/launcher.h"
#include "runners/subprocess_runner.h"

namespace slapo::runners {

SingleNodeRunner::SingleNodeRunner(SingleNodeOptions options) : options_(std::move(options)) {
  SLAPO_CHECK(!options_.worker.empty(), ErrorCode::kInvalidArgument, "single-node runner: no worker command");
  SLAPO_CHECK(options_.nproc >= 1, ErrorCode::kInvalidArgument, "--nproc ", options_.nproc, " must be at least 1");
}

std::vector<TrialResult> SingleNodeRunner::run(const std::vector<Config>& candidates) {
  std::vector<TrialResult> results;
  for (const Config& config : candidates) {
    dist::LaunchOptions launch;
    launch.nproc = options_.nproc;
    launch.argv = options_.worker;
    launch.argv.insert(launch.argv.end(), {"--workload", options_.workload_json, "--config", config.to_json()});
    launch.env = options_.env;
    // Ranks share the cores: OpenMP threads that sleep instead of spinning while waiting.
    launch.env.emplace("OMP_WAIT_POLICY", "passive");
    launch.timeout_s = options_.timeout_s;
    launch.collective_timeout_s = options_.collective_timeout_s;
    const dist::LaunchResult job = dist::launch_ranks(launch);
    std::vector<TrialResult> ranks;
    for (const ProcessResult& p : job.ranks) ranks.push_back(worker_result(p, options_.timeout_s, options_.log_lines));
    TrialResult r = combine_ranks(ranks);
    r.metrics["wall_s"] = ranks[0].metrics["wall_s"];
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace slapo::runners
