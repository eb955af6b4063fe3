#pragma once
// A workload whose blocks and the rest follow the cost model exactly (ms and MB), for the cost
// model's tests. The defaults:
//   a block's forward and backward B(x) = 2 + 3x, the rest O(x) = 5 + 4x (of which the embeddings
//   0.5x), a checkpointed block's recompute 30% of B; the optimizer 1 ms per 10^6 parameters: a
//   block 10^6, the embeddings 2·10^6, the head 2.5·10^6 of which 2·10^6 tied.
//   Memory: 16 bytes per parameter; per sample a block keeps 10 MB (2 MB checkpointed), the head
//   and loss 30 MB.
// Another block (an attention variant, a fusion) changes only the block's fields.

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "cost/collectives.h"
#include "cost/predictor.h"
#include "cost/profile.h"

namespace slapo::cost::testing {

constexpr double kMB = 1e6;
constexpr int64_t kLayers = 4;

struct SyntheticWorkload {
  double block_at0 = 2, block_per_sample = 3;
  double outside_at0 = 5, outside_per_sample = 4;
  double recompute = 0.3;
  double block_act_mb = 10, ckpt_kept_mb = 2, outside_act_mb = 30;
  // What the optimizer step needs beyond the state: a step's peak when its activations need less.
  double optimizer_peak_mb = 0;
  // A buffer of the head's forward that does not grow with the batch (the fused LM loss's chunk of
  // logits): there at the head, gone by the time a checkpointed block is recomputed.
  double head_buffer_mb = 0;

  // Under tensor parallelism (tp > 1; the profile is one rank's): all-reduces of one micro-batch,
  // each of `message_bytes` a sample — a block's forward and backward make `block_all_reduces`, its
  // forward half of them (made again by a checkpointed block's recompute), the rest
  // `outside_all_reduces`; and the head's all-gathers (of its logits' parts), `gather_bytes` a
  // sample each.
  int64_t tp = 1;
  double block_all_reduces = 0, outside_all_reduces = 0, message_bytes = 1000;
  double outside_all_gathers = 0, gather_bytes = 50000;

