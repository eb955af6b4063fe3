#include "space/compiled_space.h"
#include "space/compiled_space_impl.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "space/affine.h"
#include "space/bind.h"
#include "space/program.h"
#include "space/projection.h"
#include "space/stage_splits.h"

// The compiler: a declared Space → the levels of the loop nest (domains, bounds from the
// Fourier–Motzkin projection, guards at their deepest knob, parametric bounds, cut points, memo
// dependencies). docs/design.md describes the analysis.

namespace slapo::space {

using namespace detail;  // the nest's data (compiled_space_impl.h)
using slapo::to_string;

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  static const char* kReserved[] = {"and",   "or",   "not",   "in",  "if",  "then", "true",
                                    "false", "True", "False", "min", "max", "abs"};
  for (const char* r : kReserved) {
    if (s == r) return false;
  }
  return true;
}

class Compiler {
 public:
  explicit Compiler(const Space& space)
      : space_(space), impl_(std::make_unique<CompiledSpace::Impl>()) {
    impl_->space = space;
  }

  std::unique_ptr<CompiledSpace::Impl> run() {
    check_names();
    order_levels();
    build_symbols();
    for (size_t k = 0; k < impl_->levels.size(); ++k) build_domain(k);
    build_symbols();  // now with knob types and choices
    for (size_t k = 0; k < impl_->levels.size(); ++k) {
      if (impl_->levels[k].is_cuts) build_cuts(k);
    }
    build_constraints();
    project_bounds();
    compute_dependencies();
    for (const Level& level : impl_->levels) impl_->knobs.push_back(level.info);
    return std::move(impl_);
  }

 private:
  void check_names() {
    std::set<std::string> seen;
    for (const ParameterDecl& p : space_.parameters) {
      SLAPO_CHECK(is_identifier(p.name), ErrorCode::kParse, p.where.to_string(), ": parameter '",
                  p.name, "': not a valid name (letters, digits and _, not a keyword)");
      seen.insert(p.name);
    }
    for (const KnobDecl& k : space_.knobs) {
      SLAPO_CHECK(is_identifier(k.name), ErrorCode::kParse, k.where.to_string(), ": knob '", k.name,
                  "': not a valid name (letters, digits and _, not a keyword)");
      SLAPO_CHECK(!seen.count(k.name), ErrorCode::kParse, k.where.to_string(), ": knob '", k.name,
                  "': the name is already a parameter or another knob");
      seen.insert(k.name);
    }
  }

  // Names an expression refers to (for ordering cut points after the knobs they use).
  static void collect_names(const Expr& e, std::set<std::string>* out) {
    if (e.op == Op::kName) out->insert(e.text);
    for (const auto& arg : e.args) collect_names(*arg, out);
  }

  ExprPtr parse_at(const std::string& text, const SourceLocation& where, const std::string& what) {
    try {
      return parse_expression(text);
    } catch (const ExpressionError& e) {
      impl_->fail_expression(e, where, what);
    }
  }

