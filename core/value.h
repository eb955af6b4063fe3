#pragma once
// The value of one knob in a configuration.

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace slapo {

// bool (flags), int64 (sizes, degrees), double (ratios), string (implementation choices), and a
// list of integers (pipeline cut points).
using IntList = std::vector<int64_t>;
using Value = std::variant<bool, int64_t, double, std::string, IntList>;

// Human-readable form: 8, 0.25, fused, true, [12, 24, 36].
std::string to_string(const Value& value);

// The same, but cut points without brackets or spaces: 4,8,12 (table cells, environment values).
std::string to_plain_string(const Value& value);

// The value as a number (bool → 0/1). REQUIRES: not a string or a list.
double as_number(const Value& value);
bool is_number(const Value& value);

}  // namespace slapo
