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

// How often a message of `bytes` is sent: warm-ups, then timed runs. The counts depend on the size
// alone, so every rank of the job runs as many collectives.
struct MessageRuns {
  int warmup = 0, timed = 0;
};
MessageRuns message_runs(double bytes);

// What one call costs, from its timed runs: their mean. Not the median: on two cores shared by
// both ranks' threads a small message's call takes ~0.1–0.4 ms or ~3–5 ms (a thread woken at the
// scheduler's next 4 ms tick), the two mixed within a run (2026-11-28: 4 KiB all-reduces of 0.33
// 4.65 3.98 0.29 3.71 4.01 0.33 0.43 0.43 ms), so the median fell on one speed or the other from
// one profile to the next (table 3's α of the all-reduce 3.45 ms in one recording, 0.69 in the
// next; its `tp = 2` steps at 8 samples, 26 all-reduces each, predicted 26% over and then 27%
// under the trials) — where a step's calls cost the mixture. Throws Error(kInvalidArgument) for
// no runs.
double call_ms(const std::vector<double>& timed_ms);

// What run_collective_worker measures, returned on every rank (rank 0's is the job's): for a job
// launched for something else that times the collectives too (a profile's, runners/profiler.h),
// whose launch is then paid once. Its profile_s is the measuring alone.
cost::CollectiveProfile measure_collectives();

}  // namespace slapo::runners
