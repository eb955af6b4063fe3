#pragma once
// The order of the training steps of one profile sweep (runners/profiler.cc): which step runs at
// which batch, and which of them are timed.
//
// A step at a batch larger than any the process ran before faults in the pages of the memory it
// touches first — the kept heap grows (runners/heap_policy.h) — and a trial never times such a
// step: its figure is the median of steps after two warm-ups. Counted with getrusage on
// 2026-11-27 (table 1's base key, gpt-mini at sequence 64): the one-block variant's first step at
// 4 samples faulted 10,798 pages, its next ones 2,048 and 0, and took 20–33% longer; at 16
// samples 21,250 against 1,536–8,192, 2–20% longer (docs/cost-model.md, "A point's first step").

#include <cstdint>
#include <vector>

namespace slapo::runners {

struct SweepStep {
  int64_t batch = 0;
  bool timed = false;
};

// A warm-up step of `micro` samples (the smallest a step of `micro` micro-batches takes), then a
// timed step at each of `batches` in order. With `warm_new_batches`, an untimed step first at each
// batch larger than every step before it, so that the timed one runs on the memory the untimed one
// faulted in — as a trial's timed steps do.
std::vector<SweepStep> sweep_steps(int64_t micro, const std::vector<int64_t>& batches,
                                   bool warm_new_batches);

}  // namespace slapo::runners
