#include "core/ranks.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "core/text.h"

namespace slapo {

namespace {

bool failed(const ProcessResult& r) {
  return !r.started || r.timed_out || r.signal != 0 || r.exit_code != 0;
}

std::string describe(size_t rank, const ProcessResult& r) {
  const std::string who = "rank " + std::to_string(rank);
  if (!r.started) return who + " could not start: " + r.error;
  const std::string log = last_line(r.err.empty() ? r.out : r.err);
  std::string what;
  if (r.peer_failed)
    what = who + " was ended after another rank failed";
  else if (r.timed_out)
    what = who + " was killed at the time limit";
  else if (r.signal != 0)
    what = who + " was killed by " + signal_name(r.signal);
  else
    what = who + " exited with " + std::to_string(r.exit_code);
  return log.empty() ? what : what + ": " + log;
}

}  // namespace

int free_tcp_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  SLAPO_CHECK(fd >= 0, ErrorCode::kIo, "socket: ", std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int saved = errno;
  close(fd);
  SLAPO_CHECK(ok, ErrorCode::kIo, "cannot find a free port: ", std::strerror(saved));
  return ntohs(addr.sin_port);
}

std::vector<ProcessResult> run_ranks(const RanksOptions& options) {
  SLAPO_CHECK(options.nproc >= 1, ErrorCode::kInvalidArgument, "ranks: ", options.nproc,
              " processes; at least 1 is needed");
  SLAPO_CHECK(!options.argv.empty(), ErrorCode::kInvalidArgument, "ranks: no command to run");
  const int port = options.master_port > 0 ? options.master_port : free_tcp_port();
  std::vector<ProcessResult> results(static_cast<size_t>(options.nproc));
  std::vector<std::thread> threads;
  using Clock = std::chrono::steady_clock;
  std::atomic<bool> a_rank_failed{false};
  std::atomic<Clock::rep> failed_at{0};
  std::vector<char> ended_by_peer(static_cast<size_t>(options.nproc), 0);
  for (int rank = 0; rank < options.nproc; ++rank) {
    ProcessOptions po;
    po.env = options.env;
    po.env["RANK"] = std::to_string(rank);
    po.env["LOCAL_RANK"] = std::to_string(rank);
    po.env["WORLD_SIZE"] = std::to_string(options.nproc);
    po.env["LOCAL_WORLD_SIZE"] = std::to_string(options.nproc);
    po.env["MASTER_ADDR"] = options.master_addr;
    po.env["MASTER_PORT"] = std::to_string(port);
    po.timeout_s = options.timeout_s;
    if (options.per_rank) options.per_rank(rank, &po);
    // End this rank some seconds after another one failed.
    po.watch = [&, rank, inner = po.watch](const std::string& chunk) {
      if (inner && inner(chunk)) return true;
      if (!a_rank_failed) return false;
      const double since = std::chrono::duration<double>(
                               Clock::now() - Clock::time_point(Clock::duration(failed_at.load())))
                               .count();
      if (since < kPeerGraceS) return false;
      ended_by_peer[static_cast<size_t>(rank)] = 1;
      return true;
    };
    threads.emplace_back([&, rank, po] {
      ProcessResult& r = results[static_cast<size_t>(rank)];
      r = run_process(options.argv, po);
      if (failed(r) && !ended_by_peer[static_cast<size_t>(rank)]) {
        Clock::rep unset = 0;  // the first failure's time, then the flag the watchers read
        failed_at.compare_exchange_strong(unset, Clock::now().time_since_epoch().count());
        a_rank_failed = true;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t rank = 0; rank < results.size(); ++rank) {
    if (!ended_by_peer[rank]) continue;
    results[rank].stopped = false;
    results[rank].peer_failed = true;
  }
  return results;
}

std::string first_rank_failure(const std::vector<ProcessResult>& ranks) {
  // A rank that died on its own explains more than the peers that failed because of it.
  for (size_t i = 0; i < ranks.size(); ++i) {
    if ((ranks[i].signal != 0 && !ranks[i].peer_failed) || !ranks[i].started)
      return describe(i, ranks[i]);
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (failed(ranks[i]) && !ranks[i].timed_out && !ranks[i].peer_failed)
      return describe(i, ranks[i]);
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (failed(ranks[i])) return describe(i, ranks[i]);
  }
  return "";
}

}  // namespace slapo
