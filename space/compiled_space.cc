#include "space/compiled_space.h"

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

namespace slapo::space {

using slapo::to_string;

namespace {

constexpr int64_t kMaxMaterialized = 10'000'000;  // largest explicit domain (float ranges, lists)
constexpr int kNeighbourSearch = 64;               // how far neighbours() looks past invalid values

int64_t floor_div_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t ceil_div_i(int64_t a, int64_t b) { return -floor_div_i(-a, b); }

uint64_t checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  SLAPO_CHECK(!__builtin_add_overflow(a, b, &r), ErrorCode::kOutOfRange,
              "the space has more than 2^64 - 1 configurations");
  return r;
}
uint64_t checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  SLAPO_CHECK(!__builtin_mul_overflow(a, b, &r), ErrorCode::kOutOfRange,
              "the space has more than 2^64 - 1 configurations");
  return r;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  static const char* kReserved[] = {"and", "or", "not", "in", "if", "then", "true", "false",
                                    "True", "False", "min", "max", "abs"};
  for (const char* r : kReserved) {
    if (s == r) return false;
  }
  return true;
}

// A scalar knob's values in index order.
struct Domain {
  bool arithmetic = false;  // integers base + i·step (no materialized list)
  int64_t base = 0, step = 1;
  int64_t n = 0;
  std::vector<double> values;  // when !arithmetic: ascending (choices: 0..n-1)
  bool integer = false;        // every value is an integer

  double value(int64_t i) const {
    return arithmetic ? static_cast<double>(base + i * step) : values[static_cast<size_t>(i)];
  }
  // First index whose value is ≥ v (n when none).
  int64_t first_at_least(double v) const {
    if (arithmetic) {
      if (v <= static_cast<double>(base)) return 0;
      const double rel = std::ceil((v - static_cast<double>(base)) / static_cast<double>(step));
      return rel >= static_cast<double>(n) ? n : static_cast<int64_t>(rel);
    }
    return std::lower_bound(values.begin(), values.end(), v) - values.begin();
  }
  // Last index whose value is ≤ v (-1 when none).
  int64_t last_at_most(double v) const {
    if (arithmetic) {
      if (v < static_cast<double>(base)) return -1;
      const double rel = std::floor((v - static_cast<double>(base)) / static_cast<double>(step));
      return rel >= static_cast<double>(n - 1) ? n - 1 : static_cast<int64_t>(rel);
    }
    return (std::upper_bound(values.begin(), values.end(), v) - values.begin()) - 1;
  }
  // Integer bounds, exact.
  int64_t first_at_least(int64_t v) const {
    if (!arithmetic) return first_at_least(static_cast<double>(v));
    if (v <= base) return 0;
    return std::min(n, ceil_div_i(v - base, step));
  }
  int64_t last_at_most(int64_t v) const {
    if (!arithmetic) return last_at_most(static_cast<double>(v));
    if (v < base) return -1;
    return std::min(n - 1, floor_div_i(v - base, step));
  }
  // The index of `v`, or -1.
  int64_t find(double v) const {
    const int64_t i = first_at_least(v);
    return (i < n && value(i) == v) ? i : -1;
  }
};

// x_level ≥ (lower) or ≤ (upper) -(c + Σ terms) / a.
struct Bound {
  std::vector<std::pair<int, double>> terms;  // earlier slots only
  double a = 1;
  double c = 0;
  bool exact = false;
  bool lower = true;
  int origin = Row::kProjected;
};

struct ConstraintInfo {
  std::string name;
  std::string text;
  SourceLocation where;
};

struct Part {
  int constraint = 0;
  Program program;
  bool affine = false;
  std::string text;  // the bound conjunct, printed
};

// A guard affine in its level's knob once the knobs before are fixed: coef·x + rest ≥ 0
// (> 0, == 0), with coef and rest evaluated per prefix. See parametric_in() in affine.h.
struct ParametricBound {
  Program coef;
  Program rest;  // empty: zero
  bool equality = false;
  int part = 0;
};

