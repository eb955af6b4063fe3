#include "schedule/runtime/checkpoint.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "schedule/runtime/keyed_dropout.h"

namespace slapo::schedule {

namespace {

// What backward needs besides the saved inputs, carried in ctx->saved_data as a capsule.
struct CheckpointState : torch::CustomClassHolder {
  TensorFunction forward;
  std::vector<torch::Tensor> params;
  std::vector<std::shared_ptr<RngStream>> streams;
  at::Tensor rng_state;                   // the default generator at forward time
  std::vector<at::Tensor> stream_states;  // each stream at forward time
  DropoutKey dropout_key;                 // keyed dropout's step and samples at forward time
};

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
    torch::Tensor out = state->forward(in);
    ctx->save_for_backward(in);
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    ctx->saved_data["num_params"] = static_cast<int64_t>(params.size());
    return {out};
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
    torch::Tensor out;
    {
      torch::AutoGradMode enable(true);
      DropoutScope scope(state->dropout_key);
      out = state->forward(inputs);
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
    std::vector<torch::Tensor> grads;
    if (!targets.empty() && out.requires_grad()) {
      grads = torch::autograd::grad({out}, targets, {grad_outputs[0]}, /*retain_graph=*/false,
                                    /*create_graph=*/false, /*allow_unused=*/true);
    }
    // One gradient per forward input: each input tensor, each parameter, then the state.
    torch::autograd::variable_list result;
    size_t next = 0;
    for (const torch::Tensor& x : inputs)
      result.push_back(x.requires_grad() && !grads.empty() ? grads[next++] : torch::Tensor());
    for (const torch::Tensor& p : state->params)
      result.push_back(p.requires_grad() && !grads.empty() ? grads[next++] : torch::Tensor());
    result.emplace_back();
    return result;
  }
};

}  // namespace

torch::Tensor checkpoint_call(TensorFunction forward, const std::vector<torch::Tensor>& inputs,
                              std::vector<torch::Tensor> params,
                              std::vector<std::shared_ptr<RngStream>> streams) {
  auto state = c10::make_intrusive<CheckpointState>();
  state->forward = std::move(forward);
  state->params = std::move(params);
  state->streams = std::move(streams);
  std::vector<torch::Tensor> param_list = state->params;
  return CheckpointFunction::apply(at::TensorList(inputs), at::TensorList(param_list), state)[0];
}

}  // namespace slapo::schedule
