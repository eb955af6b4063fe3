#pragma once
// The fusion knobs' eager path (template knob fusion_path = "eager", the default): the project's
// fused kernels (schedule/kernels/fused_kernels.h) put in by `replace`, as modules that call them
// directly — no trace, no TorchScript interpreter between the kernels — and over the same
// parameter tensors, under the same names, so shards, syncs and checkpoints of the model stay as
// they are.
//
//   fuse_layer_norm  a block's LayerNorms (and the final ln_f) → FusedLayerNorm: slapo::layer_norm
//   fuse_bias_gelu   a block's mlp → FusedMlp: fc_in's product, then its bias and the GELU in one
//                    pass (slapo::bias_gelu); fc_out and the dropout through their slots
//   fuse_bias_dropout_add
//                    a sublayer's last Linear (attn.out_proj, mlp.fc_out) → LinearBiasLater, its
//                    dropout (attn.resid_drop, mlp.drop) → Identity, and the block's residual add
//                    (attn_residual, mlp_residual) → FusedBiasDropoutAdd: residual + dropout(y +
//                    bias) in one pass (slapo::bias_dropout_add), the same masks

#include <memory>

#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "schedule/language/slot_module.h"
#include "schedule/runtime/keyed_dropout.h"

namespace slapo::models {

class MlpImpl;

class FusedLayerNormImpl : public torch::nn::Module {
 public:
  // Takes over `original`'s weight, bias (same tensors, same names) and eps.
  explicit FusedLayerNormImpl(torch::nn::LayerNormImpl& original);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::Tensor weight_, bias_;
  double eps_;
};
TORCH_MODULE(FusedLayerNorm);

class FusedMlpImpl : public schedule::SlotModule {
 public:
  // Shares `original`'s fc_in, fc_out and dropout slots (a Linear or a decomposed one each); its
  // GELU (exact) is computed with fc_in's bias by slapo::bias_gelu. Put in before the MLP is
  // sharded, so that fc_out's syncs are this module's; fc_in is never called through its slot, so
  // it must not be split by inputs (the template refuses mlp_shard = row_col with it).
  explicit FusedMlpImpl(MlpImpl& original);
  torch::Tensor forward(const torch::Tensor& x);
};
TORCH_MODULE(FusedMlp);

// A Linear whose bias a later kernel adds: x · weightᵀ. Keeps `original`'s weight and bias (same
// tensors, same names, so the model's parameters and their gradients are those of the original).
class LinearBiasLaterImpl : public torch::nn::Module {
 public:
  explicit LinearBiasLaterImpl(torch::nn::LinearImpl& original);
  torch::Tensor forward(const torch::Tensor& x);
  const torch::Tensor& bias() const { return bias_; }

 private:
  torch::Tensor weight_, bias_;
};
TORCH_MODULE(LinearBiasLater);

// residual + dropout(y + bias) in one pass: the block's residual add, with the bias of `linear`
// (the sublayer's last Linear, which no longer adds it) and the sublayer's dropout `drop` (which
// moves here, under the name "drop": same seed, same masks).
class FusedBiasDropoutAddImpl : public torch::nn::Module {
 public:
  FusedBiasDropoutAddImpl(LinearBiasLater linear, schedule::KeyedDropout drop);
  torch::Tensor forward(const torch::Tensor& residual, const torch::Tensor& y);

 private:
  LinearBiasLater linear_;  // not registered here: it is the sublayer's
  schedule::KeyedDropout drop_;
};
TORCH_MODULE(FusedBiasDropoutAdd);

}  // namespace slapo::models
