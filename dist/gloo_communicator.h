#pragma once
// A schedule::Communicator on c10d's ProcessGroupGloo (the CPU backend). Errors from c10d (a peer
// that died, a timeout) become Error(kRuntime) naming the group and the collective.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "schedule/runtime/communicator.h"

namespace slapo::dist {

struct GlooOptions {
  std::chrono::milliseconds timeout{30000};
  // The address Gloo's transport binds: "127.0.0.1" on one machine; empty takes
  // GLOO_SOCKET_IFNAME's interface or the host's default.
  std::string hostname = "127.0.0.1";
};

// The group of `members` (global ranks, in group-rank order, this process among them), rendezvous
// over `store` under keys prefixed by `name` (unique per group). Blocks until every member has
// joined; throws Error(kRuntime) at the timeout.
std::shared_ptr<schedule::Communicator> make_gloo_group(
    const c10::intrusive_ptr<c10d::Store>& store, const std::string& name,
    const std::vector<int>& members, int global_rank, const GlooOptions& options);

}  // namespace slapo::dist
