// libFuzzer target: the expression parser, binder, affine analysis and evaluator must never
// crash, hang or read out of bounds, whatever the input; errors must be ExpressionError.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "space/affine.h"
#include "space/bind.h"
#include "space/expr.h"
#include "space/program.h"

using namespace slapo::space;

namespace {
const SymbolTable& symbols() {
  static const std::vector<std::string> kChoices = {"naive", "fused"};
  static const SymbolTable table = [] {
    SymbolTable t;
    t["world_size"] = {Symbol::Kind::kParameter, slapo::Value(int64_t{8})};
    t["ratio"] = {Symbol::Kind::kParameter, slapo::Value(0.25)};
    t["name"] = {Symbol::Kind::kParameter, slapo::Value(std::string("gpt"))};
    const char* numeric[] = {"tp", "pp", "dp", "bs"};
    for (int i = 0; i < 4; ++i) {
      Symbol s{Symbol::Kind::kKnob};
      s.slot = i;
      t[numeric[i]] = s;
    }
    Symbol attn{Symbol::Kind::kKnob};
    attn.slot = 4;
    attn.type = Type::kString;
    attn.choices = &kChoices;
    t["attn"] = attn;
    Symbol flag{Symbol::Kind::kKnob};
    flag.slot = 5;
    flag.type = Type::kBool;
    t["flag"] = flag;
    Symbol cuts{Symbol::Kind::kKnob};
    cuts.slot = 6;
    cuts.is_cut_points = true;
    t["cuts"] = cuts;
    return t;
  }();
  return table;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    ExprPtr parsed = parse_expression(text);
    (void)to_text(*parsed);
    ExprPtr bound = bind_expression(*parsed, symbols());
    const Program program = Program::compile(*bound);
    const double slots[][7] = {
        {1, 2, 4, 16, 0, 1, 0}, {0, 0, 0, 0, 1, 0, 0}, {-3, 7, 1e300, 0.5, 1, 1, 0}};
    for (const auto& s : slots) {
      bool fault = false;
      (void)program.eval(s, &fault);
    }
    if (bound->type == Type::kBool) {
      for (ConstraintPart& part : split_constraint(std::move(bound))) {
        (void)Program::compile(*part.expr);
      }
    }
  } catch (const ExpressionError&) {
    // Rejecting bad input with a message is the expected outcome.
  }
  return 0;
}
