#pragma once
// verify(): does a scheduled model compute what the original computes — forward outputs AND
// parameter gradients? (Slapo's own verify checks the forward pass only.)
//
// Both models run in training mode from the same random seed (dropout included), the loss is
// back-propagated, and every output and every gradient of a parameter present in both (by name)
// is compared. Parameters that exist in only one (a replaced module with other names) are listed.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>

namespace slapo::schedule {

struct TensorDiff {
  std::string name;
  double max_abs = 0;  // largest absolute difference
  double max_ref = 0;  // largest absolute value in the original, for scale
};

struct VerifyReport {
  TensorDiff output;
  TensorDiff loss;
  std::vector<TensorDiff> grads;       // parameters present in both, by name
  std::vector<std::string> unmatched;  // parameters in only one of the two
  double max_grad_diff() const;
  bool within(double tolerance) const;  // output, loss and every gradient
  std::string to_string(size_t top = 10) const;
};

// `run(model)` returns (output, loss) for one forward pass on fixed inputs.
using ForwardLoss = std::function<std::pair<torch::Tensor, torch::Tensor>(torch::nn::Module&)>;

VerifyReport verify(torch::nn::Module& original, torch::nn::Module& scheduled,
                    const ForwardLoss& run, uint64_t seed = 0);

}  // namespace slapo::schedule
