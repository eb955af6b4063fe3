// The walk over the compiled loop nest: the range of each level under a prefix, counting,
// enumeration, and reading configurations into slots.

#include <algorithm>
#include <optional>

#include "space/compiled_space_impl.h"

namespace slapo::space {

using namespace detail;  // the nest's data (compiled_space_impl.h)
using slapo::to_string;

namespace {

// A value of the wrong type, as a message shows it: a string in quotes, so that "2" is not read
// as the number 2.
std::string found(const Value& value) {
  if (const std::string* s = std::get_if<std::string>(&value)) return "the string \"" + *s + "\"";
  return to_string(value);
}

}  // namespace

const StageSplits& CompiledSpace::Impl::splits(size_t k, const double* slots) const {
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
    it = splits_cache.emplace(key, std::make_unique<StageSplits>(key[0], key[1], key[2], key[3]))
             .first;
  }
  return *it->second;
}

bool CompiledSpace::Impl::guards_hold(const Level& level, const double* slots) const {
  for (int g : level.guards) {
    if (!parts[g].program.holds(slots)) return false;
  }
  return true;
}

bool CompiledSpace::Impl::tighten_holds(const Level& level, const double* slots) const {
  for (int t : level.tighten) {
    if (!parts[t].program.holds(slots)) return false;
  }
  return true;
}

bool CompiledSpace::Impl::range(size_t k, double* slots, int64_t* a, int64_t* b) const {
  const Level& level = levels[k];
  const Domain& d = level.domain;
  int64_t lo = 0, hi = d.n - 1;
  for (const Bound& bound : level.bounds) {
    double rest = bound.c;
    for (const auto& [slot, coef] : bound.terms) rest += coef * slots[slot];
    if (bound.exact) {
      const int64_t r = static_cast<int64_t>(rest), a_i = static_cast<int64_t>(bound.a);
      if (bound.lower)
        lo = std::max(lo, d.first_at_least(ceil_div_i(-r, a_i)));
      else
        hi = std::min(hi, d.last_at_most(floor_div_i(r, -a_i)));
    } else {
      // Inexact (floating) bounds are widened a little; the constraint itself decides the
      // ends below, so rounding never drops or admits a configuration.
      const double v = -rest / bound.a;
      const double slack = 1e-9 * std::max(1.0, std::fabs(v));
      if (bound.lower)
        lo = std::max(lo, d.first_at_least(v - slack));
      else
        hi = std::min(hi, d.last_at_most(v + slack));
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

CompiledSpace::Impl::Walk CompiledSpace::Impl::walk_level(size_t k, double* slots, int64_t a,
                                                          int64_t stop,
                                                          const uint64_t* budget) const {
  const Level& level = levels[k];
  Walk w;
  if (!level.next_reads_me) {
    // The same count below every value: computed once, at the first value that passes.
    std::optional<uint64_t> sub;
    if (level.guards.empty()) {
      if (stop <= a) return w;
      sub = count_from(k + 1, slots);
      const uint64_t values = static_cast<uint64_t>(stop - a);
      if (budget && *sub > 0 && *budget / *sub < values) {
        const uint64_t skipped = *budget / *sub;
        w.at = a + static_cast<int64_t>(skipped);
        w.before = skipped * *sub;
        return w;
      }
      w.before = checked_mul(values, *sub);
      return w;
    }
    for (int64_t i = a; i < stop; ++i) {
      slots[k] = level.domain.value(i);
      if (!guards_hold(level, slots)) continue;
      if (!sub) sub = count_from(k + 1, slots);
      if (budget && w.before + *sub > *budget) {
        w.at = i;
        return w;
      }
      w.before = checked_add(w.before, *sub);
    }
    return w;
  }
  for (int64_t i = a; i < stop; ++i) {
    const double v = level.domain.value(i);
    slots[k] = v;
    if (!guards_hold(level, slots)) continue;
    const uint64_t sub = count_from(k + 1, slots);
    slots[k] = v;
    if (budget && w.before + sub > *budget) {
      w.at = i;
      return w;
    }
    w.before = checked_add(w.before, sub);
  }
  return w;
}

uint64_t CompiledSpace::Impl::count_from(size_t k, double* slots) const {
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
    if (range(k, slots, &a, &b)) total = walk_level(k, slots, a, b + 1, nullptr).before;
  }
  if (level.memoize) {
    if (level.memo.size() > 4'000'000) level.memo.clear();  // bound the memory
    level.memo.emplace(std::move(key), total);
  }
  return total;
}

bool CompiledSpace::Impl::enumerate(size_t k, double* slots, int64_t* index, IntList* cuts,
                                    const PointView& view, void* visit,
                                    bool (*call)(void*, const PointView&)) const {
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

Value CompiledSpace::Impl::value_of(size_t k, const double* slots, const IntList* cuts) const {
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

Config CompiledSpace::Impl::make_config(const double* slots, const IntList* cuts) const {
  Config config;
  for (size_t k = 0; k < n(); ++k) config.set(levels[k].info.name, value_of(k, slots, cuts));
  return config;
}

std::string CompiledSpace::Impl::read_config(const Config& config, double* slots, int64_t* index,
                                             IntList* cuts) const {
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
        if (!list)
          return "knob '" + name + "': expected a list of cut points, found " + found(*value);
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
          return "knob '" + name + "': expected true or false, found " + found(*value);
        }
        break;
      default:
        if (!is_number(*value) || std::holds_alternative<bool>(*value)) {
          return "knob '" + name + "': expected a number, found " + found(*value);
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

Validity CompiledSpace::Impl::check(const double* slots, const IntList* cuts) const {
  Validity v;
  for (size_t k = 0; k < n(); ++k) {
    if (!levels[k].is_cuts) continue;
    const StageSplits& s = splits(k, slots);
    if (!s.contains(cuts[k])) {
      v.ok = false;
      v.reason = "knob '" + levels[k].info.name + "': " + to_string(cuts[k]) +
                 " is not a split of " + std::to_string(s.layers()) + " layers into " +
                 std::to_string(s.stages()) + " stages of " + levels[k].decl.min_stage + ".." +
                 levels[k].decl.max_stage + " layers";
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

}  // namespace slapo::space
