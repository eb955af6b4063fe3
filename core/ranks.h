#pragma once
// Running the ranks of a job on this machine, the way torchrun starts them: N copies of one
// command (fork+exec, never a shell), each with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT set, run at once and waited for. No LibTorch here: the command
// runner uses it for any external program; dist/launcher.h adds a store it hosts itself.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/process.h"

namespace slapo {

struct RanksOptions {
  int nproc = 1;
  std::vector<std::string> argv;           // the same command for every rank
  std::map<std::string, std::string> env;  // added to every rank's environment
  double timeout_s = 0;                    // each rank is killed (with its group) after it; 0: none
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port (free_tcp_port())
  // Completes each rank's options (its own environment, working directory, limits, watcher) after
  // the variables above are set.
  std::function<void(int rank, ProcessOptions* options)> per_rank;
};

// Starts the ranks and waits for all of them. Results by rank. As torchrun does, once a rank fails
// (a non-zero exit or a signal) the others are ended — after kPeerGraceS, so each can still say
// what it saw — and marked peer_failed: a rank blocked in a collective with a dead peer would
// otherwise wait for its time limit.
inline constexpr double kPeerGraceS = 3;
std::vector<ProcessResult> run_ranks(const RanksOptions& options);

// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick for port 0). Another
// process may take it before it is used: where that matters, host the listener yourself.
int free_tcp_port();

// The most telling failure among the ranks, in one line: a rank that was killed by a signal or
// could not start, then the first non-zero exit, then a time-out ("rank 1 exited with 3: <last
// line of its log>"). Empty when every rank exited 0.
std::string first_rank_failure(const std::vector<ProcessResult>& ranks);

}  // namespace slapo
