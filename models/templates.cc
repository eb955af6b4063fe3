#include "models/templates.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "models/attention.h"
#include "models/pipeline_cuts.h"
#include "models/zoo.h"
#include "schedule/keyed_dropout.h"

namespace slapo::models {

namespace {

// Read by the runner and the trainer (all templates understand them).
const std::vector<std::string> kWorkloadKnobs = {"batch_size", "seq_len",       "micro_batches",
                                                 "tp",         "pp",            "dp",
                                                 "cuts",       "pipeline_schedule"};

const char* const kFusionKnobs[] = {"fuse_bias_gelu", "fuse_bias_dropout_add", "fuse_layer_norm"};

bool bool_knob(const Config& config, const char* name) {
  const Value* v = config.find(name);
  return v && std::holds_alternative<bool>(*v) && std::get<bool>(*v);
}

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
      {"gpt", "gpt", {"ckpt_ratio", "ckpt_layers", "attn", "attn_shard", "mlp_shard", "embed_shard", "decompose",
                      "fuse_bias_gelu", "fuse_bias_dropout_add", "fuse_layer_norm"}},
      {"bert", "bert", {"ckpt_ratio", "ckpt_layers", "attn", "attn_shard", "mlp_shard", "embed_shard", "decompose",
                        "fuse_bias_gelu", "fuse_bias_dropout_add", "fuse_layer_norm"}},
      {"mlp", "mlp", {"ckpt_ratio", "ckpt_layers", "mlp_shard", "embed_shard", "decompose", "fuse_bias_gelu",
                      "fuse_bias_dropout_add", "fuse_layer_norm"}},
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
  const ParallelKnobs p = parallel_knobs(spec, config);
  for (const char* knob : kFusionKnobs) {
    const Value* fuse = config.find(knob);
    SLAPO_CHECK(!(fuse && std::holds_alternative<bool>(*fuse) && std::get<bool>(*fuse) && p.tp > 1),
                ErrorCode::kInvalidArgument, "knob '", knob, "': not with tp > 1 yet (a traced block cannot hold ",
                "its tensor-parallel collectives)");
  }
  for (const char* knob : {"attn_shard", "mlp_shard"}) {
    const std::string layout = string_knob(config, knob, "col_row");
    SLAPO_CHECK(layout == "col_row" || layout == "row_col", ErrorCode::kInvalidArgument, "knob '", knob, "': '",
                layout, "' is not a layout (col_row, row_col)");
  }
  for (const char* knob : {"decompose", "fuse_bias_gelu", "fuse_bias_dropout_add", "fuse_layer_norm"}) {
    if (const Value* d = config.find(knob)) {
      SLAPO_CHECK(std::holds_alternative<bool>(*d), ErrorCode::kInvalidArgument, "knob '", knob,
                  "': expected true or false, found ", to_string(*d));
    }
  }
  const std::string embed = string_knob(config, "embed_shard", "vocab");
  SLAPO_CHECK(embed == "vocab" || embed == "hidden" || embed == "replicated", ErrorCode::kInvalidArgument,
              "knob 'embed_shard': '", embed, "' is not a layout (vocab, hidden, replicated)");
  SLAPO_CHECK(!(spec.family == "bert" && embed == "hidden" && p.tp > 1), ErrorCode::kInvalidArgument,
              "knob 'embed_shard': 'hidden' is not supported for bert (its decoder bias would be added once per",
              " rank); use vocab or replicated");
  // What tensor parallelism splits must split evenly (MLP models have no attention heads).
  const std::vector<std::pair<const char*, int64_t>> split = {
      {"heads", spec.family == "mlp" ? p.tp : spec.heads}, {"ffn", spec.ffn}, {"vocab", spec.vocab}, {"hidden", spec.hidden}};
  for (const auto& [what, size] : split) {
    SLAPO_CHECK(size % p.tp == 0, ErrorCode::kInvalidArgument, "knob 'tp': ", p.tp, " does not divide ", what, " = ",
                size, " of '", spec.preset, "'");
  }
}

ParallelKnobs parallel_knobs(const ModelSpec& spec, const Config& config) {
  ParallelKnobs p;
  auto whole = [&](const char* name, int64_t fallback) {
    const Value* v = config.find(name);
    if (!v) return fallback;
    const double x = number_knob(*v, name);
    SLAPO_CHECK(x >= 1 && x == std::floor(x), ErrorCode::kInvalidArgument, "knob '", name, "': ", x,
                " is not a whole number ≥ 1");
    return static_cast<int64_t>(x);
  };
  p.tp = whole("tp", 1);
  p.pp = whole("pp", 1);
  p.dp = whole("dp", 1);
  p.micro_batches = whole("micro_batches", 1);
  p.pipeline_schedule = string_knob(config, "pipeline_schedule", "1f1b");
  SLAPO_CHECK(p.pipeline_schedule == "1f1b" || p.pipeline_schedule == "gpipe", ErrorCode::kInvalidArgument,
              "knob 'pipeline_schedule': '", p.pipeline_schedule, "' is not a schedule (1f1b, gpipe)");
  SLAPO_CHECK(p.pp <= spec.layers, ErrorCode::kInvalidArgument, "knob 'pp': ", p.pp, " stages for ", spec.layers,
              " blocks");
  if (const Value* v = config.find("cuts")) {
    const auto* list = std::get_if<IntList>(v);
    SLAPO_CHECK(list != nullptr, ErrorCode::kInvalidArgument, "knob 'cuts': expected a list of block indices, found ",
                to_string(*v));
    SLAPO_CHECK(static_cast<int64_t>(list->size()) == p.pp - 1, ErrorCode::kInvalidArgument, "knob 'cuts': ",
                list->size(), " cuts for pp = ", p.pp, " stages (needs ", p.pp - 1, ")");
    int64_t previous = 0;
    for (int64_t c : *list) {
      SLAPO_CHECK(c > previous && c < spec.layers, ErrorCode::kInvalidArgument, "knob 'cuts': ", to_string(*v),
                  " must increase within blocks 1..", spec.layers - 1, " (the blocks where stages 2, 3, ... begin)");
      previous = c;
    }
    p.cuts = *list;
  } else {
    p.cuts = balanced_cuts(spec, p.pp);  // the slowest stage as fast as it can be
  }
  return p;
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

namespace {

// Megatron's layouts for a pair of Linears (first, second) that follow each other.
//   col_row: first split by outputs, second by inputs: one all-reduce forward, one backward.
//   row_col: first split by inputs (input split, output all-reduced), second by outputs
//            (output all-gathered): the other way round, more traffic; here for the tuner.
void shard_linear_pair(schedule::Schedule& first, schedule::Schedule& second, const std::string& layout) {
  if (layout == "col_row") {
    first.shard("weight", 0).shard("bias", 0).sync("bwd_post", "all_reduce");
    second.shard("weight", 1).sync("fwd_post", "all_reduce");
  } else {
    first.shard("weight", 1).sync("fwd_pre", "split", -1).sync("fwd_post", "all_reduce");
    second.shard("weight", 0).shard("bias", 0).sync("fwd_post", "all_gather", -1).sync("bwd_post", "all_reduce");
  }
}

void shard_attention(schedule::Schedule& sch, const std::string& path, const std::string& attn,
                     const std::string& layout) {
  const int64_t tp = sch.options().tp_parts();
  const int64_t rank = sch.options().tp_rank();
  schedule::Schedule& a = sch[path];
  auto set_heads_dropout = [&] {
    // The attention probabilities [batch, heads, seq, seq] of this rank's heads.
    if (auto drop = std::dynamic_pointer_cast<schedule::KeyedDropoutImpl>(a["attn_drop"].module())) {
      drop->shard_mask(1, tp, rank);
    }
  };
  if (layout == "col_row") {
    // Split by heads: q, k, v by outputs (before fusing them, so the fused projection holds this
    // rank's heads of each), out_proj by inputs.
    for (const char* proj : {"q_proj", "k_proj", "v_proj"}) a[proj].shard("weight", 0).shard("bias", 0);
    if (attn != "naive") replace_with_zoo_module(a, attention_type(attn));
    a["out_proj"].shard("weight", 1).sync("fwd_post", "all_reduce");
    // The input's gradient is a partial sum on each rank: one all-reduce for q, k and v together.
    a.sync("bwd_post", "all_reduce");
    set_heads_dropout();
    return;
  }
  if (attn != "naive") replace_with_zoo_module(a, attention_type(attn));
  const std::vector<std::string> projections =
      attn == "fused_qkv" ? std::vector<std::string>{"qkv"} : std::vector<std::string>{"q_proj", "k_proj", "v_proj"};
  for (const std::string& proj : projections) {
    a[proj].shard("weight", 1).sync("fwd_pre", "split", -1).sync("fwd_post", "all_reduce");
  }
  a["out_proj"].shard("weight", 0).shard("bias", 0).sync("fwd_post", "all_gather", -1).sync("bwd_post", "all_reduce");
}

void shard_embedding(schedule::Schedule& sch, const ModelSpec& spec, const std::string& layout) {
  const bool bert = spec.family == "bert";
  schedule::Schedule& embedding = sch[bert ? "embeddings.word" : "wte"];
  schedule::Schedule& head = sch[bert ? "decoder" : "head"];
  if (layout == "vocab") {
    embedding.shard("weight", 0).sync("fwd_post", "all_reduce");
    if (bert) head.shard("bias", 0);
    head.sync("bwd_post", "all_reduce").sync("fwd_post", "all_gather", -1);
  } else if (layout == "hidden") {
    embedding.shard("weight", 1).sync("fwd_post", "all_gather", -1);
    head.sync("fwd_pre", "split", -1).sync("fwd_post", "all_reduce");
  }
}

void decompose_linear(schedule::Schedule& linear) {
  if (std::dynamic_pointer_cast<torch::nn::LinearImpl>(linear.module())) linear.decompose();
}

// The fusion knobs: each block traced once (by need), the Linears whose bias a chain begins with
// decomposed, each chosen chain fused. Comes after the attention is replaced (the replacement takes
// over the original's out_proj as a Linear).
void apply_fusions(schedule::Schedule& sch, const ModelSpec& spec, const Config& config) {
  const bool gelu = bool_knob(config, "fuse_bias_gelu");
  const bool dropout_add = bool_knob(config, "fuse_bias_dropout_add");
  const bool norm = bool_knob(config, "fuse_layer_norm");
  if (!gelu && !dropout_add && !norm) return;
  for (int64_t i = 0; i < spec.layers; ++i) {
    schedule::Schedule& block = sch[blocks_path(spec) + "." + std::to_string(i)];
    if (gelu) decompose_linear(block["mlp.fc_in"]);
    if (dropout_add) {
      decompose_linear(block["mlp.fc_out"]);
      if (spec.family != "mlp") decompose_linear(block["attn.out_proj"]);
    }
    block.trace();
    if (gelu) block.fuse("bias_gelu", "native");
    if (dropout_add) block.fuse("bias_dropout_add", "native");
    if (norm) block.fuse("layer_norm", "native");
  }
}

}  // namespace

std::string attention_type(const std::string& attn) {
  return c10::demangle(attn == "fused_qkv" ? typeid(FusedQkvAttentionImpl).name() : typeid(OnePassAttentionImpl).name());
}

void apply_template(schedule::Schedule& sch, const ModelSpec& spec, const std::string& name, const Config& config) {
  check_template(name, spec, config);
  const ParallelKnobs p = parallel_knobs(spec, config);
  // A plan-only schedule (no group) may plan any split; a schedule with a group must match it.
  SLAPO_CHECK(sch.options().tp_parts() == p.tp || (!sch.options().tp_group && p.tp == 1), ErrorCode::kInvalidArgument, "knob 'tp' = ", p.tp,
              " but this schedule's tensor-parallel group has ", sch.options().tp_parts(),
              " rank(s): run it with that many ranks per pipeline stage (--nproc)");
  const std::string blocks = blocks_path(spec);
  const std::string attn = string_knob(config, "attn", "naive");
  auto block = [&](int64_t i) { return blocks + "." + std::to_string(i); };
  // decompose comes first: it must precede shard.
  const Value* decompose = config.find("decompose");
  if (decompose && std::get<bool>(*decompose)) {
    for (int64_t i = 0; i < spec.layers; ++i) {
      for (const char* linear : {"mlp.fc_in", "mlp.fc_out"}) sch[block(i) + "." + linear].decompose();
    }
  }
  if (p.tp > 1) {
    shard_embedding(sch, spec, string_knob(config, "embed_shard", "vocab"));
    for (int64_t i = 0; i < spec.layers; ++i) {
      if (spec.family != "mlp") shard_attention(sch, block(i) + ".attn", attn, string_knob(config, "attn_shard", "col_row"));
      schedule::Schedule& mlp = sch[block(i) + ".mlp"];
      shard_linear_pair(mlp["fc_in"], mlp["fc_out"], string_knob(config, "mlp_shard", "col_row"));
    }
  } else if (attn != "naive") {
    for (int64_t i = 0; i < spec.layers; ++i) replace_with_zoo_module(sch[block(i) + ".attn"], attention_type(attn));
  }
  apply_fusions(sch, spec, config);
  const int64_t ckpt = checkpointed_blocks(spec, config);
  for (int64_t i = 0; i < ckpt; ++i) sch[block(i)].checkpoint();
  for (int64_t begin : p.cuts) sch[block(begin - 1)].cut_pipeline_stage();
}

}  // namespace slapo::models
