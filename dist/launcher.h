#pragma once
// Launching the ranks of a job on this machine, the way torchrun does: N processes (fork+exec of a
// command, never a shell) with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT set. The launcher hosts the rendezvous store itself on a port the kernel picks, so
// two jobs started at once cannot collide, and tells the ranks so (SLAPO_STORE_HOSTED=1).
//
// A rank that fails makes its peers fail at their next collective (c10d notices a closed
// connection in milliseconds, a hung peer at SLAPO_DIST_TIMEOUT); the launcher's own time limit
// kills whatever is left.

#include <map>
#include <string>
#include <vector>

#include "core/process.h"
#include "core/ranks.h"

namespace slapo::dist {

struct LaunchOptions {
  int nproc = 1;
  std::vector<std::string> argv;           // the same command for every rank
  std::map<std::string, std::string> env;  // added to every rank's environment
  double timeout_s = 0;                    // kills every rank still running after it; 0: none
  int collective_timeout_s = 30;           // SLAPO_DIST_TIMEOUT for the ranks
};

struct LaunchResult {
  std::vector<ProcessResult> ranks;  // by rank
  int port = 0;                      // where the store listened
  bool ok() const;
  // The first failing rank's reason in one line ("rank 1 exited with 3: <last line of its log>").
  std::string failure() const;
};

// Hosts the store, runs the ranks (core/ranks.h) and waits for all of them. Throws
// Error(kRuntime) only when the store cannot be hosted; a rank's failure is in the result.
LaunchResult launch_ranks(const LaunchOptions& options);

// For slapo's own jobs of `worker` ranks (profiles, the collectives' profile): throws
// Error(kRuntime) naming `what` and the executable when this process is itself a rank of a job
// (WORLD_SIZE is set) — none of slapo's ranks launches a job, and one that did would be a program
// without slapo-tune's worker command running itself again (a test binary re-running its tests,
// each launching more ranks, until the machine runs out of memory).
void check_not_in_a_rank(const std::string& what, const std::vector<std::string>& worker);

}  // namespace slapo::dist
