#pragma once
// One distributed job: which rank this process is (from torchrun's variables), how the world is
// laid out into tensor-, data- and pipeline-parallel groups, and the groups themselves.
//
// Rendezvous is c10d's TCPStore at MASTER_ADDR:MASTER_PORT. Under torchrun, mpirun or Slurm rank 0
// hosts the store (as torch.distributed's env:// does); under slapo's own launcher the launcher
// hosts it on a free port it picked (SLAPO_STORE_HOSTED=1), so two jobs never share a port.
//
// The layout of the ranks into groups is core/layout.h's.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/layout.h"
#include "schedule/runtime/communicator.h"

namespace slapo::dist {

struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  bool store_hosted = false;  // SLAPO_STORE_HOSTED: the launcher hosts the store, not rank 0
  std::chrono::milliseconds timeout{30000};  // SLAPO_DIST_TIMEOUT (seconds), default 30

  // True when WORLD_SIZE is set (the process was launched as one rank of a job).
  static bool present();
  // Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, SLAPO_STORE_HOSTED,
  // SLAPO_DIST_TIMEOUT. A missing or malformed variable throws naming it.
  static RankEnv from_env();
};

struct ParallelGroups {
  Layout layout;
  int rank = 0;
  std::shared_ptr<schedule::Communicator> world, tp, dp, pp;
  // The first and the last stage of this rank's pipeline (tied embedding and LM head); null when
  // pp == 1.
  std::shared_ptr<schedule::Communicator> ends;
  int tp_rank() const { return layout.tp_rank(rank); }
  int dp_rank() const { return layout.dp_rank(rank); }
  int pp_rank() const { return layout.pp_rank(rank); }
};

// Every group of one process: local communicators.
ParallelGroups local_groups();

// Joins the job described by `env` and builds this rank's groups. The layout must multiply to
// the world size. Throws Error(kRuntime) when a peer does not arrive within the timeout.
ParallelGroups connect(const RankEnv& env, const Layout& layout);

}  // namespace slapo::dist
