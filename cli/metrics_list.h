#pragma once
// A trial's metrics as the commands list them, one a line: the names in a column wide enough for
// the longest (page_faults_per_step is 20 characters: a fixed column of 16 ran it into its value).

#include <cstddef>
#include <map>
#include <ostream>
#include <string>

namespace slapo::cli {

// The width of a column of these metric names: the longest name and two spaces, at least
// `at_least`.
size_t metric_name_width(const std::map<std::string, double>& metrics, size_t at_least);

// Each metric as "  name  value\n", the values in one column.
void write_metrics(std::ostream& out, const std::map<std::string, double>& metrics);

}  // namespace slapo::cli