  void order_levels() {
    std::vector<const KnobDecl*> order;
    if (!space_.order.empty()) {
      std::set<std::string> listed;
      for (const std::string& name : space_.order) {
        const KnobDecl* k = space_.find_knob(name);
        SLAPO_CHECK(k, ErrorCode::kParse, space_.origin, ": order: '", name, "' is not a knob");
        SLAPO_CHECK(listed.insert(name).second, ErrorCode::kParse, space_.origin, ": order: '",
                    name, "' is listed twice");
        order.push_back(k);
      }
      for (const KnobDecl& k : space_.knobs) {
        SLAPO_CHECK(listed.count(k.name), ErrorCode::kParse, space_.origin, ": order: knob '",
                    k.name, "' is missing from the loop order");
      }
    } else {
      for (const KnobDecl& k : space_.knobs) order.push_back(&k);
    }
    // Cut points come after the knobs their expressions use: move them down (stable).
    for (size_t i = 0; i < order.size(); ++i) {
      const KnobDecl* k = order[i];
      if (k->kind != KnobKind::kCuts) continue;
      std::set<std::string> names;
      for (const std::string* text : {&k->layers, &k->stages, &k->min_stage, &k->max_stage}) {
        if (text->empty()) continue;  // min and max are optional (their defaults come later)
        collect_names(*parse_at(*text, k->where, "knob '" + k->name + "'"), &names);
      }
      size_t last_dep = 0;
      bool has_dep = false;
      for (size_t j = 0; j < order.size(); ++j) {
        if (names.count(order[j]->name)) {
          SLAPO_CHECK(order[j]->kind != KnobKind::kCuts, ErrorCode::kParse, k->where.to_string(),
                      ": knob '", k->name, "' cannot depend on cut points '", order[j]->name, "'");
          last_dep = j;
          has_dep = true;
        }
      }
      if (has_dep && last_dep > i) {
        SLAPO_CHECK(space_.order.empty(), ErrorCode::kParse, space_.origin, ": order: knob '",
                    k->name, "' must come after '", order[last_dep]->name, "', which it uses");
        order.erase(order.begin() + static_cast<std::ptrdiff_t>(i));
        order.insert(order.begin() + static_cast<std::ptrdiff_t>(last_dep), k);
        --i;
      }
    }
    for (const KnobDecl* k : order) {
      Level level;
      level.decl = *k;
      level.info.name = k->name;
      level.info.kind = k->kind;
      level.info.mem = k->mem;
      level.is_cuts = k->kind == KnobKind::kCuts;
      impl_->levels.push_back(std::move(level));
    }
  }

  void build_symbols() {
    symbols_.clear();
    for (const ParameterDecl& p : space_.parameters) {
      Symbol s;
      s.kind = Symbol::Kind::kParameter;
      s.value = p.value;
      symbols_[p.name] = s;
    }
    for (size_t k = 0; k < impl_->levels.size(); ++k) {
      const Level& level = impl_->levels[k];
      Symbol s;
      s.kind = Symbol::Kind::kKnob;
      s.slot = static_cast<int>(k);
      s.type = level.info.kind == KnobKind::kChoice ? Type::kString
               : level.info.kind == KnobKind::kBool ? Type::kBool
                                                    : Type::kNumber;
      s.choices = &level.decl.choices;
      s.is_cut_points = level.is_cuts;
      symbols_[level.info.name] = s;
    }
  }

  double constant(const std::string& text, const Level& level, const char* what) {
    const std::string context = "knob '" + level.info.name + "': " + what;
    ExprPtr parsed = parse_at(text, level.decl.where, context);
    try {
      return bind_constant_number(*parsed, symbols_);
    } catch (const ExpressionError& e) {
      impl_->fail_expression(e, level.decl.where, context + " '" + text + "'");
    }
  }

