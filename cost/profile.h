#pragma once
// Profile: what a short profiling run measured of one workload on this machine — the step time and
// the peak tensor memory at a few (batch, checkpointed blocks) points — and what it depends on.
// Plain data: profiled by runners/profiler.h (LibTorch), stored by db/, read by the Predictor.

#include <cstdint>
#include <string>
#include <vector>

namespace slapo::cost {

// One measured point: a training step of `batch` samples with the first `ckpt_blocks` blocks
// checkpointed, in one process, with one micro-batch.
struct ProfilePoint {
  int64_t batch = 0;
  int64_t ckpt_blocks = 0;
  double step_ms = 0;     // median over the timed steps
  double peak_bytes = 0;  // the tracking allocator's peak: parameters, gradients, optimizer state,
                          // activations
  bool operator==(const ProfilePoint& o) const {
    return batch == o.batch && ckpt_blocks == o.ckpt_blocks && step_ms == o.step_ms &&
           peak_bytes == o.peak_bytes;
  }
};

struct Profile {
  // What the measurements depend on (canonical JSON): the workload without its batch size, the
  // knobs that change the computation (attention, fusions, sequence length), threads.
  std::string key_json;
  std::string fingerprint_json;  // the machine (runners/system_info.h), compared on reuse
  std::string code_revision;     // slapo's git revision: another revision profiles again
  int64_t layers = 0;            // blocks of the model
  std::vector<ProfilePoint> points;
  double profile_s = 0;  // what profiling cost, wall time

  std::string to_json() const;
  // Throws Error(kParse) naming `origin` for text that is not a profile.
  static Profile from_json(const std::string& json, const std::string& origin);
};

}  // namespace slapo::cost