struct KeyHash {
  size_t operator()(const std::vector<double>& key) const {
    uint64_t h = 14695981039346656037ULL;
    for (double d : key) {
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      h = (h ^ bits) * 1099511628211ULL;
    }
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

struct Level {
  KnobInfo info;
  KnobDecl decl;
  bool is_cuts = false;
  bool output_int = false;  // Config values as int64 (else double); numeric knobs only
  Domain domain;
  std::vector<Bound> bounds;
  std::vector<int> guards;   // non-affine parts checked here
  std::vector<ParametricBound> parametric;
  // Parts whose bounds are not exact (floating rows, parametric bounds): re-checked at the ends
  // of the range.
  std::vector<int> tighten;
  Program layers, stages, min_len, max_len;  // cuts
  size_t cut_dims = 0;                       // cuts: max number of cut points (for encode)
  std::vector<int> deps;      // slots < this level read by this level or any later one
  bool memoize = false;       // deps are fewer than the levels before: counts repeat
  bool next_reads_me = true;  // the levels after read this knob's value
  mutable std::unordered_map<std::vector<double>, uint64_t, KeyHash> memo;
};

}  // namespace

// A configuration unpacked for the nest: slot values, domain indices, cut points.
struct Point {
  explicit Point(size_t n) : slots(n + 1, 0), index(n + 1, 0), cuts(n + 1) {}
  std::vector<double> slots;
  std::vector<int64_t> index;
  std::vector<IntList> cuts;
};

struct CompiledSpace::Impl {
  Space space;
  std::vector<KnobInfo> knobs;
  std::vector<Level> levels;
  std::vector<ConstraintInfo> constraints;
  std::vector<Part> parts;
  bool empty = false;
  std::string empty_reason;
  bool projection_truncated = false;
  mutable std::map<std::array<int64_t, 4>, std::unique_ptr<StageSplits>> splits_cache;
  mutable bool size_known = false;
  mutable uint64_t size_value = 0;

  size_t n() const { return levels.size(); }

  [[noreturn]] void fail_expression(const ExpressionError& e, const SourceLocation& where,
                                    const std::string& what) const {
    SLAPO_FAIL(ErrorCode::kParse, where.shifted(e.offset()).to_string(), ": ", what, ": ", e.what());
  }

  const StageSplits& splits(size_t k, const double* slots) const {
    const Level& level = levels[k];
    auto eval_int = [&](const Program& p) -> int64_t {
      bool fault = false;
      const double v = p.eval(slots, &fault);
      if (fault || !std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 1e9) return -1;
      return static_cast<int64_t>(v);
    };
    const std::array<int64_t, 4> key = {eval_int(level.layers), eval_int(level.stages),
                                        eval_int(level.min_len), eval_int(level.max_len)};
    auto it = splits_cache.find(key);
    if (it == splits_cache.end()) {
      it = splits_cache.emplace(key, std::make_unique<StageSplits>(key[0], key[1], key[2], key[3])).first;
    }
    return *it->second;
  }

  bool guards_hold(const Level& level, const double* slots) const {
    for (int g : level.guards) {
      if (!parts[g].program.holds(slots)) return false;
    }
    return true;
  }

  bool tighten_holds(const Level& level, const double* slots) const {
    for (int t : level.tighten) {
      if (!parts[t].program.holds(slots)) return false;
    }
    return true;
  }

  // The index range [*a, *b] of scalar level k allowed by its bounds, given slots < k.
  bool range(size_t k, double* slots, int64_t* a, int64_t* b) const {
    const Level& level = levels[k];
    const Domain& d = level.domain;
    int64_t lo = 0, hi = d.n - 1;
    for (const Bound& bound : level.bounds) {
      double rest = bound.c;
      for (const auto& [slot, coef] : bound.terms) rest += coef * slots[slot];
      if (bound.exact) {
        const int64_t r = static_cast<int64_t>(rest), a_i = static_cast<int64_t>(bound.a);
        if (bound.lower) lo = std::max(lo, d.first_at_least(ceil_div_i(-r, a_i)));
        else hi = std::min(hi, d.last_at_most(floor_div_i(r, -a_i)));
      } else {
        // Inexact (floating) bounds are widened a little; the constraint itself decides the
        // ends below, so rounding never drops or admits a configuration.
        const double v = -rest / bound.a;
        const double slack = 1e-9 * std::max(1.0, std::fabs(v));
        if (bound.lower) lo = std::max(lo, d.first_at_least(v - slack));
        else hi = std::min(hi, d.last_at_most(v + slack));
      }
      if (lo > hi) return false;
    }
    for (const ParametricBound& pb : level.parametric) {
      bool fault = false;
      const double a = pb.coef.eval(slots, &fault);
      const double b = pb.rest.empty() ? 0.0 : pb.rest.eval(slots, &fault);
      if (fault) return false;  // the guard faults whatever this knob's value
      if (a == 0) {
        // Constant in this knob: one evaluation decides the whole range.
        const double saved = slots[k];
        slots[k] = d.value(lo);
        const bool holds = parts[pb.part].program.holds(slots);
        slots[k] = saved;
        if (!holds) return false;
        continue;
      }
      if (!std::isfinite(a) || !std::isfinite(b)) continue;  // no bound; the end check decides
      const double v = -b / a;
      const double slack = 1e-9 * std::max(1.0, std::fabs(v));
      if (a > 0 || pb.equality) lo = std::max(lo, d.first_at_least(v - slack));
      if (a < 0 || pb.equality) hi = std::min(hi, d.last_at_most(v + slack));
      if (lo > hi) return false;
    }
    if (!level.tighten.empty()) {
      const double saved = slots[k];
      while (lo <= hi) {
        slots[k] = d.value(lo);
        if (tighten_holds(level, slots)) break;
        ++lo;
      }
      while (hi >= lo) {
        slots[k] = d.value(hi);
        if (tighten_holds(level, slots)) break;
        --hi;
      }
      slots[k] = saved;
    }
    *a = lo;
    *b = hi;
    return lo <= hi;
  }

