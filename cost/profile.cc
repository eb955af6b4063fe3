#include "cost/profile.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace slapo::cost {

std::string Profile::to_json() const {
  nlohmann::ordered_json j;
  j["key"] = nlohmann::ordered_json::parse(key_json);
  j["fingerprint"] = nlohmann::ordered_json::parse(fingerprint_json);
  j["code_revision"] = code_revision;
  j["layers"] = layers;
  j["profile_s"] = profile_s;
  nlohmann::ordered_json points_json = nlohmann::ordered_json::array();
  for (const ProfilePoint& p : points) {
    points_json.push_back({{"batch", p.batch},
                           {"ckpt_blocks", p.ckpt_blocks},
                           {"step_ms", p.step_ms},
                           {"peak_bytes", p.peak_bytes}});
  }
  j["points"] = points_json;
  return j.dump();
}

Profile Profile::from_json(const std::string& json, const std::string& origin) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  SLAPO_CHECK(j.is_object() && j.contains("points") && j["points"].is_array(), ErrorCode::kParse,
              origin, ": not a profile (a JSON object with points)");
  Profile p;
  try {
    p.key_json = j.at("key").dump();
    p.fingerprint_json = j.at("fingerprint").dump();
    p.code_revision = j.value("code_revision", "");
    p.layers = j.at("layers").get<int64_t>();
    p.profile_s = j.value("profile_s", 0.0);
    for (const auto& q : j["points"]) {
      p.points.push_back({q.at("batch").get<int64_t>(), q.at("ckpt_blocks").get<int64_t>(),
                          q.at("step_ms").get<double>(), q.at("peak_bytes").get<double>()});
    }
  } catch (const nlohmann::json::exception& e) {
    SLAPO_FAIL(ErrorCode::kParse, origin,
               ": a profile with a missing or mistyped field: ", e.what());
  }
  return p;
}

}  // namespace slapo::cost
