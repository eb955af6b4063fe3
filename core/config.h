#pragma once
// Config: one point of a search space, knob name → value, in the space's knob order.
// The tuner and the schedule engine meet only through Config and TrialResult.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/value.h"

namespace slapo {

class Config {
 public:
  Config() = default;

  // Sets `name` to `value`; a new name is appended (order is kept), an existing one overwritten.
  void set(const std::string& name, Value value);
  // Returns the value of `name`, or nullptr when absent.
  const Value* find(const std::string& name) const;
  // REQUIRES: `name` is present; otherwise throws Error(kNotFound) naming it.
  const Value& at(const std::string& name) const;
  bool contains(const std::string& name) const { return find(name) != nullptr; }

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }

  // Canonical JSON: keys sorted, no spaces, integers as integers, floats with a decimal point,
  // cut points as arrays. Two configs are the same point iff their canonical JSON is equal.
  std::string canonical_json() const;
  // Stable 64-bit FNV-1a hash of canonical_json(), as 16 hex digits.
  std::string hash() const;
  // JSON in knob order, for people: {"batch_size": 16, "attn": "fused"}.
  std::string to_json() const;
  // "batch_size=16 ckpt_ratio=0.5 attn=fused".
  std::string to_string() const;

  // Parses a JSON object of scalars and integer arrays. Throws Error(kParse) naming `origin`.
  static Config from_json(const std::string& text, const std::string& origin = "config");

  friend bool operator==(const Config& a, const Config& b) { return a.entries_ == b.entries_; }
  friend bool operator!=(const Config& a, const Config& b) { return !(a == b); }

 private:
  std::vector<std::pair<std::string, Value>> entries_;
};

// FNV-1a 64-bit hash of bytes, as 16 lowercase hex digits (stable across platforms and runs).
std::string stable_hash(const std::string& bytes);

}  // namespace slapo
