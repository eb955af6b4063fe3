#pragma once
// FusedLmHead: the LM head that the template knob fused_lm_loss puts in the "head" slot of a
// decoder (gpt, gpt_neo, llama, mlp). Called as a module it computes the logits exactly as the
// head it replaces (same weight tensor, same names: a tied head stays tied); a training step asks
// the model for its loss instead (schedule::Pipelined::epilogue_loss), and then the head computes
// the cross-entropy without the tokens × vocabulary logits (schedule/kernels/fused_lm_loss.h).

#include <memory>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "schedule/runtime/communicator.h"

namespace slapo::models {

class FusedLmHeadImpl : public torch::nn::Module {
 public:
  // `weight` [vocab, hidden] (the embedding's, when tied), `bias` [vocab] or undefined: the
  // tensors of the head it replaces, registered under the same names. Split by vocabulary over a
  // tensor-parallel `group`, they are this rank's rows from `vocab_begin` on, and the loss is the
  // vocabulary-parallel one (schedule::VocabShard); no group: the whole vocabulary.
  FusedLmHeadImpl(const torch::Tensor& weight, const torch::Tensor& bias,
                  std::shared_ptr<schedule::Communicator> group = nullptr, int64_t vocab_begin = 0);
  // hidden [..., H] → logits [..., vocab] (this rank's part of the vocabulary: the slot's
  // all-gather, as for the head it replaces, makes them whole).
  torch::Tensor forward(const torch::Tensor& hidden);
  // The language-model loss of `hidden` against `targets` (ignored: -100), as
  // language_model_loss(forward(hidden), targets) computes it.
  torch::Tensor loss(const torch::Tensor& hidden, const torch::Tensor& targets);

 private:
  torch::Tensor weight_, bias_;
  std::shared_ptr<schedule::Communicator> group_;
  int64_t vocab_begin_ = 0;
};
TORCH_MODULE(FusedLmHead);

// The head of `head` (a TiedLmHead or a Linear) as a FusedLmHead over the same tensors; with a
// tensor-parallel `group`, `head`'s weight holds rank r's rows of the vocabulary (r · rows on).
FusedLmHead fused_lm_head(torch::nn::Module& head,
                          std::shared_ptr<schedule::Communicator> group = nullptr);

}  // namespace slapo::models
