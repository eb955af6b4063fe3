#pragma once
// Facts about this machine and software that make two measurements comparable: printed by
// `slapo-tune --version` and, later, stored as each tuning task's fingerprint.

#include <string>

namespace slapo::runners {

struct SystemInfo {
  std::string cpu_model;
  int logical_cores = 0;
  long long memory_bytes = 0;
  std::string torch_version;
  int torch_threads = 0;
  // The BLAS library actually mapped into this process (resolved path), and a short name:
  // "OpenBLAS (openmp)", "OpenBLAS (pthread)", "reference BLAS", ...
  std::string blas_path;
  std::string blas_name;
  std::string omp_wait_policy;  // OMP_WAIT_POLICY as seen by this process, or "default"
  std::string heap;             // what a model's process does with freed memory (heap_policy.h)
  bool cuda_available = false;
};

// Reads /proc and asks LibTorch. Never throws: unknown fields stay empty.
SystemInfo collect_system_info();

// The facts that make measurements comparable, as canonical JSON (the tuning database's task
// fingerprint): CPU, cores, memory, LibTorch, BLAS, threads, wait policy, heap policy, slapo
// version and the revision of its measuring code (kMeasuringRevision).
std::string fingerprint_json(const SystemInfo& info);

// True for the fingerprint's fields that are slapo's own, not the machine's: its version, the
// revision of its measuring code, and "git" (the whole revision, in fingerprints stored before the
// measuring code's).
bool is_code_field(const std::string& name);

// What makes the machines of two fingerprints (fingerprint_json) differ — slapo's version and
// measuring code aside, which are the code's —, as "cpu 'A' -> 'B', memory_bytes 1 -> 2"; empty
// when they are the same machine. Text that is not a fingerprint differs as a whole ("unreadable").
std::string machine_difference(const std::string& fingerprint_a, const std::string& fingerprint_b);

// True when the BLAS in use is an optimized one (OpenBLAS, MKL, BLIS).
bool blas_is_optimized(const SystemInfo& info);

}  // namespace slapo::runners
