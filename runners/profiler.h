#pragma once
// The profiling run of the cost model (cost/profile.h): short training steps of two variants of a
// built-in workload's model — one block, and `deep` blocks (the model's own depth, between 2 and
// 8) — in this process, through a trial's training step and the tracking allocator's peak. Each
// variant below is one model stepped at its batches in turn: one warm-up step at the smallest,
// then one timed step per batch (two at the smallest batches), the peak read per batch:
//
//   deep variant   1 sample, the smallest, a middle and the largest batch without checkpointing
//                  (the middle: one the space runs, where one is near: cost/profile_batches.h);
//                  the largest batch with every block checkpointed, when the space checkpoints
//                  blocks (ProfileRequest::checkpointed_step)
//   one block      1 sample, the smallest and the largest batch without checkpointing; twice the
//                  smallest batch in two GPipe micro-batches (what the loss keeps per micro-batch
//                  until its backward, against what it needs only while running backward), when
//                  the space runs GPipe in more than one micro-batch (ProfileRequest::gpipe_step)
//
// With a base profile (ProfileRequest::base), only one block of the key and of each sibling alone,
// in the same rounds as the base's block, at the base's batches (runners/block_probe.h): the rest
// is derived (cost/derived_profile.h); with a base that differs only in the head
// (ProfileRequest::head), only the key's one-block steps, where the base's ran. With a profile
// to extend (ProfileRequest::extend), only the deep variant at batch_hi, added to it (or the
// one-block GPipe step or the checkpointed deep step it lacks).
//
// Under tensor parallelism each step is one rank of the group, alone (runners/simulated_group.h),
// with its collectives counted. Besides the steps: the parameters of a block, of the embeddings
// and of the head as the schedule shards them; one optimizer step's time per parameter; the
// embeddings' forward and backward per sample.
//
// Its parts: runners/profile_sweep.h (one variant stepped at its batches), runners/profile_shape.h
// (what is read off the model besides its steps), runners/derived_profiles.h (the keys measured
// as a base's differences); profile_request.cc (the request as JSON) and profile_job.cc (the job
// of ranks that measures it beside peers).

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "cost/collectives.h"
#include "cost/profile.h"
#include "runners/sweep_steps.h"  // PeakAt
#include "runners/workload.h"

namespace slapo::runners {

struct ProfileRequest {
  Workload workload;  // its threads: one rank's
  Config knobs;       // the knobs that change the computation, tp included when over 1
  int64_t batch_lo = 1, batch_hi = 1;
  // The micro-batches the space's configurations run on a rank (may be empty): the middle batch
  // is one of them when one lies between batch_lo and batch_hi (cost/profile_batches.h).
  std::vector<int64_t> batches_taken;
  // A profiled key that differs from this one only inside the blocks (of the same tp and splits),
  // and its knobs: then
  // only what one block of this key differs by from one of the base's is measured, at the base's
  // batches (checkpointed: composed), and the profile is derived from the base's
  // (cost/derived_profile.h).
  std::optional<cost::Profile> base;
  Config base_knobs;
  // With a base: more keys it is the base of, probed in the same rounds (the base's block runs
  // once per round for all of them); measure_profiles returns their profiles after this key's.
  std::vector<Config> siblings;
  // The base differs from this key only in the knobs of the head (cost/head_difference.h), not
  // inside the blocks: then only this key's one-block steps are run, at every batch and
  // micro-batch count the base's were, for their bytes (their time is the base's: what the head
  // saves shows at depth, where runners/cost_model.h measures the deep steps), and the profile is
  // the base's shifted by what they differ by. No siblings; tp = 1 only.
  bool head = false;
  // The base differs from this key only in the optimizer (`fused_adamw`): then only the base's
  // steps that peaked in its optimizer step (cost::optimizer_bound_points) are run again, with this
  // key's optimizer, and the deep variant's one-sample step with each optimizer in turn, for the
  // difference of their steps' optimizer time; the profile is the base's swapped
  // (cost/optimizer_swap.h). No siblings.
  bool optimizer = false;
  // A profile measured up to a smaller batch: only the deep variant's step at batch_hi without
  // checkpointing is measured, and added to it — or its steps at each of `extend_batches`, in
  // one sweep (ascending), when given.
  std::optional<cost::Profile> extend;
  std::vector<int64_t> extend_batches;
  // Whether the one-block step in two GPipe micro-batches is measured: only configurations that
  // run GPipe in more than one micro-batch read it (what the loss keeps per micro-batch in
  // flight), and it is about a twelfth of a profile (docs/cost-model.md).
  bool gpipe_step = true;
  // With `extend`: only that step is measured, and added — a profile of a space without GPipe
  // micro-batches, reused by one with them.
  bool extend_gpipe_step = false;
  // Likewise the deep variant's step with every block checkpointed: only configurations that
  // checkpoint blocks read it (the recompute, what a checkpointed block keeps), about a seventh
  // of a profile (docs/cost-model.md); with `extend`, that step alone, at the largest batch the
  // deep variant was measured at without checkpointing (up to batch_hi).
  bool checkpointed_step = true;
  bool extend_checkpointed_step = false;
  // Measured beside peers (measure_profiles_beside_peers): the job times this machine's
  // collectives too, after the profile (runners/collective_profile.h) — one launch where two
  // cost 0.4–0.5 s more on this machine (two processes loading LibTorch, their rendezvous).
  bool collectives = false;

  std::string to_json() const;
  // Throws Error(kInvalidArgument) naming `origin` for text that is not a request.
  static ProfileRequest from_json(const std::string& json, const std::string& origin);
};

// Measures the profile in this process (key, fingerprint and revision are the caller's to fill):
// the request's key's, then its siblings' (a derived request's). Throws Error(kRuntime) naming
// the step that failed.
//
// Held to this machine's memory (runners/machine_memory.h): a whole profile's plain steps stop
// short of a batch whose step it cannot hold — expected so from the batches measured before it,
// or run into — and its largest batch is then the deep variant's largest (more than `batch_lo`,
// else it fails); an extension's steps that it cannot hold add nothing.
std::vector<cost::Profile> measure_profiles(const ProfileRequest& request);
// The profile of the request's key alone.
cost::Profile measure_profile(const ProfileRequest& request);

// The peaks of the deep variant's plain steps (one micro-batch) that `profile` holds, measured or
// derived (cost/head_difference.h: within 1% of the measured ones) — a key derived across the
// head knows its own deep peaks only so; a measured profile holds no derived point. What
// runners::expected_peak extrapolates a larger batch's step from.
std::vector<PeakAt> plain_deep_peaks(const cost::Profile& profile);

// The same, as one rank among `ranks` identical copies that run at once — the ranks of a job share
// the machine's cores, memory bandwidth and caches, and a rank profiled alone runs faster than it
// will beside its peers. Launches `worker` + {"--profile", request} (`slapo-tune worker --profile`,
// which calls run_profile_worker) `ranks` times and returns rank 0's profiles. Throws
// Error(kRuntime) naming the failing rank. With the request's `collectives`, the job's
// collectives are returned in `collectives` (required then; ranks > 1), their measuring time
// their own and the rest of the job's the profiles'.
std::vector<cost::Profile> measure_profiles_beside_peers(
    const ProfileRequest& request, int ranks, const std::vector<std::string>& worker,
    cost::CollectiveProfile* collectives = nullptr);
// One copy: measures, and prints the profiles as one JSON line (an array) on `out` when it is
// rank 0 (RANK) — after a line of the collectives' profile, with the request's `collectives`.
void run_profile_worker(const std::string& request_json, std::ostream& out);

}  // namespace slapo::runners
