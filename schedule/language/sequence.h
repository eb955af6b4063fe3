#pragma once
// Sequence: a schedulable nn::Sequential. Children are slots named "0", "1", ...; forward feeds
// each one's output to the next. Pipeline cuts (cut_pipeline_stage) are made between them.

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
};
TORCH_MODULE(Sequence);

}  // namespace slapo::schedule
