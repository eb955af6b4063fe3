#pragma once
// TemplateConfig: a configuration as the schedule templates, the runners and the trainer read it.
// A Config (knob name → value) is parsed and checked once against the template's knob table
// (models/template_knobs.h) into this typed value; nothing downstream looks knobs up by name.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/layout.h"

namespace slapo::models {

enum class AttentionKind { kNaive, kFusedQkv, kBaddbmm, kMemoryEfficient };
// Megatron's layouts for a pair of Linears that follow each other:
//   kColRow: the first split by outputs, the second by inputs (one all-reduce each way);
//   kRowCol: the first split by inputs, the second by outputs (more traffic; for the tuner).
enum class PairShard { kColRow, kRowCol };
// The token embedding and the tied LM head: split by vocabulary, by hidden units, or replicated.
enum class EmbedShard { kVocab, kHidden, kReplicated };

// How the ranks of a trial are laid out and how its pipeline runs.
struct ParallelKnobs {
  Layout layout;  // tp, dp, pp
  int64_t micro_batches = 1;
  std::string pipeline_schedule = "1f1b";  // "1f1b" | "gpipe"
  std::vector<int64_t> cuts;               // pp − 1 block indices where stages 2, 3, ... begin
  int world() const { return layout.world(); }
};

struct TemplateConfig {
  int64_t checkpointed_blocks = 0;  // the first n blocks are checkpointed
  AttentionKind attn = AttentionKind::kNaive;
  PairShard attn_shard = PairShard::kColRow;
  PairShard mlp_shard = PairShard::kColRow;
  EmbedShard embed_shard = EmbedShard::kVocab;
  bool decompose = false;
  bool fuse_bias_gelu = false;
  bool fuse_bias_dropout_add = false;
  bool fuse_layer_norm = false;
  // The fusion knobs through traced graphs (fusion_path = "graph") instead of eager modules.
  bool fusion_graph = false;
  // Read by the trainer: the optimizer step as one pass per parameter (schedule/kernels/
  // fused_adamw.h), the same weights bit for bit.
  bool fused_adamw = false;
  // The LM head and the cross-entropy computed together, without the logits
  // (models/fused_lm_head.h).
  bool fused_lm_loss = false;
  ParallelKnobs parallel;
  // Read by the runner; unset: the workload's.
  std::optional<int64_t> batch_size;
  std::optional<int64_t> seq_len;
};

// The knob value of an attention variant ("naive", "fused_qkv", "baddbmm", "memory_efficient").
const char* attention_name(AttentionKind attn);

}  // namespace slapo::models
