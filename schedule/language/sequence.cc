#include "schedule/language/sequence.h"

#include "core/error.h"

namespace slapo::schedule {

torch::Tensor SequenceImpl::forward(const torch::Tensor& x) {
  torch::Tensor h = x;
  for (const std::string& name : slot_names()) h = call(name, h);
  return h;
}

torch::Tensor SequenceImpl::forward_range(int64_t begin, int64_t end, const torch::Tensor& x) {
  torch::Tensor h = x;
  for (int64_t i = begin; i < end; ++i) h = call(slot_names().at(static_cast<size_t>(i)), h);
  return h;
}

Values SequenceImpl::forward_values(Values carried, int64_t begin, int64_t end,
                                    Values* side_outputs) {
  SLAPO_CHECK(!carried.empty() && carried[0].defined(), ErrorCode::kInvalidArgument,
              "Sequence: the first carried tensor (the hidden state) must be given");
  for (int64_t i = begin; i < end; ++i) {
    const std::string& name = slot_names().at(static_cast<size_t>(i));
    const Signature& signature = slot(name).signature;
    SLAPO_CHECK(signature.by_values, ErrorCode::kInvalidArgument, "Sequence: block '", name,
                "' has a forward (", signature.text,
                ") that cannot take the carried tensors (tensors and optional tensors in, tensors "
                "out)");
    Values inputs(signature.inputs.size());
    for (size_t k = 0; k < inputs.size() && k < carried.size(); ++k) inputs[k] = carried[k];
    Values outputs = call_values(name, inputs);
    carried[0] = std::move(outputs[0]);
    if (side_outputs) {
      for (size_t k = 1; k < outputs.size(); ++k) side_outputs->push_back(std::move(outputs[k]));
    }
  }
  return carried;
}

}  // namespace slapo::schedule
