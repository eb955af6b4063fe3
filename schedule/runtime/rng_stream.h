#pragma once
// RngStream: an independent, seeded random stream for one module (fork_rng).
//
// LibTorch's dropout draws from the default CPU generator. A stream swaps its own state into the
// default generator for the duration of the module's forward and takes the advanced state back
// afterwards, so the module sees its own sequence and the rest of the model is unaffected.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

namespace slapo::schedule {

class RngStream {
 public:
  explicit RngStream(uint64_t seed);

  // Runs `fn` with this stream as the default CPU generator.
  template <typename Fn>
  auto run(Fn&& fn) {
    Swap swap(this);
    return fn();
  }

  uint64_t seed() const { return seed_; }
  at::Tensor state() const { return state_; }
  void set_state(const at::Tensor& state) { state_ = state; }

 private:
  struct Swap {
    explicit Swap(RngStream* s);
    ~Swap();
    RngStream* stream;
    at::Tensor outer;
  };
  uint64_t seed_;
  at::Tensor state_;
};

// The default CPU generator's state, and setting it (under the generator's lock).
at::Tensor default_rng_state();
void set_default_rng_state(const at::Tensor& state);

}  // namespace slapo::schedule
