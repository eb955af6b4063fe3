#pragma once
// The LM head and its cross-entropy in one, without the tokens × vocabulary logits.
//
// Unfused, a language model's last step keeps three tokens × vocab tensors alive: the logits, the
// log-softmax cross-entropy saves for backward, and the logits' gradient in backward — at gpt-mini
// (2048 tokens, vocabulary 8192) 64 MiB each, more than all of the model's weights. Here the tokens
// are taken in chunks: a chunk's logits are computed, its log-sum-exp and loss taken, and — since
// the loss is the end of the graph — its gradient too (softmax minus the one-hot target), which
// goes at once into the hidden states' gradient and the weight's (and bias') accumulated gradient.
// Backward only scales those by the incoming gradient. So the same matrix products run as
// unfused (one forward, two backward), nothing is recomputed, and the largest transient is one
// chunk of logits.

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace slapo::schedule {

class Communicator;

// The LM head split by vocabulary over a tensor-parallel group (Megatron's vocabulary-parallel
// cross-entropy): this rank holds rows [begin, begin + weight.size(0)) of the [vocab, hidden]
// weight (and of the bias). The log-sum-exp is taken across the group (a max and a sum per token),
// the target's logit comes from the rank that holds it, and the hidden states' gradient is summed
// over the group; every rank returns the whole loss.
struct VocabShard {
  Communicator* group = nullptr;  // null: the weight is the whole vocabulary
  int64_t begin = 0;
};

// The mean cross-entropy of logits = hidden · weightᵀ (+ bias) against `targets`, over the
// targets that are not `ignore_index` — what cross_entropy(logits.view(-1, V), targets.view(-1))
// computes. hidden: [..., H] float32; weight: [V, H]; bias: [V] or undefined; targets: [...]
// int64 in [0, V) or ignore_index. Differentiable in hidden, weight and bias. `chunk_tokens`
// (≥ 1) tokens' logits are alive at a time; 0 picks about 4 Mi logits. With a `shard`, weight
// (and bias) are this rank's rows of the vocabulary and every rank of the group must call it.
at::Tensor linear_cross_entropy(const at::Tensor& hidden, const at::Tensor& weight,
                                const at::Tensor& bias, const at::Tensor& targets,
                                int64_t ignore_index = -100, int64_t chunk_tokens = 0,
                                const VocabShard& shard = {});

// The tokens whose logits linear_cross_entropy keeps alive at a time over a vocabulary (a rank's
// rows) of `vocab` when `chunk_tokens` is 0: about 4 Mi logits. Its buffer grows with the tokens up
// to that and no further (the cost model's profile reads it: runners/profile_shape.cc).
int64_t default_chunk_tokens(int64_t vocab);

}  // namespace slapo::schedule
