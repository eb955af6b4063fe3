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

#include "schedule/runtime/rng_stream.h"

namespace slapo::schedule {

// A forward over tensors to tensors: a module's (schedule/language/module_values.h), a traced
// graph's, or a subgraph's. An undefined input is an absent optional one.
using ValuesFunction = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

// Runs `forward` on `inputs` under checkpointing and returns its outputs. `params` are the tensors
// it reads besides its inputs (their gradients flow through the function); `streams` the forked
// random streams inside. REQUIRES: grad mode on; every output defined.
std::vector<at::Tensor> checkpoint_call(ValuesFunction forward,
                                        const std::vector<at::Tensor>& inputs,
                                        std::vector<at::Tensor> params,
                                        std::vector<std::shared_ptr<RngStream>> streams);

}  // namespace slapo::schedule
