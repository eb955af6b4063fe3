#include "schedule/runtime/checkpoint.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "core/error.h"
#include "schedule/runtime/keyed_dropout.h"

namespace slapo::schedule {

namespace {

// What backward needs besides the saved inputs, carried in ctx->saved_data as a capsule.
struct CheckpointState : torch::CustomClassHolder {
  ValuesFunction forward;
  std::vector<torch::Tensor> params;
  std::vector<std::shared_ptr<RngStream>> streams;
  at::Tensor rng_state;                   // the default generator at forward time
  std::vector<at::Tensor> stream_states;  // each stream at forward time
  DropoutKey dropout_key;                 // keyed dropout's step and samples at forward time
  // Which inputs of the forward are given: autograd takes defined tensors only, so an absent
  // optional input is left out of the function's inputs and put back around `forward`.
  std::vector<bool> present;
};

// The forward's inputs from the given ones: undefined where an optional input is absent.
std::vector<torch::Tensor> with_absent(const std::vector<torch::Tensor>& given,
                                       const std::vector<bool>& present) {
  std::vector<torch::Tensor> all;
  size_t next = 0;
  for (bool p : present) all.push_back(p ? given.at(next++) : torch::Tensor());
  return all;
}

struct CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                at::TensorList inputs, at::TensorList params,
                                                c10::intrusive_ptr<CheckpointState> state) {
    state->rng_state = default_rng_state();
    for (const auto& s : state->streams) state->stream_states.push_back(s->state());
    state->dropout_key = current_dropout_key();
    if (!state->dropout_key.active) state->dropout_key = fresh_dropout_key();
    std::vector<torch::Tensor> in(inputs.begin(), inputs.end());
    DropoutScope scope(state->dropout_key);
    std::vector<torch::Tensor> out = state->forward(with_absent(in, state->present));
    for (const torch::Tensor& y : out) {
      SLAPO_CHECK(y.defined(), ErrorCode::kInvalidArgument,
                  "checkpoint: the module returned an undefined tensor, which backward cannot "
                  "reach");
    }
    ctx->save_for_backward(in);
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    ctx->saved_data["num_params"] = static_cast<int64_t>(params.size());
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto state =
        c10::static_intrusive_pointer_cast<CheckpointState>(ctx->saved_data["state"].toCapsule());
    const std::vector<torch::Tensor> saved = ctx->get_saved_variables();
    std::vector<torch::Tensor> inputs;
    for (const torch::Tensor& x : saved)
      inputs.push_back(x.detach().requires_grad_(x.requires_grad()));

    // Recompute with the random state of the forward pass, then put the current one back.
    const at::Tensor current = default_rng_state();
    std::vector<at::Tensor> current_streams;
    for (const auto& s : state->streams) current_streams.push_back(s->state());
    set_default_rng_state(state->rng_state);
    for (size_t i = 0; i < state->streams.size(); ++i)
      state->streams[i]->set_state(state->stream_states[i]);
    std::vector<torch::Tensor> out;
    {
      torch::AutoGradMode enable(true);
      DropoutScope scope(state->dropout_key);
      out = state->forward(with_absent(inputs, state->present));
    }
    set_default_rng_state(current);
    for (size_t i = 0; i < state->streams.size(); ++i)
      state->streams[i]->set_state(current_streams[i]);

    std::vector<torch::Tensor> targets;
    for (const torch::Tensor& x : inputs) {
      if (x.requires_grad()) targets.push_back(x);
    }
    for (const torch::Tensor& p : state->params) {
      if (p.requires_grad()) targets.push_back(p);
    }
    // The outputs that carry a gradient (an attention-probabilities output may not).
    std::vector<torch::Tensor> outputs, output_grads;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].requires_grad()) {
        outputs.push_back(out[i]);
        output_grads.push_back(grad_outputs.at(i));
      }
    }
    // Backward through the recomputed block, each parameter's gradient accumulated into its
    // `.grad` as it is made — as the plain block's backward does, and PyTorch's reentrant
    // checkpoint. Asked for at once (torch::autograd::grad), every gradient of the block lived
    // until the function returned them: a block's parameters' bytes more at the recompute's
    // backward than a plain block needs (28 MB on a block of 7.1M parameters, gpt-neo-125m's:
    // its first of two pipeline stages, checkpointed, peaked 3.6% above the model's prediction).
    if (!targets.empty() && !outputs.empty()) {
      torch::autograd::backward(outputs, output_grads, /*retain_graph=*/false,
                                /*create_graph=*/false, /*inputs=*/targets);
    }
    // One gradient per forward input: each input tensor's (accumulated on its detached copy),
    // none for the parameters (already in their `.grad`), none for the state.
    torch::autograd::variable_list result;
    for (const torch::Tensor& x : inputs)
      result.push_back(x.requires_grad() ? x.grad() : torch::Tensor());
    for (size_t i = 0; i < state->params.size(); ++i) result.emplace_back();
    result.emplace_back();
    return result;
  }
};

}  // namespace

std::vector<torch::Tensor> checkpoint_call(ValuesFunction forward,
                                           const std::vector<torch::Tensor>& inputs,
                                           std::vector<torch::Tensor> params,
                                           std::vector<std::shared_ptr<RngStream>> streams) {
  auto state = c10::make_intrusive<CheckpointState>();
  state->forward = std::move(forward);
  state->params = std::move(params);
  state->streams = std::move(streams);
  std::vector<torch::Tensor> given;
  for (const torch::Tensor& x : inputs) {
    state->present.push_back(x.defined());
    if (x.defined()) given.push_back(x);
  }
  std::vector<torch::Tensor> param_list = state->params;
  return CheckpointFunction::apply(at::TensorList(given), at::TensorList(param_list), state);
}

}  // namespace slapo::schedule
