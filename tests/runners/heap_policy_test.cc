#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "runners/heap_policy.h"

namespace slapo::runners {
namespace {

constexpr size_t kTensorBytes = 24u << 20;  // heap_child's tensor

struct Held {
  size_t mapped_while_live = 0, free_after = 0;
};

// heap_child in a fresh process with SLAPO_HEAP set to `choice`.
Held heap_child(const std::string& choice) {
  const std::string command = "SLAPO_HEAP=" + choice + " " + HEAP_CHILD;
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  Held h;
  if (!pipe) return h;
  EXPECT_EQ(std::fscanf(pipe, "%zu %zu", &h.mapped_while_live, &h.free_after), 2) << command;
  EXPECT_EQ(pclose(pipe), 0) << command;
  return h;
}

// Sets an environment variable for one scope, then puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(HeapPolicyTest, AFreedTensorStaysInTheHeapUnlessGlibcsWayIsAskedFor) {
  {
    ScopedEnv no_choice("SLAPO_HEAP", nullptr);
    if (heap_policy() != "retained") GTEST_SKIP() << "this environment configures malloc itself";
  }
  const Held kept = heap_child("retained");
  EXPECT_EQ(kept.mapped_while_live, 0u) << "the tensor was mapped apart from the heap";
  EXPECT_GE(kept.free_after, kTensorBytes) << "the freed tensor was given back to the system";
  // glibc's defaults in a fresh process: a block that large is mapped alone and unmapped when
  // freed — what the policy is there to avoid, and proof that the check above can fail.
  const Held system = heap_child("system");
  EXPECT_GE(system.mapped_while_live, kTensorBytes);
  EXPECT_LT(system.free_after, kTensorBytes);
}

// heap_child's page faults writing 96 MiB of tensors in a fresh process with SLAPO_HEAP set to
// `choice`, the heap touched first ("touched", "capped") or not (""), and the bytes touch_heap
// said it touched.
struct Faults {
  long faults = -1;
  size_t touched = 0;
};
Faults faults_writing(const std::string& choice, const std::string& touch) {
  const std::string command = "SLAPO_HEAP=" + choice + " " + HEAP_CHILD + " faults " + touch;
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  Faults out;
  if (!pipe) return out;
  EXPECT_EQ(std::fscanf(pipe, "%ld %zu", &out.faults, &out.touched), 2) << command;
  EXPECT_EQ(pclose(pipe), 0) << command;
  return out;
}

TEST(HeapPolicyTest, ATouchedHeapHasThePagesOfTheNextTensorsResident) {
  {
    ScopedEnv no_choice("SLAPO_HEAP", nullptr);
    if (heap_policy() != "retained") GTEST_SKIP() << "this environment configures malloc itself";
  }
  constexpr long kPages = (96 << 20) / 4096;
  // Written as they come, the tensors fault in every page of theirs.
  EXPECT_GE(faults_writing("retained", "").faults, kPages);
  // After touch_heap, hardly any: the profile's deep steps time what a trial's timed steps do.
  const Faults touched = faults_writing("retained", "touched");
  EXPECT_LT(touched.faults, kPages / 20);
  EXPECT_EQ(touched.touched, size_t{96} << 20);
  // On glibc's own heap the touched pages go back to the system when freed: nothing is kept.
  const Faults system = faults_writing("system", "touched");
  EXPECT_GE(system.faults, kPages);
  EXPECT_EQ(system.touched, 0u);
}

TEST(HeapPolicyTest, TheHeapIsTouchedNoFurtherThanHalfOfTheMemoryAvailable) {
  {
    ScopedEnv no_choice("SLAPO_HEAP", nullptr);
    if (heap_policy() != "retained") GTEST_SKIP() << "this environment configures malloc itself";
  }
  constexpr long kPages = (96 << 20) / 4096;
  // 96 MiB asked for with 64 MiB available: 32 MiB touched, the other 64 MiB of tensors fault.
  const Faults capped = faults_writing("retained", "capped");
  EXPECT_EQ(capped.touched, size_t{32} << 20);
  EXPECT_GE(capped.faults, kPages * 2 / 3 - kPages / 20);
  EXPECT_LT(capped.faults, kPages);
}

// heap_child's page faults of its second step's large tensors with SLAPO_HEAP set to `choice`.
long faults_of_the_second_step(const std::string& choice) {
  const std::string command = "SLAPO_HEAP=" + choice + " " + HEAP_CHILD + " steps";
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  long faults = -1;
  if (!pipe) return faults;
  EXPECT_EQ(std::fscanf(pipe, "%ld", &faults), 1) << command;
  EXPECT_EQ(pclose(pipe), 0) << command;
  return faults;
}

TEST(HeapPolicyTest, TheLargeBlocksOfAStepAreKeptForTheNext) {
  {
    ScopedEnv no_choice("SLAPO_HEAP", nullptr);
    if (heap_policy() != "retained") GTEST_SKIP() << "this environment configures malloc itself";
  }
  constexpr long kLargePages = (160l << 20) / 4096;  // one of the step's two large tensors
  // glibc's way: each large tensor mapped on its own and unmapped when freed, every step.
  EXPECT_GE(faults_of_the_second_step("system"), 2 * kLargePages);
  // Kept (runners/large_block_cache.h): the second step's large tensors find their pages resident.
  EXPECT_LT(faults_of_the_second_step("retained"), kLargePages / 20);
}

TEST(HeapPolicyTest, MallocSettingsOfTheEnvironmentAreLeftAsTheyAre) {
  ScopedEnv no_choice("SLAPO_HEAP", nullptr);
  ScopedEnv no_tunables("GLIBC_TUNABLES", nullptr);
  {
    ScopedEnv arenas("MALLOC_ARENA_MAX", "2");
    EXPECT_EQ(heap_policy(), "system");
  }
  {
    ScopedEnv tunables("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1048576");
    EXPECT_EQ(heap_policy(), "system");
  }
  {
    ScopedEnv other("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX2");
    ScopedEnv system("SLAPO_HEAP", "system");
    EXPECT_EQ(heap_policy(), "system");
  }
}

}  // namespace
}  // namespace slapo::runners
