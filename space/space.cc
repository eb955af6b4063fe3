#include "space/space.h"

#include <cstdlib>

#include "core/config.h"
#include "core/error.h"
#include "space/bind.h"

namespace slapo::space {

using slapo::to_string;

const char* to_string(KnobKind kind) {
  switch (kind) {
    case KnobKind::kRange: return "range";
    case KnobKind::kPow2: return "pow2";
    case KnobKind::kValues: return "values";
    case KnobKind::kChoice: return "choice";
    case KnobKind::kBool: return "bool";
    case KnobKind::kCuts: return "cuts";
  }
  return "?";
}

const char* to_string(MemTrend trend) {
  switch (trend) {
    case MemTrend::kNone: return "none";
    case MemTrend::kUp: return "up";
    case MemTrend::kDown: return "down";
  }
  return "?";
}

std::string SourceLocation::to_string() const {
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

SourceLocation SourceLocation::shifted(int offset) const {
  SourceLocation out = *this;
  if (out.line > 0) out.column += offset;
  return out;
}

namespace {
Value parse_value_text(const std::string& text) {
  if (text == "true" || text == "false") return text == "true";
  char* end = nullptr;
  const long long i = std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && *end == '\0') return static_cast<int64_t>(i);
  const double d = std::strtod(text.c_str(), &end);
  if (!text.empty() && *end == '\0') return d;
  return text;
}
}  // namespace

void Space::set_parameter(const std::string& assignment) {
  const auto eq = assignment.find('=');
  SLAPO_CHECK(eq != std::string::npos && eq > 0, ErrorCode::kInvalidArgument,
              "parameter assignment '", assignment, "': expected NAME=VALUE");
  const std::string name = assignment.substr(0, eq);
  const Value value = parse_value_text(assignment.substr(eq + 1));
  for (ParameterDecl& p : parameters) {
    if (p.name != name) continue;
    const bool both_numbers =
        (std::holds_alternative<int64_t>(p.value) || std::holds_alternative<double>(p.value)) &&
        (std::holds_alternative<int64_t>(value) || std::holds_alternative<double>(value));
    SLAPO_CHECK(both_numbers || p.value.index() == value.index(), ErrorCode::kInvalidArgument,
                "parameter ", name, ": '", assignment.substr(eq + 1),
                "' is not of the type of its value ", slapo::to_string(p.value), " in ",
                p.where.to_string());
    p.value = value;
    return;
  }
  std::vector<std::string> known;
  for (const auto& p : parameters) known.push_back(p.name);
  const std::string near = nearest_name(name, known);
  SLAPO_FAIL(ErrorCode::kInvalidArgument, "parameter ", name, ": ", origin,
             " declares no such parameter",
             near.empty() ? std::string() : " (did you mean '" + near + "'?)");
}

const ParameterDecl* Space::find_parameter(const std::string& name) const {
  for (const auto& p : parameters) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const KnobDecl* Space::find_knob(const std::string& name) const {
  for (const auto& k : knobs) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::string Space::fingerprint() const {
  std::string s;
  for (const auto& p : parameters) s += "P" + p.name + "=" + slapo::to_string(p.value) + ";";
  for (const auto& k : knobs) {
    s += "K" + k.name + ":" + to_string(k.kind) + ":" + to_string(k.mem) + ":" + k.lo + ":" + k.hi +
         ":" + k.step + ":" + k.layers + ":" + k.stages + ":" + k.min_stage + ":" + k.max_stage;
    for (const auto& v : k.values) s += "," + slapo::to_string(v);
    for (const auto& c : k.choices) s += ",'" + c;
    s += ";";
  }
  for (const auto& c : constraints) s += "C" + c.name + "=" + c.text + ";";
  for (const auto& o : order) s += "O" + o + ";";
  return stable_hash(s);
}

}  // namespace slapo::space
