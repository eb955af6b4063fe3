#pragma once
// How much more memory this process can take before the kernel refuses it or kills it: the
// machine's available memory (/proc/meminfo's MemAvailable), or what is left under the memory
// cgroup's limit if that is less (cgroup v1's memory.limit_in_bytes − memory.usage_in_bytes, v2's
// memory.max − memory.current). Read by what takes memory it does not strictly need — the
// profile's touch of the heap ahead of a step (heap_policy.h) — so that it never takes the last of
// it. No LibTorch.

#include <optional>
#include <string>

namespace slapo::runners {

// The texts available_from reads, as this process sees them (empty when unreadable).
struct MemoryFiles {
  std::string meminfo;       // /proc/meminfo
  std::string cgroup_limit;  // the process's memory cgroup: limit_in_bytes (v1) or memory.max (v2)
  std::string cgroup_usage;  // usage_in_bytes (v1) or memory.current (v2)
};

// The bytes still available by those texts; nullopt when no text says (no /proc). A cgroup with no
// limit ("max", or v1's page-rounded 2^63) limits nothing; a usage above the limit leaves 0.
std::optional<long long> available_from(const MemoryFiles& files);

// The files of this process (its memory cgroup found through /proc/self/cgroup).
MemoryFiles read_memory_files();

// SLAPO_AVAILABLE_MEMORY (e.g. "8GiB"), when set: the most this machine is taken to have
// available — a machine shared with other work holds slapo to part of it (its ranks' budgets where
// a space sets none, runners/machine_memory.h; the profile's touch of the heap).
inline constexpr const char* kAvailableMemoryVariable = "SLAPO_AVAILABLE_MEMORY";

// available_from(read_memory_files()), at most SLAPO_AVAILABLE_MEMORY. Throws Error
// (kInvalidArgument) naming the variable when its value is not a size.
std::optional<long long> available_memory_bytes();

// Empty when SLAPO_AVAILABLE_MEMORY is unset or a size; otherwise the one-line reason, for the
// command line to refuse it before anything runs (a trial's worker, or the profile, would fail on
// it later, mid-run).
std::string available_memory_error();

}  // namespace slapo::runners
