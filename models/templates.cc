#include "models/templates.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "models/attention.h"
#include "models/zoo.h"

namespace slapo::models {

namespace {

const std::vector<std::string> kWorkloadKnobs = {"batch_size", "seq_len", "micro_batches"};

const TemplateInfo& find_template(const std::string& name) {
  std::string names;
  for (const TemplateInfo& t : schedule_templates()) {
    if (t.name == name) return t;
    names += (names.empty() ? "" : ", ") + t.name;
  }
  SLAPO_FAIL(ErrorCode::kInvalidArgument, "unknown schedule template '", name, "' (templates: ", names, ")");
}

std::string string_knob(const Config& config, const std::string& name, const std::string& fallback) {
  const Value* v = config.find(name);
  if (!v) return fallback;
  const std::string* s = std::get_if<std::string>(v);
  SLAPO_CHECK(s != nullptr, ErrorCode::kInvalidArgument, "knob '", name, "': expected a string, found ", to_string(*v));
  return *s;
}

double number_knob(const Value& v, const std::string& name) {
  SLAPO_CHECK(is_number(v) && !std::holds_alternative<bool>(v), ErrorCode::kInvalidArgument, "knob '", name,
              "': expected a number, found ", to_string(v));
  return as_number(v);
}

}  // namespace

const std::vector<TemplateInfo>& schedule_templates() {
  static const std::vector<TemplateInfo> templates = {
      {"gpt", "gpt", {"ckpt_ratio", "ckpt_layers", "attn"}},
      {"bert", "bert", {"ckpt_ratio", "ckpt_layers", "attn"}},
      {"mlp", "mlp", {"ckpt_ratio", "ckpt_layers"}},
  };
  return templates;
}

std::string default_template(const ModelSpec& spec) { return spec.family; }

int64_t checkpointed_blocks(const ModelSpec& spec, const Config& config) {
  if (const Value* ratio = config.find("ckpt_ratio")) {
    return static_cast<int64_t>(std::floor(number_knob(*ratio, "ckpt_ratio") * static_cast<double>(spec.layers) + 0.5));
  }
  if (const Value* layers = config.find("ckpt_layers")) return static_cast<int64_t>(number_knob(*layers, "ckpt_layers"));
  return 0;
}

void check_template(const std::string& name, const ModelSpec& spec, const Config& config) {
  const TemplateInfo& t = find_template(name);
  SLAPO_CHECK(t.family == spec.family, ErrorCode::kInvalidArgument, "schedule template '", name, "' is for ",
              t.family, " models, not '", spec.preset, "' (", spec.family, ")");
  for (const auto& [knob, value] : config.entries()) {
    const bool known = std::find(t.knobs.begin(), t.knobs.end(), knob) != t.knobs.end() ||
                       std::find(kWorkloadKnobs.begin(), kWorkloadKnobs.end(), knob) != kWorkloadKnobs.end();
    if (!known) {
      std::string names;
      for (const auto& k : t.knobs) names += (names.empty() ? "" : ", ") + k;
      for (const auto& k : kWorkloadKnobs) names += ", " + k;
      SLAPO_FAIL(ErrorCode::kInvalidArgument, "knob '", knob, "' is not understood by schedule template '", name,
                 "' (knobs: ", names, ")");
    }
  }
  SLAPO_CHECK(!(config.contains("ckpt_ratio") && config.contains("ckpt_layers")), ErrorCode::kInvalidArgument,
              "give either knob 'ckpt_ratio' or 'ckpt_layers', not both");
  if (const Value* ratio = config.find("ckpt_ratio")) {
    const double r = number_knob(*ratio, "ckpt_ratio");
    SLAPO_CHECK(r >= 0 && r <= 1, ErrorCode::kInvalidArgument, "knob 'ckpt_ratio': ", r, " is not in [0, 1]");
  }
  if (const Value* layers = config.find("ckpt_layers")) {
    const double n = number_knob(*layers, "ckpt_layers");
    SLAPO_CHECK(n >= 0 && n <= static_cast<double>(spec.layers) && n == std::floor(n), ErrorCode::kInvalidArgument,
                "knob 'ckpt_layers': ", n, " is not a whole number of blocks in [0, ", spec.layers, "]");
  }
  const std::string attn = string_knob(config, "attn", "naive");
  SLAPO_CHECK(attn == "naive" || attn == "fused_qkv" || attn == "baddbmm", ErrorCode::kInvalidArgument,
              "knob 'attn': '", attn, "' is not an attention implementation (naive, fused_qkv, baddbmm)");
}

void replace_with_zoo_module(schedule::Schedule& target, const std::string& type_name) {
  auto original = std::dynamic_pointer_cast<AttentionImpl>(target.module());
  const bool fused = type_name == c10::demangle(typeid(FusedQkvAttentionImpl).name());
  const bool one_pass = type_name == c10::demangle(typeid(OnePassAttentionImpl).name());
  SLAPO_CHECK((fused || one_pass) && original != nullptr, ErrorCode::kInvalidArgument, "cannot replace '",
              target.path(), "' by ", type_name, ": the zoo makes attention variants from an original attention only");
  if (fused) target.replace(FusedQkvAttention(*original));
  else target.replace(OnePassAttention(*original));
}

void apply_template(schedule::Schedule& sch, const ModelSpec& spec, const std::string& name, const Config& config) {
  check_template(name, spec, config);
  const std::string blocks = blocks_path(spec);
  const std::string attn = string_knob(config, "attn", "naive");
  if (attn != "naive") {
    const std::string type = c10::demangle(attn == "fused_qkv" ? typeid(FusedQkvAttentionImpl).name()
                                                                : typeid(OnePassAttentionImpl).name());
    for (int64_t i = 0; i < spec.layers; ++i) replace_with_zoo_module(sch[blocks + "." + std::to_string(i) + ".attn"], type);
  }
  const int64_t ckpt = checkpointed_blocks(spec, config);
  for (int64_t i = 0; i < ckpt; ++i) sch[blocks + "." + std::to_string(i)].checkpoint();
}

}  // namespace slapo::models
