#pragma once
// DecomposedLinear: what decompose() puts in place of an nn::Linear — the same weight and bias
// tensors (same names, same tensors: shards, annotations and optimizers still see them), with the
// matrix product and the bias add as two separate operations, so that in a traced graph the bias
// add can fuse with what follows (aten::matmul, then aten::add).

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace slapo::schedule {

class DecomposedLinearImpl : public torch::nn::Module {
 public:
  // Takes over `original`'s parameters.
  explicit DecomposedLinearImpl(torch::nn::LinearImpl& original);
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight, bias;  // bias undefined when the Linear had none
};
TORCH_MODULE(DecomposedLinear);

}  // namespace slapo::schedule
