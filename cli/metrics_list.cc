#include "cli/metrics_list.h"

#include <algorithm>
#include <iomanip>

namespace slapo::cli {

size_t metric_name_width(const std::map<std::string, double>& metrics, size_t at_least) {
  size_t width = at_least;
  for (const auto& entry : metrics) width = std::max(width, entry.first.size() + 2);
  return width;
}

void write_metrics(std::ostream& out, const std::map<std::string, double>& metrics) {
  const int width = static_cast<int>(metric_name_width(metrics, 16));
  for (const auto& [name, value] : metrics)
    out << "  " << std::left << std::setw(width) << name << value << "\n";
}

}  // namespace slapo::cli
