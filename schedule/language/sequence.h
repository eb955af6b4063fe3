#pragma once
// Sequence: a schedulable nn::Sequential. Children are slots named "0", "1", ...; forward feeds
// each one's output to the next. Pipeline cuts (cut_pipeline_stage) are made between them.
//
// Blocks that take more than the hidden state (an attention mask, position ids) or return more
// (attention probabilities), as Hugging Face-style blocks do, run through forward_values: the
// carried tensors are [hidden, extra...]; each block takes as many of them as its forward has
// inputs (the ones past the end are absent optionals), its first output is the next hidden state,
// the extra carried tensors pass on unchanged, and its other outputs are side outputs.

#include <cstdint>
#include <string>

#include <torch/nn/pimpl.h>

#include "schedule/language/slot_module.h"

namespace slapo::schedule {

class SequenceImpl : public SlotModule {
 public:
  SequenceImpl() = default;

  template <typename Holder>
  void push_back(Holder module) {
    add_slot(std::to_string(slot_names().size()), std::move(module));
  }
  size_t size() const { return slot_names().size(); }

  torch::Tensor forward(const torch::Tensor& x);
  // Children [begin, end) only: one pipeline stage's part.
  torch::Tensor forward_range(int64_t begin, int64_t end, const torch::Tensor& x);
  // Children [begin, end) on carried tensors (above); returns them after the last child. Each
  // child's outputs past the first are appended to `side_outputs` when given.
  Values forward_values(Values carried, int64_t begin, int64_t end, Values* side_outputs = nullptr);
};
TORCH_MODULE(Sequence);

}  // namespace slapo::schedule
