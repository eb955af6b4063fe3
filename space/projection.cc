#include "space/projection.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace slapo::space {

namespace {

constexpr double kMaxExact = 1e15;  // integers below this are exact in a double, sums too

bool integral(double x) { return std::fabs(x) < kMaxExact && x == std::floor(x); }

// Scales a row so equal half-spaces compare equal: exact rows by the gcd of their coefficients
// (then the constant may be rounded down, a valid cut for integer points), others by max |a|.
void normalize(Row* row) {
  if (row->exact) {
    int64_t g = 0;
    for (const auto& t : row->terms) g = std::gcd(g, static_cast<int64_t>(std::fabs(t.second)));
    if (g > 1) {
      for (auto& t : row->terms) t.second /= static_cast<double>(g);
      row->c = std::floor(row->c / static_cast<double>(g));
    }
    return;
  }
  double m = 0;
  for (const auto& t : row->terms) m = std::max(m, std::fabs(t.second));
  if (m > 0 && m != 1) {
    for (auto& t : row->terms) t.second /= m;
    row->c /= m;
  }
}

// Range of Σ a·x over the box.
void row_range(const Row& row, const std::vector<Interval>& box, double* lo, double* hi) {
  *lo = row.c;
  *hi = row.c;
  for (const auto& [j, a] : row.terms) {
    if (a > 0) {
      *lo += a * box[j].lo;
      *hi += a * box[j].hi;
    } else if (a < 0) {
      *lo += a * box[j].hi;
      *hi += a * box[j].lo;
    }
  }
}

bool always_true(const Row& row, const std::vector<Interval>& box) {
  double lo, hi;
  row_range(row, box, &lo, &hi);
  return row.strict ? lo > 0 : lo >= 0;
}

bool always_false(const Row& row, const std::vector<Interval>& box) {
  double lo, hi;
  row_range(row, box, &lo, &hi);
  const double slack = row.exact ? 0 : 1e-9 * std::max(1.0, std::fabs(hi));
  return row.strict ? hi + slack <= 0 : hi + slack < 0;
}

// Keeps, among projected rows with the same coefficients, the tightest one.
void deduplicate(std::vector<Row>* rows) {
  std::map<std::vector<std::pair<int, double>>, size_t> seen;
  std::vector<Row> out;
  for (Row& row : *rows) {
    if (row.origin != Row::kProjected) {
      out.push_back(std::move(row));
      continue;
    }
    auto it = seen.find(row.terms);
    if (it == seen.end()) {
      seen.emplace(row.terms, out.size());
      out.push_back(std::move(row));
    } else {
      Row& kept = out[it->second];
      if (row.c < kept.c || (row.c == kept.c && row.strict)) kept = std::move(row);
    }
  }
  *rows = std::move(out);
}

}  // namespace

double Row::coef(int slot) const {
  const auto it = std::lower_bound(terms.begin(), terms.end(), std::make_pair(slot, -HUGE_VAL));
  return it != terms.end() && it->first == slot ? it->second : 0;
}

namespace {
// wp·p + wq·q without slot k (which the weights cancel), zeros dropped.
std::vector<std::pair<int, double>> combine(double wp, const Row& p, double wq, const Row& q,
                                            int k) {
  std::vector<std::pair<int, double>> out;
  out.reserve(p.terms.size() + q.terms.size());
  auto i = p.terms.begin(), j = q.terms.begin();
  while (i != p.terms.end() || j != q.terms.end()) {
    int slot;
    double a = 0;
    if (j == q.terms.end() || (i != p.terms.end() && i->first < j->first)) {
      slot = i->first;
      a = wp * (i++)->second;
    } else if (i == p.terms.end() || j->first < i->first) {
      slot = j->first;
      a = wq * (j++)->second;
    } else {
      slot = i->first;
      a = wp * (i++)->second + wq * (j++)->second;
    }
    if (slot != k && a != 0) out.emplace_back(slot, a);
  }
  return out;
}
}  // namespace

void classify_exactness(Row* row, const std::vector<Interval>& box) {
  bool exact = integral(row->c);
  for (const auto& [j, a] : row->terms) exact = exact && integral(a) && box[j].integer;
  row->exact = exact;
  if (exact && row->strict) {
    row->c -= 1;
    row->strict = false;
  }
}

ProjectionResult project(std::vector<Row> rows, const std::vector<Interval>& box, size_t max_rows) {
  const int n = static_cast<int>(box.size());
  ProjectionResult result;
  result.bounds.resize(n);
  // The rows not yet eliminated, by their last slot; `pending` counts them.
  std::vector<std::vector<Row>> by_last(n);
  size_t pending = 0;
  for (Row& row : rows) {
    normalize(&row);
    if (row.last_slot() < 0 || always_false(row, box)) {
      if (always_false(row, box)) result.infeasible = true;
      continue;
    }
    by_last[row.last_slot()].push_back(std::move(row));
    ++pending;
  }
  for (int k = n - 1; k >= 0; --k) {
    std::vector<Row> lower, upper;
    for (Row& row : by_last[k])
      (row.terms.back().second > 0 ? lower : upper).push_back(std::move(row));
    pending -= by_last[k].size();
    by_last[k] = {};
    for (const auto* side : {&lower, &upper}) {
      for (const Row& row : *side) result.bounds[k].push_back(row);
    }
    std::vector<Row> derived;
    const bool room = pending + lower.size() * upper.size() <= max_rows;
    if (!room && !lower.empty() && !upper.empty()) result.truncated = true;
    if (room) {
      for (const Row& p : lower) {
        for (const Row& q : upper) {
          if (p.origin == Row::kDomain && q.origin == Row::kDomain) continue;
          Row r;
          const double wp = -q.terms.back().second, wq = p.terms.back().second;
          r.terms = combine(wp, p, wq, q, k);
          r.c = wp * p.c + wq * q.c;
          r.strict = p.strict || q.strict;
          r.exact = p.exact && q.exact;
          r.origin = Row::kProjected;
          normalize(&r);
          if (r.last_slot() < 0) {
            const bool holds = r.strict ? r.c > 0 : r.c >= 0;
            const double slack = r.exact ? 0 : 1e-9 * std::max(1.0, std::fabs(r.c));
            if (!holds && !(r.c + slack >= 0 && !r.strict)) result.infeasible = true;
            continue;
          }
          if (always_false(r, box)) {
            result.infeasible = true;
            continue;
          }
          if (always_true(r, box)) continue;
          derived.push_back(std::move(r));
        }
      }
    }
    deduplicate(&derived);
    pending += derived.size();
    for (Row& r : derived) by_last[r.last_slot()].push_back(std::move(r));
  }
  return result;
}

}  // namespace slapo::space
