#pragma once
// The model zoo: language models written to be schedulable. Each maps token ids [batch, seq]
// (int64) to logits [batch, seq, vocab]; the LM head is tied to the token embedding.
//
//   gpt   wte, wpe, drop | h.<i> (GptBlock) | ln_f, head (tied to wte)
//   bert  embeddings.{word, position, token_type, norm, drop} | encoder.<i> (BertLayer) |
//         head.{dense, act, norm}, decoder (tied to embeddings.word, with a bias)
//   mlp   wte | h.<i> (MlpBlock) | ln_f, head (tied to wte)
//   gpt_neo as gpt (its blocks attend globally and locally in turn)
//   llama wte | h.<i> (LlamaBlock: ln_1, attn.{q,k,v,out}_proj, ln_2, mlp.{gate,up,down}_proj) |
//         ln_f, head (a Linear of its own)
//
// Each is a schedule::Pipelined model: prologue | body | epilogue as marked, so a pipeline can cut
// the body into stages. Dropout is keyed (schedule/runtime/keyed_dropout.h): the masks depend on
// the step and the sample, not on the order of execution.

#include <functional>
#include <memory>
#include <string>

#include "models/model_spec.h"
#include "schedule/language/slot_module.h"

namespace slapo::models {

// Builds a model with weights drawn from `seed` (the same seed gives the same weights).
std::shared_ptr<schedule::SlotModule> build_model(const ModelSpec& spec, uint64_t seed = 0);

// Forward of a zoo model: token ids → logits.
torch::Tensor model_forward(schedule::SlotModule& model, const torch::Tensor& tokens);

// The training loss of a zoo model, as a training step computes it: loss(logits, targets), or
// without the logits when the schedule fused the LM head with the loss (fused_lm_loss).
torch::Tensor model_loss(
    schedule::SlotModule& model, const torch::Tensor& tokens, const torch::Tensor& targets,
    const std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>& loss);

// Mean token cross-entropy of `logits` [b, s, v] against `targets` [b, s].
torch::Tensor language_model_loss(const torch::Tensor& logits, const torch::Tensor& targets);

// The path of the repeated blocks: "h" (gpt, mlp) or "encoder" (bert).
std::string blocks_path(const ModelSpec& spec);

}  // namespace slapo::models
