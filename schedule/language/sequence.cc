#include "schedule/language/sequence.h"

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

}  // namespace slapo::schedule
