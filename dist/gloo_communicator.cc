#include "dist/gloo_communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "core/error.h"
#include "core/text.h"

namespace slapo::dist {

namespace {

// Waits for `work`, then until Gloo's worker thread has let go of it (microseconds after the wait
// returns), so that what the work holds — an all-gather's input part, a contiguous copy — is freed
// when the caller's reference goes, not whenever that thread gets to it: a rank's peak memory
// then depends on no race (gpt-mini's tensor-parallel head held its logits' part, 8 MiB at 8
// samples, past the step's peak in some trials and not in others: docs/cost-model.md).
void wait_and_release(const c10::intrusive_ptr<c10d::Work>& work) {
  work->wait();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  while (work.use_count() > 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
}

class GlooSend : public schedule::SendHandle {
 public:
  GlooSend(c10::intrusive_ptr<c10d::Work> work, std::string what)
      : work_(std::move(work)), what_(std::move(what)) {}
  void wait() override {
    try {
      wait_and_release(work_);
    } catch (const std::exception& e) {
      SLAPO_FAIL(ErrorCode::kRuntime, what_, " failed: ", first_line(e.what()));
    }
  }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  std::string what_;
};

class GlooCommunicator : public schedule::Communicator {
 public:
  GlooCommunicator(c10::intrusive_ptr<c10d::ProcessGroupGloo> pg, std::string name)
      : pg_(std::move(pg)), name_(std::move(name)) {}

  int rank() const override { return pg_->getRank(); }
  int size() const override { return pg_->getSize(); }
  const std::string& name() const override { return name_; }

  void all_reduce(at::Tensor& tensor, schedule::ReduceOp op) override {
    std::vector<at::Tensor> v{tensor};
    c10d::AllreduceOptions o;
    o.reduceOp = op == schedule::ReduceOp::kMax ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM;
    run("all_reduce", tensor.nbytes(), [&] { wait_and_release(pg_->allreduce(v, o)); });
  }

  std::vector<at::Tensor> all_gather(const at::Tensor& tensor) override {
    std::vector<at::Tensor> in{tensor.contiguous()};
    std::vector<std::vector<at::Tensor>> out(1);
    for (int i = 0; i < size(); ++i) out[0].push_back(at::empty_like(in[0]));
    run("all_gather", tensor.nbytes() * static_cast<size_t>(size()),
        [&] { wait_and_release(pg_->allgather(out, in)); });
    return out[0];
  }

  void broadcast(at::Tensor& tensor, int root) override {
    std::vector<at::Tensor> v{tensor};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    run("broadcast", tensor.nbytes(), [&] { wait_and_release(pg_->broadcast(v, o)); });
  }

  std::unique_ptr<schedule::SendHandle> send(const at::Tensor& tensor, int peer, int tag) override {
    std::vector<at::Tensor> v{tensor};
    c10::intrusive_ptr<c10d::Work> work;
    run("send", tensor.nbytes(), [&] { work = pg_->send(v, peer, tag); });
    return std::make_unique<GlooSend>(
        std::move(work), "send to rank " + std::to_string(peer) + " of group '" + name_ + "'");
  }

  void recv(at::Tensor& tensor, int peer, int tag) override {
    std::vector<at::Tensor> v{tensor};
    run("recv from rank " + std::to_string(peer), tensor.nbytes(),
        [&] { wait_and_release(pg_->recv(v, peer, tag)); });
  }

  void barrier() override {
    run("barrier", 0, [&] { wait_and_release(pg_->barrier()); });
  }

 private:
  template <typename Fn>
  void run(const std::string& what, size_t bytes, Fn&& fn) {
    const auto start = std::chrono::steady_clock::now();
    try {
      fn();
    } catch (const Error&) {
      throw;
    } catch (const c10::OutOfMemoryError& e) {
      // The cause decides the trial's status: out of memory stays out of memory (oom, which the
      // tuner prunes by and learns from), with the collective named.
      TORCH_CHECK_WITH(OutOfMemoryError, false, what, " on group '", name_, "' (rank ", rank(),
                       " of ", size(), ") ran out of memory: ", first_line(e.what()));
    } catch (const std::exception& e) {
      SLAPO_FAIL(ErrorCode::kRuntime, what, " on group '", name_, "' (rank ", rank(), " of ",
                 size(), ") failed: ", first_line(e.what()));
    }
    stats_.calls += 1;
    stats_.bytes += static_cast<int64_t>(bytes);
    stats_.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
  std::string name_;
};

std::shared_ptr<::gloo::transport::Device> make_device(const std::string& hostname) {
  if (!hostname.empty()) return c10d::ProcessGroupGloo::createDeviceForHostname(hostname);
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME")) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

std::shared_ptr<schedule::Communicator> make_gloo_group(
    const c10::intrusive_ptr<c10d::Store>& store, const std::string& name,
    const std::vector<int>& members, int global_rank, const GlooOptions& options) {
  const auto it = std::find(members.begin(), members.end(), global_rank);
  SLAPO_INTERNAL_ASSERT(it != members.end(), "rank is not a member of the group it creates");
  const int rank = static_cast<int>(it - members.begin());
  auto o = c10d::ProcessGroupGloo::Options::create(options.timeout);
  o->devices.push_back(make_device(options.hostname));
  o->threads = 1;
  try {
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>(name, store);
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank,
                                                          static_cast<int>(members.size()), o);
    return std::make_shared<GlooCommunicator>(std::move(pg), name);
  } catch (const std::exception& e) {
    SLAPO_FAIL(ErrorCode::kRuntime, "joining group '", name, "' as rank ", rank, " of ",
               members.size(), " failed: ", first_line(e.what()));
  }
}

}  // namespace slapo::dist
