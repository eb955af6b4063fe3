#pragma once
// The blocks of the zoo's models. Every child is a slot (see schedule/language/slot_module.h).
//
//   MlpImpl        fc_in → act (GELU) → fc_out → drop
//   GptBlockImpl   x + attn(ln_1(x)); then x + mlp(ln_2(x))          (pre-LN, causal)
//   BertLayerImpl  attn_norm(x + attn(x)); then mlp_norm(x + mlp(x))  (post-LN)
//   MlpBlockImpl   x + mlp(norm(x))
//
// Each residual add is a slot of its own (attn_residual, mlp_residual: ResidualAdd), so that a
// schedule can fuse it with the sublayer's last bias and dropout (models/eager_fusions.h).

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/normalization.h>

#include "models/attention.h"
#include "models/model_spec.h"
#include "schedule/runtime/keyed_dropout.h"

namespace slapo::models {

// residual + y: the block's residual add, as a module a schedule can replace.
class ResidualAddImpl : public torch::nn::Module {
 public:
  torch::Tensor forward(const torch::Tensor& residual, const torch::Tensor& y);
};
TORCH_MODULE(ResidualAdd);

class MlpImpl : public schedule::SlotModule {
 public:
  // `gelu_tanh`: GELU's tanh approximation (GPT-Neo's "gelu_new"), else the exact one.
  MlpImpl(int64_t hidden, int64_t ffn, double dropout, bool gelu_tanh = false);
  torch::Tensor forward(const torch::Tensor& x);
};
TORCH_MODULE(Mlp);

class GptBlockImpl : public schedule::SlotModule {
 public:
  // Block `index` of the model: GPT-Neo's odd blocks attend locally (ModelSpec::local_window).
  explicit GptBlockImpl(const ModelSpec& spec, int64_t index = 0);
  torch::Tensor forward(const torch::Tensor& x);
};
TORCH_MODULE(GptBlock);

class BertLayerImpl : public schedule::SlotModule {
 public:
  explicit BertLayerImpl(const ModelSpec& spec);
  torch::Tensor forward(const torch::Tensor& x);
};
TORCH_MODULE(BertLayer);

class MlpBlockImpl : public schedule::SlotModule {
 public:
  explicit MlpBlockImpl(const ModelSpec& spec);
  torch::Tensor forward(const torch::Tensor& x);
};
TORCH_MODULE(MlpBlock);

torch::nn::LayerNorm layer_norm(const ModelSpec& spec);
// A keyed dropout (schedule/runtime/keyed_dropout.h) whose seed is drawn from the default
// generator, so a model built from the same seed has the same masks.
schedule::KeyedDropout dropout(double p);

}  // namespace slapo::models
