#pragma once
// FusedLmHead: the LM head that the template knob fused_lm_loss puts in the "head" slot of a
// decoder (gpt, gpt_neo, llama, mlp). Called as a module it computes the logits exactly as the
// head it replaces (same weight tensor, same names: a tied head stays tied); a training step asks
// the model for its loss instead (schedule::Pipelined::epilogue_loss), and then the head computes
// the cross-entropy without the tokens × vocabulary logits (schedule/kernels/fused_lm_loss.h).

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

namespace slapo::models {

class FusedLmHeadImpl : public torch::nn::Module {
 public:
  // `weight` [vocab, hidden] (the embedding's, when tied), `bias` [vocab] or undefined: the
  // tensors of the head it replaces, registered under the same names.
  FusedLmHeadImpl(const torch::Tensor& weight, const torch::Tensor& bias);
  // hidden [..., H] → logits [..., vocab].
  torch::Tensor forward(const torch::Tensor& hidden);
  // The language-model loss of `hidden` against `targets` (ignored: -100), as
  // language_model_loss(forward(hidden), targets) computes it.
  torch::Tensor loss(const torch::Tensor& hidden, const torch::Tensor& targets);

 private:
  torch::Tensor weight_, bias_;
};
TORCH_MODULE(FusedLmHead);

// The head of `head` (a TiedLmHead or a Linear) as a FusedLmHead over the same tensors.
FusedLmHead fused_lm_head(torch::nn::Module& head);

}  // namespace slapo::models
