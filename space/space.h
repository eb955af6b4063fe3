#pragma once
// Space: the declaration of a search space (parameters, knobs, constraints) as written in a space
// file or built in code. It is inert; CompiledSpace (space/compiled_space.h) analyses it.

#include <string>
#include <vector>

#include "core/value.h"

namespace slapo::space {

enum class KnobKind {
  kRange,   // integers or floats lo, lo+step, ..., ≤ hi
  kPow2,    // powers of two in [lo, hi]
  kValues,  // an explicit list of numbers
  kChoice,  // an explicit list of strings (unordered)
  kBool,    // false, true
  kCuts,    // pipeline cut points: `stages` stages over `layers` layers, each of min..max layers
};

// How peak memory moves when the knob grows; the tuner prunes by it (OOM dominance).
enum class MemTrend { kNone, kUp, kDown };

const char* to_string(KnobKind kind);
const char* to_string(MemTrend trend);

struct SourceLocation {
  std::string file;
  int line = 0;    // 1-based; 0 when unknown (built in code)
  int column = 0;  // 1-based
  // "file:line:column", or the file alone when the line is unknown.
  std::string to_string() const;
  // The location of character `offset` of an expression that starts here (one line).
  SourceLocation shifted(int offset) const;
};

struct ParameterDecl {
  std::string name;
  Value value;
  SourceLocation where;
};

struct KnobDecl {
  std::string name;
  KnobKind kind = KnobKind::kRange;
  MemTrend mem = MemTrend::kNone;
  SourceLocation where;

  // kRange, kPow2: bounds as expressions of parameters ("8", "num_layers - 1").
  std::string lo, hi, step = "1";
  // kValues (numbers) and kBool (false, true).
  std::vector<Value> values;
  // kChoice.
  std::vector<std::string> choices;
  // kCuts: `layers`, `min_stage`, `max_stage` use parameters and earlier knobs; so does `stages`.
  std::string layers, stages, min_stage = "1", max_stage;
};

struct ConstraintDecl {
  std::string name;  // "fits", or "divides[1]" for the second of a group
  std::string text;
  SourceLocation where;  // of the first character of `text`
};

struct Space {
  std::string origin = "<space>";  // the file it came from
  std::vector<ParameterDecl> parameters;
  std::vector<KnobDecl> knobs;  // file order
  std::vector<ConstraintDecl> constraints;
  std::vector<std::string> order;    // loop order override; empty: file order
  std::string workload_json = "{}";  // the [workload] table, untouched

  // Overrides a declared parameter from "NAME=VALUE" (VALUE: integer, float, true/false or a
  // string). Throws Error(kInvalidArgument) naming NAME when it is unknown or of another type.
  void set_parameter(const std::string& assignment);

  const ParameterDecl* find_parameter(const std::string& name) const;
  const KnobDecl* find_knob(const std::string& name) const;

  // A stable hash of everything that defines the configurations (not the workload).
  std::string fingerprint() const;
};

}  // namespace slapo::space
