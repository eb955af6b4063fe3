#include "runners/subprocess_runner.h"

#include <chrono>

#include "core/error.h"
#include "core/interrupt.h"
#include "runners/worker_protocol.h"

namespace slapo::runners {

SubprocessRunner::SubprocessRunner(SubprocessOptions options) : options_(std::move(options)) {
  SLAPO_CHECK(!options_.worker.empty(), ErrorCode::kInvalidArgument,
              "subprocess runner: no worker command");
}

TrialResult worker_result(const ProcessResult& p, double timeout_s, size_t log_lines) {
  SLAPO_CHECK(p.started, ErrorCode::kNotFound, "worker: ", p.error);
  const std::string log = tail_lines(p.err + p.out, log_lines);
  TrialResult r;
  if (p.interrupted) {
    r = failed_trial(TrialStatus::kInterrupted, "interrupted by the user");
  } else if (p.peer_failed) {
    r = failed_trial(TrialStatus::kRuntimeError, kEndedByPeerError);
  } else if (p.timed_out) {
    r = failed_trial(TrialStatus::kTimeout,
                     "killed after the time limit of " + std::to_string(timeout_s) + " s");
  } else if (p.oom_killed) {
    // Past what the trial's ceiling foresaw (runners/machine_memory.h): a process resident more
    // than 1.33 times its tensors, or memory another process took meanwhile.
    r = failed_trial(TrialStatus::kOom,
                     "worker killed by the kernel's out-of-memory killer (SIGKILL; /proc/vmstat "
                     "oom_kill went up)");
  } else if (p.signal != 0) {
    r = failed_trial(TrialStatus::kCrashed, "worker killed by " + signal_name(p.signal));
  } else if (p.exit_code != 0) {
    r = failed_trial(TrialStatus::kRuntimeError,
                     "worker exited with code " + std::to_string(p.exit_code));
  } else {
    try {
      r = TrialResult::from_json(tail_lines(p.out, 1), "worker output");
    } catch (const Error& e) {
      r = failed_trial(TrialStatus::kCrashed, std::string("garbled worker output: ") + e.what());
    }
  }
  r.metrics[metric::kWallS] = p.duration_s;
  if (r.status != TrialStatus::kOk && r.log_tail.empty()) r.log_tail = log;
  return r;
}

SubprocessRunner::~SubprocessRunner() = default;

std::optional<ProcessResult> SubprocessRunner::run_forked(const Config& config) {
  if (!server_) server_ = Coprocess::start(fork_server_argv(options_.worker), options_.env);
  const TrialRequest request{options_.workload_json, config.to_json(), options_.timeout_s};
  // The server enforces the trial's time limit; this one only guards against a server that hangs.
  const double guard = options_.timeout_s > 0 ? options_.timeout_s + 60 : 0;
  std::optional<std::string> line;
  if (server_->write_line(encode_request(request))) line = server_->read_line(guard);
  std::optional<ProcessResult> response = line ? decode_response(*line) : std::nullopt;
  if (!response) server_.reset();  // started again for the next request
  return response;
}

std::vector<TrialResult> SubprocessRunner::run(const std::vector<Config>& candidates) {
  std::vector<TrialResult> results;
  ProcessOptions one_shot;
  one_shot.env = options_.env;
  one_shot.timeout_s = options_.timeout_s;
  for (const Config& config : candidates) {
    if (options_.fork_server) {
      const auto start = std::chrono::steady_clock::now();
      std::optional<ProcessResult> forked = run_forked(config);
      // The server's death is not the trial's doing (killed from outside, say): measured once more
      // with a new server. An interrupt ends the server's group; its trial child dies with it.
      if (!forked && !interrupt_requested()) forked = run_forked(config);
      if (!forked) {
        TrialResult lost =
            interrupt_requested()
                ? failed_trial(TrialStatus::kInterrupted, "interrupted by the user")
                : failed_trial(TrialStatus::kRuntimeError,
                               "the fork server stopped answering during this trial, and again "
                               "when it was measured once more");
        lost.metrics[metric::kWallS] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        results.push_back(std::move(lost));
        continue;
      }
      SLAPO_CHECK(forked->started, ErrorCode::kNotFound, "subprocess runner: ", forked->error);
      results.push_back(worker_result(*forked, options_.timeout_s, options_.log_lines));
      continue;
    }
    const ProcessResult p =
        run_process(worker_argv(options_.worker, options_.workload_json, config), one_shot);
    SLAPO_CHECK(p.started, ErrorCode::kNotFound, "subprocess runner: ", p.error);
    results.push_back(worker_result(p, options_.timeout_s, options_.log_lines));
  }
  return results;
}

}  // namespace slapo::runners
