#pragma once
// The worker protocol: how a runner hands one trial to a worker process (`slapo-tune worker`, or
// a user program's equivalent) and reads what happened. One encoder and one decoder for each
// message, so the runners and the worker cannot drift apart.
//
//   one-shot worker:  WORKER... --workload JSON --config JSON   → the TrialResult JSON, last line
//   fork server:      WORKER... --serve, then per line of input a TrialRequest → one line of
//                     TrialResponse (what the forked child that measured the trial did)

#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/process.h"

namespace slapo::runners {

struct TrialRequest {
  std::string workload_json;  // runners::Workload::to_json()
  std::string config_json;    // Config::to_json()
  double timeout_s = 0;       // 0: none
};

// `worker` + {"--workload", W, "--config", C}: the argv of a one-shot worker (or of one rank).
std::vector<std::string> worker_argv(const std::vector<std::string>& worker,
                                     const std::string& workload_json, const Config& config);
// `worker` + {"--serve"}.
std::vector<std::string> fork_server_argv(const std::vector<std::string>& worker);

// One line each; the decoders return nullopt (with `why` set when given) for a line that is not
// such a message.
std::string encode_request(const TrialRequest& request);
std::optional<TrialRequest> decode_request(const std::string& line, std::string* why = nullptr);
std::string encode_response(const ProcessResult& response);
std::optional<ProcessResult> decode_response(const std::string& line);

}  // namespace slapo::runners
