#include "space/program.h"

#include <algorithm>
#include <cmath>

namespace slapo::space {

double floor_div(double a, double b, bool* fault) {
  if (b == 0) {
    *fault = true;
    return 0;
  }
  return std::floor(a / b);
}

double python_mod(double a, double b, bool* fault) {
  if (b == 0) {
    *fault = true;
    return 0;
  }
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

Program Program::compile(const Expr& bound) {
  Program p;
  p.emit(bound, 1);
  std::sort(p.slots_read_.begin(), p.slots_read_.end());
  p.slots_read_.erase(std::unique(p.slots_read_.begin(), p.slots_read_.end()), p.slots_read_.end());
  return p;
}

void Program::emit(const Expr& e, int depth) {
  if (depth + static_cast<int>(e.args.size()) > kMaxStack) {
    throw ExpressionError(e.offset, "expression nests too deeply");
  }
  switch (e.op) {
    case Op::kNumber: code_.push_back({Code::kConst, 0, 0, e.number}); return;
    case Op::kSlot:
      code_.push_back({Code::kLoad, e.slot, 0, 0});
      slots_read_.push_back(e.slot);
      return;
    case Op::kIn:
    case Op::kNotIn: {
      // Binding leaves only constant lists here (non-constant ones become == chains).
      emit(*e.args[0], depth);
      const Expr& list = *e.args[1];
      const int32_t start = static_cast<int32_t>(pool_.size());
      for (const auto& item : list.args) {
        if (item->op != Op::kNumber)
          throw ExpressionError(item->offset, "list items must be constants");
        pool_.push_back(item->number);
      }
      code_.push_back({e.op == Op::kIn ? Code::kIn : Code::kNotIn, start,
                       static_cast<int32_t>(list.args.size()), 0});
      return;
    }
    default: break;
  }
  for (size_t i = 0; i < e.args.size(); ++i) emit(*e.args[i], depth + static_cast<int>(i));
  Code code;
  switch (e.op) {
    case Op::kNeg: code = Code::kNeg; break;
    case Op::kNot: code = Code::kNot; break;
    case Op::kAbs: code = Code::kAbs; break;
    case Op::kAdd: code = Code::kAdd; break;
    case Op::kSub: code = Code::kSub; break;
    case Op::kMul: code = Code::kMul; break;
    case Op::kDiv: code = Code::kDiv; break;
    case Op::kFloorDiv: code = Code::kFloorDiv; break;
    case Op::kMod: code = Code::kMod; break;
    case Op::kPow: code = Code::kPow; break;
    case Op::kEq: code = Code::kEq; break;
    case Op::kNe: code = Code::kNe; break;
    case Op::kLt: code = Code::kLt; break;
    case Op::kLe: code = Code::kLe; break;
    case Op::kGt: code = Code::kGt; break;
    case Op::kGe: code = Code::kGe; break;
    case Op::kAnd: code = Code::kAnd; break;
    case Op::kOr: code = Code::kOr; break;
    case Op::kImplies: code = Code::kImplies; break;
    case Op::kMin: code = Code::kMin; break;
    case Op::kMax: code = Code::kMax; break;
    default:
      throw ExpressionError(e.offset, std::string("cannot evaluate '") + op_symbol(e.op) +
                                          "' here (unbound name or misplaced list)");
  }
  code_.push_back({code, static_cast<int32_t>(e.args.size()), 0, 0});
}

double Program::eval(const double* slots, bool* fault) const {
  double stack[kMaxStack];
  int top = -1;  // index of the top element
  for (const Instr& in : code_) {
    switch (in.code) {
      case Code::kConst: stack[++top] = in.value; break;
      case Code::kLoad: stack[++top] = slots[in.arg]; break;
      case Code::kNeg: stack[top] = -stack[top]; break;
      case Code::kNot: stack[top] = stack[top] == 0 ? 1 : 0; break;
      case Code::kAbs: stack[top] = std::fabs(stack[top]); break;
      case Code::kAdd:
        --top;
        stack[top] += stack[top + 1];
        break;
      case Code::kSub:
        --top;
        stack[top] -= stack[top + 1];
        break;
      case Code::kMul:
        --top;
        stack[top] *= stack[top + 1];
        break;
      case Code::kDiv:
        --top;
        if (stack[top + 1] == 0) {
          *fault = true;
          stack[top] = 0;
        } else {
          stack[top] /= stack[top + 1];
        }
        break;
      case Code::kFloorDiv:
        --top;
        stack[top] = floor_div(stack[top], stack[top + 1], fault);
        break;
      case Code::kMod:
        --top;
        stack[top] = python_mod(stack[top], stack[top + 1], fault);
        break;
      case Code::kPow: {
        --top;
        const double r = std::pow(stack[top], stack[top + 1]);
        if (!std::isfinite(r)) *fault = true;
        stack[top] = r;
        break;
      }
      case Code::kEq:
        --top;
        stack[top] = stack[top] == stack[top + 1];
        break;
      case Code::kNe:
        --top;
        stack[top] = stack[top] != stack[top + 1];
        break;
      case Code::kLt:
        --top;
        stack[top] = stack[top] < stack[top + 1];
        break;
      case Code::kLe:
        --top;
        stack[top] = stack[top] <= stack[top + 1];
        break;
      case Code::kGt:
        --top;
        stack[top] = stack[top] > stack[top + 1];
        break;
      case Code::kGe:
        --top;
        stack[top] = stack[top] >= stack[top + 1];
        break;
      case Code::kAnd:
        --top;
        stack[top] = (stack[top] != 0 && stack[top + 1] != 0);
        break;
      case Code::kOr:
        --top;
        stack[top] = (stack[top] != 0 || stack[top + 1] != 0);
        break;
      case Code::kImplies:
        --top;
        stack[top] = (stack[top] == 0 || stack[top + 1] != 0);
        break;
      case Code::kMin:
      case Code::kMax: {
        const int n = in.arg;
        double r = stack[top - n + 1];
        for (int i = 1; i < n; ++i) {
          const double x = stack[top - n + 1 + i];
          r = in.code == Code::kMin ? std::min(r, x) : std::max(r, x);
        }
        top -= n - 1;
        stack[top] = r;
        break;
      }
      case Code::kIn:
      case Code::kNotIn: {
        const double x = stack[top];
        const double* values = pool_.data() + in.arg;
        bool found = false;
        for (int i = 0; i < in.count; ++i) found = found || values[i] == x;
        stack[top] = (in.code == Code::kIn) == found;
        break;
      }
    }
  }
  return stack[top];
}

}  // namespace slapo::space
