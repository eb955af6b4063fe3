#pragma once
// Profiling the machine's collectives for the cost model (cost/collectives.h): a job of `ranks`
// ranks on this machine (dist/launcher.h) times all-reduce, all-gather and a message between two
// ranks at a few sizes; rank 0 prints what it measured.

#include <iosfwd>
#include <string>
#include <vector>

#include "cost/collectives.h"

namespace slapo::runners {

// Launches `ranks` ranks of `worker` (the argv of a program whose ranks call
// run_collective_worker: `slapo-tune worker --collectives`) and returns rank 0's measurements.
// Throws Error(kRuntime) naming the failing rank when the job fails.
cost::CollectiveProfile profile_collectives(int ranks, const std::vector<std::string>& worker);

// One rank of that job: joins it (dist::RankEnv from the environment), measures, and on rank 0
// prints the profile as one JSON line on `out`.
void run_collective_worker(std::ostream& out);

// What run_collective_worker measures, returned on every rank (rank 0's is the job's): for a job
// launched for something else that times the collectives too (a profile's, runners/profiler.h),
// whose launch is then paid once. Its profile_s is the measuring alone.
cost::CollectiveProfile measure_collectives();

}  // namespace slapo::runners
