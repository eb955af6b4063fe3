// What the process can still take (runners/available_memory.h), from the texts of /proc/meminfo and
// of the memory cgroup as each kernel writes them.

#include "runners/available_memory.h"
#include "runners/machine_memory.h"

#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/error.h"

namespace slapo::runners {
namespace {

constexpr long long kGiB = 1LL << 30;

const char* const kMeminfo =
    "MemTotal:       24596080 kB\n"
    "MemFree:        20000000 kB\n"
    "MemAvailable:    8388608 kB\n"
    "Buffers:           12345 kB\n";

TEST(AvailableMemoryTest, TheMachinesAvailableMemoryWithoutACgroupLimit) {
  // /proc/meminfo counts kibibytes; MemAvailable, not MemFree (the page cache can be given back).
  EXPECT_EQ(available_from({kMeminfo, "", ""}), 8 * kGiB);
  // cgroup v1 writes "no limit" as the largest page-aligned 64-bit value, v2 as "max".
  EXPECT_EQ(available_from({kMeminfo, "9223372036854771712\n", "903446528\n"}), 8 * kGiB);
  EXPECT_EQ(available_from({kMeminfo, "max\n", "903446528\n"}), 8 * kGiB);
}

TEST(AvailableMemoryTest, ACgroupLimitBelowTheMachinesLeavesWhatItsUsageHasNotTaken) {
  EXPECT_EQ(available_from({kMeminfo, "4294967296\n", "1073741824\n"}), 3 * kGiB);
  // A limit above what the machine has left limits nothing more.
  EXPECT_EQ(available_from({kMeminfo, "17179869184\n", "1073741824\n"}), 8 * kGiB);
  // Usage over the limit (the kernel reclaiming): nothing left, never a negative figure.
  EXPECT_EQ(available_from({kMeminfo, "1073741824\n", "2147483648\n"}), 0);
  // Without /proc/meminfo the cgroup alone says it.
  EXPECT_EQ(available_from({"", "4294967296\n", "1073741824\n"}), 3 * kGiB);
}

TEST(AvailableMemoryTest, NoTextThatSaysGivesNoFigure) {
  EXPECT_FALSE(available_from({"", "", ""}).has_value());
  EXPECT_FALSE(available_from({"MemTotal: 100 kB\n", "max\n", "12\n"}).has_value());
  EXPECT_FALSE(available_from({"MemAvailable: lots\n", "", ""}).has_value());
}

TEST(AvailableMemoryTest, ThisProcessSeesAFigureNoLargerThanTheMachine) {
  const std::optional<long long> available = available_memory_bytes();
  ASSERT_TRUE(available.has_value()) << "no /proc/meminfo on Linux?";
  EXPECT_GT(*available, 0);
  EXPECT_LE(*available, static_cast<long long>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE));
}

// SLAPO_AVAILABLE_MEMORY set for the scope of a test, unset after.
struct AvailableMemorySet {
  explicit AvailableMemorySet(const char* value) { setenv(kAvailableMemoryVariable, value, 1); }
  ~AvailableMemorySet() { unsetenv(kAvailableMemoryVariable); }
};

TEST(AvailableMemoryTest, TheVariableHoldsSlapoToPartOfTheMachineNeverMore) {
  {
    const AvailableMemorySet set("64MiB");
    EXPECT_EQ(available_memory_bytes(), 64LL << 20);
  }
  {
    const AvailableMemorySet set("64TiB");  // more than the machine has: the machine's figure
    EXPECT_LT(*available_memory_bytes(), 64LL << 40);
  }
  {
    const AvailableMemorySet set("lots");
    try {
      available_memory_bytes();
      ADD_FAILURE() << "a value that is not a size was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("SLAPO_AVAILABLE_MEMORY"), std::string::npos)
          << e.what();
    }
  }
}

TEST(MachineMemoryTest, ARanksBudgetIsItsShareLessTheProcessOverWhatATensorByteKeepsResident) {
  const MachineMemory one{22.0 * kGiB, 1};
  EXPECT_DOUBLE_EQ(one.tensor_budget(), (22.0 * kGiB - kProcessBytes) / kResidentPerTensorByte);
  EXPECT_DOUBLE_EQ(one.tensor_ceiling(), kCeilingShare * 22.0 * kGiB);
  // Ranks of one job share the machine: each gets its share, less its own process.
  const MachineMemory two{22.0 * kGiB, 2};
  EXPECT_DOUBLE_EQ(two.tensor_budget(), (11.0 * kGiB - kProcessBytes) / kResidentPerTensorByte);
  EXPECT_DOUBLE_EQ(two.tensor_ceiling(), one.tensor_ceiling() / 2);
  // The budget sits under the ceiling: a configuration predicted to fit is not stopped by it.
  EXPECT_LT(one.tensor_budget(), one.tensor_ceiling());
  // A machine with less than a process's own memory left holds tensors to a byte: never to a
  // negative figure, nor to 0, which reads as no budget at all.
  EXPECT_EQ((MachineMemory{100.0 * 1024 * 1024, 1}.tensor_budget()), 1.0);
  EXPECT_EQ(one.describe(),
            "this machine's memory (10.88 GiB of tensors a rank: 22.00 GiB available, 1 rank)");
  EXPECT_NE(two.describe().find("2 ranks"), std::string::npos) << two.describe();
}

TEST(MachineMemoryTest, ThisMachinesIsReadForTheRanksOfAJob) {
  const std::optional<MachineMemory> two = machine_memory(2);
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->ranks, 2);
  EXPECT_GT(two->available, 0);
  EXPECT_EQ(machine_memory(0)->ranks, 1);  // no ranks given: one process
}

}  // namespace
}  // namespace slapo::runners
