#include "cost/collectives.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "cost/fit.h"

namespace slapo::cost {

std::string CollectiveProfile::to_json() const {
  nlohmann::ordered_json j;
  j["ranks"] = ranks;
  j["fingerprint"] = nlohmann::ordered_json::parse(fingerprint_json);
  j["code_revision"] = code_revision;
  j["profile_s"] = profile_s;
  nlohmann::ordered_json s = nlohmann::ordered_json::array();
  for (const CollectiveSample& c : samples)
    s.push_back({{"op", c.op}, {"bytes", c.bytes}, {"ms", c.ms}});
  j["samples"] = s;
  return j.dump();
}

CollectiveProfile CollectiveProfile::from_json(const std::string& json, const std::string& origin) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  SLAPO_CHECK(j.is_object() && j.contains("samples") && j["samples"].is_array(), ErrorCode::kParse,
              origin, ": not a collective profile (a JSON object with samples)");
  CollectiveProfile p;
  try {
    p.ranks = j.at("ranks").get<int>();
    p.fingerprint_json = j.at("fingerprint").dump();
    p.code_revision = j.value("code_revision", "");
    p.profile_s = j.value("profile_s", 0.0);
    for (const auto& s : j["samples"]) {
      p.samples.push_back(
          {s.at("op").get<std::string>(), s.at("bytes").get<double>(), s.at("ms").get<double>()});
    }
  } catch (const nlohmann::json::exception& e) {
    SLAPO_FAIL(ErrorCode::kParse, origin,
               ": a collective profile with a missing or mistyped field: ", e.what());
  }
  return p;
}

CollectiveModel::CollectiveModel(const CollectiveProfile& profile)
    : measured_ranks_(std::max(2, profile.ranks)) {
  std::map<std::string, std::vector<std::pair<double, double>>> by_op;
  for (const CollectiveSample& s : profile.samples) by_op[s.op].emplace_back(s.bytes, s.ms);
  auto fit = [&](const char* op) {
    const auto& xy = by_op[op];
    std::set<double> sizes;
    for (const auto& [bytes, ms] : xy) sizes.insert(bytes);
    SLAPO_CHECK(sizes.size() >= 2, ErrorCode::kInvalidArgument, "collective profile: ", op,
                " was timed at ", sizes.size(), " message size(s); the fit needs two");
    auto [alpha, beta] = fit_line(xy);
    // A negative intercept or slope is noise at the ends of the sizes measured.
    return AlphaBeta{std::max(0.0, alpha), std::max(0.0, beta)};
  };
  all_reduce_ = fit("all_reduce");
  all_gather_ = fit("all_gather");
  send_ = fit("send_recv");
  has_gradient_sync_ = by_op.count("gradient_sync") > 0;
  if (has_gradient_sync_) gradient_sync_ = fit("gradient_sync");
}

double CollectiveModel::all_reduce_ms(double bytes, int64_t ranks, double calls) const {
  if (ranks <= 1 || calls <= 0) return 0;
  const double n = static_cast<double>(ranks), n0 = measured_ranks_;
  const double steps = (n - 1) / (n0 - 1);
  const double volume = (2 * (n - 1) / n) / (2 * (n0 - 1) / n0);
  return all_reduce_.alpha_ms * calls * steps + all_reduce_.beta_ms_per_byte * bytes * volume;
}

double CollectiveModel::all_gather_ms(double bytes, int64_t ranks, double calls) const {
  if (ranks <= 1 || calls <= 0) return 0;
  const double steps = (static_cast<double>(ranks) - 1) / (measured_ranks_ - 1);
  return (all_gather_.alpha_ms * calls + all_gather_.beta_ms_per_byte * bytes) * steps;
}

double CollectiveModel::send_ms(double bytes) const { return send_.at(bytes); }

double CollectiveModel::gradient_sync_ms(double bytes, int64_t ranks, double bucket_bytes) const {
  if (ranks <= 1 || bytes <= 0) return 0;
  const double buckets = std::max(1.0, std::ceil(bytes / bucket_bytes));
  if (!has_gradient_sync_) return all_reduce_ms(bytes, ranks, buckets);
  // As measured, and for another group size what its all-reduces take more or less (the ring
  // formulas of all_reduce_ms); the packing, over each rank's own bytes, does not change.
  return std::max(0.0, gradient_sync_.at(bytes) + all_reduce_ms(bytes, ranks, buckets) -
                           all_reduce_ms(bytes, measured_ranks_, buckets));
}

}  // namespace slapo::cost
