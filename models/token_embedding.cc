#include "models/token_embedding.h"

#include <torch/nn/functional/embedding.h>
#include <torch/nn/init.h>

#include "core/error.h"

namespace slapo::models {

TokenEmbeddingImpl::TokenEmbeddingImpl(int64_t vocab, int64_t hidden)
    : torch::nn::EmbeddingImpl(torch::nn::EmbeddingOptions(vocab, hidden)) {
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(weight, 0.0, 0.02);
}

void TokenEmbeddingImpl::on_shard(const std::string& name, int64_t axis, int64_t parts,
                                  int64_t rank) {
  if (name != "weight" || axis != 0) return;
  vocab_sharded_ = parts > 1;
  first_row_ = rank * weight.size(0);
}

torch::Tensor TokenEmbeddingImpl::forward(const torch::Tensor& tokens) {
  if (!vocab_sharded_) return torch::nn::functional::embedding(tokens, weight);
  const int64_t rows = weight.size(0);
  torch::Tensor outside = (tokens < first_row_) | (tokens >= first_row_ + rows);
  torch::Tensor local = (tokens - first_row_).masked_fill(outside, 0);
  return torch::nn::functional::embedding(local, weight).masked_fill(outside.unsqueeze(-1), 0.0);
}

TiedLmHeadImpl::TiedLmHeadImpl(const torch::Tensor& weight, bool with_bias) {
  weight_ = register_parameter("weight", weight);
  if (with_bias) bias_ = register_parameter("bias", torch::zeros({weight.size(0)}));
}

torch::Tensor TiedLmHeadImpl::forward(const torch::Tensor& hidden) {
  torch::Tensor logits = torch::matmul(hidden, weight_.t());
  return bias_.defined() ? logits + bias_ : logits;
}

}  // namespace slapo::models
