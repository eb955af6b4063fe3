#pragma once
// The head probe: what the one-block step of a key costs more than its base's, for a key that
// differs from a profiled one only in the knobs of the head (cost/head_difference.h) — instead of
// profiling its model whole.
//
// Both keys' one-block models are built (the template applied as in a trial) and stepped as the
// profiler steps them: a whole training step, optimizer included, at each batch the base's
// one-block variant was measured at. The two are stepped in alternation, the base first in the
// first round and last in the second, and the time difference is the mean of the two rounds'
// (this machine's speed moves by 20% within minutes: only steps of one round are worth
// differencing; the first to step at a larger batch pays for the memory it touches first). The
// peaks are exact (the tracking allocator), each model's own: what it holds between steps plus what
// its step needs above that. A step of several GPipe micro-batches is stepped once per key, for its
// peak (what the loss keeps per micro-batch); its time difference is that many times the
// one-micro-batch difference at a micro-batch's samples (the head runs once per micro-batch).
//
// The probe gives the one-block steps (the head's own cost) and their exact bytes; the deep
// variant's steps of the new key are measured as a profile of its own would measure them
// (runners/cost_model.h): what a head saves in time grows with the blocks before it.

#include <cstdint>
#include <vector>

#include "core/config.h"
#include "cost/head_difference.h"
#include "cost/profile.h"
#include "runners/workload.h"

namespace slapo::runners {

// The differences of `knobs`' one-block steps from `base_knobs`' (tp = 1, the knobs that change
// the computation, differing only in the head's) at every one-block point of `base` without
// checkpointing that was measured, and the parameters `knobs`' model has more
// (`*epilogue_params`). `workload`'s threads are used. Throws Error(kRuntime) naming the key
// whose model could not be built or stepped, Error(kInvalidArgument) when `base` has no measured
// one-block step of one micro-batch.
std::vector<cost::HeadDifference> probe_head_differences(const Workload& workload,
                                                         const Config& base_knobs,
                                                         const Config& knobs,
                                                         const cost::Profile& base,
                                                         double* epilogue_params);

}  // namespace slapo::runners
