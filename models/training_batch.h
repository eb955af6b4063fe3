#pragma once
// What a model family learns from a window of tokens: the inputs it reads and the targets its
// loss compares against. GPT and the MLP predict the next token; BERT predicts masked tokens
// (its bidirectional attention sees the next token, so next-token targets would teach it to copy).
//
// Masked language modelling as in BERT's reference data pipeline: in every sequence exactly
// k = max(1, round(0.15 · seq)) positions are chosen at random; of those, 80% read [MASK], 10% a
// random token and 10% stay as they are; only those k positions have a target. Every sequence has
// the same k, so the mean loss of any split of the batch by samples (micro-batches, data-parallel
// shards) averaged over the parts equals the mean loss of the whole batch: a schedule does not
// change the math.

#include <cstdint>
#include <functional>

#include <ATen/core/Tensor.h>

#include "models/model_spec.h"

namespace slapo::models {

// A target that the loss skips (torch's cross-entropy's default ignore_index).
inline constexpr int64_t kIgnoredTarget = -100;
// The share of positions a masked language model predicts.
inline constexpr double kMaskedShare = 0.15;

struct TrainingBatch {
  at::Tensor inputs;   // [b, s] token ids
  at::Tensor targets;  // [b, s] token ids, or kIgnoredTarget where nothing is predicted
};

// The loss of `spec`'s family: logits [b, s, v], targets [b, s] → a scalar (the registered
// family's, or the mean token cross-entropy over targets that are not kIgnoredTarget).
using LossFn = std::function<at::Tensor(const at::Tensor& logits, const at::Tensor& targets)>;
LossFn training_loss(const ModelSpec& spec);

// The positions a masked language model predicts per sequence of `seq` tokens.
int64_t masked_positions(int64_t seq);

// The [MASK] token of `spec`'s vocabulary: its last id (the zoo's vocabularies have no names).
int64_t mask_token(const ModelSpec& spec);

// The batch of `spec`'s family from `window` [b, s + 1] of token ids in [0, spec.vocab): next-token
// families read window[:, :s] and predict window[:, 1:]; masked families read window[:, :s] with
// masks and predict the masked originals. Random draws come from the default generator, so the
// same seed gives the same batch on every rank.
TrainingBatch training_batch(const ModelSpec& spec, const at::Tensor& window);

}  // namespace slapo::models
