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
//   fuse_layer_norm  also: a LayerNorm right after the block's residual add (GPT's ln_2, BERT's
//                    attn_norm and mlp_norm) is computed with that add, in one pass with two
//                    outputs (slapo::add_layer_norm): the add → FusedAddLayerNorm, the norm →
//                    LayerNormAfterAdd, which hands on what the add computed

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

 protected:
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

 private:
  torch::Tensor weight_, bias_;
};
TORCH_MODULE(LinearBiasLater);

// residual + dropout(y + bias) in one pass: the block's residual add, with the bias of the
// sublayer's last Linear — read at each call from the block (`block`'s slot `sublayer`, its slot
// `linear`: a LinearBiasLater, which no longer adds it) — and the sublayer's dropout `drop`, which
// moves here under the name "drop" (same seed, same masks). Put in before the Linear and the
// dropout are replaced (the order a printed schedule replays in).
class FusedBiasDropoutAddImpl : public torch::nn::Module {
 public:
  FusedBiasDropoutAddImpl(const std::shared_ptr<torch::nn::Module>& block, std::string sublayer,
                          std::string linear, schedule::KeyedDropout drop);
  torch::Tensor forward(const torch::Tensor& residual, const torch::Tensor& y);

 private:
  std::weak_ptr<torch::nn::Module> block_;  // its owner: not a child, and not kept alive by it
  std::string sublayer_, linear_;
  schedule::KeyedDropout drop_;
};
TORCH_MODULE(FusedBiasDropoutAdd);

class LayerNormAfterAddImpl;

// The block's residual add x + y (the sum is its output, as before), computed together with the
// layer norm that the block applies to it next (`norm`'s weights): the norm is kept for `norm` to
// hand on when it is called with this sum.
class FusedAddLayerNormImpl : public torch::nn::Module {
 public:
  explicit FusedAddLayerNormImpl(std::shared_ptr<LayerNormAfterAddImpl> norm);
  torch::Tensor forward(const torch::Tensor& residual, const torch::Tensor& y);

 private:
  std::shared_ptr<LayerNormAfterAddImpl> norm_;  // not registered here: it is the block's
};
TORCH_MODULE(FusedAddLayerNorm);

// A LayerNorm whose input a FusedAddLayerNorm has already normalised: called with that sum, it
// returns the norm computed with it (and forgets it); with any other tensor it computes the norm
// itself (slapo::layer_norm), so the model is right whatever calls it. Keeps `original`'s weight
// and bias (same tensors, same names) and eps.
class LayerNormAfterAddImpl : public FusedLayerNormImpl {
 public:
  explicit LayerNormAfterAddImpl(torch::nn::LayerNormImpl& original)
      : FusedLayerNormImpl(original) {}
  torch::Tensor forward(const torch::Tensor& x);

 private:
  friend class FusedAddLayerNormImpl;
  torch::Tensor sum_, normed_;  // what the add computed last, until it is handed on
};
TORCH_MODULE(LayerNormAfterAdd);

}  // namespace slapo::models
