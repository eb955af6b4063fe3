#pragma once
// Binding: resolves the names of a parsed expression against parameters and knobs, checks types,
// substitutes parameters, rewrites string comparisons on choice knobs into index comparisons and
// folds constants. The result has only numbers, slots and operators, ready for Program::compile
// and for affine analysis.

#include <map>
#include <string>
#include <vector>

#include "core/value.h"
#include "space/expr.h"

namespace slapo::space {

struct Symbol {
  enum class Kind { kParameter, kKnob };
  Kind kind = Kind::kParameter;
  Value value;                                        // kParameter
  int slot = -1;                                      // kKnob
  Type type = Type::kNumber;                          // kKnob: kNumber, kBool or kString (choice)
  const std::vector<std::string>* choices = nullptr;  // kKnob of type kString
  bool is_cut_points = false;                         // a cuts knob: not usable in expressions
};
using SymbolTable = std::map<std::string, Symbol>;

// Returns the bound expression. Throws ExpressionError (with the offending offset) for unknown
// names (with the nearest known one), type errors, unknown choices and constant division by zero.
ExprPtr bind_expression(const Expr& parsed, const SymbolTable& symbols);

// Binds `text` and requires a condition (type bool). `what` names it in errors ("constraint").
ExprPtr bind_condition(const Expr& parsed, const SymbolTable& symbols);

// Binds and requires a constant number (bounds, steps): parameters only.
double bind_constant_number(const Expr& parsed, const SymbolTable& symbols);

// The known name closest to `name` (edit distance ≤ 2), or "" when none is close.
std::string nearest_name(const std::string& name, const std::vector<std::string>& known);

const char* type_name(Type type);

}  // namespace slapo::space
