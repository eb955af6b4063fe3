#include "runners/heap_policy.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include <sys/resource.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

extern char** environ;

namespace slapo::runners {

namespace {

// Grown this much beyond a request: fewer, larger extensions of the heap (address space; a page
// costs memory only once touched).
constexpr int kTopPad = 256 << 20;

bool environment_configures_malloc() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.")) return true;
  for (char** e = environ; e && *e; ++e) {
    // MALLOC_TRIM_THRESHOLD_=..., MALLOC_MMAP_THRESHOLD_=..., MALLOC_ARENA_MAX=...
    if (std::strncmp(*e, "MALLOC_", 7) == 0) return true;
  }
  return false;
}

}  // namespace

std::string heap_choice_error() {
  const char* choice = std::getenv("SLAPO_HEAP");
  if (!choice || std::strcmp(choice, "retained") == 0 || std::strcmp(choice, "system") == 0)
    return "";
  return std::string("SLAPO_HEAP=") + choice +
         ": expected 'system' (glibc's heap) or 'retained' (the default: docs/runners.md)";
}

std::string heap_policy() {
#ifdef __GLIBC__
  const char* choice = std::getenv("SLAPO_HEAP");
  if (choice && std::strcmp(choice, "system") == 0) return "system";
  return environment_configures_malloc() ? "system" : "retained";
#else
  return "system";
#endif
}

void keep_freed_memory() {
  static std::once_flag once;
  std::call_once(once, [] {
#ifdef __GLIBC__
    if (heap_policy() != "retained") return;
    // Also ends glibc's moving of the threshold.
    mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThreshold));
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
    mallopt(M_TOP_PAD, kTopPad);
#endif
  });
}

size_t touch_heap(size_t bytes, std::optional<long long> available) {
#ifdef __GLIBC__
  if (heap_policy() != "retained" || bytes == 0) return 0;
  if (available) bytes = std::min(bytes, static_cast<size_t>(std::max(0LL, *available / 2)));
  // Half the threshold: each block is surely the heap's, not a mapping of its own.
  constexpr size_t kBlock = kMmapThreshold / 2;
  constexpr size_t kPage = 4096;
  std::vector<char*> blocks;
  for (size_t taken = 0; taken < bytes; taken += kBlock) {
    char* b = static_cast<char*>(std::malloc(kBlock));
    if (b == nullptr) break;
    for (size_t i = 0; i < kBlock; i += kPage) static_cast<volatile char*>(b)[i] = 0;
    blocks.push_back(b);
  }
  // Freed in reverse: each merges with the free top of the heap, which is never trimmed.
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) std::free(*it);
  return blocks.size() * kBlock;
#else
  (void)bytes;
  (void)available;
  return 0;
#endif
}

long minor_page_faults() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

}  // namespace slapo::runners
