#include "runners/runner_spec.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/process.h"
#include "runners/inprocess_runner.h"
#include "runners/single_node_runner.h"
#include "runners/subprocess_runner.h"

namespace slapo::runners {

namespace {

const char* const kWorkloadKinds[] = {"inprocess", "subprocess", "single-node"};

// What decides a command's measurements. Fields at their defaults are left out, so the keys of
// tasks recorded before a field existed stay the same.
nlohmann::ordered_json command_key(const CommandOptions& c) {
  nlohmann::ordered_json key{{"command", c.argv}};
  if (c.metrics.size() == 1) {
    key["metric_regex"] = c.metrics[0].regex;  // its name is the task's objective
  } else {
    nlohmann::ordered_json metrics = nlohmann::ordered_json::array();
    for (const MetricPattern& m : c.metrics) metrics.push_back({m.name, m.regex});
    key["metrics"] = metrics;
  }
  key["oom_pattern"] = c.oom_pattern;
  key["oom_exit_code"] =
      c.oom_exit_code ? nlohmann::ordered_json(*c.oom_exit_code) : nlohmann::ordered_json(nullptr);
  key["timeout_s"] = c.timeout_s;
  if (c.nproc > 1) key["nproc"] = c.nproc;
  if (c.metric_rank != 0) key["metric_rank"] = c.metric_rank;
  if (c.memory_budget_bytes > 0) key["memory_budget_bytes"] = c.memory_budget_bytes;
  if (!c.env.empty()) key["env"] = c.env;
  if (c.bool_true != "1" || c.bool_false != "0") key["booleans"] = {c.bool_true, c.bool_false};
  return key;
}

CommandOptions command_from_key(const nlohmann::json& key, const std::string& metric_name) {
  CommandOptions c;
  c.argv = key.at("command").get<std::vector<std::string>>();
  if (!metric_name.empty()) c.metric_name = metric_name;
  if (key.contains("metrics")) {
    c.metrics.clear();
    for (const auto& m : key["metrics"])
      c.metrics.push_back({m.at(0).get<std::string>(), m.at(1).get<std::string>()});
  } else {
    c.metrics = {{c.metric_name, key.value("metric_regex", std::string(kDefaultMetricRegex))}};
  }
  c.oom_pattern = key.value("oom_pattern", c.oom_pattern);
  if (key.contains("oom_exit_code") && key["oom_exit_code"].is_number_integer()) {
    c.oom_exit_code = key["oom_exit_code"].get<int>();
  }
  c.timeout_s = key.value("timeout_s", 0.0);
  c.nproc = key.value("nproc", 1);
  c.metric_rank = key.value("metric_rank", 0);
  c.memory_budget_bytes = key.value("memory_budget_bytes", uint64_t{0});
  if (key.contains("env")) c.env = key["env"].get<std::map<std::string, std::string>>();
  if (key.contains("booleans")) {
    c.bool_true = key["booleans"].at(0).get<std::string>();
    c.bool_false = key["booleans"].at(1).get<std::string>();
  }
  return c;
}

}  // namespace

RunnerSpec RunnerSpec::for_workload(Workload workload, const std::string& kind, int nproc,
                                    double timeout_s, bool fork_server) {
  SLAPO_CHECK(nproc >= 1 && nproc <= 1024, ErrorCode::kInvalidArgument, "runner: ", nproc,
              " ranks per trial; expected a number of ranks from 1 to 1024");
  SLAPO_CHECK(std::find(std::begin(kWorkloadKinds), std::end(kWorkloadKinds), kind) !=
                  std::end(kWorkloadKinds),
              ErrorCode::kInvalidArgument, "runner '", kind,
              "': expected inprocess, subprocess or single-node");
  SLAPO_CHECK(!(kind == "inprocess" && nproc > 1), ErrorCode::kInvalidArgument,
              "the inprocess runner runs one rank; ", nproc,
              " ranks per trial need processes (single-node)");
  RunnerSpec s;
  s.kind = nproc > 1 ? "single-node" : kind;
  s.workload = std::move(workload);
  s.nproc = nproc;
  s.timeout_s = timeout_s;
  s.fork_server = fork_server;
  return s;
}

RunnerSpec RunnerSpec::for_command(CommandOptions command) {
  RunnerSpec s;
  s.kind = "command";
  s.nproc = command.nproc;
  s.timeout_s = command.timeout_s;
  s.command = std::move(command);
  return s;
}

std::string RunnerSpec::workload_key() const {
  if (command) return command_key(*command).dump();
  SLAPO_INTERNAL_ASSERT(workload.has_value(),
                        "a runner spec with neither a workload nor a command");
  return workload->to_json();
}

std::string RunnerSpec::natural_objective() const {
  return command ? command->metric_name : std::string(metric::kDefaultObjective);
}

std::string RunnerSpec::to_json() const {
  nlohmann::ordered_json j;
  j["kind"] = kind;
  if (workload) j["workload"] = nlohmann::ordered_json::parse(workload->to_json());
  if (command) {
    j["command"] = command_key(*command);
    j["metric_name"] = command->metric_name;
    // Not part of the task's key, but of how it ran: replay runs it the same way.
    if (!command->cwd.empty()) j["cwd"] = command->cwd;
    if (command->early_stopping.enabled) {
      j["early_stopping"] = {{"metric", command->early_stopping.metric},
                             {"minimize", command->early_stopping.minimize},
                             {"warmup", command->early_stopping.warmup},
                             {"min_trials", command->early_stopping.min_trials}};
    }
  }
  j["nproc"] = nproc;
  j["timeout_s"] = timeout_s;
  j["fork_server"] = fork_server;
  return j.dump();
}

RunnerSpec RunnerSpec::from_json(const std::string& json, const std::string& origin) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  SLAPO_CHECK(j.is_object() && j.contains("kind") && j["kind"].is_string(), ErrorCode::kParse,
              origin, ": not a runner spec (a JSON object with a kind)");
  try {
    if (j.contains("command")) {
      CommandOptions c = command_from_key(j["command"], j.value("metric_name", ""));
      c.cwd = j.value("cwd", "");
      if (j.contains("early_stopping")) {
        const auto& e = j["early_stopping"];
        c.early_stopping.enabled = true;
        c.early_stopping.metric = e.value("metric", c.metric_name);
        c.early_stopping.minimize = e.value("minimize", false);
        c.early_stopping.warmup = e.value("warmup", c.early_stopping.warmup);
        c.early_stopping.min_trials = e.value("min_trials", c.early_stopping.min_trials);
      }
      return for_command(c);
    }
    SLAPO_CHECK(j.contains("workload"), ErrorCode::kParse, origin,
                ": a runner spec needs a workload or a command");
    return for_workload(Workload::from_json(j["workload"].dump(), origin),
                        j["kind"].get<std::string>(), j.value("nproc", 1),
                        j.value("timeout_s", defaults::kTrialTimeoutS),
                        j.value("fork_server", true));
  } catch (const nlohmann::json::exception& e) {
    SLAPO_FAIL(ErrorCode::kParse, origin,
               ": a runner spec with a field of the wrong type: ", e.what());
  }
}

