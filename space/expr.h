#pragma once
// The expression language of space files: constraints and bounds.
//
//   literals   8  0.25  1e3  'fused'  "fused"  true  false
//   arithmetic + - * / // % **   (/ is true division; // and % floor like Python)
//   compare    == != < <= > >=   (chains: 1 <= tp <= 8)   x in [1, 2, 4]   x not in {..}
//   logic      and or not   if A then B   (parentheses group)
//   calls      min(a, b, ...)  max(a, b, ...)  abs(a)
//
// parse_expression() gives an AST with the character offset of every node, so errors can name
// file:line:column. Binding (space/bind.h) resolves names and types.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace slapo::space {

// clang-format off
enum class Op {
  kNumber,  // number (also booleans after binding: type says which)
  kString,
  kName,    // an unresolved name
  kSlot,    // a knob's value, after binding
  kList,    // [a, b, ...]: only on the right of `in`
  kNeg, kNot, kAbs,
  kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow,
  kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn,
  kAnd, kOr, kImplies,
  kMin, kMax,
};
// clang-format on

// The static type of a bound expression.
enum class Type { kUnknown, kNumber, kBool, kString, kList };

struct Expr {
  Op op = Op::kNumber;
  double number = 0;        // kNumber
  bool is_integer = false;  // kNumber: written without a fraction or exponent
  std::string text;         // kName, kString; kSlot: the knob's name (for printing)
  int slot = -1;            // kSlot
  Type type = Type::kUnknown;
  int offset = 0;  // where this node starts in the source text, in characters
  std::vector<std::unique_ptr<Expr>> args;
};
using ExprPtr = std::unique_ptr<Expr>;

// An error inside an expression, with the character offset it points at. Loaders turn the offset
// into file:line:column and add the constraint's name.
class ExpressionError : public Error {
 public:
  ExpressionError(int offset, const std::string& message)
      : Error(ErrorCode::kParse, message), offset_(offset) {}
  int offset() const { return offset_; }

 private:
  int offset_;
};

// Parses `text`. Throws ExpressionError on a syntax error (expected what, found what).
ExprPtr parse_expression(std::string_view text);

ExprPtr clone(const Expr& expr);
ExprPtr make_number(double value, bool is_integer, Type type, int offset);

// Prints an expression back as text, fully parenthesized where needed.
std::string to_text(const Expr& expr);

const char* op_symbol(Op op);

}  // namespace slapo::space
