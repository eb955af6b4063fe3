#pragma once
// A seeded, platform-independent random number generator (xoshiro256**, seeded by splitmix64).
// std::uniform_int_distribution differs between standard libraries; this does not, so a seed
// reproduces the same trials everywhere.

#include <cstdint>

namespace slapo {

class Rng {
 public:
  explicit Rng(uint64_t seed);

  uint64_t next_u64();
  // Exactly uniform in [0, n) (Lemire's method with rejection). REQUIRES: n > 0.
  uint64_t uniform(uint64_t n);
  // Uniform in [0, 1) with 53 random bits.
  double uniform_real();
  // An independent generator for a sub-task, derived from this one's stream.
  Rng fork();

 private:
  uint64_t s_[4];
};

}  // namespace slapo
