#pragma once
// Branch-free float math for the kernels' loops: written so that GCC vectorizes the loops that call
// them at every SIMD level (simd_dispatch.h), where a call to std::exp would stay scalar.

#include <cstdint>
#include <cstring>

namespace slapo::schedule::simd {

// exp(x) for x ≤ 0 (below −87: about 1.6e−38, not 0): 2^n · p(r), r = x − n·ln2 ∈ [−ln2/2, ln2/2],
// a degree-6 polynomial (relative error about 1e−7); the power of two is built in the exponent
// bits.
__attribute__((always_inline)) inline float exp_nonpositive(float x) {
  x = x < -87.0f ? -87.0f : x;
  // Round to nearest by the 1.5·2^23 trick (std::nearbyint is a library call; this vectorizes).
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = x - n * 0.693145751953125f - n * 1.428606765330187e-06f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

}  // namespace slapo::schedule::simd
