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
//
// (fuse_bias_dropout_add needs the block's residual add, which is the block's own code: it stays on
// the graph path — the block traced and the chain fused, models/templates.cc.)

#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "schedule/language/slot_module.h"

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

}  // namespace slapo::models
