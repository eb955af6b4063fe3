#pragma once
// SimulatedGroup: rank 0 of a tensor-parallel group of `size` ranks, alone in this process. Its
// collectives move nothing — all-reduce leaves the tensor as it is, all-gather returns `size`
// copies — so a model sharded over it computes exactly what one rank of the real group computes
// (the same shapes, the same kernels, the same activations kept), with wrong values. The profiler
// (runners/cost_model.h) measures one tensor-parallel rank's compute and memory this way, in one
// process, and counts the collectives the rank would make: their time comes from the machine's
// measured collective costs, not from this group.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cost/profile.h"
#include "dist/world.h"
#include "schedule/runtime/communicator.h"

namespace slapo::runners {

class SimulatedGroup : public schedule::Communicator {
 public:
  explicit SimulatedGroup(int size, std::string name = "tp");

  int rank() const override { return 0; }
  int size() const override { return size_; }
  const std::string& name() const override { return name_; }
  void all_reduce(at::Tensor& tensor, schedule::ReduceOp op) override;
  std::vector<at::Tensor> all_gather(const at::Tensor& tensor) override;
  void broadcast(at::Tensor& tensor, int root) override;
  std::unique_ptr<schedule::SendHandle> send(const at::Tensor& tensor, int peer, int tag) override;
  void recv(at::Tensor& tensor, int peer, int tag) override;
  void barrier() override {}

  // What the rank would have sent since the last reset: calls and payload bytes by collective
  // (the tensor's bytes on this rank; all-gather: the rank's own part).
  const cost::CollectiveTally& tally() const { return tally_; }
  void reset_tally() { tally_ = {}; }

 private:
  int size_;
  std::string name_;
  cost::CollectiveTally tally_;
};

// The groups of one process that computes what rank 0 of a tensor-parallel group of `tp` ranks
// does: this process's local groups, with a SimulatedGroup of `tp` as the tensor-parallel one
// (set in `*group`) when tp > 1 — the profiler's whole steps and the block probe alike.
dist::ParallelGroups simulated_groups(int tp, std::shared_ptr<SimulatedGroup>* group);

}  // namespace slapo::runners
