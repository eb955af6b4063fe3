#include "schedule/kernels/simd_dispatch.h"

#include <atomic>
#include <cstdlib>

#include "core/error.h"

namespace slapo::schedule::simd {

namespace {

std::atomic<Level> cap{Level::kAvx512};

Level detect() {
  __builtin_cpu_init();
  Level best = Level::kBaseline;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = Level::kAvx2;
  if (best == Level::kAvx2 && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    best = Level::kAvx512;
  }
  if (const char* value = std::getenv("SLAPO_SIMD")) {
    const Level limit = parse_level(value);
    if (static_cast<int>(limit) < static_cast<int>(best)) best = limit;
  }
  return best;
}

}  // namespace

Level parse_level(const std::string& value) {
  if (value == "baseline") return Level::kBaseline;
  if (value == "avx2") return Level::kAvx2;
  if (value == "avx512") return Level::kAvx512;
  SLAPO_FAIL(ErrorCode::kInvalidArgument, "environment variable SLAPO_SIMD='", value,
             "' is not an instruction set (baseline, avx2, avx512)");
}

Level level() {
  static const Level detected = detect();
  const Level limit = cap.load(std::memory_order_relaxed);
  return static_cast<int>(limit) < static_cast<int>(detected) ? limit : detected;
}

Level set_cap(Level new_cap) { return cap.exchange(new_cap); }

const char* level_name(Level level) {
  switch (level) {
    case Level::kAvx512: return "avx512";
    case Level::kAvx2: return "avx2";
    default: return "baseline";
  }
}

}  // namespace slapo::schedule::simd
