#include "cost/profile.h"

#include <tuple>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace slapo::cost {

namespace {

// The point's fields in JSON order: one list that writing and reading share.
template <typename P, typename F>
void for_each_field(P& p, F&& f) {
  f("layers", p.layers);
  f("batch", p.batch);
  f("ckpt_blocks", p.ckpt_blocks);
  f("micro_batches", p.micro_batches);
  f("step_ms", p.step_ms);
  f("peak_bytes", p.peak_bytes);
  f("all_reduce_calls", p.collectives.all_reduce_calls);
  f("all_reduce_bytes", p.collectives.all_reduce_bytes);
  f("all_gather_calls", p.collectives.all_gather_calls);
  f("all_gather_bytes", p.collectives.all_gather_bytes);
}

template <typename S, typename F>
void for_each_shape_field(S& s, F&& f) {
  f("block_params", s.block_params);
  f("prologue_params", s.prologue_params);
  f("epilogue_params", s.epilogue_params);
  f("tied_params", s.tied_params);
  f("message_bytes_per_sample", s.message_bytes_per_sample);
}

// Added to the shape later: a profile stored before reads them as 0 (not counted). The largest
// tensors since 2026-11-28; the token batch's bytes since 2026-11-29 (0: counted as the profile's
// steps held them).
template <typename S, typename F>
void for_each_later_shape_field(S& s, F&& f) {
  f("largest_block_tensor", s.largest_block_tensor);
  f("largest_prologue_tensor", s.largest_prologue_tensor);
  f("largest_epilogue_tensor", s.largest_epilogue_tensor);
  f("input_bytes_at0", s.input_bytes_at0);
  f("input_bytes_per_sample", s.input_bytes_per_sample);
  f("profiled_input_bytes_per_sample", s.profiled_input_bytes_per_sample);
  f("loss_chunk_samples", s.loss_chunk_samples);
}

// Measured since 2026-11-29 where the space checkpoints: a profile stored before has none.
template <typename B, typename F>
void for_each_checkpointed_block_field(B& b, F&& f) {
  f("ckpt_kept_at0", b.ckpt_kept_at0);
  f("ckpt_kept_per_sample", b.ckpt_kept_per_sample);
}

// Measured since 2026-11-28 (the block alone): a profile stored before has none.
template <typename B, typename F>
void for_each_block_bytes_field(B& b, F&& f) {
  f("kept_at0", b.kept_at0);
  f("kept_per_sample", b.kept_per_sample);
  f("backward_at0", b.backward_at0);
  f("backward_per_sample", b.backward_per_sample);
}

}  // namespace

CollectiveTally CollectiveTally::operator+(const CollectiveTally& o) const {
  return {all_reduce_calls + o.all_reduce_calls, all_reduce_bytes + o.all_reduce_bytes,
          all_gather_calls + o.all_gather_calls, all_gather_bytes + o.all_gather_bytes};
}

CollectiveTally CollectiveTally::operator-(const CollectiveTally& o) const {
  return *this + o * -1.0;
}

CollectiveTally CollectiveTally::operator*(double k) const {
  return {all_reduce_calls * k, all_reduce_bytes * k, all_gather_calls * k, all_gather_bytes * k};
}

bool CollectiveTally::operator==(const CollectiveTally& o) const {
  return std::tie(all_reduce_calls, all_reduce_bytes, all_gather_calls, all_gather_bytes) ==
         std::tie(o.all_reduce_calls, o.all_reduce_bytes, o.all_gather_calls, o.all_gather_bytes);
}

bool ProfilePoint::operator==(const ProfilePoint& o) const {
  return std::tie(layers, batch, ckpt_blocks, micro_batches, step_ms, peak_bytes, collectives,
                  derived) == std::tie(o.layers, o.batch, o.ckpt_blocks, o.micro_batches, o.step_ms,
                                       o.peak_bytes, o.collectives, o.derived);
}

bool ModelShape::operator==(const ModelShape& o) const {
  return block_params == o.block_params && prologue_params == o.prologue_params &&
         epilogue_params == o.epilogue_params && tied_params == o.tied_params &&
         message_bytes_per_sample == o.message_bytes_per_sample &&
         largest_block_tensor == o.largest_block_tensor &&
         largest_prologue_tensor == o.largest_prologue_tensor &&
         largest_epilogue_tensor == o.largest_epilogue_tensor &&
         input_bytes_at0 == o.input_bytes_at0 &&
         input_bytes_per_sample == o.input_bytes_per_sample &&
         profiled_input_bytes_per_sample == o.profiled_input_bytes_per_sample &&
         loss_chunk_samples == o.loss_chunk_samples;
}

