#include "models/fused_lm_head.h"

#include <ATen/ATen.h>

#include "core/error.h"
#include "models/training_batch.h"
#include "schedule/kernels/fused_lm_loss.h"

namespace slapo::models {

FusedLmHeadImpl::FusedLmHeadImpl(const torch::Tensor& weight, const torch::Tensor& bias) {
  weight_ = register_parameter("weight", weight);
  if (bias.defined()) bias_ = register_parameter("bias", bias);
}

torch::Tensor FusedLmHeadImpl::forward(const torch::Tensor& hidden) {
  torch::Tensor logits = at::matmul(hidden, weight_.t());
  return bias_.defined() ? logits + bias_ : logits;
}

torch::Tensor FusedLmHeadImpl::loss(const torch::Tensor& hidden, const torch::Tensor& targets) {
  return schedule::linear_cross_entropy(hidden, weight_, bias_, targets, kIgnoredTarget);
}

FusedLmHead fused_lm_head(torch::nn::Module& head) {
  const auto params = head.named_parameters(/*recurse=*/false);
  SLAPO_CHECK(params.contains("weight") && params["weight"].dim() == 2 && head.children().empty(),
              ErrorCode::kInvalidArgument, "fused_lm_loss: the head (", head.name(),
              ") is not a linear map with a 2-D 'weight'");
  return FusedLmHead(params["weight"], params.contains("bias") ? params["bias"] : torch::Tensor());
}

}  // namespace slapo::models