  double block_ms(double x) const { return block_at0 + block_per_sample * x; }
  double outside_ms(double x) const { return outside_at0 + outside_per_sample * x; }
  static double optimizer_ms(double blocks) { return blocks + 2.5; }
  static double state_bytes(double blocks) { return (16 * blocks + 40) * kMB; }
  double step(int64_t layers, int64_t x, int64_t k) const {
    return outside_ms(static_cast<double>(x)) + static_cast<double>(layers) * block_ms(x) +
           recompute * static_cast<double>(k) * block_ms(x) +
           optimizer_ms(static_cast<double>(layers));
  }
  // At the head, every block's part; or, with blocks checkpointed (the first k), when the top one
  // of them is recomputed — the plain blocks above it and the loss have run backward by then; or
  // in the optimizer step.
  double peak(int64_t layers, int64_t x, int64_t k) const {
    const double n = static_cast<double>(layers), c = static_cast<double>(k);
    const double samples = static_cast<double>(x);
    const double at_head =
        head_buffer_mb + samples * ((n - c) * block_act_mb + c * ckpt_kept_mb + outside_act_mb);
    const double recomputing = k > 0 ? samples * (c * ckpt_kept_mb + block_act_mb) : 0;
    return state_bytes(n) + std::max({at_head, recomputing, optimizer_peak_mb}) * kMB;
  }
  CollectiveTally collectives(int64_t layers, int64_t x, int64_t k) const {
    if (tp == 1) return {};
    const double calls = outside_all_reduces + static_cast<double>(layers) * block_all_reduces +
                         static_cast<double>(k) * block_all_reduces / 2;
    const double samples = static_cast<double>(x);
    return {calls, calls * message_bytes * samples, outside_all_gathers,
            outside_all_gathers * gather_bytes * samples};
  }
  ProfilePoint point(int64_t layers, int64_t batch, int64_t ckpt) const {
    ProfilePoint q;
    q.layers = layers;
    q.batch = batch;
    q.ckpt_blocks = ckpt;
    q.step_ms = step(layers, batch, ckpt);
    q.peak_bytes = peak(layers, batch, ckpt);
    q.collectives = collectives(layers, batch, ckpt);
    return q;
  }
  // The profile the profiler would measure of a model of `layers` blocks (variants of 1 and
  // kLayers blocks).
  Profile profile(int64_t layers = kLayers) const {
    Profile p;
    p.key_json = "{\"model\":\"synthetic\"}";
    p.fingerprint_json = "{}";
    p.layers = layers;
    p.tp = tp;
    p.shape = {1e6, 2e6, 2.5e6, 2e6, 1000};
    p.optimizer_ms_per_param = 1e-6;
    p.prologue_ms_per_sample = 0.5;
    for (auto [d, b, k] : std::vector<std::array<int64_t, 3>>{{1, 1, 0},
                                                              {1, 4, 0},
                                                              {1, 32, 0},
                                                              {kLayers, 1, 0},
                                                              {kLayers, 4, 0},
                                                              {kLayers, 11, 0},
                                                              {kLayers, 32, 0},
                                                              {kLayers, 32, kLayers},
                                                              {kLayers, 1, kLayers}}) {
      p.points.push_back(point(d, b, k));
    }
    return p;
  }
  // The profile with the deep variant at 20 samples too (four batches above one sample: its steps
  // are read off a line) and its plain step at `slow_batch` 6% slow, as one hiccup of the machine
  // makes a single timed step.
  Profile profile_with_one_slow_deep_step(int64_t slow_batch) const {
    Profile p = profile();
    p.points.push_back(point(kLayers, 20, 0));
    for (ProfilePoint& q : p.points) {
      if (q.layers == kLayers && q.ckpt_blocks == 0 && q.batch == slow_batch) q.step_ms *= 1.06;
    }
    return p;
  }
};

// Collectives of 0.1 ms plus 1 ms per MB, every operation, measured at 2 ranks.
inline CollectiveModel synthetic_collectives() {
  CollectiveProfile c;
  c.fingerprint_json = "{}";
  for (const char* op : {"all_reduce", "all_gather", "send_recv"}) {
    for (double bytes : {4096.0, 1e6, 4e6}) c.samples.push_back({op, bytes, 0.1 + bytes / 1e6});
  }
  return CollectiveModel(c);
}

// The time a prediction gives its collectives; -1 without the entry.
inline double collectives_ms(const Prediction& p) {
  for (const auto& [name, ms] : p.time_ms) {
    if (name == "collectives") return ms;
  }
  return -1;
}

// Expects `derived` to predict what `full` predicts — step time, collectives' time and peak, to one
// part in a million — at every batch, checkpointing and pipeline layout of one grid (one stage, and
// two stages of two micro-batches), on `tp` ranks of tensor parallelism.
inline void expect_same_predictions(const Predictor& derived, const Predictor& full,
                                    int64_t tp = 1) {
  for (int64_t batch : {2, 8, 24, 64}) {
    for (int64_t ckpt : {int64_t{0}, int64_t{1}, kLayers}) {
      for (int64_t pp : {1, 2}) {
        PredictInput in;
        in.batch = batch;
        in.ckpt_blocks = ckpt;
        in.tp = tp;
        in.pp = pp;
        in.micro_batches = pp;
        if (pp == 2) in.cuts = {kLayers / 2};
        const Prediction a = derived.predict(in), b = full.predict(in);
        EXPECT_NEAR(a.step_ms, b.step_ms, 1e-6 * b.step_ms) << batch << " " << ckpt << " " << pp;
        EXPECT_NEAR(collectives_ms(a), collectives_ms(b), 1e-6 * collectives_ms(b))
            << batch << " " << ckpt << " " << pp;
        EXPECT_NEAR(a.peak_bytes, b.peak_bytes, 1e-6 * b.peak_bytes)
            << batch << " " << ckpt << " " << pp;
      }
    }
  }
}

}  // namespace slapo::cost::testing
