#pragma once
// A bound expression compiled to a small stack program over knob values.
//
// Every knob value lives in a slot as a double: numbers as themselves, booleans as 0/1, choices
// as the index of the choice. Evaluating a guard is a tight loop with no allocation, which is
// what lets enumeration reach tens of millions of configurations per second.

#include <cstdint>
#include <vector>

#include "space/expr.h"

namespace slapo::space {

class Program {
 public:
  Program() = default;
  // Compiles a bound expression (space/bind.h). Throws ExpressionError if it nests too deeply.
  static Program compile(const Expr& bound);

  // Evaluates with knob values in `slots`. `*fault` is set when a division or modulo by zero
  // (or another operation without a finite result) happened; the caller treats it as "false".
  double eval(const double* slots, bool* fault) const;
  // True when the program evaluates to non-zero without a fault.
  bool holds(const double* slots) const {
    bool fault = false;
    const double v = eval(slots, &fault);
    return !fault && v != 0;
  }

  // The knob slots this program reads, ascending, without repeats.
  const std::vector<int>& slots_read() const { return slots_read_; }
  bool empty() const { return code_.empty(); }

  static constexpr int kMaxStack = 64;

 private:
  // clang-format off
  enum class Code : uint8_t {
    kConst, kLoad, kNeg, kNot, kAbs,
    kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow,
    kEq, kNe, kLt, kLe, kGt, kGe,
    kAnd, kOr, kImplies,
    kMin, kMax, kIn, kNotIn,
  };
  // clang-format on
  struct Instr {
    Code code;
    int32_t arg;    // kLoad: slot; kMin/kMax: operand count; kIn/kNotIn: start in pool_
    int32_t count;  // kIn/kNotIn: number of values in pool_
    double value;   // kConst
  };
  void emit(const Expr& e, int depth);

  std::vector<Instr> code_;
  std::vector<double> pool_;  // the constant lists of `in`
  std::vector<int> slots_read_;
};

// Python's floor division and modulo on doubles; *fault set on a zero divisor.
double floor_div(double a, double b, bool* fault);
double python_mod(double a, double b, bool* fault);

}  // namespace slapo::space