std::string Profile::to_json() const {
  nlohmann::ordered_json j;
  j["key"] = nlohmann::ordered_json::parse(key_json);
  j["fingerprint"] = nlohmann::ordered_json::parse(fingerprint_json);
  j["code_revision"] = code_revision;
  j["layers"] = layers;
  j["tp"] = tp;
  nlohmann::ordered_json shape_json;
  for_each_shape_field(shape, [&](const char* name, double v) { shape_json[name] = v; });
  for_each_later_shape_field(shape, [&](const char* name, double v) { shape_json[name] = v; });
  j["shape"] = shape_json;
  j["optimizer_ms_per_param"] = optimizer_ms_per_param;
  if (optimizer_temp_bytes_per_element >= 0)
    j["optimizer_temp_bytes_per_element"] = optimizer_temp_bytes_per_element;
  j["prologue_ms_per_sample"] = prologue_ms_per_sample;
  if (block_bytes.measured) {
    nlohmann::ordered_json b;
    for_each_block_bytes_field(block_bytes, [&](const char* name, double v) { b[name] = v; });
    if (block_bytes.checkpointed_measured) {
      for_each_checkpointed_block_field(block_bytes,
                                        [&](const char* name, double v) { b[name] = v; });
    }
    j["block_bytes"] = b;
  }
  j["profile_s"] = profile_s;
  nlohmann::ordered_json points_json = nlohmann::ordered_json::array();
  for (const ProfilePoint& p : points) {
    nlohmann::ordered_json q;
    for_each_field(p, [&](const char* name, const auto& v) { q[name] = v; });
    if (p.derived) q["derived"] = true;
    points_json.push_back(q);
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
    p.tp = j.at("tp").get<int64_t>();
    for_each_shape_field(
        p.shape, [&](const char* name, double& v) { v = j.at("shape").at(name).get<double>(); });
    for_each_later_shape_field(
        p.shape, [&](const char* name, double& v) { v = j.at("shape").value(name, 0.0); });
    p.optimizer_ms_per_param = j.at("optimizer_ms_per_param").get<double>();
    p.optimizer_temp_bytes_per_element = j.value("optimizer_temp_bytes_per_element", -1.0);
    p.prologue_ms_per_sample = j.at("prologue_ms_per_sample").get<double>();
    if (j.contains("block_bytes")) {
      p.block_bytes.measured = true;
      for_each_block_bytes_field(p.block_bytes, [&](const char* name, double& v) {
        v = j.at("block_bytes").at(name).get<double>();
      });
      p.block_bytes.checkpointed_measured = j.at("block_bytes").contains("ckpt_kept_per_sample");
      for_each_checkpointed_block_field(p.block_bytes, [&](const char* name, double& v) {
        v = j.at("block_bytes").value(name, 0.0);
      });
    }
    p.profile_s = j.value("profile_s", 0.0);
    for (const auto& q : j["points"]) {
      ProfilePoint point;
      for_each_field(point, [&](const char* name, auto& v) {
        v = q.at(name).get<std::remove_reference_t<decltype(v)>>();
      });
      point.derived = q.value("derived", false);
      p.points.push_back(point);
    }
  } catch (const nlohmann::json::exception& e) {
    SLAPO_FAIL(ErrorCode::kParse, origin,
               ": a profile with a missing or mistyped field (a profile of an earlier slapo is "
               "measured again): ",
               e.what());
  }
  return p;
}

bool BlockBytes::operator==(const BlockBytes& o) const {
  return std::tie(measured, kept_at0, kept_per_sample, backward_at0, backward_per_sample,
                  checkpointed_measured, ckpt_kept_at0, ckpt_kept_per_sample) ==
         std::tie(o.measured, o.kept_at0, o.kept_per_sample, o.backward_at0, o.backward_per_sample,
                  o.checkpointed_measured, o.ckpt_kept_at0, o.ckpt_kept_per_sample);
}

bool has_gpipe_step(const Profile& profile) {
  for (const ProfilePoint& q : profile.points) {
    if (q.layers == 1 && q.ckpt_blocks == 0 && q.micro_batches == 2) return true;
  }
  return false;
}

bool has_checkpointed_step(const Profile& profile) {
  for (const ProfilePoint& q : profile.points) {
    if (q.layers > 1 && q.ckpt_blocks > 0 && q.micro_batches == 1) return true;
  }
  return false;
}

}  // namespace slapo::cost
