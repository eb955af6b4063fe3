#include "models/templates.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "core/named.h"
#include "models/attention.h"
#include "models/blocks.h"
#include "models/eager_fusions.h"
#include "models/fused_lm_head.h"
#include "models/model_registry.h"
#include "models/pipeline_cuts.h"
#include "models/template_knobs.h"
#include "models/zoo.h"
#include "schedule/runtime/keyed_dropout.h"

namespace slapo::models {

namespace {

// Checks that `value` has `knob`'s kind. Throws Error(kInvalidArgument) naming the knob.
void check_kind(const TemplateKnob& knob, const Value& value) {
  const std::string& name = knob.name;
  switch (knob.kind) {
    case KnobKind::kBool:
      SLAPO_CHECK(std::holds_alternative<bool>(value), ErrorCode::kInvalidArgument, "knob '", name,
                  "': expected true or false, found ", to_string(value));
      return;
    case KnobKind::kNumber:
    case KnobKind::kWhole:
      SLAPO_CHECK(is_number(value) && !std::holds_alternative<bool>(value),
                  ErrorCode::kInvalidArgument, "knob '", name, "': expected a number, found ",
                  to_string(value));
      SLAPO_CHECK(
          knob.kind == KnobKind::kNumber || as_number(value) == std::floor(as_number(value)),
          ErrorCode::kInvalidArgument, "knob '", name, "': ", to_string(value),
          " is not a whole number");
      return;
    case KnobKind::kCuts:
      SLAPO_CHECK(std::holds_alternative<IntList>(value), ErrorCode::kInvalidArgument, "knob '",
                  name, "': expected a list of block indices, found ", to_string(value));
      return;
    case KnobKind::kChoice: {
      const std::string* s = std::get_if<std::string>(&value);
      SLAPO_CHECK(s != nullptr, ErrorCode::kInvalidArgument, "knob '", name,
                  "': expected a string, found ", to_string(value));
      SLAPO_CHECK(std::find(knob.choices.begin(), knob.choices.end(), *s) != knob.choices.end(),
                  ErrorCode::kInvalidArgument, "knob '", name, "': '", *s, "' is not one of ",
                  knob.values_text());
      return;
    }
  }
}

// The checks that involve several knobs, and the defaults that depend on others.
void finish(const ModelSpec& spec, const Config& config, int world_size, TemplateConfig* c) {
  const FamilyTraits& family = spec.traits();
  ParallelKnobs& p = c->parallel;
  const int tp = p.layout.tp;
  SLAPO_CHECK(!(config.contains("ckpt_ratio") && config.contains("ckpt_layers")),
              ErrorCode::kInvalidArgument,
              "give either knob 'ckpt_ratio' or 'ckpt_layers', not both");
  SLAPO_CHECK(!(c->fused_lm_loss && tp > 1 && c->embed_shard == EmbedShard::kHidden),
              ErrorCode::kInvalidArgument,
              "knob 'fused_lm_loss': not with embed_shard = 'hidden' and tp > 1 (each rank's "
              "logits would be partial sums, to be summed before the softmax); use vocab or "
              "replicated");
  // On the graph path every fusion is in a traced block, which cannot hold the block's
  // tensor-parallel collectives; on the eager path the bias + dropout + residual add would need
  // the bias after a row-split Linear's all-reduce, which its fused kernel does not wait for.
  for (const char* knob : {"fuse_bias_gelu", "fuse_bias_dropout_add", "fuse_layer_norm"}) {
    const Value* fuse = config.find(knob);
    const bool refused = c->fusion_graph || std::string(knob) == "fuse_bias_dropout_add";
    SLAPO_CHECK(!(fuse && std::get<bool>(*fuse) && tp > 1 && refused), ErrorCode::kInvalidArgument,
                "knob '", knob, "': not with tp > 1 yet (",
                c->fusion_graph ? "a traced block cannot hold its tensor-parallel collectives"
                                : "the bias of a row-split Linear is added after its all-reduce",
                ")");
  }
  SLAPO_CHECK(!(c->fuse_bias_dropout_add && !c->fusion_graph && c->decompose),
              ErrorCode::kInvalidArgument,
              "knob 'fuse_bias_dropout_add': the eager fusion takes fc_out's bias from a Linear, "
              "not with decompose (fusion_path = 'graph' fuses a decomposed one)");
  SLAPO_CHECK(
      !(c->fuse_bias_gelu && !c->fusion_graph && tp > 1 && c->mlp_shard == PairShard::kRowCol),
      ErrorCode::kInvalidArgument,
      "knob 'fuse_bias_gelu': the eager fusion needs mlp_shard = 'col_row' under tp > 1 "
      "(fc_in split by inputs is summed over the ranks before its bias and GELU)");
  SLAPO_CHECK(!(family.head_bias && c->embed_shard == EmbedShard::kHidden && tp > 1),
              ErrorCode::kInvalidArgument, "knob 'embed_shard': 'hidden' is not supported for ",
              family.name,
              " (its LM head's bias would be added once per rank); use vocab or replicated");
  // What tensor parallelism splits must split evenly (a model without attention has no heads).
  const std::vector<std::pair<const char*, int64_t>> split = {
      {"heads", family.attention ? spec.heads : tp},
      // Split by heads, each rank needs whole key/value heads.
      {"kv_heads",
       family.attention && c->attn_shard == PairShard::kColRow ? spec.key_value_heads() : tp},
      {"ffn", spec.ffn},
      {"vocab", spec.vocab},
      {"hidden", spec.hidden}};
  for (const auto& [what, size] : split) {
    SLAPO_CHECK(size % tp == 0, ErrorCode::kInvalidArgument, "knob 'tp': ", tp, " does not divide ",
                what, " = ", size, " of '", spec.preset, "'");
  }
  if (!config.contains("dp") && world_size > 0)
    p.layout.dp = std::max(1, world_size / (p.layout.tp * p.layout.pp));
  if (config.contains("cuts")) {
    const Value& v = *config.find("cuts");
    SLAPO_CHECK(static_cast<int64_t>(p.cuts.size()) == p.layout.pp - 1, ErrorCode::kInvalidArgument,
                "knob 'cuts': ", p.cuts.size(), " cuts for pp = ", p.layout.pp, " stages (needs ",
                p.layout.pp - 1, ")");
    int64_t previous = 0;
    for (int64_t cut : p.cuts) {
      SLAPO_CHECK(cut > previous && cut < spec.layers, ErrorCode::kInvalidArgument,
                  "knob 'cuts': ", to_string(v), " must increase within blocks 1..",
                  spec.layers - 1, " (the blocks where stages 2, 3, ... begin)");
      previous = cut;
    }
  } else {
    p.cuts = balanced_cuts(spec, p.layout.pp);  // the slowest stage as fast as it can be
  }
}

// Parses `config`. With a template, every knob must be one it understands; without one (the
// layout alone is wanted), knobs outside the table are skipped.
TemplateConfig parse(const TemplateInfo* t, const ModelSpec& spec, const Config& config,
                     int world_size) {
  TemplateConfig c;
  for (const auto& [name, value] : config.entries()) {
    const TemplateKnob* knob = find_template_knob(name);
    const bool understood =
        knob != nullptr &&
        (t != nullptr ? std::find(t->knobs.begin(), t->knobs.end(), name) != t->knobs.end()
                      : knob->applies_to(spec.traits()));
    if (!understood && t == nullptr) continue;
    if (!understood) {
      std::string names;
      for (const std::string& k : t->knobs) names += (names.empty() ? "" : ", ") + k;
      SLAPO_FAIL(ErrorCode::kInvalidArgument, "knob '", name,
                 "' is not understood by schedule template '", t->name, "' (knobs: ", names, ")");
    }
    check_kind(*knob, value);
    knob->read(value, spec, &c);
  }
  finish(spec, config, world_size, &c);
  return c;
}

// Shards a Linear's weight along `axis`, and its bias with it when it has one and the axis is the
// outputs (a bias of split inputs is added once, after the reduction).
schedule::Schedule& shard_linear(schedule::Schedule& linear, int64_t axis) {
  linear.shard("weight", axis);
  if (axis == 0 && linear.module()->named_parameters(/*recurse=*/false).contains("bias"))
    linear.shard("bias", 0);
  return linear;
}

// Megatron's layouts for Linears (`firsts`, each reading the same input) followed by one that
// reads what they computed (`second`): the MLP's fc_in → fc_out, or SwiGLU's gate_proj and
// up_proj → down_proj. Column-split, the input's gradient is a partial sum on each rank: one
// all-reduce of that gradient where `reader` (the first Linear alone, or the module holding them
// all) hands it back.
void shard_linear_pair(const std::vector<schedule::Schedule*>& firsts, schedule::Schedule& second,
                       schedule::Schedule& reader, PairShard layout) {
  switch (layout) {
    case PairShard::kColRow:
      for (schedule::Schedule* first : firsts) shard_linear(*first, 0);
      reader.sync("bwd_post", "all_reduce");
      second.shard("weight", 1).sync("fwd_post", "all_reduce");
      return;
    case PairShard::kRowCol:
      for (schedule::Schedule* first : firsts)
        shard_linear(*first, 1).sync("fwd_pre", "split", -1).sync("fwd_post", "all_reduce");
      shard_linear(second, 0).sync("fwd_post", "all_gather", -1).sync("bwd_post", "all_reduce");
      return;
  }
}

void shard_mlp(schedule::Schedule& mlp, const FamilyTraits& family, PairShard layout) {
  if (!family.gated_mlp) {
    // A FusedMlp computes fc_in's product itself, not through its slot: the input's gradient is
    // reduced on the MLP.
    const bool fused = std::dynamic_pointer_cast<FusedMlpImpl>(mlp.module()) != nullptr;
    shard_linear_pair({&mlp["fc_in"]}, mlp["fc_out"], fused ? mlp : mlp["fc_in"], layout);
    return;
  }
  // Both column-split projections read the MLP's input: one reduction of its gradient, for both.
  shard_linear_pair({&mlp["gate_proj"], &mlp["up_proj"]}, mlp["down_proj"], mlp, layout);
}

void shard_attention(schedule::Schedule& sch, const std::string& path, AttentionKind attn,
                     PairShard layout) {
  const int64_t tp = sch.options().tp_parts();
  const int64_t rank = sch.options().tp_rank();
  schedule::Schedule& a = sch[path];
  if (layout == PairShard::kColRow) {
    // Split by heads: q, k, v by outputs (before fusing them, so the fused projection holds this
    // rank's heads of each), out_proj by inputs.
    for (const char* proj : {"q_proj", "k_proj", "v_proj"}) shard_linear(a[proj], 0);
    if (attn != AttentionKind::kNaive) replace_with_zoo_module(a, attention_type(attn));
    a["out_proj"].shard("weight", 1).sync("fwd_post", "all_reduce");
    // The input's gradient is a partial sum on each rank: one all-reduce for q, k and v together.
    a.sync("bwd_post", "all_reduce");
    // The attention probabilities [batch, heads, seq, seq] of this rank's heads (an attention
    // without dropout, as LLaMA's, has none to shard).
    auto* slots = dynamic_cast<schedule::SlotModule*>(a.module().get());
    if (slots != nullptr && slots->has_slot("attn_drop")) {
      if (auto drop =
              std::dynamic_pointer_cast<schedule::KeyedDropoutImpl>(a["attn_drop"].module()))
        drop->shard_mask(1, tp, rank);
    }
    return;
  }
  if (attn != AttentionKind::kNaive) replace_with_zoo_module(a, attention_type(attn));
  const std::vector<std::string> projections =
      attn == AttentionKind::kFusedQkv ? std::vector<std::string>{"qkv"}
                                       : std::vector<std::string>{"q_proj", "k_proj", "v_proj"};
  for (const std::string& proj : projections) {
    shard_linear(a[proj], 1).sync("fwd_pre", "split", -1).sync("fwd_post", "all_reduce");
  }
  shard_linear(a["out_proj"], 0).sync("fwd_post", "all_gather", -1).sync("bwd_post", "all_reduce");
}

void shard_embedding(schedule::Schedule& sch, const FamilyTraits& family, EmbedShard layout) {
  schedule::Schedule& embedding = sch[family.embedding];
  schedule::Schedule& head = sch[family.head];
  switch (layout) {
    case EmbedShard::kVocab:
      embedding.shard("weight", 0).sync("fwd_post", "all_reduce");
      if (!family.tied_head) head.shard("weight", 0);  // a tied head is sharded with the embedding
      if (family.head_bias) head.shard("bias", 0);
      head.sync("bwd_post", "all_reduce").sync("fwd_post", "all_gather", -1);
      return;
    case EmbedShard::kHidden:
      embedding.shard("weight", 1).sync("fwd_post", "all_gather", -1);
      if (!family.tied_head) head.shard("weight", 1);
      head.sync("fwd_pre", "split", -1).sync("fwd_post", "all_reduce");
      return;
    case EmbedShard::kReplicated: return;
  }
}

void decompose_linear(schedule::Schedule& linear) {
  if (std::dynamic_pointer_cast<torch::nn::LinearImpl>(linear.module())) linear.decompose();
}

// The residual adds of the zoo's blocks and the LayerNorm each block calls right after on the sum
// (models/blocks.h: GPT's ln_2, BERT's two post-LN norms): what fuse_layer_norm computes together.
constexpr std::pair<const char*, const char*> kAddThenNorm[] = {
    {"attn_residual", "ln_2"}, {"attn_residual", "attn_norm"}, {"mlp_residual", "mlp_norm"}};

// The fusion knobs' eager path (models/eager_fusions.h): layer norms and each block's MLP replaced
// by modules that call the kernels. Comes before the MLP is sharded (FusedMlp's fc_out slot is the
// one the shard's syncs go on).
void apply_eager_fusions(schedule::Schedule& sch, const ModelSpec& spec, const TemplateConfig& c) {
  if (c.fusion_graph) return;
  // A block's residual add and the LayerNorm it calls right after (kAddThenNorm): computed
  // together. Not when the add becomes a bias + dropout + residual kernel instead
  // (apply_eager_residual_fusions).
  const bool pair_with_add = !c.fuse_bias_dropout_add;
  auto layer_norms = [&](schedule::Schedule& parent) {
    auto* slots = dynamic_cast<schedule::SlotModule*>(parent.module().get());
    std::set<std::string> paired;
    for (const auto& [add, norm] : kAddThenNorm) {
      if (!pair_with_add || slots == nullptr || !slots->has_slot(add) || !slots->has_slot(norm))
        continue;
      auto ln = std::dynamic_pointer_cast<torch::nn::LayerNormImpl>(parent[norm].module());
      if (!ln || !std::dynamic_pointer_cast<ResidualAddImpl>(parent[add].module())) continue;
      LayerNormAfterAdd after(*ln);
      parent[norm].replace(after);
      parent[add].replace(FusedAddLayerNorm(after.ptr()));
      paired.insert(norm);
    }
    for (const auto& child : parent.module()->named_children()) {
      if (paired.count(child.key())) continue;
      if (auto ln = std::dynamic_pointer_cast<torch::nn::LayerNormImpl>(child.value()))
        parent[child.key()].replace(FusedLayerNorm(*ln));
    }
  };
  for (int64_t i = 0; i < spec.layers; ++i) {
    schedule::Schedule& block = sch[blocks_path(spec) + "." + std::to_string(i)];
    if (c.fuse_layer_norm) layer_norms(block);
    if (c.fuse_bias_gelu) {
      auto mlp = std::dynamic_pointer_cast<MlpImpl>(block["mlp"].module());
      SLAPO_CHECK(mlp != nullptr, ErrorCode::kInvalidArgument, "knob 'fuse_bias_gelu': '",
                  block.path(), ".mlp' is not the zoo's MLP");
      block["mlp"].replace(FusedMlp(*mlp));
    }
  }
  if (c.fuse_layer_norm) layer_norms(sch);
}

// The last Linear and dropout of each sublayer of the zoo's blocks, and the residual add after it
// (models/blocks.h): what fuse_bias_dropout_add fuses.
struct SublayerTail {
  const char *sublayer, *linear, *drop, *residual;
};
constexpr SublayerTail kSublayerTails[] = {{"attn", "out_proj", "resid_drop", "attn_residual"},
                                           {"mlp", "fc_out", "drop", "mlp_residual"}};

// fuse_bias_dropout_add on the eager path (models/eager_fusions.h): in each block, each sublayer's
// last Linear adds no bias, its dropout is taken out, and the block's residual add after it adds
// the bias, drops out and adds the residual in one pass. After the attention is replaced (a
// variant takes over out_proj and resid_drop as a Linear and a KeyedDropout).
void apply_eager_residual_fusions(schedule::Schedule& sch, const ModelSpec& spec,
                                  const TemplateConfig& c) {
  if (c.fusion_graph || !c.fuse_bias_dropout_add) return;
  for (int64_t i = 0; i < spec.layers; ++i) {
    schedule::Schedule& block = sch[blocks_path(spec) + "." + std::to_string(i)];
    auto* slots = dynamic_cast<schedule::SlotModule*>(block.module().get());
    for (const SublayerTail& t : kSublayerTails) {
      if (slots == nullptr || !slots->has_slot(t.sublayer)) continue;  // an MLP block: no attn
      schedule::Schedule& sub = block[t.sublayer];
      auto* sub_slots = dynamic_cast<schedule::SlotModule*>(sub.module().get());
      std::shared_ptr<torch::nn::LinearImpl> linear;
      std::shared_ptr<schedule::KeyedDropoutImpl> drop;
      if (sub_slots && sub_slots->has_slot(t.linear) && sub_slots->has_slot(t.drop)) {
        linear = std::dynamic_pointer_cast<torch::nn::LinearImpl>(sub[t.linear].module());
        drop = std::dynamic_pointer_cast<schedule::KeyedDropoutImpl>(sub[t.drop].module());
      }
      SLAPO_CHECK(linear && linear->bias.defined() && drop && slots->has_slot(t.residual),
                  ErrorCode::kInvalidArgument, "knob 'fuse_bias_dropout_add': '", sub.path(),
                  "' does not end in a Linear with a bias and a dropout before the block's ",
                  t.residual, " (fusion_path = 'graph' fuses what a traced block shows)");
      block[t.residual].replace(
          FusedBiasDropoutAdd(block.module(), t.sublayer, t.linear, schedule::KeyedDropout(drop)));
      sub[t.linear].replace(LinearBiasLater(*linear));
      sub[t.drop].replace(torch::nn::Identity());
    }
  }
}

// The fusions through graphs (fusion_path = "graph"): each block traced once (by need), the
// Linears whose bias a chain begins with decomposed, each chosen chain fused. Comes after the
// attention is replaced (the replacement takes over the original's out_proj as a Linear).
void apply_graph_fusions(schedule::Schedule& sch, const ModelSpec& spec, const TemplateConfig& c) {
  const bool gelu = c.fuse_bias_gelu && c.fusion_graph;
  const bool norm = c.fuse_layer_norm && c.fusion_graph;
  const bool residual = c.fuse_bias_dropout_add && c.fusion_graph;
  if (!gelu && !norm && !residual) return;
  for (int64_t i = 0; i < spec.layers; ++i) {
    schedule::Schedule& block = sch[blocks_path(spec) + "." + std::to_string(i)];
    if (gelu) decompose_linear(block["mlp.fc_in"]);
    if (residual) {
      decompose_linear(block["mlp.fc_out"]);
      if (spec.traits().attention) decompose_linear(block["attn.out_proj"]);
    }
    block.trace();
    if (gelu) block.fuse("bias_gelu", "native");
    if (residual) block.fuse("bias_dropout_add", "native");
    if (norm) block.fuse("layer_norm", "native");
  }
}

}  // namespace

const std::vector<TemplateInfo>& schedule_templates() {
  // One template per family, with the knobs of the table that apply to it (a registered family:
  // the knobs it names). Made again when a family was registered since.
  static std::vector<TemplateInfo> templates;
  if (templates.size() == model_families().size()) return templates;
  templates.clear();
  for (const FamilyTraits& family : model_families()) {
    TemplateInfo t{family.name, family.name, {}};
    if (const FamilyRegistration* own = registered_family(family.name)) {
      t.knobs = own->knobs;
    } else {
      for (const TemplateKnob& k : template_knobs())
        if (k.applies_to(family)) t.knobs.push_back(k.name);
    }
    templates.push_back(std::move(t));
  }
  return templates;
}

const TemplateInfo& find_template(const std::string& name) {
  return find_named(schedule_templates(), name, "schedule template", "templates");
}

std::string default_template(const ModelSpec& spec) { return spec.family; }

TemplateConfig parse_template_config(const std::string& name, const ModelSpec& spec,
                                     const Config& config, int world_size) {
  const TemplateInfo& t = find_template(name);
  SLAPO_CHECK(t.family == spec.family, ErrorCode::kInvalidArgument, "schedule template '", name,
              "' is for ", t.family, " models, not '", spec.preset, "' (", spec.family, ")");
  return parse(&t, spec, config, world_size);
}

void check_template(const std::string& name, const ModelSpec& spec, const Config& config) {
  parse_template_config(name, spec, config);
}

ParallelKnobs parallel_knobs(const ModelSpec& spec, const Config& config, int world_size) {
  return parse(nullptr, spec, config, world_size).parallel;
}

int64_t checkpointed_blocks(const ModelSpec& spec, const Config& config) {
  return parse(nullptr, spec, config, 0).checkpointed_blocks;
}

std::string attention_type(AttentionKind attn) {
  switch (attn) {
    case AttentionKind::kFusedQkv: return c10::demangle(typeid(FusedQkvAttentionImpl).name());
    case AttentionKind::kMemoryEfficient:
      return c10::demangle(typeid(MemoryEfficientAttentionImpl).name());
    default: return c10::demangle(typeid(OnePassAttentionImpl).name());
  }
}

namespace {

bool is_type(const std::string& type_name, const std::type_info& t) {
  return type_name == c10::demangle(t.name());
}

void refuse_unless(bool made, const schedule::Schedule& target, const std::string& type_name,
                   const char* from) {
  SLAPO_CHECK(made, ErrorCode::kInvalidArgument, "cannot replace '", target.path(), "' by ",
              type_name, ": the zoo makes it from ", from, " only");
}

// The eager fusions' modules (models/eager_fusions.h), for replace_with_zoo_module: false for
// another type.
bool replace_with_eager_fusion(schedule::Schedule& target, const std::string& type_name) {
  auto is = [&](const std::type_info& t) { return is_type(type_name, t); };
  auto refuse_unless = [&](bool made, const char* from) {
    slapo::models::refuse_unless(made, target, type_name, from);
  };
  if (is(typeid(FusedLayerNormImpl))) {
    auto ln = std::dynamic_pointer_cast<torch::nn::LayerNormImpl>(target.module());
    refuse_unless(ln != nullptr, "a LayerNorm");
    target.replace(FusedLayerNorm(*ln));
    return true;
  }
  if (is(typeid(LayerNormAfterAddImpl))) {
    auto ln = std::dynamic_pointer_cast<torch::nn::LayerNormImpl>(target.module());
    refuse_unless(ln != nullptr, "a LayerNorm");
    target.replace(LayerNormAfterAdd(*ln));
    return true;
  }
  // The block `target` is a slot of, and the slot's name.
  const std::string path = target.path();
  const size_t dot = path.rfind('.');
  const std::string add = dot == std::string::npos ? path : path.substr(dot + 1);
  auto block_of_target = [&] {
    std::shared_ptr<torch::nn::Module> block = target.model();
    for (size_t at = 0; dot != std::string::npos && at < dot;) {
      const size_t end = std::min(path.find('.', at), dot);
      block = block->named_children()[path.substr(at, end - at)];
      at = end + 1;
    }
    return block;
  };
  if (is(typeid(FusedBiasDropoutAddImpl))) {
    // Its sublayer is the one before it in the block (kSublayerTails), still with its dropout.
    const std::shared_ptr<torch::nn::Module> block = block_of_target();
    for (const SublayerTail& t : kSublayerTails) {
      if (add != t.residual || !block->named_children().contains(t.sublayer)) continue;
      auto* sub = dynamic_cast<schedule::SlotModule*>(block->named_children()[t.sublayer].get());
      auto drop = sub && sub->has_slot(t.drop)
                      ? std::dynamic_pointer_cast<schedule::KeyedDropoutImpl>(
                            sub->slot(t.drop).module.ptr())
                      : nullptr;
      refuse_unless(std::dynamic_pointer_cast<ResidualAddImpl>(target.module()) && drop,
                    "a block's residual add after a sublayer that still has its dropout");
      target.replace(
          FusedBiasDropoutAdd(block, t.sublayer, t.linear, schedule::KeyedDropout(drop)));
      return true;
    }
    refuse_unless(false, "a block's attn_residual or mlp_residual");
  }
  if (is(typeid(LinearBiasLaterImpl))) {
    auto linear = std::dynamic_pointer_cast<torch::nn::LinearImpl>(target.module());
    refuse_unless(linear != nullptr && linear->bias.defined(), "a Linear with a bias");
    target.replace(LinearBiasLater(*linear));
    return true;
  }
  if (is(typeid(torch::nn::IdentityImpl))) {
    target.replace(torch::nn::Identity());
    return true;
  }
  if (is(typeid(FusedAddLayerNormImpl))) {
    // Its norm is the block's next one (kAddThenNorm), made a LayerNormAfterAdd before it.
    const std::shared_ptr<torch::nn::Module> block = block_of_target();
    std::shared_ptr<LayerNormAfterAddImpl> norm;
    for (const auto& [a, n] : kAddThenNorm) {
      if (add == a && block->named_children().contains(n))
        norm = std::dynamic_pointer_cast<LayerNormAfterAddImpl>(block->named_children()[n]);
    }
    refuse_unless(std::dynamic_pointer_cast<ResidualAddImpl>(target.module()) && norm,
                  "a block's residual add whose next norm is a LayerNormAfterAdd already");
    target.replace(FusedAddLayerNorm(norm));
    return true;
  }
  if (is(typeid(FusedMlpImpl))) {
    auto mlp = std::dynamic_pointer_cast<MlpImpl>(target.module());
    refuse_unless(mlp != nullptr, "the zoo's MLP");
    target.replace(FusedMlp(*mlp));
    return true;
  }
  return false;
}

}  // namespace

void replace_with_zoo_module(schedule::Schedule& target, const std::string& type_name) {
  auto is = [&](const std::type_info& t) { return is_type(type_name, t); };
  if (replace_with_eager_fusion(target, type_name)) return;
  if (is(typeid(FusedLmHeadImpl))) {
    // Whether the head is split by vocabulary is the template's knob (embed_shard), not the text's.
    SLAPO_CHECK(target.options().tp_parts() == 1, ErrorCode::kInvalidArgument, "cannot replace '",
                target.path(), "' by ", type_name, " from text under tensor parallelism (",
                target.options().tp_parts(),
                " parts): replay the configuration through its template");
    target.replace(fused_lm_head(*target.module()));
    return;
  }
  auto original = std::dynamic_pointer_cast<AttentionImpl>(target.module());
  const bool fused = is(typeid(FusedQkvAttentionImpl));
  const bool one_pass = is(typeid(OnePassAttentionImpl));
  const bool memory_efficient = is(typeid(MemoryEfficientAttentionImpl));
  SLAPO_CHECK(fused || one_pass || memory_efficient, ErrorCode::kInvalidArgument,
              "cannot replace '", target.path(), "' by ", type_name,
              ": the zoo makes attention variants, FusedLayerNorm, FusedMlp, LayerNormAfterAdd, "
              "FusedAddLayerNorm, FusedBiasDropoutAdd, LinearBiasLater, Identity and FusedLmHead "
              "only");
  refuse_unless(original != nullptr, target, type_name, "an original attention");
  if (fused)
    target.replace(FusedQkvAttention(*original));
  else if (one_pass)
    target.replace(OnePassAttention(*original));
  else
    target.replace(MemoryEfficientAttention(*original));
}

void apply_template(schedule::Schedule& sch, const ModelSpec& spec, const std::string& name,
                    const Config& config) {
  apply_template(sch, spec, parse_template_config(name, spec, config));
}

void apply_template(schedule::Schedule& sch, const ModelSpec& spec, const TemplateConfig& c) {
  const FamilyTraits& family = spec.traits();
  const int tp = c.parallel.layout.tp;
  // A plan-only schedule (no group) may plan any split; a schedule with a group must match it.
  SLAPO_CHECK(sch.options().tp_parts() == tp || (!sch.options().tp_group && tp == 1),
              ErrorCode::kInvalidArgument, "knob 'tp' = ", tp,
              " but this schedule's tensor-parallel group has ", sch.options().tp_parts(),
              " rank(s): run it with that many ranks per pipeline stage");
  auto block = [&](int64_t i) { return family.blocks + "." + std::to_string(i); };
  if (const FamilyRegistration* own = registered_family(family.name)) {
    // A program's own family: its primitives, then the checkpoints and cuts on its blocks.
    SLAPO_CHECK(!c.fused_lm_loss, ErrorCode::kInvalidArgument, "knob 'fused_lm_loss': family '",
                family.name, "' is a program's own (its head and loss are its own)");
    if (own->apply) own->apply(sch, spec, c);
    for (int64_t i = 0; i < c.checkpointed_blocks; ++i) sch[block(i)].checkpoint();
    for (int64_t begin : c.parallel.cuts) sch[block(begin - 1)].cut_pipeline_stage();
    return;
  }
  // decompose comes first: it must precede shard.
  if (c.decompose) {
    for (int64_t i = 0; i < spec.layers; ++i) {
      for (const char* linear : {"mlp.fc_in", "mlp.fc_out"})
        sch[block(i) + "." + linear].decompose();
    }
  }
  apply_eager_fusions(sch, spec, c);
  if (tp > 1) {
    shard_embedding(sch, family, c.embed_shard);
    for (int64_t i = 0; i < spec.layers; ++i) {
      if (family.attention) shard_attention(sch, block(i) + ".attn", c.attn, c.attn_shard);
      shard_mlp(sch[block(i) + ".mlp"], family, c.mlp_shard);
    }
  } else if (c.attn != AttentionKind::kNaive) {
    for (int64_t i = 0; i < spec.layers; ++i)
      replace_with_zoo_module(sch[block(i) + ".attn"], attention_type(c.attn));
  }
  apply_eager_residual_fusions(sch, spec, c);
  apply_graph_fusions(sch, spec, c);
  if (c.fused_lm_loss) {
    // Split by vocabulary (shard_embedding above), the loss is the vocabulary-parallel one.
    const bool by_vocab = tp > 1 && c.embed_shard == EmbedShard::kVocab;
    schedule::Schedule& head = sch[family.head];
    head.replace(fused_lm_head(*head.module(), by_vocab ? sch.options().tp_group : nullptr));
  }
  for (int64_t i = 0; i < c.checkpointed_blocks; ++i) sch[block(i)].checkpoint();
  for (int64_t begin : c.parallel.cuts) sch[block(begin - 1)].cut_pipeline_stage();
}

}  // namespace slapo::models
