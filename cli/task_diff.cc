#include "cli/task_diff.h"

#include <set>

#include <nlohmann/json.hpp>

#include "runners/system_info.h"

namespace slapo::cli {

namespace {

std::string shorten(const std::string& text) {
  return text.size() > 160 ? text.substr(0, 157) + "..." : text;
}

void json_differences(const nlohmann::json& a, const nlohmann::json& b, const std::string& path,
                      std::vector<std::string>* out) {
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
    for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
    for (const std::string& k : keys) {
      const std::string sub = path.empty() ? k : path + "." + k;
      if (!a.contains(k)) {
        out->push_back(sub + ": (absent) → " + shorten(b[k].dump()));
      } else if (!b.contains(k)) {
        out->push_back(sub + ": " + shorten(a[k].dump()) + " → (absent)");
      } else {
        json_differences(a[k], b[k], sub, out);
      }
    }
    return;
  }
  if (a != b) out->push_back(path + ": " + shorten(a.dump()) + " → " + shorten(b.dump()));
}

}  // namespace

std::vector<std::string> key_differences(const db::TaskKey& a, const db::TaskKey& b) {
  std::vector<std::string> out;
  const auto wa = nlohmann::json::parse(a.workload_json, nullptr, false);
  const auto wb = nlohmann::json::parse(b.workload_json, nullptr, false);
  if (wa.is_discarded() || wb.is_discarded()) {
    if (a.workload_json != b.workload_json) out.push_back("workload differs");
  } else {
    json_differences(wa, wb, "", &out);
  }
  if (a.space_hash != b.space_hash) out.push_back("space: another space file or parameters");
  if (a.runner != b.runner) out.push_back("runner: " + a.runner + " → " + b.runner);
  if (a.world_size != b.world_size)
    out.push_back("ranks: " + std::to_string(a.world_size) + " → " + std::to_string(b.world_size));
  if (a.fingerprint_json != b.fingerprint_json) {
    std::vector<std::string> machine;
    json_differences(nlohmann::json::parse(a.fingerprint_json, nullptr, false),
                     nlohmann::json::parse(b.fingerprint_json, nullptr, false), "machine",
                     &machine);
    // slapo's own fields are the code's, not the machine's.
    for (std::string& line : machine) {
      const std::string field = line.substr(8, line.find(':') - 8);  // after "machine."
      if (runners::is_code_field(field)) line = "slapo." + line.substr(8);
    }
    out.insert(out.end(), machine.begin(), machine.end());
  }
  return out;
}

}  // namespace slapo::cli
