#pragma once
// Affine analysis of bound constraints.
//
// A constraint is split into its top-level conjuncts ("a and b", chained comparisons). A conjunct
// that compares two affine expressions of knobs becomes linear inequalities; the rest are guards.
// `x <= min(a, b)` and `max(a, b) <= x` also split into inequalities.

#include <optional>
#include <utility>
#include <vector>

#include "space/expr.h"

namespace slapo::space {

// Σ coef·x[slot] + constant ≥ 0, or > 0 when strict.
struct LinearInequality {
  std::vector<std::pair<int, double>> terms;  // slot → coefficient, ascending slots, no zeros
  double constant = 0;
  bool strict = false;
};

struct AffineForm {
  std::vector<std::pair<int, double>> terms;  // ascending slots, no zeros
  double constant = 0;
};

// The affine form of a bound numeric expression, or nullopt when it is not affine in the knobs
// (a product of knobs, a division by a knob, //, %, **, min, max, abs of knobs...).
std::optional<AffineForm> linearize(const Expr& bound);

// One conjunct of a constraint.
struct ConstraintPart {
  ExprPtr expr;                                // the bound conjunct (a condition)
  std::vector<LinearInequality> inequalities;  // non-empty iff the conjunct is affine
  bool affine() const { return !inequalities.empty(); }
};

// Splits a bound condition into conjuncts and classifies each.
std::vector<ConstraintPart> split_constraint(ExprPtr bound);

// A guard that becomes a bound once the other knobs are fixed: `coef·x + rest ≥ 0` (> 0 when
// strict, == 0 for an equality) where x is one knob and `coef`, `rest` are expressions of other
// knobs. `micro_batch * grad_accum * dp == 512` is one in grad_accum: coef = micro_batch * dp.
struct ParametricInequality {
  ExprPtr coef;
  ExprPtr rest;  // nullptr: zero
  bool strict = false;
  bool equality = false;
};

// The parametric form of a comparison in knob `slot`, or nullopt unless the comparison reads the
// knob exactly once, through + - * / by expressions of other knobs only. (One occurrence makes
// the floating-point evaluation monotone in the knob, so its true set is an interval.)
std::optional<ParametricInequality> parametric_in(const Expr& comparison, int slot);

}  // namespace slapo::space
