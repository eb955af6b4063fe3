// What the process can still take (runners/available_memory.h), from the texts of /proc/meminfo and
// of the memory cgroup as each kernel writes them.

#include "runners/available_memory.h"

#include <unistd.h>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace slapo::runners
