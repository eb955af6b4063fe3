#include "schedule/sequence.h"

namespace slapo::schedule {

torch::Tensor SequenceImpl::forward(const torch::Tensor& x) {
  torch::Tensor h = x;
  for (const std::string& name : slot_names()) h = call(name, h);
  return h;
}

}  // namespace slapo::schedule
