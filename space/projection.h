#pragma once
// Fourier–Motzkin projection of a system of linear inequalities over the knobs, level by level.
//
// Knob k's bounds are the rows whose last non-zero coefficient is at k: affine in the knobs
// before it. Eliminating k from the system (combining each of its lower bounds with each upper
// bound) yields rows over the earlier knobs: the real shadow of the later levels, so the loop
// nest does not enter a prefix that has no real completion. Projected rows are only pruning: if
// the system grows past `max_rows`, projection stops adding them and stays correct. Rows are
// sparse and kept in buckets by their last slot, so the work is linear in the rows and their
// terms, not in rows × knobs.

#include <cstddef>
#include <utility>
#include <vector>

namespace slapo::space {

// Σ a·x[slot] + c ≥ 0 (> 0 when strict), sparse: a space of 10,000 knobs has rows of two terms.
struct Row {
  std::vector<std::pair<int, double>> terms;  // (slot, a): ascending slots, no zero coefficient
  double c = 0;
  bool strict = false;
  // Integer coefficients and constant over integer-valued knobs: bounds are computed exactly in
  // integers (strict rows are turned into non-strict ones with c - 1).
  bool exact = false;
  int origin = -1;  // index of the constraint part it came from; kProjected or kDomain otherwise

  static constexpr int kProjected = -1;
  static constexpr int kDomain = -2;

  int last_slot() const { return terms.empty() ? -1 : terms.back().first; }
  double coef(int slot) const;  // 0 when the row does not use the slot
};

struct Interval {
  double lo = 0;
  double hi = 0;
  bool integer = false;  // the knob takes integer values only
};

struct ProjectionResult {
  std::vector<std::vector<Row>> bounds;  // per slot: the rows whose last slot is that one
  bool infeasible = false;               // a row is false everywhere in the box
  bool truncated = false;                // projection stopped at max_rows
};

// Normalizes, deduplicates and projects `rows` over the knob box. Rows that hold everywhere in the
// box are dropped (except original ones: they are kept, the caller decides).
ProjectionResult project(std::vector<Row> rows, const std::vector<Interval>& box,
                         size_t max_rows = 4096);

// Makes an original row exact when it can be (integer coefficients over integer knobs).
void classify_exactness(Row* row, const std::vector<Interval>& box);

}  // namespace slapo::space
