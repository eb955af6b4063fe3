#include "schedule/language/decomposed_linear.h"

#include <ATen/ATen.h>

namespace slapo::schedule {

DecomposedLinearImpl::DecomposedLinearImpl(torch::nn::LinearImpl& original) {
  weight = register_parameter("weight", original.weight);
  if (original.bias.defined()) bias = register_parameter("bias", original.bias);
}

torch::Tensor DecomposedLinearImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = at::matmul(x, weight.t());
  return bias.defined() ? y + bias : y;
}

}  // namespace slapo::schedule
