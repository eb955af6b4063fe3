#include "core/value.h"

#include <cstdio>
#include <cstdlib>

#include "core/error.h"

namespace slapo {

namespace {
std::string format_double(double x) {
  // Shortest representation that round-trips, with a decimal point so 1.0 stays a float.
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  std::string s(buf);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}
}  // namespace

std::string to_string(const Value& value) {
  struct Visitor {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return format_double(d); }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(const IntList& list) const {
      std::string out = "[";
      for (size_t i = 0; i < list.size(); ++i) {
        if (i) out += ", ";
        out += std::to_string(list[i]);
      }
      return out + "]";
    }
  };
  return std::visit(Visitor{}, value);
}

std::string to_plain_string(const Value& value) {
  if (const IntList* list = std::get_if<IntList>(&value)) {
    std::string s;
    for (size_t i = 0; i < list->size(); ++i) s += (i ? "," : "") + std::to_string((*list)[i]);
    return s;
  }
  return to_string(value);
}

bool is_number(const Value& value) {
  return std::holds_alternative<bool>(value) || std::holds_alternative<int64_t>(value) ||
         std::holds_alternative<double>(value);
}

double as_number(const Value& value) {
  if (auto* b = std::get_if<bool>(&value)) return *b ? 1.0 : 0.0;
  if (auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&value)) return *d;
  SLAPO_INTERNAL_ASSERT(false, "as_number on a non-numeric value ", to_string(value));
}

}  // namespace slapo