RunnerSpec RunnerSpec::from_task(const std::string& workload_key, const std::string& kind,
                                 int world_size, const std::string& objective) {
  const nlohmann::json key = nlohmann::json::parse(workload_key, nullptr, false);
  if (key.is_object() && key.contains("command")) {
    try {
      return for_command(command_from_key(key, objective));
    } catch (const nlohmann::json::exception& e) {
      SLAPO_FAIL(ErrorCode::kParse, "the task's command: ", e.what());
    }
  }
  return for_workload(Workload::from_json(workload_key, "the task's workload"), kind, world_size,
                      defaults::kTrialTimeoutS, /*fork_server=*/true);
}

std::unique_ptr<Runner> make_runner(const RunnerSpec& spec, std::vector<std::string> worker) {
  if (spec.command) return std::make_unique<CommandRunner>(*spec.command);
  SLAPO_INTERNAL_ASSERT(spec.workload.has_value(),
                        "a runner spec with neither a workload nor a command");
  if (spec.kind == "inprocess") return std::make_unique<InProcessRunner>(*spec.workload);
  if (worker.empty()) worker = {self_executable(), "worker"};
  // What both process runners take: the worker, what it trains, the time limit.
  auto with_worker = [&](auto options) {
    options.worker = std::move(worker);
    options.workload_json = spec.workload->to_json();
    options.timeout_s = spec.timeout_s;
    return options;
  };
  if (spec.kind == "single-node") {
    SingleNodeOptions s = with_worker(SingleNodeOptions{});
    s.nproc = spec.nproc;
    return std::make_unique<SingleNodeRunner>(s);
  }
  SubprocessOptions s = with_worker(SubprocessOptions{});
  s.fork_server = spec.fork_server;
  return std::make_unique<SubprocessRunner>(s);
}

}  // namespace slapo::runners
