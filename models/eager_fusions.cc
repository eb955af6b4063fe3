#include "models/eager_fusions.h"

#include <ATen/ATen.h>

#include "core/error.h"
#include "models/blocks.h"
#include "schedule/kernels/fused_kernels.h"

namespace slapo::models {

FusedLayerNormImpl::FusedLayerNormImpl(torch::nn::LayerNormImpl& original)
    : eps_(original.options.eps()) {
  SLAPO_CHECK(
      original.options.elementwise_affine() && original.options.normalized_shape().size() == 1,
      ErrorCode::kInvalidArgument,
      "fused layer norm: replaces a layer norm over the last axis with weight and bias");
  weight_ = register_parameter("weight", original.weight);
  bias_ = register_parameter("bias", original.bias);
}

torch::Tensor FusedLayerNormImpl::forward(const torch::Tensor& x) {
  return schedule::layer_norm(x, weight_, bias_, eps_);
}

FusedMlpImpl::FusedMlpImpl(MlpImpl& original) {
  for (const char* name : {"fc_in", "fc_out", "drop"}) {
    const schedule::Slot& slot = original.slot(name);
    add_slot_any(name, slot.module, slot.signature);
  }
  SLAPO_CHECK(slot("fc_in").module.ptr()->named_parameters(false).contains("bias"),
              ErrorCode::kInvalidArgument, "fused MLP: fc_in has no bias to fuse with the GELU");
}

torch::Tensor FusedMlpImpl::forward(const torch::Tensor& x) {
  // fc_in's tensors are read at each call: a shard of them (by outputs) is what this rank holds.
  const auto fc_in = slot("fc_in").module.ptr()->named_parameters(false);
  const torch::Tensor h = schedule::bias_gelu(at::matmul(x, fc_in["weight"].t()), fc_in["bias"]);
  return call("drop", call("fc_out", h));
}

LinearBiasLaterImpl::LinearBiasLaterImpl(torch::nn::LinearImpl& original) {
  SLAPO_CHECK(original.bias.defined(), ErrorCode::kInvalidArgument,
              "bias + dropout + residual fusion: the Linear has no bias");
  weight_ = register_parameter("weight", original.weight);
  bias_ = register_parameter("bias", original.bias);
}

torch::Tensor LinearBiasLaterImpl::forward(const torch::Tensor& x) {
  return at::matmul(x, weight_.t());
}

FusedBiasDropoutAddImpl::FusedBiasDropoutAddImpl(const std::shared_ptr<torch::nn::Module>& block,
                                                 std::string sublayer, std::string linear,
                                                 schedule::KeyedDropout drop)
    : block_(block),
      sublayer_(std::move(sublayer)),
      linear_(std::move(linear)),
      drop_(register_module("drop", std::move(drop))) {}

torch::Tensor FusedBiasDropoutAddImpl::forward(const torch::Tensor& residual,
                                               const torch::Tensor& y) {
  const std::shared_ptr<torch::nn::Module> block = block_.lock();
  SLAPO_CHECK(block != nullptr, ErrorCode::kRuntime,
              "bias + dropout + residual: the block it belongs to is gone");
  auto* sublayer = dynamic_cast<schedule::SlotModule*>(block->named_children()[sublayer_].get());
  SLAPO_CHECK(sublayer != nullptr, ErrorCode::kRuntime, "bias + dropout + residual: '", sublayer_,
              "' is not a module with slots");
  // The Linear's tensors are read at each call: a replaced or resharded one is what counts.
  const torch::Tensor bias = sublayer->slot(linear_).module.ptr()->named_parameters(false)["bias"];
  const std::optional<schedule::MaskSpec> spec = drop_->mask_spec_now();
  if (!spec) return residual + (y + bias);  // eval, or p = 0: no mask to draw
  return schedule::bias_dropout_add(y, bias, residual, spec->p, static_cast<int64_t>(spec->seed),
                                    spec->axis, spec->parts, spec->rank, spec->independent);
}

FusedAddLayerNormImpl::FusedAddLayerNormImpl(std::shared_ptr<LayerNormAfterAddImpl> norm)
    : norm_(std::move(norm)) {}

torch::Tensor FusedAddLayerNormImpl::forward(const torch::Tensor& residual,
                                             const torch::Tensor& y) {
  auto [sum, normed] =
      schedule::add_layer_norm(residual, y, norm_->weight_, norm_->bias_, norm_->eps_);
  norm_->sum_ = sum;
  norm_->normed_ = normed;
  return sum;
}

torch::Tensor LayerNormAfterAddImpl::forward(const torch::Tensor& x) {
  if (sum_.defined() && x.is_same(sum_)) {
    torch::Tensor normed = std::move(normed_);
    sum_ = torch::Tensor();
    normed_ = torch::Tensor();
    return normed;
  }
  return FusedLayerNormImpl::forward(x);
}

}  // namespace slapo::models
