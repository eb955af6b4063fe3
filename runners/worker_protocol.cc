#include "runners/worker_protocol.h"

#include <nlohmann/json.hpp>

namespace slapo::runners {

std::vector<std::string> worker_argv(const std::vector<std::string>& worker,
                                     const std::string& workload_json, const Config& config) {
  std::vector<std::string> argv = worker;
  argv.insert(argv.end(), {"--workload", workload_json, "--config", config.to_json()});
  return argv;
}

std::vector<std::string> fork_server_argv(const std::vector<std::string>& worker) {
  std::vector<std::string> argv = worker;
  argv.push_back("--serve");
  return argv;
}

std::string encode_request(const TrialRequest& r) {
  return nlohmann::json{
      {"workload", r.workload_json}, {"config", r.config_json}, {"timeout_s", r.timeout_s}}
      .dump();
}

std::optional<TrialRequest> decode_request(const std::string& line, std::string* why) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("workload") || !j["workload"].is_string() ||
      !j.contains("config") || !j["config"].is_string() ||
      (j.contains("timeout_s") && !j["timeout_s"].is_number())) {
    if (why) *why = "fork server: not a request: " + line.substr(0, 200);
    return std::nullopt;
  }
  TrialRequest r;
  r.workload_json = j["workload"].get<std::string>();
  r.config_json = j["config"].get<std::string>();
  r.timeout_s = j.value("timeout_s", 0.0);
  return r;
}

std::string encode_response(const ProcessResult& r) {
  const nlohmann::json j = {{"started", r.started},
                            {"error", r.error},
                            {"timed_out", r.timed_out},
                            {"exit_code", r.exit_code},
                            {"signal", r.signal},
                            {"oom_killed", r.oom_killed},
                            {"out", r.out},
                            {"err", r.err},
                            {"duration_s", r.duration_s}};
  // A trial's output may hold bytes that are not UTF-8: replaced, not a failed answer.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<ProcessResult> decode_response(const std::string& line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  ProcessResult p;
  try {
    p.started = j.value("started", false);
    p.error = j.value("error", "");
    p.timed_out = j.value("timed_out", false);
    p.exit_code = j.value("exit_code", -1);
    p.signal = j.value("signal", 0);
    p.oom_killed = j.value("oom_killed", false);
    p.out = j.value("out", "");
    p.err = j.value("err", "");
    p.duration_s = j.value("duration_s", 0.0);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a field of the wrong type
  }
  return p;
}

}  // namespace slapo::runners
