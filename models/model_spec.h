#pragma once
// The model zoo's sizes: public configurations (gpt2, gpt2-medium, bert-base, bert-large,
// llama-7b), CPU-sized ones (gpt-mini, bert-mini, mlp-mini, llama-mini) and tiny ones for tests
// (gpt-tiny, bert-tiny, mlp-tiny, llama-tiny). Every zoo model maps token ids [batch, seq] to
// logits [batch, seq, vocab].

#include <cstdint>
#include <string>
#include <vector>

#include "models/family.h"

namespace slapo::models {

struct ModelSpec {
  std::string preset;  // the name it was made from
  std::string family;  // "gpt" (pre-LN causal decoder), "bert" (post-LN encoder), "mlp"
  int64_t vocab = 0;
  int64_t max_seq = 0;
  int64_t hidden = 0;
  int64_t heads = 1;
  int64_t kv_heads = 0;  // key/value heads of grouped-query attention; 0: as many as heads
  // GPT-Neo: blocks 1, 3, 5, ... attend to the last `local_window` tokens only; 0: every block
  // global.
  int64_t local_window = 0;
  int64_t layers = 0;
  int64_t ffn = 0;
  double dropout = 0.1;
  double layer_norm_eps = 1e-5;

  int64_t key_value_heads() const { return kv_heads > 0 ? kv_heads : heads; }

  // What the family means to schedules (models/family.h).
  const FamilyTraits& traits() const { return family_traits(family); }

  // Parameters, counted (embeddings included once: the LM head is tied).
  int64_t parameter_count() const;
  // Forward FLOPs of one sequence of `seq` tokens (matmuls only; 2 per multiply-add): `layers`
  // blocks and the LM head.
  double forward_flops(int64_t seq) const;
  // Model FLOPs of training one sample: forward and backward (two forwards' worth), recomputation
  // not counted — what a trial's `tflops` and the cost model's prediction of it count.
  double train_flops(int64_t seq) const { return 3 * forward_flops(seq); }
  double block_forward_flops(int64_t seq) const;
  double head_forward_flops(int64_t seq) const;
};

// The spec of a preset. Throws Error(kNotFound) listing the presets when unknown.
ModelSpec model_preset(const std::string& name);
std::vector<std::string> model_presets();

}  // namespace slapo::models
