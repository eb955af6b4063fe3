#include "core/trial.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace slapo {

namespace {
constexpr struct {
  TrialStatus status;
  const char* name;
} kStatusNames[] = {
    {TrialStatus::kOk, "ok"},
    {TrialStatus::kOom, "oom"},
    {TrialStatus::kInvalid, "invalid"},
    {TrialStatus::kScheduleError, "schedule_error"},
    {TrialStatus::kRuntimeError, "runtime_error"},
    {TrialStatus::kTimeout, "timeout"},
    {TrialStatus::kCrashed, "crashed"},
    {TrialStatus::kPruned, "pruned"},
    {TrialStatus::kInterrupted, "interrupted"},
    {TrialStatus::kInvalidMetric, "invalid_metric"},
};
}  // namespace

const char* to_string(TrialStatus status) {
  for (const auto& entry : kStatusNames) {
    if (entry.status == status) return entry.name;
  }
  return "unknown";
}

std::optional<TrialStatus> trial_status_from_string(const std::string& name) {
  for (const auto& entry : kStatusNames) {
    if (name == entry.name) return entry.status;
  }
  return std::nullopt;
}

std::string TrialResult::to_json() const {
  nlohmann::ordered_json j;
  j["status"] = slapo::to_string(status);
  j["error"] = error;
  nlohmann::ordered_json m = nlohmann::ordered_json::object();
  for (const auto& [name, value] : metrics) {
    if (std::isfinite(value))
      m[name] = value;
    else
      m[name] = nullptr;
  }
  j["metrics"] = m;
  j["log_tail"] = log_tail;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

TrialResult TrialResult::from_json(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, out_of_range (1e616)
    SLAPO_FAIL(ErrorCode::kParse, origin, ": not valid JSON: ", e.what());
  }
  SLAPO_CHECK(j.is_object() && j.contains("status") && j["status"].is_string(), ErrorCode::kParse,
              origin, ": expected an object with a \"status\"");
  const auto status = trial_status_from_string(j["status"].get<std::string>());
  SLAPO_CHECK(status.has_value(), ErrorCode::kParse, origin, ": unknown status '",
              j["status"].get<std::string>(), "'");
  TrialResult r;
  r.status = *status;
  if (j.contains("error") && j["error"].is_string()) r.error = j["error"].get<std::string>();
  if (j.contains("log_tail") && j["log_tail"].is_string())
    r.log_tail = j["log_tail"].get<std::string>();
  if (j.contains("metrics") && j["metrics"].is_object()) {
    for (auto it = j["metrics"].begin(); it != j["metrics"].end(); ++it) {
      if (it.value().is_number()) r.metrics[it.key()] = it.value().get<double>();
    }
  }
  return r;
}

bool lower_is_better(const std::string& metric) {
  if (metric.rfind("loss", 0) == 0) return true;
  bool time_or_memory = false;
  size_t start = 0;
  while (start <= metric.size()) {
    const size_t end = std::min(metric.find('_', start), metric.size());
    const std::string token = metric.substr(start, end - start);
    if (token == "per") return false;  // a rate: samples_per_s, tokens_per_s
    time_or_memory = time_or_memory || token == "ms" || token == "s" || token == "bytes";
    start = end + 1;
  }
  return time_or_memory;
}

TrialResult failed_trial(TrialStatus status, std::string error) {
  TrialResult r;
  r.status = status;
  r.error = std::move(error);
  return r;
}

uint64_t parse_bytes(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  std::string unit(end ? end : "");
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.erase(0, 1);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const struct {
    const char* name;
    double factor;
  } kUnits[] = {{"", 1},          {"b", 1},
                {"k", 1024},      {"kb", 1e3},
                {"kib", 1024},    {"m", 1 << 20},
                {"mb", 1e6},      {"mib", 1 << 20},
                {"g", 1 << 30},   {"gb", 1e9},
                {"gib", 1 << 30}, {"t", 1099511627776.0},
                {"tb", 1e12},     {"tib", 1099511627776.0}};
  SLAPO_CHECK(end != text.c_str() && std::isfinite(number) && number >= 0,
              ErrorCode::kInvalidArgument, what, ": '", text,
              "' is not a size such as 512MiB or 2GiB");
  for (const auto& u : kUnits) {
    if (unit == u.name) return static_cast<uint64_t>(number * u.factor);
  }
  SLAPO_FAIL(ErrorCode::kInvalidArgument, what, ": unknown unit in '", text,
             "' (use B, KiB, MiB, GiB, KB, MB, GB)");
}

}  // namespace slapo