  uint64_t count_from(size_t k, double* slots) const {
    if (k == n()) return 1;
    const Level& level = levels[k];
    std::vector<double> key;
    if (level.memoize) {
      key.reserve(level.deps.size());
      for (int s : level.deps) key.push_back(slots[s]);
      auto it = level.memo.find(key);
      if (it != level.memo.end()) return it->second;
    }
    uint64_t total = 0;
    if (level.is_cuts) {
      const uint64_t ways = splits(k, slots).count();
      if (ways > 0) total = checked_mul(ways, count_from(k + 1, slots));
    } else {
      int64_t a, b;
      if (range(k, slots, &a, &b)) {
        if (!level.next_reads_me) {
          uint64_t passing = 0;
          if (level.guards.empty()) {
            passing = static_cast<uint64_t>(b - a + 1);
          } else {
            for (int64_t i = a; i <= b; ++i) {
              slots[k] = level.domain.value(i);
              passing += guards_hold(level, slots) ? 1 : 0;
            }
          }
          if (passing > 0) total = checked_mul(passing, count_from(k + 1, slots));
        } else {
          for (int64_t i = a; i <= b; ++i) {
            slots[k] = level.domain.value(i);
            if (guards_hold(level, slots)) total = checked_add(total, count_from(k + 1, slots));
          }
        }
      }
    }
    if (level.memoize) {
      if (level.memo.size() > 4'000'000) level.memo.clear();  // bound the memory
      level.memo.emplace(std::move(key), total);
    }
    return total;
  }

  // Walks the nest from level k; false when the visitor stopped it.
  bool enumerate(size_t k, double* slots, int64_t* index, IntList* cuts, const PointView& view,
                 void* visit, bool (*call)(void*, const PointView&)) const {
    if (k == n()) return call(visit, view);
    const Level& level = levels[k];
    if (level.is_cuts) {
      return splits(k, slots).for_each([&](const IntList& c) {
        cuts[k] = c;
        return enumerate(k + 1, slots, index, cuts, view, visit, call);
      });
    }
    int64_t a, b;
    if (!range(k, slots, &a, &b)) return true;
    const bool last = k + 1 == n();
    for (int64_t i = a; i <= b; ++i) {
      slots[k] = level.domain.value(i);
      index[k] = i;
      if (!level.guards.empty() && !guards_hold(level, slots)) continue;
      if (last) {
        if (!call(visit, view)) return false;
      } else if (!enumerate(k + 1, slots, index, cuts, view, visit, call)) {
        return false;
      }
    }
    return true;
  }

  Value value_of(size_t k, const double* slots, const IntList* cuts) const {
    const Level& level = levels[k];
    switch (level.info.kind) {
      case KnobKind::kCuts: return cuts[k];
      case KnobKind::kChoice: return level.decl.choices[static_cast<size_t>(slots[k])];
      case KnobKind::kBool: return slots[k] != 0;
      default:
        if (level.output_int) return static_cast<int64_t>(slots[k]);
        return slots[k];
    }
  }

  // Unpacks `config`; returns "" or why it is not in the domains.
  std::string read(const Config& config, Point* p) const {
    return read_config(config, p->slots.data(), p->index.data(), p->cuts.data());
  }

