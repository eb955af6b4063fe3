#pragma once
// Schedule templates: how the knobs of a configuration become primitives on a zoo model.
//
// Template "gpt", "bert" (transformers) and "mlp" understand:
//   ckpt_ratio   0 ≤ r ≤ 1: checkpoint the first round(r · layers) blocks (halves round up)
//   ckpt_layers  0 ≤ n ≤ layers: checkpoint the first n blocks
//   attn         "naive" | "fused_qkv" | "baddbmm": the attention implementation (transformers)
//   attn_shard   "col_row" (Megatron: q, k, v split by heads, out_proj by inputs; one all-reduce
//                each way) | "row_col" (q, k, v split by inputs, out_proj by outputs)
//   mlp_shard    "col_row" (fc_in by outputs, fc_out by inputs) | "row_col"
//   embed_shard  "vocab" (embedding and tied LM head split by vocabulary) | "hidden" (split by
//                hidden units) | "replicated"
//   decompose    true: each block's MLP Linears become matmul + bias add (before any shard)
//   fuse_bias_gelu, fuse_bias_dropout_add, fuse_layer_norm
//                true: each block traced (at its first call) and that chain fused into the
//                project's kernel (schedule/fusion_chains.h): fc_in's bias add + GELU; out_proj's
//                and fc_out's bias add + dropout + residual add (those Linears decomposed); the
//                block's layer norms. Not with tp > 1 yet
//   tp, pp, dp   the parallel layout: tensor-parallel ranks, pipeline stages, data-parallel
//                replicas (tp·pp·dp ranks in all); the shard knobs matter when tp > 1
//   cuts         the blocks where pipeline stages 2, 3, ... begin, ascending (pp − 1 of them, as
//                a space file's cuts knob gives them; default: even stages)
//   micro_batches, pipeline_schedule ("1f1b" | "gpipe"), batch_size, seq_len: read by the runner
// A knob the template does not understand is an error before anything is built.

#include <string>
#include <vector>

#include "core/config.h"
#include "models/model_spec.h"
#include "schedule/schedule.h"

namespace slapo::models {

struct TemplateInfo {
  std::string name;
  std::string family;  // the model family it schedules
  std::vector<std::string> knobs;
};

const std::vector<TemplateInfo>& schedule_templates();
// The template used when a workload names none: the model's family.
std::string default_template(const ModelSpec& spec);

// Checks that template `name` exists, fits `spec`, understands every knob of `config`, and that
// the values are in range. Throws Error(kInvalidArgument) naming the knob otherwise.
void check_template(const std::string& name, const ModelSpec& spec, const Config& config);

// Applies the template's primitives to `sch` (a schedule of a model built from `spec`).
void apply_template(schedule::Schedule& sch, const ModelSpec& spec, const std::string& name, const Config& config);

// The parallel layout a configuration asks for (defaults: one rank, 1f1b, balanced cuts:
// models/pipeline_cuts.h).
struct ParallelKnobs {
  int64_t tp = 1, pp = 1, dp = 1;
  int64_t micro_batches = 1;
  std::string pipeline_schedule = "1f1b";
  std::vector<int64_t> cuts;  // pp − 1 block indices where stages 2, 3, ... begin
  int64_t world() const { return tp * pp * dp; }
};
ParallelKnobs parallel_knobs(const ModelSpec& spec, const Config& config);

// The type name of an attention variant ("fused_qkv", "baddbmm") for replace_with_zoo_module.
std::string attention_type(const std::string& attn);

// Makes the zoo's replacement modules for schedule::replay (the attention variants).
void replace_with_zoo_module(schedule::Schedule& target, const std::string& type_name);

// The number of blocks checkpointed for `config` (from ckpt_ratio or ckpt_layers; 0 if neither).
int64_t checkpointed_blocks(const ModelSpec& spec, const Config& config);

}  // namespace slapo::models
