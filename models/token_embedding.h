#pragma once
// TokenEmbedding: the zoo's token embedding, and the LM heads tied to it.
//
// TokenEmbeddingImpl is an nn::Embedding that stays correct when the schedule shards its weight
// along the vocabulary (axis 0): each tensor-parallel rank then holds a contiguous range of rows,
// looks up only the tokens in its range and returns zeros for the others, so the sum over ranks
// (sync("fwd_post", "all_reduce")) is the full embedding — Megatron's vocabulary-parallel
// embedding. Sharded along the hidden axis (1), each rank returns its columns (all-gather them).
//
// TiedLmHeadImpl computes hidden · Wᵀ with the embedding's weight, registered under its own name as
// the same tensor (so a pipeline's last stage owns it too, and sharding the embedding shards it).

#include <cstdint>
#include <string>

#include <torch/nn/modules/embedding.h>

#include "schedule/language/shard_aware.h"
#include "schedule/language/slot_module.h"

namespace slapo::models {

class TokenEmbeddingImpl : public torch::nn::EmbeddingImpl, public schedule::ShardAware {
 public:
  TokenEmbeddingImpl(int64_t vocab, int64_t hidden);
  torch::Tensor forward(const torch::Tensor& tokens);
  void on_shard(const std::string& name, int64_t axis, int64_t parts, int64_t rank) override;

 private:
  int64_t first_row_ = 0;  // the first token id this rank holds
  bool vocab_sharded_ = false;
};
TORCH_MODULE(TokenEmbedding);

class TiedLmHeadImpl : public torch::nn::Module {
 public:
  // `bias` (optional, may be undefined) is added to the logits: BERT's decoder bias.
  explicit TiedLmHeadImpl(const torch::Tensor& weight, bool with_bias = false);
  torch::Tensor forward(const torch::Tensor& hidden);

 private:
  torch::Tensor weight_, bias_;
};
TORCH_MODULE(TiedLmHead);

}  // namespace slapo::models
