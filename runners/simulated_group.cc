#include "runners/simulated_group.h"

#include <ATen/ATen.h>

#include "core/error.h"

namespace slapo::runners {

SimulatedGroup::SimulatedGroup(int size, std::string name) : size_(size), name_(std::move(name)) {
  SLAPO_CHECK(size >= 1, ErrorCode::kInvalidArgument, "a simulated group of ", size, " ranks");
}

void SimulatedGroup::all_reduce(at::Tensor& tensor, schedule::ReduceOp) {
  tally_.all_reduce_calls += 1;
  tally_.all_reduce_bytes += static_cast<double>(tensor.nbytes());
}

std::vector<at::Tensor> SimulatedGroup::all_gather(const at::Tensor& tensor) {
  tally_.all_gather_calls += 1;
  tally_.all_gather_bytes += static_cast<double>(tensor.nbytes());
  // What the real group allocates, so that the rank's peak is the real one's: an output per rank
  // (dist/gloo_communicator.cc), and inside Gloo's all-gather one flat buffer of every rank's part,
  // copied out when the gather is done. Nothing outlives the call: the real group waits until
  // Gloo's worker thread has let go of the gather's work (which holds the input part) before it
  // returns.
  std::vector<at::Tensor> parts;
  for (int i = 0; i < size_; ++i) parts.push_back(tensor.clone());
  const at::Tensor flat = at::empty({size_ * tensor.numel()}, tensor.options());
  return parts;
}

// Every rank starts from the same seed, so the root's tensor is this rank's already.
void SimulatedGroup::broadcast(at::Tensor&, int) {}

std::unique_ptr<schedule::SendHandle> SimulatedGroup::send(const at::Tensor&, int peer, int) {
  SLAPO_FAIL(ErrorCode::kInvalidArgument, "send to rank ", peer, " in the simulated group '", name_,
             "'");
}

void SimulatedGroup::recv(at::Tensor&, int peer, int) {
  SLAPO_FAIL(ErrorCode::kInvalidArgument, "recv from rank ", peer, " in the simulated group '",
             name_, "'");
}

dist::ParallelGroups simulated_groups(int tp, std::shared_ptr<SimulatedGroup>* group) {
  dist::ParallelGroups g = dist::local_groups();
  if (tp > 1) {
    *group = std::make_shared<SimulatedGroup>(tp);
    g.tp = *group;
    g.layout.tp = tp;
  }
  return g;
}

}  // namespace slapo::runners
