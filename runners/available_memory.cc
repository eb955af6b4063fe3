#include "runners/available_memory.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "core/error.h"
#include "core/read_file.h"
#include "core/trial.h"  // parse_bytes

namespace slapo::runners {

namespace {

// The text of a kernel's file; empty when this system has none (no such cgroup file, no /proc).
std::string read_text(const std::string& path) {
  try {
    return read_file_capped(path, 1 << 20, "a kernel's file", "");
  } catch (const Error&) {
    return "";
  }
}

// The first whole number of `text`, if it starts with one (after blanks).
std::optional<long long> leading_number(const std::string& text) {
  std::istringstream in(text);
  long long value = 0;
  if (in >> value) return value;
  return std::nullopt;
}

// v1 reports "no limit" as the largest page-aligned 64-bit value, v2 as "max": either is above
// any memory a machine has.
constexpr long long kNoLimitAbove = 1LL << 60;

}  // namespace

std::optional<long long> available_from(const MemoryFiles& files) {
  std::optional<long long> available;
  std::istringstream meminfo(files.meminfo);
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    if (const auto kb = leading_number(line.substr(line.find(':') + 1))) available = *kb * 1024;
    break;
  }
  const std::optional<long long> limit = leading_number(files.cgroup_limit);
  const std::optional<long long> usage = leading_number(files.cgroup_usage);
  if (limit && usage && *limit < kNoLimitAbove) {
    const long long left = std::max(0LL, *limit - *usage);
    available = available ? std::min(*available, left) : left;
  }
  return available;
}

MemoryFiles read_memory_files() {
  MemoryFiles files;
  files.meminfo = read_text("/proc/meminfo");
  // /proc/self/cgroup: "ID:CONTROLLERS:PATH" a line; v1's memory controller names "memory", v2's
  // single hierarchy is "0::PATH".
  std::istringstream cgroups(read_text("/proc/self/cgroup"));
  for (std::string line; std::getline(cgroups, line);) {
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (path == "/") path.clear();
    if (controllers == "memory") {
      const std::string dir = "/sys/fs/cgroup/memory" + path + "/";
      files.cgroup_limit = read_text(dir + "memory.limit_in_bytes");
      files.cgroup_usage = read_text(dir + "memory.usage_in_bytes");
      break;
    }
    if (controllers.empty() && line.rfind("0:", 0) == 0) {
      const std::string dir = "/sys/fs/cgroup" + path + "/";
      files.cgroup_limit = read_text(dir + "memory.max");
      files.cgroup_usage = read_text(dir + "memory.current");
    }
  }
  return files;
}

std::optional<long long> available_memory_bytes() {
  std::optional<long long> available = available_from(read_memory_files());
  if (const char* cap = std::getenv(kAvailableMemoryVariable); cap != nullptr && *cap != '\0') {
    const auto capped = static_cast<long long>(parse_bytes(cap, kAvailableMemoryVariable));
    available = available ? std::min(*available, capped) : capped;
  }
  return available;
}

std::string available_memory_error() {
  try {
    available_memory_bytes();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace slapo::runners
