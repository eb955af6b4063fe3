#include "models/fused_lm_head.h"

#include <ATen/ATen.h>

#include "core/error.h"
#include "models/training_batch.h"
#include "schedule/kernels/fused_lm_loss.h"

namespace slapo::models {

FusedLmHeadImpl::FusedLmHeadImpl(const torch::Tensor& weight, const torch::Tensor& bias,
                                 std::shared_ptr<schedule::Communicator> group, int64_t vocab_begin)
    : group_(std::move(group)), vocab_begin_(vocab_begin) {
  weight_ = register_parameter("weight", weight);
  if (bias.defined()) bias_ = register_parameter("bias", bias);
}

torch::Tensor FusedLmHeadImpl::forward(const torch::Tensor& hidden) {
  torch::Tensor logits = at::matmul(hidden, weight_.t());
  return bias_.defined() ? logits + bias_ : logits;
}

torch::Tensor FusedLmHeadImpl::loss(const torch::Tensor& hidden, const torch::Tensor& targets) {
  return schedule::linear_cross_entropy(hidden, weight_, bias_, targets, kIgnoredTarget, 0,
                                        schedule::VocabShard{group_.get(), vocab_begin_});
}

FusedLmHead fused_lm_head(torch::nn::Module& head, std::shared_ptr<schedule::Communicator> group) {
  const auto params = head.named_parameters(/*recurse=*/false);
  SLAPO_CHECK(params.contains("weight") && params["weight"].dim() == 2 && head.children().empty(),
              ErrorCode::kInvalidArgument, "fused_lm_loss: the head (", head.name(),
              ") is not a linear map with a 2-D 'weight'");
  const torch::Tensor& weight = params["weight"];
  const int64_t begin = group ? group->rank() * weight.size(0) : 0;
  return FusedLmHead(weight, params.contains("bias") ? params["bias"] : torch::Tensor(),
                     std::move(group), begin);
}

}  // namespace slapo::models
