#include "dist/launcher.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "core/error.h"
#include "dist/world.h"

namespace slapo::dist {

bool LaunchResult::ok() const { return !ranks.empty() && first_rank_failure(ranks).empty(); }

std::string LaunchResult::failure() const { return first_rank_failure(ranks); }

LaunchResult launch_ranks(const LaunchOptions& options) {
  SLAPO_CHECK(options.nproc >= 1, ErrorCode::kInvalidArgument, "launch: ", options.nproc,
              " ranks; at least 1 is needed");
  SLAPO_CHECK(!options.argv.empty(), ErrorCode::kInvalidArgument, "launch: no command to run");
  LaunchResult result;
  c10d::TCPStoreOptions so;
  so.port = 0;  // the kernel picks a free port, and the store holds it: no other job can take it
  so.isServer = true;
  so.waitWorkers = false;
  so.timeout = std::chrono::seconds(options.collective_timeout_s);
  c10::intrusive_ptr<c10d::TCPStore> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", so);
  } catch (const std::exception& e) {
    SLAPO_FAIL(ErrorCode::kRuntime, "cannot host the rendezvous store: ", e.what());
  }
  result.port = store->getPort();
  RanksOptions ranks;
  ranks.nproc = options.nproc;
  ranks.argv = options.argv;
  ranks.env = options.env;
  ranks.env["SLAPO_STORE_HOSTED"] = "1";
  ranks.env["SLAPO_DIST_TIMEOUT"] = std::to_string(options.collective_timeout_s);
  ranks.timeout_s = options.timeout_s;
  ranks.master_port = result.port;
  result.ranks = run_ranks(ranks);
  return result;
}

void check_not_in_a_rank(const std::string& what, const std::vector<std::string>& worker) {
  SLAPO_CHECK(
      !RankEnv::present(), ErrorCode::kRuntime, what,
      ": this process is a rank of a job (WORLD_SIZE is set), and a rank launches no job; is '",
      worker.empty() ? std::string() : worker.front(),
      "' a program with slapo-tune's worker command?");
}

}  // namespace slapo::dist
