#pragma once
// The steps a profile measurement runs (runners/profile_sweep.cc, runners/block_probe.cc): which
// step runs at which batch, which of them are timed, and how many times a short one is.
//
// A step at a batch larger than any the process ran before faults in the pages of the memory it
// touches first — the kept heap grows (runners/heap_policy.h) — and a trial never times such a
// step: its figure is the median of steps after two warm-ups. Counted with getrusage on
// 2026-11-27 (table 1's base key, gpt-mini at sequence 64): the one-block variant's first step at
// 4 samples faulted 10,798 pages, its next ones 2,048 and 0, and took 20–33% longer; at 16
// samples 21,250 against 1,536–8,192, 2–20% longer (docs/cost-model.md, "A point's first step").
// The one-block variant runs such a batch once untimed first (sweep_steps); the deep one, whose
// steps cost more, has the heap made resident up to the peak expected there (expected_peak).

#include <cstdint>
#include <vector>

namespace slapo::runners {

struct SweepStep {
  int64_t batch = 0;
  bool timed = false;
  // A batch larger than every step before it: this step faults in the memory it grows into.
  bool grows = false;
};

// Two warm-up steps of `micro` samples (the smallest a step of `micro` micro-batches takes), then a
// timed step at each of `batches` in order. Two, as a trial warms up by default (`warmup = 2`):
// after one, the deep variant's one-sample steps ran 20-30% slower than after two (gpt-mini at
// sequence 128: 87.9-89.6 against 61.0-64.9 ms, 13-14k pages faulted in against 1-3k; bert-mini at
// sequence 64: 48.5-50.1 against 37.9-39.9, none faulted in either way; 2026-11-29) — a step that
// holds the deep line's intercept — for 0.1-0.4 s more profile (docs/cost-model.md). With
// `warm_new_batches`, an untimed step first at each batch larger than every step before it (the one
// that `grows`), so that the timed one runs on the memory the untimed one faulted in — as a trial's
// timed steps do; without, that timed step `grows` itself.
std::vector<SweepStep> sweep_steps(int64_t micro, const std::vector<int64_t>& batches,
                                   bool warm_new_batches);

// How many times to time a measurement whose first run took `first_ms`: at least `at_least`, and
// as many as add up to kMinTimedMs (at most kMaxTimedRepeats), the figure then their median. This
// machine stalls a run by 4–8 ms about every other run of a few milliseconds (two threads, one of
// them descheduled by the host): bert-tiny's 3 ms steps and 1–2 ms blocks, timed once, made a
// profile whose two-block steps were faster than its one-block ones, and a derived key whose
// steps took −5 ms (docs/cost-model.md, "Steps of a few milliseconds"). A step of gpt-mini (45 ms
// at one sample, timed twice there) is not timed more.
constexpr double kMinTimedMs = 60;
constexpr int kMaxTimedRepeats = 25;
int timed_repeats(double first_ms, int at_least);

// A step's peak tensor bytes at a batch.
struct PeakAt {
  int64_t batch = 0;
  double bytes = 0;
};

// The peak a step at `batch` is expected to reach, from the peaks `measured` at other batches of
// the same variant (any order): along the line through the two largest batches, and past the
// largest its growth half as much again — a peak grows faster with the batch than at one to four
// samples, where the optimizer's step sets it (bert-mini's deep variant: 111.6, 131.7, 199.8 and
// 347.3 MB at 1, 4, 10 and 23 samples). Zero (nothing known) with fewer than two batches measured.
double expected_peak(const std::vector<PeakAt>& measured, int64_t batch);

// Whether the peaks `measured` so far say how a step's memory grows past the warm-ups' batch
// (`micro` samples): two batches above it or more. At one to four samples the optimizer's step sets
// the peak, so a line through one sample is flat and expects nothing of the activations: a deep
// step at a new batch meets a heap touched up to that line, and when it faults kFaultsToTimeAgain
// pages in or more it is timed again (gpt-mini at sequence 32: its first steps at 4 and 8 samples
// faulted 5.6-6.4k and 13.3-13.7k pages in and ran 4-42% and 13-22% slower than the step after
// them; at sequence 48, 0 and 2.6k: an untimed step first at both would cost 0.2 s of a 2.5 s key
// for little; docs/cost-model.md).
bool expects_growth(const std::vector<PeakAt>& measured, int64_t micro);
// 16 MiB of pages: about 8 ms of a step here (1.8-2.0 us a fault, benchmark/host_costs.sh). At
// sequence 48 gpt-mini's step at 8 samples faulted 2.4k pages in and ran 127.9 ms, then 128.9.
constexpr long kFaultsToTimeAgain = 4096;

}  // namespace slapo::runners
