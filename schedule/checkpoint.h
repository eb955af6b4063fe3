#pragma once
// Activation checkpointing: run a module without keeping its activations, and recompute them in
// backward. LibTorch has no torch::utils::checkpoint; this is a torch::autograd::Function.
//
// Bit-exact with the plain module (outputs, every gradient, and the random stream afterwards):
// the default CPU generator's state and every forked stream inside the module are saved in
// forward, restored for the recompute, and the current states put back afterwards.

#include <functional>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/modules/container/any.h>

#include "schedule/rng_stream.h"

namespace slapo::schedule {

// A forward over tensors: a module's, a traced graph's, or a subgraph's.
using TensorFunction = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

// Runs `forward` on `inputs` under checkpointing. `params` are the tensors it reads besides its
// inputs (their gradients flow through the function); `streams` the forked random streams inside.
// REQUIRES: grad mode on.
torch::Tensor checkpoint_call(TensorFunction forward, const std::vector<torch::Tensor>& inputs,
                              std::vector<torch::Tensor> params, std::vector<std::shared_ptr<RngStream>> streams);

// Runs `module` (whose forward takes `inputs.size()` tensors and returns a tensor) under
// checkpointing. `params` are the module's parameters (their gradients flow through the
// function); `streams` the forked random streams inside it.
// REQUIRES: grad mode on (callers skip checkpointing in eval mode and under NoGradGuard).
torch::Tensor checkpoint_forward(const torch::nn::AnyModule& module,
                                 const std::vector<torch::Tensor>& inputs,
                                 std::vector<torch::Tensor> params,
                                 std::vector<std::shared_ptr<RngStream>> streams);

}  // namespace slapo::schedule
