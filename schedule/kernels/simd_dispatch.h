#pragma once
// Run-time choice between a kernel compiled for AVX-512, for AVX2+FMA, and for the baseline.
//
// Why not GCC's target_clones("arch=haswell", ...): its resolver asks __builtin_cpu_is("haswell"),
// which is false on every CPU that is not a Haswell (an AMD EPYC with AVX-512 ran the SSE clone).
// We ask for the features instead.
//
//   SLAPO_SIMD_VARIANTS(name, (params), (args)) defines name_avx512, name_avx2 and name_default
//   from an always_inline `name_body(args)` and a dispatcher `name(params)`.

#include <string>

namespace slapo::schedule::simd {

enum class Level { kBaseline, kAvx2, kAvx512 };

// What the kernels run: the best this CPU can (detected once), capped by the environment variable
// SLAPO_SIMD=baseline|avx2|avx512 and by set_cap().
Level level();
// The level named by a SLAPO_SIMD value: "baseline", "avx2" or "avx512". Anything else throws
// Error(kInvalidArgument) naming the variable and the accepted values.
Level parse_level(const std::string& value);
// Caps level() from now on in this process (tests of every variant); returns the previous cap.
Level set_cap(Level cap);
const char* level_name(Level level);

}  // namespace slapo::schedule::simd

#define SLAPO_SIMD_VARIANTS(name, params, args)                                           \
  __attribute__((                                                                         \
      target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma"))) void name##_avx512 params { \
    name##_body args;                                                                     \
  }                                                                                       \
  __attribute__((target("avx2,fma"))) void name##_avx2 params { name##_body args; }       \
  void name##_default params { name##_body args; }                                        \
  void name params {                                                                      \
    switch (::slapo::schedule::simd::level()) {                                           \
      case ::slapo::schedule::simd::Level::kAvx512: name##_avx512 args; return;           \
      case ::slapo::schedule::simd::Level::kAvx2: name##_avx2 args; return;               \
      default: name##_default args; return;                                               \
    }                                                                                     \
  }
