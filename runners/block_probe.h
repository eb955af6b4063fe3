#pragma once
// The block probe: what one block of a key costs more than one block of another, measured on the
// blocks alone — for keys that differ from a profiled one only inside the blocks
// (cost/derived_profile.h), instead of running their whole deep variants.
//
// Each key's schedule is built on a one-block model (the template applied as in a trial), and the
// block runs forward and backward on the embeddings' output of `batch` samples, its gradients
// accumulating as in a step — nothing else of the model, no optimizer. The base's block and every
// other key's are timed in alternation, round after round — the base's once per round for all of
// them (this machine's speed moves by 20% within minutes: only measurements of one round are
// worth differencing) —, the largest batch first, every block run there once untimed: the
// first block to run at a batch larger than any before pays for the memory it touches first, and
// when that was the base's at every other batch (the batches ascending, a round of every block as
// the warm-up at the smallest), every derived key looked faster than it is (gpt-mini's fused_qkv
// by a median 13 ms over six blocks at 18 samples in nine draws, where trials have it 5–12 ms
// slower; the largest first, −1 ms; docs/cost-model.md). A block's work grows linearly with the
// batch, so does the time difference: it is read off Siegel's repeated-median line through every
// round's (core/stats.h), which a hiccup of the machine in any one round does not move — with four
// batches or more, one round per batch; with fewer, three; blocks of a few milliseconds as many
// as add up to 60 ms a key (runners/sweep_steps.h). (The median of two rounds per batch it
// replaces let one hiccup make a key 35 ms a block slower at bert-mini's largest batch.)
// Memory is exact (the tracking allocator): what the block's forward leaves allocated for its
// backward, and the most its backward needs above that at once. The forward is timed on its own
// too: a checkpointed block's difference is composed from it (cost::checkpointed_from_plain).
//
// A step of the deep variant runs D blocks and everything else besides; a probe runs one block:
// at gpt-mini's shapes a key cost about a fifth of what its deep steps did; probed beside its
// sibling and without the checkpointed run, a third of that again (table 1: 1.9 → 0.6 s a key).

#include <cstdint>
#include <vector>

#include "core/config.h"
#include "cost/derived_profile.h"
#include "runners/workload.h"

namespace slapo::runners {

// The differences of each of `knobs`' blocks from `base_knobs`' block (the knobs that change the
// computation; of one tp, each block one rank of its group on a simulated group, its collectives
// counted) at every batch of `batches`, plain, and at `checkpointed_batch`
// with the blocks checkpointed (0: none — cost::checkpointed_from_plain composes it from the
// plain ones). Every key's block runs in every round, the base's once for all of them: the keys a
// profiled one is the base of are probed together. `workload`'s threads are used. Throws
// Error(kRuntime) naming the key whose block could not be built or run.
std::vector<std::vector<cost::BlockDifference>> probe_block_differences(
    const Workload& workload, const Config& base_knobs, const std::vector<Config>& knobs,
    const std::vector<int64_t>& batches, int64_t checkpointed_batch);

// What one block of `knobs` alone (plain; under tensor parallelism one rank of its group) keeps
// for its backward, and needs while running backward above that and the gradient it receives, at
// two batches (`lo` < `hi`): lines in the samples (exact bytes; cost::BlockBytes). Each batch runs
// twice, the second read: the first makes the parameters' gradients, which a step keeps. With
// `checkpointed`, what the block keeps checkpointed too (a checkpointed block alone, the same two
// batches). Throws Error(kRuntime) naming the key whose block could not be built or run.
cost::BlockBytes measure_block_bytes(const Workload& workload, const Config& knobs, int64_t lo,
                                     int64_t hi, bool checkpointed = false);

// What one block of `knobs` keeps checkpointed alone at `lo` and `hi` (its output and what the
// checkpoint holds), into `bytes`: measure_block_bytes's `checkpointed` part, for a profile that
// gains its checkpointed step later.
void measure_checkpointed_block_bytes(const Workload& workload, const Config& knobs, int64_t lo,
                                      int64_t hi, cost::BlockBytes& bytes);

}  // namespace slapo::runners
