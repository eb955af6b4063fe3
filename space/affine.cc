#include "space/affine.h"

#include <map>

namespace slapo::space {

namespace {

AffineForm combine(const AffineForm& a, const AffineForm& b, double scale_b) {
  std::map<int, double> terms;
  for (const auto& [slot, c] : a.terms) terms[slot] += c;
  for (const auto& [slot, c] : b.terms) terms[slot] += scale_b * c;
  AffineForm out;
  out.constant = a.constant + scale_b * b.constant;
  for (const auto& [slot, c] : terms) {
    if (c != 0) out.terms.emplace_back(slot, c);
  }
  return out;
}

AffineForm scaled(const AffineForm& a, double s) {
  AffineForm out;
  out.constant = a.constant * s;
  if (s != 0) {
    for (const auto& [slot, c] : a.terms) out.terms.emplace_back(slot, c * s);
  }
  return out;
}

// "left <= right" (strict: <) as inequalities, splitting min on the right and max on the left.
std::optional<std::vector<LinearInequality>> less_equal(const Expr& left, const Expr& right,
                                                        bool strict) {
  std::vector<LinearInequality> out;
  if (right.op == Op::kMin || left.op == Op::kMax) {
    const bool split_right = right.op == Op::kMin;
    const Expr& many = split_right ? right : left;
    for (const auto& arg : many.args) {
      auto part = split_right ? less_equal(left, *arg, strict) : less_equal(*arg, right, strict);
      if (!part) return std::nullopt;
      out.insert(out.end(), part->begin(), part->end());
    }
    return out;
  }
  auto l = linearize(left);
  auto r = linearize(right);
  if (!l || !r) return std::nullopt;
  AffineForm diff = combine(*r, *l, -1.0);  // right - left ≥ 0
  out.push_back({diff.terms, diff.constant, strict});
  return out;
}

std::optional<std::vector<LinearInequality>> comparison_inequalities(const Expr& e) {
  if (e.args.size() != 2) return std::nullopt;  // constants, not, calls
  const Expr& a = *e.args[0];
  const Expr& b = *e.args[1];
  switch (e.op) {
    case Op::kLe: return less_equal(a, b, false);
    case Op::kLt: return less_equal(a, b, true);
    case Op::kGe: return less_equal(b, a, false);
    case Op::kGt: return less_equal(b, a, true);
    case Op::kEq: {
      auto first = less_equal(a, b, false);
      auto second = less_equal(b, a, false);
      if (!first || !second) return std::nullopt;
      first->insert(first->end(), second->begin(), second->end());
      return first;
    }
    default: return std::nullopt;
  }
}

void flatten_and(ExprPtr e, std::vector<ExprPtr>* out) {
  if (e->op == Op::kAnd) {
    flatten_and(std::move(e->args[0]), out);
    flatten_and(std::move(e->args[1]), out);
  } else {
    out->push_back(std::move(e));
  }
}

int occurrences(const Expr& e, int slot) {
  int n = e.op == Op::kSlot && e.slot == slot ? 1 : 0;
  for (const auto& arg : e.args) n += occurrences(*arg, slot);
  return n;
}

ExprPtr arithmetic(Op op, ExprPtr a, ExprPtr b) {
  auto e = std::make_unique<Expr>();
  e->op = op;
  e->type = Type::kNumber;
  e->offset = a ? a->offset : 0;
  e->args.push_back(std::move(a));
  if (b) e->args.push_back(std::move(b));
  return e;
}

// e = coef·x + rest, with nullptr standing for zero.
struct LinearIn {
  ExprPtr coef, rest;
};

ExprPtr add_or_sub(Op op, ExprPtr a, ExprPtr b) {
  if (!b) return a;
  if (!a) return op == Op::kAdd ? std::move(b) : arithmetic(Op::kNeg, std::move(b), nullptr);
  return arithmetic(op, std::move(a), std::move(b));
}

ExprPtr scale(ExprPtr a, const Expr& factor, Op op, bool factor_on_left) {
  if (!a) return nullptr;
  return factor_on_left ? arithmetic(op, clone(factor), std::move(a))
                        : arithmetic(op, std::move(a), clone(factor));
}

std::optional<LinearIn> split_linear(const Expr& e, int slot) {
  if (occurrences(e, slot) == 0) return LinearIn{nullptr, clone(e)};
  switch (e.op) {
    case Op::kSlot: return LinearIn{make_number(1, true, Type::kNumber, e.offset), nullptr};
    case Op::kNeg: {
      auto a = split_linear(*e.args[0], slot);
      if (!a) return std::nullopt;
      return LinearIn{add_or_sub(Op::kSub, nullptr, std::move(a->coef)),
                      add_or_sub(Op::kSub, nullptr, std::move(a->rest))};
    }
    case Op::kAdd:
    case Op::kSub: {
      auto a = split_linear(*e.args[0], slot);
      auto b = split_linear(*e.args[1], slot);
      if (!a || !b) return std::nullopt;
      return LinearIn{add_or_sub(e.op, std::move(a->coef), std::move(b->coef)),
                      add_or_sub(e.op, std::move(a->rest), std::move(b->rest))};
    }
    case Op::kMul: {
      const bool left_free = occurrences(*e.args[0], slot) == 0;
      const Expr& factor = left_free ? *e.args[0] : *e.args[1];
      auto inner = split_linear(left_free ? *e.args[1] : *e.args[0], slot);
      if (!inner) return std::nullopt;
      return LinearIn{scale(std::move(inner->coef), factor, Op::kMul, left_free),
                      scale(std::move(inner->rest), factor, Op::kMul, left_free)};
    }
    case Op::kDiv: {
      if (occurrences(*e.args[1], slot) != 0) return std::nullopt;
      auto inner = split_linear(*e.args[0], slot);
      if (!inner) return std::nullopt;
      return LinearIn{scale(std::move(inner->coef), *e.args[1], Op::kDiv, false),
                      scale(std::move(inner->rest), *e.args[1], Op::kDiv, false)};
    }
    default: return std::nullopt;
  }
}

}  // namespace

std::optional<ParametricInequality> parametric_in(const Expr& e, int slot) {
  if (e.args.size() != 2 || occurrences(e, slot) != 1) return std::nullopt;
  bool strict = false, equality = false, left_minus_right = false;
  switch (e.op) {
    case Op::kLe: break;
    case Op::kLt: strict = true; break;
    case Op::kGe: left_minus_right = true; break;
    case Op::kGt: left_minus_right = strict = true; break;
    case Op::kEq: left_minus_right = equality = true; break;
    default: return std::nullopt;
  }
  auto left = split_linear(*e.args[0], slot);
  auto right = split_linear(*e.args[1], slot);
  if (!left || !right) return std::nullopt;
  LinearIn& plus = left_minus_right ? *left : *right;
  LinearIn& minus = left_minus_right ? *right : *left;
  ParametricInequality out;
  out.coef = add_or_sub(Op::kSub, std::move(plus.coef), std::move(minus.coef));
  out.rest = add_or_sub(Op::kSub, std::move(plus.rest), std::move(minus.rest));
  out.strict = strict;
  out.equality = equality;
  return out;
}

std::optional<AffineForm> linearize(const Expr& e) {
  switch (e.op) {
    case Op::kNumber: {
      AffineForm f;
      f.constant = e.number;
      return f;
    }
    case Op::kSlot: {
      AffineForm f;
      f.terms.emplace_back(e.slot, 1.0);
      return f;
    }
    case Op::kNeg: {
      auto a = linearize(*e.args[0]);
      if (!a) return std::nullopt;
      return scaled(*a, -1.0);
    }
    case Op::kAdd:
    case Op::kSub: {
      auto a = linearize(*e.args[0]);
      auto b = linearize(*e.args[1]);
      if (!a || !b) return std::nullopt;
      return combine(*a, *b, e.op == Op::kAdd ? 1.0 : -1.0);
    }
    case Op::kMul: {
      auto a = linearize(*e.args[0]);
      auto b = linearize(*e.args[1]);
      if (!a || !b) return std::nullopt;
      if (a->terms.empty()) return scaled(*b, a->constant);
      if (b->terms.empty()) return scaled(*a, b->constant);
      return std::nullopt;
    }
    case Op::kDiv: {
      auto a = linearize(*e.args[0]);
      auto b = linearize(*e.args[1]);
      if (!a || !b || !b->terms.empty() || b->constant == 0) return std::nullopt;
      return scaled(*a, 1.0 / b->constant);
    }
    default: return std::nullopt;
  }
}

std::vector<ConstraintPart> split_constraint(ExprPtr bound) {
  std::vector<ExprPtr> conjuncts;
  flatten_and(std::move(bound), &conjuncts);
  std::vector<ConstraintPart> parts;
  for (auto& conjunct : conjuncts) {
    ConstraintPart part;
    if (auto inequalities = comparison_inequalities(*conjunct)) {
      part.inequalities = std::move(*inequalities);
    }
    part.expr = std::move(conjunct);
    parts.push_back(std::move(part));
  }
  return parts;
}

}  // namespace slapo::space
