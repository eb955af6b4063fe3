// A profile request as JSON: what `slapo-tune worker --profile` receives (runners/profiler.h).

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "runners/profiler.h"

namespace slapo::runners {

std::string ProfileRequest::to_json() const {
  nlohmann::ordered_json j;
  j["workload"] = nlohmann::ordered_json::parse(workload.to_json());
  j["knobs"] = nlohmann::ordered_json::parse(knobs.to_json());
  j["batch_lo"] = batch_lo;
  j["batch_hi"] = batch_hi;
  if (!batches_taken.empty()) j["batches_taken"] = batches_taken;
  if (base) {
    j["base"] = nlohmann::ordered_json::parse(base->to_json());
    j["base_knobs"] = nlohmann::ordered_json::parse(base_knobs.to_json());
    if (head) j["head"] = true;
    if (optimizer) j["optimizer"] = true;
    if (!siblings.empty()) {
      j["siblings"] = nlohmann::ordered_json::array();
      for (const Config& c : siblings)
        j["siblings"].push_back(nlohmann::ordered_json::parse(c.to_json()));
    }
  }
  if (extend) {
    j["extend"] = nlohmann::ordered_json::parse(extend->to_json());
    if (!extend_batches.empty()) j["extend_batches"] = extend_batches;
  }
  if (!gpipe_step) j["gpipe_step"] = false;
  if (extend_gpipe_step) j["extend_gpipe_step"] = true;
  if (!checkpointed_step) j["checkpointed_step"] = false;
  if (extend_checkpointed_step) j["extend_checkpointed_step"] = true;
  if (collectives) j["collectives"] = true;
  return j.dump();
}

namespace {

// The request's array `field` of batch sizes (none when absent). Throws Error(kInvalidArgument)
// naming `origin` and the field for anything but batch sizes of one or more.
std::vector<int64_t> batch_sizes(const nlohmann::json& request, const char* field,
                                 const std::string& origin) {
  std::vector<int64_t> out;
  if (!request.contains(field)) return out;
  const nlohmann::json& batches = request[field];
  SLAPO_CHECK(batches.is_array(), ErrorCode::kInvalidArgument, origin, ": a profile request's ",
              field, " are an array of batch sizes");
  for (const nlohmann::json& b : batches) {
    SLAPO_CHECK(b.is_number_integer() && b.get<int64_t>() >= 1, ErrorCode::kInvalidArgument, origin,
                ": a profile request's ", field, " are batch sizes of one or more");
    out.push_back(b.get<int64_t>());
  }
  return out;
}

}  // namespace

ProfileRequest ProfileRequest::from_json(const std::string& json, const std::string& origin) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  SLAPO_CHECK(j.is_object() && j.contains("workload") && j.contains("knobs") &&
                  j.value("batch_lo", 0) >= 1 && j.value("batch_hi", 0) >= 1,
              ErrorCode::kInvalidArgument, origin,
              ": not a profile request (workload, knobs, batch_lo, batch_hi)");
  for (const char* flag : {"head", "optimizer", "gpipe_step", "extend_gpipe_step",
                           "checkpointed_step", "extend_checkpointed_step", "collectives"}) {
    SLAPO_CHECK(!j.contains(flag) || j[flag].is_boolean(), ErrorCode::kInvalidArgument, origin,
                ": a profile request's ", flag, " is true or false");
  }
  ProfileRequest r;
  r.workload = Workload::from_json(j["workload"].dump(), origin);
  r.knobs = Config::from_json(j["knobs"].dump(), origin);
  r.batch_lo = j["batch_lo"].get<int64_t>();
  r.batch_hi = j["batch_hi"].get<int64_t>();
  r.batches_taken = batch_sizes(j, "batches_taken", origin);
  if (j.contains("base")) {
    // Without its knobs the base's block could not be built: never guessed.
    SLAPO_CHECK(j.contains("base_knobs"), ErrorCode::kInvalidArgument, origin,
                ": a profile request with a base needs the base's knobs (base_knobs)");
    r.base = cost::Profile::from_json(j["base"].dump(), origin);
    r.base_knobs = Config::from_json(j["base_knobs"].dump(), origin);
    r.head = j.value("head", false);
    r.optimizer = j.value("optimizer", false);
    if (j.contains("siblings")) {
      SLAPO_CHECK(j["siblings"].is_array(), ErrorCode::kInvalidArgument, origin,
                  ": a profile request's siblings are an array of knobs");
      for (const nlohmann::json& c : j["siblings"])
        r.siblings.push_back(Config::from_json(c.dump(), origin));
    }
  }
  if (j.contains("extend")) {
    r.extend = cost::Profile::from_json(j["extend"].dump(), origin);
    r.extend_batches = batch_sizes(j, "extend_batches", origin);
  }
  r.gpipe_step = j.value("gpipe_step", true);
  r.extend_gpipe_step = j.value("extend_gpipe_step", false);
  r.checkpointed_step = j.value("checkpointed_step", true);
  r.extend_checkpointed_step = j.value("extend_checkpointed_step", false);
  r.collectives = j.value("collectives", false);
  return r;
}

}  // namespace slapo::runners
