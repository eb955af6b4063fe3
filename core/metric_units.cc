#include "core/metric_units.h"

#include <utility>

#include "core/text.h"

namespace slapo {

std::optional<double> metric_bytes(const std::string& name, double value) {
  static const std::pair<const char*, double> kUnits[] = {
      {"_bytes", 1}, {"_kib", 1024.0},       {"_kb", 1e3}, {"_mib", 1048576.0},
      {"_mb", 1e6},  {"_gib", 1073741824.0}, {"_gb", 1e9}};
  for (const auto& [suffix, factor] : kUnits) {
    if (ends_with(name, suffix)) return value * factor;
  }
  return std::nullopt;
}

}  // namespace slapo