  Config make_config(const double* slots, const IntList* cuts) const {
    Config config;
    for (size_t k = 0; k < n(); ++k) config.set(levels[k].info.name, value_of(k, slots, cuts));
    return config;
  }

  // Reads a configuration into slots/indices/cuts. Returns "" or why it is not in the domains.
  std::string read_config(const Config& config, double* slots, int64_t* index, IntList* cuts) const {
    for (const auto& [name, value] : config.entries()) {
      bool known = false;
      for (const Level& level : levels) known = known || level.info.name == name;
      if (!known) return "unknown knob '" + name + "'";
    }
    for (size_t k = 0; k < n(); ++k) {
      const Level& level = levels[k];
      const std::string& name = level.info.name;
      const Value* value = config.find(name);
      if (!value) return "missing knob '" + name + "'";
      slots[k] = 0;
      index[k] = 0;
      switch (level.info.kind) {
        case KnobKind::kCuts: {
          const IntList* list = std::get_if<IntList>(value);
          if (!list) return "knob '" + name + "': expected a list of cut points, found " + to_string(*value);
          cuts[k] = *list;
          continue;
        }
        case KnobKind::kChoice: {
          const std::string* s = std::get_if<std::string>(value);
          const auto& choices = level.decl.choices;
          auto pos = s ? std::find(choices.begin(), choices.end(), *s) : choices.end();
          if (pos == choices.end()) {
            return "knob '" + name + "': '" + to_string(*value) + "' is not one of its choices";
          }
          index[k] = pos - choices.begin();
          slots[k] = static_cast<double>(index[k]);
          continue;
        }
        case KnobKind::kBool:
          if (!std::holds_alternative<bool>(*value)) {
            return "knob '" + name + "': expected true or false, found " + to_string(*value);
          }
          break;
        default:
          if (!is_number(*value) || std::holds_alternative<bool>(*value)) {
            return "knob '" + name + "': expected a number, found " + to_string(*value);
          }
          break;
      }
      const double v = as_number(*value);
      const int64_t i = level.domain.find(v);
      if (i < 0) return "knob '" + name + "': " + to_string(*value) + " is not in its domain";
      index[k] = i;
      slots[k] = v;
    }
    return "";
  }

  // Checks constraints and cut points of a point read by read_config.
  Validity check(const double* slots, const IntList* cuts) const {
    Validity v;
    for (size_t k = 0; k < n(); ++k) {
      if (!levels[k].is_cuts) continue;
      const StageSplits& s = splits(k, slots);
      if (!s.contains(cuts[k])) {
        v.ok = false;
        v.reason = "knob '" + levels[k].info.name + "': " + to_string(cuts[k]) + " is not a split of " +
                   std::to_string(s.layers()) + " layers into " + std::to_string(s.stages()) +
                   " stages of " + levels[k].decl.min_stage + ".." + levels[k].decl.max_stage +
                   " layers";
        return v;
      }
    }
    for (const Part& part : parts) {
      if (!part.program.holds(slots)) {
        const ConstraintInfo& c = constraints[part.constraint];
        v.ok = false;
        v.constraint = c.name;
        v.reason = "violates constraint '" + c.name + "' (" + c.text + ") at " + c.where.to_string();
        return v;
      }
    }
    if (empty) {
      v.ok = false;
      v.reason = empty_reason;
    }
    return v;
  }
};

// --------------------------------------------------------------------------------------------
// Compilation

namespace {

class Compiler {
 public:
  explicit Compiler(const Space& space) : space_(space), impl_(std::make_unique<CompiledSpace::Impl>()) {
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
        SLAPO_CHECK(step > 0, ErrorCode::kInvalidArgument, where, ": step must be positive, got ", step);
        SLAPO_CHECK(lo <= hi, ErrorCode::kInvalidArgument, where, ": empty range [", lo, ", ", hi, "]");
        const bool integer = lo == std::floor(lo) && step == std::floor(step) &&
                             std::fabs(lo) < 1e15 && std::fabs(hi) < 1e15;
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
                      ": values must be numbers (use choice = [...] for strings), found ", to_string(v));
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
        for (double v : d.values) d.integer = d.integer && v == std::floor(v) && std::fabs(v) < 1e15;
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
    for (int64_t i = 0; i < d.n && static_cast<int64_t>(level.info.domain.size()) < kMaxMaterialized; ++i) {
      const double v = d.value(i);
      if (decl.kind == KnobKind::kChoice) level.info.domain.emplace_back(decl.choices[i]);
      else if (decl.kind == KnobKind::kBool) level.info.domain.emplace_back(v != 0);
      else if (level.output_int) level.info.domain.emplace_back(static_cast<int64_t>(v));
      else level.info.domain.emplace_back(v);
    }
  }

