#include "dist/launcher.h"

#include <thread>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "core/error.h"

namespace slapo::dist {

namespace {

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

std::string describe(size_t rank, const ProcessResult& r) {
  const std::string who = "rank " + std::to_string(rank);
  if (!r.started) return who + " could not start: " + r.error;
  const std::string log = last_line(r.err.empty() ? r.out : r.err);
  std::string what;
  if (r.timed_out) what = who + " was killed at the time limit";
  else if (r.signal != 0) what = who + " was killed by " + signal_name(r.signal);
  else what = who + " exited with " + std::to_string(r.exit_code);
  return log.empty() ? what : what + ": " + log;
}

bool failed(const ProcessResult& r) { return !r.started || r.timed_out || r.signal != 0 || r.exit_code != 0; }

}  // namespace

bool LaunchResult::ok() const {
  for (const ProcessResult& r : ranks) {
    if (failed(r)) return false;
  }
  return !ranks.empty();
}

std::string LaunchResult::failure() const {
  // A rank that died on its own explains more than the peers that failed because of it: prefer a
  // signal or a time limit, then the first non-zero exit.
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].signal != 0 || !ranks[i].started) return describe(i, ranks[i]);
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (failed(ranks[i]) && !ranks[i].timed_out) return describe(i, ranks[i]);
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (failed(ranks[i])) return describe(i, ranks[i]);
  }
  return "";
}

LaunchResult launch_ranks(const LaunchOptions& options) {
  SLAPO_CHECK(options.nproc >= 1, ErrorCode::kInvalidArgument, "--nproc ", options.nproc, " must be at least 1");
  SLAPO_CHECK(!options.argv.empty(), ErrorCode::kInvalidArgument, "launch: no command to run");
  LaunchResult result;
  c10::intrusive_ptr<c10d::TCPStore> store;
  std::string addr = options.master_addr;
  if (addr.empty()) {
    c10d::TCPStoreOptions so;
    so.port = 0;  // the kernel picks a free port
    so.isServer = true;
    so.waitWorkers = false;
    so.timeout = std::chrono::seconds(options.collective_timeout_s);
    try {
      store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", so);
    } catch (const std::exception& e) {
      SLAPO_FAIL(ErrorCode::kRuntime, "cannot host the rendezvous store: ", e.what());
    }
    addr = "127.0.0.1";
    result.port = store->getPort();
  } else {
    result.port = options.master_port;
  }
  result.ranks.resize(static_cast<size_t>(options.nproc));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < options.nproc; ++rank) {
    ProcessOptions po;
    po.env = options.env;
    po.env["RANK"] = std::to_string(rank);
    po.env["LOCAL_RANK"] = std::to_string(rank);
    po.env["WORLD_SIZE"] = std::to_string(options.nproc);
    po.env["LOCAL_WORLD_SIZE"] = std::to_string(options.nproc);
    po.env["MASTER_ADDR"] = addr;
    po.env["MASTER_PORT"] = std::to_string(result.port);
    po.env["SLAPO_STORE_HOSTED"] = store ? "1" : "0";
    po.env["SLAPO_DIST_TIMEOUT"] = std::to_string(options.collective_timeout_s);
    po.timeout_s = options.timeout_s;
    threads.emplace_back([&result, &options, rank, po] {
      result.ranks[static_cast<size_t>(rank)] = run_process(options.argv, po);
    });
  }
  for (std::thread& t : threads) t.join();
  return result;
}

}  // namespace slapo::dist
