#pragma once
// Communicator: the collectives a schedule needs from a group of ranks, independent of the backend.
//
// The schedule language (shard, sync, the pipeline runtime, data-parallel gradient averaging) talks
// to this interface only; dist/ implements it on c10d (Gloo on the CPU, NCCL where LibTorch has
// CUDA), and LocalCommunicator is the group of one process. Ranks are ranks *within the group*.
//
// Every call blocks until its result is usable, except send(), whose handle must be waited on
// (and its tensor kept alive) before the step ends: a pipeline that waited on each send at once
// could deadlock when two neighbours send to each other.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace slapo::schedule {

enum class ReduceOp { kSum, kMax };

// Time and volume spent in collectives, for the benchmarks ("time in collectives").
struct CommStats {
  int64_t calls = 0;
  int64_t bytes = 0;
  double seconds = 0;
};

class SendHandle {
 public:
  virtual ~SendHandle() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "tp", "dp", "pp", "world", ...: used in error messages.
  virtual const std::string& name() const = 0;

  // In place over the group.
  virtual void all_reduce(at::Tensor& tensor, ReduceOp op = ReduceOp::kSum) = 0;
  // Every rank's tensor (same shape on every rank), in rank order.
  virtual std::vector<at::Tensor> all_gather(const at::Tensor& tensor) = 0;
  virtual void broadcast(at::Tensor& tensor, int root) = 0;
  // Point to point; `peer` is a rank in this group. recv needs a contiguous tensor of the exact
  // shape and dtype.
  virtual std::unique_ptr<SendHandle> send(const at::Tensor& tensor, int peer, int tag) = 0;
  virtual void recv(at::Tensor& tensor, int peer, int tag) = 0;
  virtual void barrier() = 0;

  const CommStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 protected:
  CommStats stats_;
};

// The group of this process alone: every collective is the identity.
class LocalCommunicator : public Communicator {
 public:
  explicit LocalCommunicator(std::string name = "local") : name_(std::move(name)) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::string& name() const override { return name_; }
  void all_reduce(at::Tensor&, ReduceOp) override {}
  std::vector<at::Tensor> all_gather(const at::Tensor& tensor) override { return {tensor}; }
  void broadcast(at::Tensor&, int) override {}
  std::unique_ptr<SendHandle> send(const at::Tensor&, int peer, int) override;
  void recv(at::Tensor&, int peer, int) override;
  void barrier() override {}

 private:
  std::string name_;
};

}  // namespace slapo::schedule
