#pragma once
// The collectives of this machine: one α–β line per operation (time = α + β · bytes), fitted to
// timings of all-reduce, all-gather and send/recv between the ranks of a job at a few message
// sizes (measured by runners/collective_profile.h, once per machine and revision, and stored in
// the tuning database).
//
// Measured at one group size (the machine's ranks: 2 here). Other group sizes follow the ring
// algorithms Gloo uses: an all-reduce of B bytes over n ranks costs 2(n − 1) steps of B / n bytes,
// an all-gather of B bytes per rank n − 1 steps of B bytes; a plan for more ranks than were
// measured says that it extrapolates (docs/cost-model.md).

#include <cstdint>
#include <string>
#include <vector>

namespace slapo::cost {

struct AlphaBeta {
  double alpha_ms = 0;          // per call
  double beta_ms_per_byte = 0;  // per payload byte
  double at(double bytes) const { return alpha_ms + beta_ms_per_byte * bytes; }
  bool operator==(const AlphaBeta& o) const {
    return alpha_ms == o.alpha_ms && beta_ms_per_byte == o.beta_ms_per_byte;
  }
};

// One timed collective: `op` ("all_reduce" | "all_gather" | "send_recv") of `bytes` per rank, or
// "gradient_sync": data parallelism's averaging of `bytes` of gradients as the runtime does it
// (schedule/runtime/data_parallel.h: packed into buckets, all-reduced, divided, copied back).
struct CollectiveSample {
  std::string op;
  double bytes = 0;
  double ms = 0;  // median over repeats
};

struct CollectiveProfile {
  int ranks = 2;  // the group size measured
  std::string fingerprint_json = "{}";
  std::string code_revision;
  std::vector<CollectiveSample> samples;
  double profile_s = 0;

  std::string to_json() const;
  // Throws Error(kParse) naming `origin` for text that is not a collective profile.
  static CollectiveProfile from_json(const std::string& json, const std::string& origin);
};

// The fitted lines, and the time of a collective at any group size.
class CollectiveModel {
 public:
  // Throws Error(kInvalidArgument) when an operation has fewer than two message sizes.
  explicit CollectiveModel(const CollectiveProfile& profile);

  // `calls` all-reduces of `bytes` in all (the tensors on each rank) over `ranks` ranks; 0 for one
  // rank.
  double all_reduce_ms(double bytes, int64_t ranks, double calls = 1) const;
  // `calls` all-gathers of `bytes` in all per rank over `ranks` ranks; 0 for one rank.
  double all_gather_ms(double bytes, int64_t ranks, double calls = 1) const;
  // One message of `bytes` from one rank to another.
  double send_ms(double bytes) const;
  // Data parallelism's averaging of `bytes` of gradients over `ranks` ranks (0 for one), in
  // buckets of `bucket_bytes`: its own line where the profile timed it — the packing into buckets
  // and back is as much again as the all-reduce on a CPU (126 MB of gradients: 96 ms of memory
  // passes beside the collective) —, else the all-reduces of its buckets alone (a profile of an
  // earlier slapo).
  double gradient_sync_ms(double bytes, int64_t ranks, double bucket_bytes) const;
  // Whether the profile timed the gradients' averaging itself.
  bool has_gradient_sync() const { return has_gradient_sync_; }
  // True when a group of `ranks` is larger than the group measured (the ring formulas extrapolate).
  bool extrapolates(int64_t ranks) const { return ranks > measured_ranks_; }

  const AlphaBeta& all_reduce_fit() const { return all_reduce_; }
  const AlphaBeta& all_gather_fit() const { return all_gather_; }
  const AlphaBeta& send_fit() const { return send_; }

 private:
  int measured_ranks_;
  AlphaBeta all_reduce_, all_gather_, send_, gradient_sync_;
  bool has_gradient_sync_ = false;
};

}  // namespace slapo::cost
