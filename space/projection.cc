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
    for (double x : row->a) g = std::gcd(g, static_cast<int64_t>(std::fabs(x)));
    if (g > 1) {
      for (double& x : row->a) x /= static_cast<double>(g);
      row->c = std::floor(row->c / static_cast<double>(g));
    }
    return;
  }
  double m = 0;
  for (double x : row->a) m = std::max(m, std::fabs(x));
  if (m > 0 && m != 1) {
    for (double& x : row->a) x /= m;
    row->c /= m;
  }
}

// Range of Σ a·x over the box.
void row_range(const Row& row, const std::vector<Interval>& box, double* lo, double* hi) {
  *lo = row.c;
  *hi = row.c;
  for (size_t j = 0; j < row.a.size(); ++j) {
    const double a = row.a[j];
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
  std::map<std::vector<double>, size_t> seen;
  std::vector<Row> out;
  for (Row& row : *rows) {
    if (row.origin != Row::kProjected) {
      out.push_back(std::move(row));
      continue;
    }
    auto it = seen.find(row.a);
    if (it == seen.end()) {
      seen.emplace(row.a, out.size());
      out.push_back(std::move(row));
    } else {
      Row& kept = out[it->second];
      if (row.c < kept.c || (row.c == kept.c && row.strict)) kept = std::move(row);
    }
  }
  *rows = std::move(out);
}

}  // namespace

int Row::last_slot() const {
  for (int j = static_cast<int>(a.size()) - 1; j >= 0; --j) {
    if (a[j] != 0) return j;
  }
  return -1;
}

void classify_exactness(Row* row, const std::vector<Interval>& box) {
  bool exact = integral(row->c);
  for (size_t j = 0; j < row->a.size() && exact; ++j) {
    if (row->a[j] != 0) exact = integral(row->a[j]) && box[j].integer;
  }
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
  for (Row& row : rows) normalize(&row);
  std::vector<Row> pool;
  for (Row& row : rows) {
    if (row.last_slot() < 0 || always_false(row, box)) {
      if (always_false(row, box)) result.infeasible = true;
      continue;
    }
    pool.push_back(std::move(row));
  }
  for (int k = n - 1; k >= 0; --k) {
    std::vector<Row> lower, upper, rest;
    for (Row& row : pool) {
      if (row.last_slot() != k)
        rest.push_back(std::move(row));
      else if (row.a[k] > 0)
        lower.push_back(std::move(row));
      else
        upper.push_back(std::move(row));
    }
    for (const auto* side : {&lower, &upper}) {
      for (const Row& row : *side) result.bounds[k].push_back(row);
    }
    std::vector<Row> derived;
    const bool room = rest.size() + lower.size() * upper.size() <= max_rows;
    if (!room && !lower.empty() && !upper.empty()) result.truncated = true;
    if (room) {
      for (const Row& p : lower) {
        for (const Row& q : upper) {
          if (p.origin == Row::kDomain && q.origin == Row::kDomain) continue;
          Row r;
          r.a.resize(n);
          const double wp = -q.a[k], wq = p.a[k];
          for (int j = 0; j < n; ++j) r.a[j] = wp * p.a[j] + wq * q.a[j];
          r.a[k] = 0;
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
    pool = std::move(rest);
    for (Row& r : derived) pool.push_back(std::move(r));
  }
  return result;
}

}  // namespace slapo::space
