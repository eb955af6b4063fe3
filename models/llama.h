#pragma once
// The LLaMA family's modules (Touvron et al. 2023; the layout of Hugging Face's LlamaModel, so its
// checkpoints load by name — models/weights/hf_layouts.h):
//
//   RmsNormImpl                 x · rsqrt(mean(x²) + eps) · weight (no bias, no centring)
//   GroupedQueryAttentionImpl   q_proj, k_proj, v_proj, out_proj (no biases); rotary position
//                               embeddings on q and k (rotate-half form, base 10000); kv_heads
//                               key/value heads, each shared by heads / kv_heads query heads
//   SwiGluMlpImpl               down_proj(silu(gate_proj(x)) · up_proj(x)) (no biases)
//   LlamaBlockImpl              x + attn(ln_1(x)); then x + mlp(ln_2(x))   (pre-norm, causal)
//
// Heads are counted from the tensors, not the options: a tensor-parallel rank whose projections are
// sharded by heads sees only its own query and key/value heads, and its groups pair up.

#include <torch/nn/module.h>

#include "models/model_spec.h"
#include "schedule/language/slot_module.h"

namespace slapo::models {

class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(int64_t hidden, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RmsNorm);

class GroupedQueryAttentionImpl : public schedule::SlotModule {
 public:
  explicit GroupedQueryAttentionImpl(const ModelSpec& spec);
  // x: [batch, seq, hidden] → [batch, seq, hidden].
  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t head_dim_;
  double rope_base_ = 10000;
};
TORCH_MODULE(GroupedQueryAttention);

class SwiGluMlpImpl : public schedule::SlotModule {
 public:
  SwiGluMlpImpl(int64_t hidden, int64_t ffn);
  torch::Tensor forward(const torch::Tensor& x);
};
TORCH_MODULE(SwiGluMlp);

class LlamaBlockImpl : public schedule::SlotModule {
 public:
  explicit LlamaBlockImpl(const ModelSpec& spec);
  torch::Tensor forward(const torch::Tensor& x);
};
TORCH_MODULE(LlamaBlock);

// q or k [batch, heads, seq, head_dim] with rotary position embeddings of positions 0..seq-1
// (Hugging Face's rotate-half form: the two halves of each head are the rotated pairs).
torch::Tensor apply_rotary(const torch::Tensor& x, double base);

}  // namespace slapo::models
