#include "runners/worker.h"

#include <algorithm>
#include <iostream>

#include "core/error.h"
#include "core/process.h"
#include "dist/world.h"
#include "models/templates.h"
#include "runners/worker_protocol.h"
#include "runners/workload.h"

namespace slapo::runners {

TrialResult run_worker_trial(const std::string& workload_json, const std::string& config_json) {
  Workload workload = Workload::from_json(workload_json, "the worker's workload");
  const Config config = Config::from_json(config_json, "the worker's configuration");
  if (!dist::RankEnv::present()) return measure_trial(workload, config);
  // One rank of a single-node (or torchrun-launched) trial.
  try {
    const dist::RankEnv env = dist::RankEnv::from_env();
    const Layout layout = models::parallel_knobs(workload.spec(), config, env.world_size).layout;
    // The workload's threads are the trial's budget, shared by its ranks.
    workload.threads = std::max(1, workload.threads / env.world_size);
    try {
      layout.check_world(env.world_size);
    } catch (const Error& e) {
      return failed_trial(TrialStatus::kInvalid, e.what());
    }
    return measure_trial(workload, config, dist::connect(env, layout));
  } catch (const Error& e) {
    return failed_trial(
        is_user_error(e.code()) ? TrialStatus::kInvalid : TrialStatus::kRuntimeError, e.what());
  }
}

void serve_trials(std::istream& in, std::ostream& out) {
  std::string line;
  while (std::getline(in, line)) {
    std::string why;
    const std::optional<TrialRequest> request = decode_request(line, &why);
    ProcessResult response;
    if (!request) {
      response.error = why;
    } else {
      ProcessOptions options;
      options.timeout_s = request->timeout_s;
      response = fork_and_run(
          [&] {
            std::cout << run_worker_trial(request->workload_json, request->config_json).to_json()
                      << std::endl;
            return 0;
          },
          options);
    }
    out << encode_response(response) << std::endl;
  }
}

}  // namespace slapo::runners