  void build_domain(size_t k) {
    Level& level = impl_->levels[k];
    const KnobDecl& decl = level.decl;
    const std::string where = decl.where.to_string() + ": knob '" + decl.name + "'";
    Domain& d = level.domain;
    switch (decl.kind) {
      case KnobKind::kCuts: return;
      case KnobKind::kRange: {
        const double lo = constant(decl.lo, level, "lower bound");
        const double hi = constant(decl.hi, level, "upper bound");
        const double step = constant(decl.step, level, "step");
        SLAPO_CHECK(step > 0, ErrorCode::kInvalidArgument, where, ": step must be positive, got ",
                    step);
        SLAPO_CHECK(lo <= hi, ErrorCode::kInvalidArgument, where, ": empty range [", lo, ", ", hi,
                    "]");
        const bool integral = lo == std::floor(lo) && step == std::floor(step);
        // Values are doubles: integers are exact only below 2^53; 10^15 leaves room for sums.
        SLAPO_CHECK(!integral || (std::fabs(lo) < 1e15 && std::fabs(hi) < 1e15),
                    ErrorCode::kInvalidArgument, where, ": an integer range must lie within ",
                    "±10^15 (got [", lo, ", ", hi, "]); values past that are not exact");
        const bool integer = integral;
        const double count = std::floor((hi - lo) / step + 1e-9) + 1;
        if (integer) {
          d.arithmetic = true;
          d.base = static_cast<int64_t>(lo);
          d.step = static_cast<int64_t>(step);
          d.n = static_cast<int64_t>(count);
        } else {
          SLAPO_CHECK(count <= kMaxMaterialized, ErrorCode::kInvalidArgument, where,
                      ": a float range of more than ", kMaxMaterialized, " values");
          for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) {
            d.values.push_back(lo + static_cast<double>(i) * step);
          }
          d.n = static_cast<int64_t>(d.values.size());
        }
        d.integer = integer;
        level.output_int = integer;
        break;
      }
      case KnobKind::kPow2: {
        const double lo = constant(decl.lo, level, "lower bound");
        const double hi = constant(decl.hi, level, "upper bound");
        SLAPO_CHECK(lo >= 1 && hi >= lo && hi < 4e18, ErrorCode::kInvalidArgument, where,
                    ": pow2 bounds must satisfy 1 <= lo <= hi, got [", lo, ", ", hi, "]");
        for (double p = 1; p <= hi; p *= 2) {
          if (p >= lo) d.values.push_back(p);
        }
        SLAPO_CHECK(!d.values.empty(), ErrorCode::kInvalidArgument, where, ": no power of two in [",
                    lo, ", ", hi, "]");
        d.n = static_cast<int64_t>(d.values.size());
        d.integer = true;
        level.output_int = true;
        break;
      }
      case KnobKind::kValues: {
        bool all_int = true;
        for (const Value& v : decl.values) {
          SLAPO_CHECK(is_number(v) && !std::holds_alternative<bool>(v), ErrorCode::kParse, where,
                      ": values must be numbers (use choice = [...] for strings), found ",
                      to_string(v));
          all_int = all_int && std::holds_alternative<int64_t>(v);
          d.values.push_back(as_number(v));
        }
        SLAPO_CHECK(!d.values.empty(), ErrorCode::kInvalidArgument, where, ": values is empty");
        std::sort(d.values.begin(), d.values.end());
        for (size_t i = 1; i < d.values.size(); ++i) {
          SLAPO_CHECK(d.values[i] != d.values[i - 1], ErrorCode::kInvalidArgument, where,
                      ": value ", d.values[i], " is listed twice");
        }
        d.n = static_cast<int64_t>(d.values.size());
        d.integer = true;
        for (double v : d.values)
          d.integer = d.integer && v == std::floor(v) && std::fabs(v) < 1e15;
        level.output_int = all_int;
        break;
      }
      case KnobKind::kChoice: {
        SLAPO_CHECK(!decl.choices.empty(), ErrorCode::kInvalidArgument, where, ": choice is empty");
        std::set<std::string> seen;
        for (const std::string& c : decl.choices) {
          SLAPO_CHECK(seen.insert(c).second, ErrorCode::kInvalidArgument, where, ": choice '", c,
                      "' is listed twice");
        }
        for (size_t i = 0; i < decl.choices.size(); ++i) d.values.push_back(static_cast<double>(i));
        d.n = static_cast<int64_t>(d.values.size());
        d.integer = true;
        break;
      }
      case KnobKind::kBool:
        d.values = {0, 1};
        d.n = 2;
        d.integer = true;
        break;
    }
    for (int64_t i = 0;
         i < d.n && static_cast<int64_t>(level.info.domain.size()) < kMaxMaterialized; ++i) {
      const double v = d.value(i);
      if (decl.kind == KnobKind::kChoice)
        level.info.domain.emplace_back(decl.choices[i]);
      else if (decl.kind == KnobKind::kBool)
        level.info.domain.emplace_back(v != 0);
      else if (level.output_int)
        level.info.domain.emplace_back(static_cast<int64_t>(v));
      else
        level.info.domain.emplace_back(v);
    }
  }

  Program cuts_program(size_t k, const std::string& text, const char* what) {
    Level& level = impl_->levels[k];
    const std::string context = "knob '" + level.info.name + "': " + what;
    ExprPtr parsed = parse_at(text, level.decl.where, context);
    try {
      ExprPtr bound = bind_expression(*parsed, symbols_);
      if (bound->type != Type::kNumber && bound->type != Type::kBool) {
        throw ExpressionError(0,
                              std::string("expected a number, found a ") + type_name(bound->type));
      }
      Program p = Program::compile(*bound);
      for (int slot : p.slots_read()) {
        if (slot >= static_cast<int>(k)) {
          throw ExpressionError(0, "uses knob '" + impl_->levels[slot].info.name +
                                       "', which comes later in the loop order");
        }
      }
      return p;
    } catch (const ExpressionError& e) {
      impl_->fail_expression(e, level.decl.where, context + " '" + text + "'");
    }
  }

  void build_cuts(size_t k) {
    Level& level = impl_->levels[k];
    SLAPO_CHECK(!level.decl.layers.empty() && !level.decl.stages.empty(), ErrorCode::kParse,
                level.decl.where.to_string(), ": knob '", level.info.name,
                "': cut points need `layers` and `stages`");
    if (level.decl.max_stage.empty()) level.decl.max_stage = level.decl.layers;
    level.layers = cuts_program(k, level.decl.layers, "layers");
    level.stages = cuts_program(k, level.decl.stages, "stages");
    level.min_len = cuts_program(k, level.decl.min_stage, "min");
    level.max_len = cuts_program(k, level.decl.max_stage, "max");
    // The most stages over the domains of the knobs `stages` reads, for encode().
    const std::vector<int>& reads = level.stages.slots_read();
    std::vector<double> slots(impl_->levels.size(), 0);
    double max_stages = 1;
    std::function<void(size_t, uint64_t)> walk = [&](size_t i, uint64_t budget) {
      if (i == reads.size()) {
        bool fault = false;
        const double s = level.stages.eval(slots.data(), &fault);
        if (!fault && s <= 4096) max_stages = std::max(max_stages, s);
        return;
      }
      const Domain& d = impl_->levels[reads[i]].domain;
      if (budget < static_cast<uint64_t>(d.n)) {
        max_stages = std::max(max_stages, 32.0);
        return;
      }
      for (int64_t j = 0; j < d.n; ++j) {
        slots[reads[i]] = d.value(j);
        walk(i + 1, budget / static_cast<uint64_t>(d.n));
      }
    };
    walk(0, 100000);
    level.cut_dims = static_cast<size_t>(max_stages) - 1;
  }

  void build_constraints() {
    std::vector<Interval> box = make_box();
    for (const ConstraintDecl& decl : space_.constraints) {
      const int id = static_cast<int>(impl_->constraints.size());
      impl_->constraints.push_back({decl.name, decl.text, decl.where});
      const std::string what = "constraint '" + decl.name + "'";
      ExprPtr parsed = parse_at(decl.text, decl.where, what);
      ExprPtr bound;
      try {
        bound = bind_condition(*parsed, symbols_);
      } catch (const ExpressionError& e) {
        impl_->fail_expression(e, decl.where, what);
      }
      for (ConstraintPart& split : split_constraint(std::move(bound))) {
        Part part;
        part.constraint = id;
        part.text = to_text(*split.expr);
        try {
          part.program = Program::compile(*split.expr);
        } catch (const ExpressionError& e) {
          impl_->fail_expression(e, decl.where, what);
        }
        const int part_id = static_cast<int>(impl_->parts.size());
        if (part.program.slots_read().empty()) {
          if (!part.program.holds(nullptr)) {
            impl_->empty = true;
            impl_->empty_reason =
                "constraint '" + decl.name + "' (" + decl.text + ") is false for these parameters";
          }
          continue;  // a constant: never checked per configuration
        }
        part.affine = split.affine();
        bool all_exact = part.affine;
        for (const LinearInequality& ineq : split.inequalities) {
          Row row;
          row.terms = ineq.terms;  // ascending slots, no zeros
          row.c = ineq.constant;
          row.strict = ineq.strict;
          row.origin = part_id;
          classify_exactness(&row, box);
          all_exact = all_exact && row.exact;
          rows_.push_back(std::move(row));
        }
        const int level = part.program.slots_read().back();
        Level& at = impl_->levels[level];
        if (part.affine) {
          if (!all_exact) at.tighten.push_back(part_id);
        } else if (auto parametric = parametric_in(*split.expr, level)) {
          ParametricBound pb;
          try {
            pb.coef = Program::compile(*parametric->coef);
            if (parametric->rest) pb.rest = Program::compile(*parametric->rest);
          } catch (const ExpressionError& e) {
            impl_->fail_expression(e, decl.where, what);
          }
          pb.equality = parametric->equality;
          pb.part = part_id;
          at.parametric.push_back(std::move(pb));
          at.tighten.push_back(part_id);
        } else {
          at.guards.push_back(part_id);
        }
        impl_->parts.push_back(std::move(part));
      }
    }
  }

  std::vector<Interval> make_box() const {
    std::vector<Interval> box;
    for (const Level& level : impl_->levels) {
      Interval iv;
      if (!level.is_cuts) {
        iv.lo = level.domain.value(0);
        iv.hi = level.domain.value(level.domain.n - 1);
        iv.integer = level.domain.integer;
      }
      box.push_back(iv);
    }
    return box;
  }

  void project_bounds() {
    const std::vector<Interval> box = make_box();
    std::vector<Row> rows = rows_;
    // The domain's own bounds take part in the projection (they make the shadows tight), but are
    // not level bounds: the domain enforces them.
    for (size_t k = 0; k < impl_->levels.size(); ++k) {
      if (impl_->levels[k].is_cuts) continue;
      for (int sign : {1, -1}) {
        Row row;
        row.terms = {{static_cast<int>(k), static_cast<double>(sign)}};
        row.c = sign > 0 ? -box[k].lo : box[k].hi;
        row.origin = Row::kDomain;
        classify_exactness(&row, box);
        rows.push_back(std::move(row));
      }
    }
    ProjectionResult projection = project(std::move(rows), box);
    impl_->projection_truncated = projection.truncated;
    if (projection.infeasible && !impl_->empty) {
      impl_->empty = true;
      impl_->empty_reason = "the affine constraints have no solution within the knobs' domains";
    }
    for (size_t k = 0; k < impl_->levels.size(); ++k) {
      for (const Row& row : projection.bounds[k]) {
        if (row.origin == Row::kDomain) continue;
        Bound b;
        b.a = row.terms.back().second;  // slot k: the row's last
        b.c = row.c;
        b.exact = row.exact;
        b.lower = b.a > 0;
        b.origin = row.origin;
        b.terms.assign(row.terms.begin(), row.terms.end() - 1);
        impl_->levels[k].bounds.push_back(std::move(b));
      }
    }
  }

  void compute_dependencies() {
    const size_t n = impl_->levels.size();
    std::vector<size_t> scalar_levels_before(n + 1, 0);
    for (size_t j = 0; j < n; ++j)
      scalar_levels_before[j + 1] = scalar_levels_before[j] + (impl_->levels[j].is_cuts ? 0 : 1);
    std::set<int> reads;  // slots read by levels ≥ k
    for (size_t k = n; k-- > 0;) {
      Level& level = impl_->levels[k];
      level.next_reads_me = reads.count(static_cast<int>(k)) > 0;
      for (const Bound& b : level.bounds) {
        for (const auto& term : b.terms) reads.insert(term.first);
      }
      for (const std::vector<int>* list : {&level.guards, &level.tighten}) {
        for (int p : *list) {
          for (int s : impl_->parts[p].program.slots_read()) reads.insert(s);
        }
      }
      if (level.is_cuts) {
        for (const Program* p : {&level.layers, &level.stages, &level.min_len, &level.max_len}) {
          for (int s : p->slots_read()) reads.insert(s);
        }
      }
      level.deps.clear();
      // Ascending: stop at k (iterating the whole set per level was quadratic in the knobs).
      for (auto it = reads.begin(); it != reads.end() && *it < static_cast<int>(k); ++it)
        level.deps.push_back(*it);
      const size_t scalar_before = scalar_levels_before[k];
      level.memoize = k > 0 && level.deps.size() < scalar_before;
    }
  }

  const Space& space_;
  std::unique_ptr<CompiledSpace::Impl> impl_;
  SymbolTable symbols_;
  std::vector<Row> rows_;
};

}  // namespace

CompiledSpace CompiledSpace::compile(const Space& space) {
  return CompiledSpace(Compiler(space).run());
}

}  // namespace slapo::space