  Program cuts_program(size_t k, const std::string& text, const char* what) {
    Level& level = impl_->levels[k];
    const std::string context = "knob '" + level.info.name + "': " + what;
    ExprPtr parsed = parse_at(text, level.decl.where, context);
    try {
      ExprPtr bound = bind_expression(*parsed, symbols_);
      if (bound->type != Type::kNumber && bound->type != Type::kBool) {
        throw ExpressionError(0, std::string("expected a number, found a ") + type_name(bound->type));
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
            impl_->empty_reason = "constraint '" + decl.name + "' (" + decl.text +
                                  ") is false for these parameters";
          }
          continue;  // a constant: never checked per configuration
        }
        part.affine = split.affine();
        bool all_exact = part.affine;
        for (const LinearInequality& ineq : split.inequalities) {
          Row row;
          row.a.assign(impl_->levels.size(), 0);
          for (const auto& [slot, coef] : ineq.terms) row.a[slot] = coef;
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
        row.a.assign(impl_->levels.size(), 0);
        row.a[k] = sign;
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
        b.a = row.a[k];
        b.c = row.c;
        b.exact = row.exact;
        b.lower = row.a[k] > 0;
        b.origin = row.origin;
        for (size_t j = 0; j < k; ++j) {
          if (row.a[j] != 0) b.terms.emplace_back(static_cast<int>(j), row.a[j]);
        }
        impl_->levels[k].bounds.push_back(std::move(b));
      }
    }
  }

  void compute_dependencies() {
    const size_t n = impl_->levels.size();
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
      for (int s : reads) {
        if (s < static_cast<int>(k)) level.deps.push_back(s);
      }
      size_t scalar_before = 0;
      for (size_t j = 0; j < k; ++j) scalar_before += impl_->levels[j].is_cuts ? 0 : 1;
      level.memoize = k > 0 && level.deps.size() < scalar_before;
    }
  }

  const Space& space_;
  std::unique_ptr<CompiledSpace::Impl> impl_;
  SymbolTable symbols_;
  std::vector<Row> rows_;
};

}  // namespace

// --------------------------------------------------------------------------------------------
// Public interface

