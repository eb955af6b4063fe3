#include "models/template_knobs.h"

#include <cmath>

#include "core/error.h"

namespace slapo::models {

namespace {

bool with_attention(const FamilyTraits& f) { return f.attention; }
// The attention variants (fused qkv, baddbmm) are of the zoo's plain attention: no rotary, no
// grouped key/value heads.
bool with_attention_variants(const FamilyTraits& f) {
  return f.attention && !f.rotary && f.qkv_bias && f.scaled_attention;
}
// fc_in, GELU, fc_out with biases (not a gated MLP without biases).
bool with_plain_mlp(const FamilyTraits& f) { return !f.gated_mlp; }
// The fused bias + GELU kernel computes the exact GELU.
bool with_exact_gelu(const FamilyTraits& f) { return !f.gated_mlp && !f.gelu_tanh; }
bool with_layer_norm(const FamilyTraits& f) { return !f.rms_norm; }

int64_t whole(const Value& v) { return static_cast<int64_t>(as_number(v)); }

// The index of a choice knob's value in its row's choices (the kind check has passed).
size_t choice_index(const std::string& knob, const Value& v) {
  const TemplateKnob* row = find_template_knob(knob);
  SLAPO_INTERNAL_ASSERT(row != nullptr, "no knob ", knob);
  const std::string& s = std::get<std::string>(v);
  for (size_t i = 0; i < row->choices.size(); ++i) {
    if (row->choices[i] == s) return i;
  }
  SLAPO_INTERNAL_ASSERT(false, "knob ", knob, ": unchecked choice ", s);
  return 0;
}

// A whole number ≥ 1 (tp, pp, dp, micro_batches, batch_size, seq_len).
int64_t positive(const char* knob, const Value& v) {
  const double x = as_number(v);
  SLAPO_CHECK(x >= 1, ErrorCode::kInvalidArgument, "knob '", knob, "': ", x,
              " is not a whole number ≥ 1");
  return static_cast<int64_t>(x);
}

std::vector<TemplateKnob> make_table() {
  std::vector<TemplateKnob> t;
  auto row = [&](std::string name, KnobKind kind, std::vector<std::string> choices,
                 std::string default_text, std::string help, bool runner,
                 bool (*applies)(const FamilyTraits&),
                 void (*read)(const Value&, const ModelSpec&, TemplateConfig*)) {
    t.push_back({std::move(name), kind, std::move(choices), std::move(default_text),
                 std::move(help), runner, applies, read});
  };
  row("ckpt_ratio", KnobKind::kNumber, {}, "0",
      "checkpoint the first round(r · layers) blocks (halves round up); 0 ≤ r ≤ 1", false, nullptr,
      [](const Value& v, const ModelSpec& spec, TemplateConfig* c) {
        const double r = as_number(v);
        SLAPO_CHECK(r >= 0 && r <= 1, ErrorCode::kInvalidArgument, "knob 'ckpt_ratio': ", r,
                    " is not in [0, 1]");
        c->checkpointed_blocks =
            static_cast<int64_t>(std::floor(r * static_cast<double>(spec.layers) + 0.5));
      });
  row("ckpt_layers", KnobKind::kWhole, {}, "0", "checkpoint the first n blocks; 0 ≤ n ≤ layers",
      false, nullptr, [](const Value& v, const ModelSpec& spec, TemplateConfig* c) {
        const double n = as_number(v);
        SLAPO_CHECK(n >= 0 && n <= static_cast<double>(spec.layers), ErrorCode::kInvalidArgument,
                    "knob 'ckpt_layers': ", n, " is not a whole number of blocks in [0, ",
                    spec.layers, "]");
        c->checkpointed_blocks = whole(v);
      });
  // Choice knobs: the value's index in the row's choices is the enum's value.
  row("attn", KnobKind::kChoice, {"naive", "fused_qkv", "baddbmm", "memory_efficient"}, "naive",
      "the attention implementation: separate q, k, v projections; one fused qkv projection; "
      "scores through one baddbmm; or blocked over keys with an online softmax, the seq × seq "
      "probabilities never kept (FlashAttention's scheme)",
      false, with_attention_variants, [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->attn = static_cast<AttentionKind>(choice_index("attn", v));
      });
  row("attn_shard", KnobKind::kChoice, {"col_row", "row_col"}, "col_row",
      "with tp > 1: col_row splits q, k, v by heads (k, v by key/value heads) and out_proj by "
      "inputs (Megatron: one all-reduce each way); row_col splits q, k, v by inputs and out_proj "
      "by outputs",
      false, with_attention, [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->attn_shard = static_cast<PairShard>(choice_index("attn_shard", v));
      });
  row("mlp_shard", KnobKind::kChoice, {"col_row", "row_col"}, "col_row",
      "with tp > 1: col_row splits fc_in (gate_proj and up_proj) by outputs and fc_out "
      "(down_proj) by inputs; row_col the other way",
      false, nullptr, [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->mlp_shard = static_cast<PairShard>(choice_index("mlp_shard", v));
      });
  row("embed_shard", KnobKind::kChoice, {"vocab", "hidden", "replicated"}, "vocab",
      "with tp > 1: the embedding and the LM head split by vocabulary, by hidden units, or "
      "replicated",
      false, nullptr, [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->embed_shard = static_cast<EmbedShard>(choice_index("embed_shard", v));
      });
  row("decompose", KnobKind::kBool, {}, "false",
      "each block's MLP Linears become matmul + bias add (before any shard)", false, with_plain_mlp,
      [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->decompose = std::get<bool>(v);
      });
  row("fuse_bias_gelu", KnobKind::kBool, {}, "false",
      "fc_in's bias add + GELU in one kernel (eager: each block's mlp a FusedMlp; under tp with "
      "mlp_shard = col_row only; graph: not with tp > 1)",
      false, with_exact_gelu, [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->fuse_bias_gelu = std::get<bool>(v);
      });
  row("fuse_bias_dropout_add", KnobKind::kBool, {}, "false",
      "out_proj's and fc_out's bias add + dropout + the block's residual add in one kernel "
      "(eager: each residual add a FusedBiasDropoutAdd, not with decompose; graph: each block "
      "traced, those Linears decomposed; not with tp > 1)",
      false, with_plain_mlp, [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->fuse_bias_dropout_add = std::get<bool>(v);
      });
  row("fuse_layer_norm", KnobKind::kBool, {}, "false",
      "the layer norms run by the project's kernel (eager: each block's and ln_f a "
      "FusedLayerNorm, a norm right after the block's residual add computed with that add; "
      "graph: each block's in its graph, not with tp > 1)",
      false, with_layer_norm, [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->fuse_layer_norm = std::get<bool>(v);
      });
  row("fusion_path", KnobKind::kChoice, {"eager", "graph"}, "eager",
      "how fuse_bias_gelu and fuse_layer_norm apply: eager modules calling the kernels "
      "(replace), or each block traced and the chains fused in its graph (trace, fuse)",
      false, with_layer_norm, [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->fusion_graph = std::get<std::string>(v) == "graph";
      });
  row("fused_lm_loss", KnobKind::kBool, {}, "false",
      "the LM head and the cross-entropy in one, over chunks of tokens: the tokens × vocabulary "
      "logits are never kept (BERT: the masked positions' only; under tp, vocabulary-parallel; "
      "not with embed_shard = hidden)",
      false, nullptr, [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->fused_lm_loss = std::get<bool>(v);
      });
  row("fused_adamw", KnobKind::kBool, {}, "false",
      "the AdamW step in one pass over each parameter's memory (the same weights bit for bit as "
      "LibTorch's AdamW)",
      true, nullptr, [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->fused_adamw = std::get<bool>(v);
      });
  row("tp", KnobKind::kWhole, {}, "1",
      "tensor-parallel ranks; must divide heads, ffn, vocab and hidden", true, nullptr,
      [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->parallel.layout.tp = static_cast<int>(positive("tp", v));
      });
  row("pp", KnobKind::kWhole, {}, "1", "pipeline stages; at most the number of blocks", true,
      nullptr, [](const Value& v, const ModelSpec& spec, TemplateConfig* c) {
        const int64_t pp = positive("pp", v);
        SLAPO_CHECK(pp <= spec.layers, ErrorCode::kInvalidArgument, "knob 'pp': ", pp,
                    " stages for ", spec.layers, " blocks");
        c->parallel.layout.pp = static_cast<int>(pp);
      });
  row("dp", KnobKind::kWhole, {}, "the ranks tp and pp leave", "data-parallel replicas", true,
      nullptr, [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->parallel.layout.dp = static_cast<int>(positive("dp", v));
      });
  row("cuts", KnobKind::kCuts, {}, "balanced stages",
      "the blocks where pipeline stages 2, 3, ... begin, ascending (pp − 1 of them)", true, nullptr,
      [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->parallel.cuts = std::get<IntList>(v);
      });
  row("micro_batches", KnobKind::kWhole, {}, "1", "micro-batches per step of a pipeline", true,
      nullptr, [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->parallel.micro_batches = positive("micro_batches", v);
      });
  row("pipeline_schedule", KnobKind::kChoice, {"1f1b", "gpipe"}, "1f1b",
      "the pipeline's order of forward and backward micro-batches", true, nullptr,
      [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->parallel.pipeline_schedule = std::get<std::string>(v);
      });
  row("batch_size", KnobKind::kWhole, {}, "the workload's",
      "samples per step (all data-parallel replicas)", true, nullptr,
      [](const Value& v, const ModelSpec&, TemplateConfig* c) {
        c->batch_size = positive("batch_size", v);
      });
  row("seq_len", KnobKind::kWhole, {}, "the workload's",
      "tokens per sample; at most the model's max_seq", true, nullptr,
      [](const Value& v, const ModelSpec& spec, TemplateConfig* c) {
        const int64_t s = positive("seq_len", v);
        SLAPO_CHECK(s <= spec.max_seq, ErrorCode::kInvalidArgument, "knob 'seq_len': ", s,
                    " is not in [1, ", spec.max_seq, "] for model ", spec.preset);
        c->seq_len = s;
      });
  return t;
}

}  // namespace

const char* attention_name(AttentionKind attn) {
  switch (attn) {
    case AttentionKind::kNaive: return "naive";
    case AttentionKind::kFusedQkv: return "fused_qkv";
    case AttentionKind::kBaddbmm: return "baddbmm";
    case AttentionKind::kMemoryEfficient: return "memory_efficient";
  }
  return "?";
}

const std::vector<TemplateKnob>& template_knobs() {
  static const std::vector<TemplateKnob> table = make_table();
  return table;
}

const TemplateKnob* find_template_knob(const std::string& name) {
  for (const TemplateKnob& k : template_knobs()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::string TemplateKnob::values_text() const {
  switch (kind) {
    case KnobKind::kBool: return "true, false";
    case KnobKind::kNumber: return "number";
    case KnobKind::kWhole: return "whole number";
    case KnobKind::kCuts: return "list of block indices";
    case KnobKind::kChoice: {
      std::string s;
      for (const std::string& c : choices) s += (s.empty() ? "" : ", ") + c;
      return s;
    }
  }
  return "";
}

std::string knob_reference_markdown(const FamilyTraits& family) {
  std::string md = "| knob | values | default | what it does |\n| --- | --- | --- | --- |\n";
  for (const TemplateKnob& k : template_knobs()) {
    if (!k.applies_to(family)) continue;
    md += "| `" + k.name + "` | " + k.values_text() + " | " + k.default_text + " | " + k.help +
          (k.runner ? " (read by the runner)" : "") + " |\n";
  }
  return md;
}

std::string batch_split_error(int64_t batch, int64_t dp, int64_t micro_batches) {
  if (batch % dp != 0)
    return "batch_size " + std::to_string(batch) +
           " does not split into dp = " + std::to_string(dp) + " data-parallel ranks";
  if ((batch / dp) % micro_batches != 0)
    return "pipeline: the batch of " + std::to_string(batch / dp) +
           " samples does not split into " + std::to_string(micro_batches) + " micro-batches";
  return "";
}

}  // namespace slapo::models