CompiledSpace::CompiledSpace(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledSpace::CompiledSpace(CompiledSpace&&) noexcept = default;
CompiledSpace& CompiledSpace::operator=(CompiledSpace&&) noexcept = default;
CompiledSpace::~CompiledSpace() = default;

CompiledSpace CompiledSpace::compile(const Space& space) {
  return CompiledSpace(Compiler(space).run());
}

const Space& CompiledSpace::space() const { return impl_->space; }
const std::vector<KnobInfo>& CompiledSpace::knobs() const { return impl_->knobs; }

size_t PointView::num_knobs() const { return space_->knobs().size(); }

Config PointView::to_config() const { return space_->impl_->make_config(slots_, cuts_); }

uint64_t CompiledSpace::size() const {
  if (!impl_->size_known) {
    if (impl_->empty) {
      impl_->size_value = 0;
    } else {
      std::vector<double> slots(impl_->n() + 1, 0);
      impl_->size_value = impl_->count_from(0, slots.data());
    }
    impl_->size_known = true;
  }
  return impl_->size_value;
}

void CompiledSpace::for_each_impl(void* visit, bool (*call)(void*, const PointView&)) const {
  if (impl_->empty) return;
  const size_t n = impl_->n();
  std::vector<double> slots(n + 1, 0);
  std::vector<int64_t> index(n + 1, 0);
  std::vector<IntList> cuts(n + 1);
  PointView view;
  view.space_ = this;
  view.slots_ = slots.data();
  view.index_ = index.data();
  view.cuts_ = cuts.data();
  if (n == 0) {
    call(visit, view);
    return;
  }
  impl_->enumerate(0, slots.data(), index.data(), cuts.data(), view, visit, call);
}

Config CompiledSpace::at(uint64_t index) const {
  const uint64_t total = size();
  SLAPO_CHECK(index < total, ErrorCode::kOutOfRange, "index ", index, " is out of range: the space has ",
              total, " configurations");
  const Impl& m = *impl_;
  const size_t n = m.n();
  std::vector<double> slots(n + 1, 0);
  std::vector<IntList> cuts(n + 1);
  for (size_t k = 0; k < n; ++k) {
    const Level& level = m.levels[k];
    // count_from(k + 1) overwrites slots after k; each level sets its own before moving on.
    if (level.is_cuts) {
      const uint64_t sub = m.count_from(k + 1, slots.data());
      cuts[k] = m.splits(k, slots.data()).at(index / sub);
      index %= sub;
      continue;
    }
    int64_t a, b;
    const bool nonempty = m.range(k, slots.data(), &a, &b);
    SLAPO_INTERNAL_ASSERT(nonempty, "empty range while unranking");
    bool chosen = false;
    if (!level.next_reads_me) {
      const uint64_t sub = m.count_from(k + 1, slots.data());
      if (level.guards.empty()) {
        slots[k] = level.domain.value(a + static_cast<int64_t>(index / sub));
        index %= sub;
        continue;
      }
      for (int64_t i = a; i <= b && !chosen; ++i) {
        slots[k] = level.domain.value(i);
        if (!m.guards_hold(level, slots.data())) continue;
        if (index < sub) chosen = true;
        else index -= sub;
      }
    } else {
      for (int64_t i = a; i <= b && !chosen; ++i) {
        const double v = level.domain.value(i);
        slots[k] = v;
        if (!m.guards_hold(level, slots.data())) continue;
        const uint64_t sub = m.count_from(k + 1, slots.data());
        slots[k] = v;
        if (index < sub) chosen = true;
        else index -= sub;
      }
    }
    SLAPO_INTERNAL_ASSERT(chosen, "unranking ran past level ", level.info.name);
  }
  return m.make_config(slots.data(), cuts.data());
}

uint64_t CompiledSpace::index_of(const Config& config) const {
  const Impl& m = *impl_;
  const size_t n = m.n();
  Point target(n);
  std::vector<double> slots(n + 1, 0);
  std::string problem = m.read(config, &target);
  SLAPO_CHECK(problem.empty(), ErrorCode::kInvalidArgument, "configuration ", config.to_string(),
              " is not in the space: ", problem);
  const std::vector<int64_t>& index = target.index;
  const std::vector<IntList>& cuts = target.cuts;
  Validity v = m.check(target.slots.data(), cuts.data());
  SLAPO_CHECK(v.ok, ErrorCode::kInvalidArgument, "configuration ", config.to_string(),
              " is not in the space: ", v.reason);
  uint64_t rank = 0;
  for (size_t k = 0; k < n; ++k) {
    const Level& level = m.levels[k];
    if (level.is_cuts) {
      const uint64_t sub = m.count_from(k + 1, slots.data());
      rank = checked_add(rank, checked_mul(m.splits(k, slots.data()).rank_of(cuts[k]), sub));
      continue;
    }
    int64_t a, b;
    m.range(k, slots.data(), &a, &b);
    if (!level.next_reads_me) {
      uint64_t before = 0;
      if (level.guards.empty()) {
        before = static_cast<uint64_t>(index[k] - a);
      } else {
        for (int64_t i = a; i < index[k]; ++i) {
          slots[k] = level.domain.value(i);
          before += m.guards_hold(level, slots.data()) ? 1 : 0;
        }
      }
      if (before > 0) rank = checked_add(rank, checked_mul(before, m.count_from(k + 1, slots.data())));
    } else {
      for (int64_t i = a; i < index[k]; ++i) {
        slots[k] = level.domain.value(i);
        if (m.guards_hold(level, slots.data())) rank = checked_add(rank, m.count_from(k + 1, slots.data()));
      }
    }
    slots[k] = target.slots[k];
  }
  return rank;
}

Config CompiledSpace::sample(Rng& rng) const {
  const uint64_t total = size();
  SLAPO_CHECK(total > 0, ErrorCode::kInvalidArgument, impl_->space.origin,
              ": cannot sample: the space is empty",
              impl_->empty_reason.empty() ? "" : " (" + impl_->empty_reason + ")");
  return at(rng.uniform(total));
}

Validity CompiledSpace::contains(const Config& config) const {
  Point p(impl_->n());
  std::string problem = impl_->read(config, &p);
  if (!problem.empty()) return Validity{false, problem, ""};
  return impl_->check(p.slots.data(), p.cuts.data());
}

std::vector<Config> CompiledSpace::neighbours(const Config& config) const {
  const Impl& m = *impl_;
  const size_t n = m.n();
  const Validity v = contains(config);
  SLAPO_CHECK(v.ok, ErrorCode::kInvalidArgument, "neighbours of ", config.to_string(),
              ": not in the space: ", v.reason);
  Point p(n);
  m.read(config, &p);
  std::vector<double>& slots = p.slots;
  const std::vector<int64_t>& index = p.index;
  const std::vector<IntList>& cuts = p.cuts;
  std::vector<Config> out;
  // Re-balances the cut points that depend on slot `changed` when they no longer fit.
  auto rebalance = [&](size_t changed, std::vector<IntList>* c) {
    for (size_t k = 0; k < n; ++k) {
      const Level& level = m.levels[k];
      if (!level.is_cuts) continue;
      if (std::find(level.deps.begin(), level.deps.end(), static_cast<int>(changed)) == level.deps.end()) continue;
      const StageSplits& s = m.splits(k, slots.data());
      if (!s.contains((*c)[k]) && s.count() > 0) (*c)[k] = s.balanced();
    }
  };
  for (size_t k = 0; k < n; ++k) {
    const Level& level = m.levels[k];
    if (level.is_cuts) {
      for (size_t j = 0; j < cuts[k].size(); ++j) {
        for (int dir : {-1, 1}) {
          std::vector<IntList> moved = cuts;
          moved[k][j] += dir;
          if (m.check(slots.data(), moved.data()).ok) out.push_back(m.make_config(slots.data(), moved.data()));
        }
      }
      continue;
    }
    const double original = slots[k];
    auto try_index = [&](int64_t i) {
      slots[k] = level.domain.value(i);
      std::vector<IntList> c = cuts;
      rebalance(k, &c);
      const bool ok = m.check(slots.data(), c.data()).ok;
      if (ok) out.push_back(m.make_config(slots.data(), c.data()));
      slots[k] = original;
      return ok;
    };
    if (level.info.kind == KnobKind::kChoice) {
      for (int64_t i = 0; i < level.domain.n; ++i) {
        if (i != index[k]) try_index(i);
      }
      continue;
    }
    for (int dir : {-1, 1}) {
      for (int step = 1; step <= kNeighbourSearch; ++step) {
        const int64_t i = index[k] + dir * step;
        if (i < 0 || i >= level.domain.n) break;
        if (try_index(i)) break;
      }
    }
  }
  return out;
}

size_t CompiledSpace::encoded_size() const {
  size_t dims = 0;
  for (const Level& level : impl_->levels) {
    if (level.is_cuts) dims += level.cut_dims;
    else if (level.info.kind == KnobKind::kChoice) dims += static_cast<size_t>(level.domain.n);
    else dims += 1;
  }
  return dims;
}

std::vector<double> CompiledSpace::encode(const Config& config) const {
  const Impl& m = *impl_;
  const size_t n = m.n();
  Point p(n);
  std::string problem = m.read(config, &p);
  SLAPO_CHECK(problem.empty(), ErrorCode::kInvalidArgument, "encode ", config.to_string(), ": ", problem);
  const double* slots = p.slots.data();
  const std::vector<int64_t>& index = p.index;
  const std::vector<IntList>& cuts = p.cuts;
  std::vector<double> out;
  out.reserve(encoded_size());
  for (size_t k = 0; k < n; ++k) {
    const Level& level = m.levels[k];
    if (level.is_cuts) {
      const double layers = static_cast<double>(m.splits(k, slots).layers());
      for (size_t j = 0; j < level.cut_dims; ++j) {
        out.push_back(j < cuts[k].size() && layers > 0 ? static_cast<double>(cuts[k][j]) / layers : 1.0);
      }
    } else if (level.info.kind == KnobKind::kChoice) {
      for (int64_t i = 0; i < level.domain.n; ++i) out.push_back(i == index[k] ? 1.0 : 0.0);
    } else {
      const int64_t size = level.domain.n;
      out.push_back(size > 1 ? static_cast<double>(index[k]) / static_cast<double>(size - 1) : 0.5);
    }
  }
  return out;
}

std::string CompiledSpace::describe() const {
  const Impl& m = *impl_;
  std::ostringstream out;
  out << "space " << m.space.origin << "\n";
  if (!m.space.parameters.empty()) {
    out << "parameters:";
    for (const auto& p : m.space.parameters) out << " " << p.name << "=" << to_string(p.value);
    out << "\n";
  }
  auto slot_name = [&](int slot) { return m.levels[slot].info.name; };
  auto format_bound = [&](const Level& level, const Bound& b) {
    // x ≥ -(c + Σ a_j x_j)/a  printed as "x >= 4 + cut1" etc.
    std::ostringstream s;
    s << level.info.name << (b.lower ? " >= " : " <= ");
    bool first = true;
    for (const auto& [slot, coef] : b.terms) {
      const double k = -coef / b.a;
      if (k == 0) continue;
      s << (first ? (k < 0 ? "-" : "") : (k < 0 ? " - " : " + "));
      if (std::fabs(k) != 1) s << to_string(Value(std::fabs(k))) << "*";
      s << slot_name(slot);
      first = false;
    }
    const double c = -b.c / b.a;
    if (first) s << to_string(Value(c));
    else if (c != 0) s << (c < 0 ? " - " : " + ") << to_string(Value(std::fabs(c)));
    std::string text = s.str();
    // Integral coefficients print without a trailing ".0".
    for (size_t pos; (pos = text.find(".0*")) != std::string::npos;) text.erase(pos, 2);
    if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0) text.resize(text.size() - 2);
    const std::string from = b.origin >= 0 ? m.constraints[m.parts[b.origin].constraint].name : "projected";
    return text + "   (" + from + ")";
  };
  out << "loop order (" << m.n() << " knobs, outermost first):\n";
  for (size_t k = 0; k < m.n(); ++k) {
    const Level& level = m.levels[k];
    out << "  " << k + 1 << ". " << level.info.name << "  " << to_string(level.info.kind);
    if (level.is_cuts) {
      out << ": " << level.decl.stages << " stages over " << level.decl.layers << " layers, "
          << level.decl.min_stage << ".." << level.decl.max_stage << " layers each";
    } else {
      out << " {";
      const size_t shown = std::min<size_t>(level.info.domain.size(), 8);
      for (size_t i = 0; i < shown; ++i) out << (i ? ", " : "") << to_string(level.info.domain[i]);
      if (static_cast<int64_t>(shown) < level.domain.n) {
        out << ", ..., " << to_string(level.info.domain.back());
      }
      out << "} (" << level.domain.n << " values)";
    }
    if (level.info.mem != MemTrend::kNone) out << "  mem " << to_string(level.info.mem);
    out << "\n";
    for (const Bound& b : level.bounds) out << "       bound  " << format_bound(level, b) << "\n";
    for (const ParametricBound& pb : level.parametric) {
      out << "       bound  " << m.parts[pb.part].text << "   (" << m.constraints[m.parts[pb.part].constraint].name
          << "; solved for " << level.info.name << " once the knobs before are fixed)\n";
    }
    for (int t : level.tighten) {
      if (!m.parts[t].affine) continue;
      out << "       exact  " << m.parts[t].text << "   (" << m.constraints[m.parts[t].constraint].name
          << ", floating: re-checked at the range ends)\n";
    }
    for (int g : level.guards) {
      out << "       guard  " << m.parts[g].text << "   (" << m.constraints[m.parts[g].constraint].name << ")\n";
    }
    if (level.memoize) {
      out << "       counts memoized on {";
      for (size_t i = 0; i < level.deps.size(); ++i) out << (i ? ", " : "") << slot_name(level.deps[i]);
      out << "}\n";
    }
  }
  out << "constraints:\n";
  for (size_t c = 0; c < m.constraints.size(); ++c) {
    out << "  " << m.constraints[c].name << ": " << m.constraints[c].text << "\n";
    bool any = false;
    for (const Part& part : m.parts) {
      if (part.constraint != static_cast<int>(c)) continue;
      any = true;
      const int level = part.program.slots_read().back();
      bool parametric = false;
      for (const ParametricBound& pb : m.levels[level].parametric) parametric = parametric || &m.parts[pb.part] == &part;
      out << "       " << (part.affine ? "affine" : parametric ? "bound " : "guard ") << "  " << part.text
          << "   at " << m.levels[level].info.name << "\n";
    }
    if (!any) out << "       constant for these parameters\n";
  }
  if (m.projection_truncated) out << "note: projection stopped early (too many rows); guards still hold\n";
  if (m.empty) out << "empty: " << m.empty_reason << "\n";
  try {
    out << "size: " << size() << "\n";
  } catch (const Error& e) {
    out << "size: " << e.what() << "\n";
  }
  return out.str();
}

}  // namespace slapo::space
