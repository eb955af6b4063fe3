#include <gtest/gtest.h>

#include <cmath>

#include "space/bind.h"
#include "space/expr.h"
#include "space/program.h"

namespace slapo::space {
namespace {

SymbolTable symbols() {
  static const std::vector<std::string> kChoices = {"naive", "fused"};
  SymbolTable t;
  t["world_size"] = {Symbol::Kind::kParameter, Value(int64_t{8})};
  t["ratio"] = {Symbol::Kind::kParameter, Value(0.5)};
  t["device"] = {Symbol::Kind::kParameter, Value(std::string("cpu"))};
  Symbol x;
  x.kind = Symbol::Kind::kKnob;
  x.slot = 0;
  t["x"] = x;
  x.slot = 1;
  t["y"] = x;
  Symbol attn;
  attn.kind = Symbol::Kind::kKnob;
  attn.slot = 2;
  attn.type = Type::kString;
  attn.choices = &kChoices;
  t["attn"] = attn;
  return t;
}

// Evaluates `text` with x, y, attn in slots 0, 1, 2. Returns NaN on a fault.
double eval(const std::string& text, double x = 0, double y = 0, double attn = 0) {
  ExprPtr bound = bind_expression(*parse_expression(text), symbols());
  const double slots[] = {x, y, attn};
  bool fault = false;
  const double v = Program::compile(*bound).eval(slots, &fault);
  return fault ? std::nan("") : v;
}

std::string error_of(const std::string& text, int* offset = nullptr) {
  try {
    Program::compile(*bind_condition(*parse_expression(text), symbols()));
  } catch (const ExpressionError& e) {
    if (offset) *offset = e.offset();
    return e.what();
  }
  return "";
}

TEST(ExprTest, PrecedenceFollowsPython) {
  EXPECT_EQ(eval("1 + 2 * 3"), 7);
  EXPECT_EQ(eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval("-2 ** 2"), -4);
  EXPECT_EQ(eval("2 ** 3 ** 2"), 512);
  EXPECT_EQ(eval("2 ** -1"), 0.5);
  EXPECT_EQ(eval("not 1 < 2 or 3 > 2"), 1);
  EXPECT_EQ(eval("1 < 2 and 2 < 1 or 1 == 1"), 1);
  EXPECT_EQ(to_text(*parse_expression("a - (b - c)")), "a - (b - c)");
  EXPECT_EQ(to_text(*parse_expression("(a - b) - c")), "a - b - c");
}

TEST(ExprTest, DivisionAndModuloFloorLikePython) {
  EXPECT_EQ(eval("7 // 2"), 3);
  EXPECT_EQ(eval("-7 // 2"), -4);
  EXPECT_EQ(eval("-7 % 3"), 2);
  EXPECT_EQ(eval("7 % -3"), -2);
  EXPECT_EQ(eval("7 / 2"), 3.5);
  EXPECT_TRUE(std::isnan(eval("x % y", 4, 0)));  // a zero divisor at run time is a fault
  EXPECT_TRUE(std::isnan(eval("x / y", 4, 0)));
  EXPECT_TRUE(std::isnan(eval("x // y", 4, 0)));
}

TEST(ExprTest, ComparisonsChainAndMembership) {
  EXPECT_EQ(eval("1 <= x <= 8", 8), 1);
  EXPECT_EQ(eval("1 <= x <= 8", 9), 0);
  EXPECT_EQ(eval("x in [1, 2, 4]", 4), 1);
  EXPECT_EQ(eval("x in {1, 2, 4}", 3), 0);
  EXPECT_EQ(eval("x not in [1, 2]", 3), 1);
  EXPECT_EQ(eval("x in [y, y + 1]", 5, 4), 1);  // non-constant items
  EXPECT_EQ(eval("min(x, y, 3) + max(x, y) + abs(-2)", 1, 5), 1 + 5 + 2);
}

TEST(ExprTest, ImplicationAndParameters) {
  EXPECT_EQ(eval("if x > 2 then y == 0", 1, 7), 1);
  EXPECT_EQ(eval("if x > 2 then y == 0", 3, 7), 0);
  EXPECT_EQ(eval("x <= world_size * ratio", 4), 1);
  EXPECT_EQ(eval("x <= world_size * ratio", 5), 0);
  EXPECT_EQ(eval("device == 'cpu' and true"), 1);
}

TEST(ExprTest, ChoicesCompareByName) {
  EXPECT_EQ(eval("attn == 'fused'", 0, 0, 1), 1);
  EXPECT_EQ(eval("attn != 'fused'", 0, 0, 1), 0);
  EXPECT_EQ(eval("attn in ['naive']", 0, 0, 0), 1);
  EXPECT_NE(error_of("attn == 'fussed'").find("no choice 'fussed' (choices: naive, fused)"),
            std::string::npos);
}

TEST(ExprTest, ConstantsFoldAndParametersDisappear) {
  ExprPtr bound = bind_expression(*parse_expression("x <= world_size // 2 + 1"), symbols());
  EXPECT_EQ(to_text(*bound), "x <= 5");
  int offset = -1;
  EXPECT_NE(error_of("x <= world_size // 0", &offset).find("division by zero"), std::string::npos);
}

TEST(ExprTest, SyntaxErrorsSayWhatWasExpectedWhere) {
  int offset = -1;
  EXPECT_NE(error_of("x <= (y + 1", &offset).find("expected ')'"), std::string::npos);
  EXPECT_EQ(offset, 11);
  EXPECT_NE(error_of("x = 1", &offset).find("use '=='"), std::string::npos);
  EXPECT_EQ(offset, 2);
  EXPECT_NE(error_of("x <= 1 2", &offset).find("found number '2'"), std::string::npos);
  EXPECT_NE(error_of("'unterminated", &offset).find("unterminated string"), std::string::npos);
  EXPECT_NE(error_of("x $ 1", &offset).find("unexpected character '$'"), std::string::npos);
  EXPECT_NE(error_of("if x > 1 y", &offset).find("expected 'then'"), std::string::npos);
  EXPECT_NE(error_of("foo(x) > 1").find("unknown function 'foo'"), std::string::npos);
  EXPECT_NE(error_of("abs(x, y) > 1").find("exactly one argument"), std::string::npos);
  EXPECT_NE(error_of("x <= ").find("expected a number, a name or '('"), std::string::npos);
}

TEST(ExprTest, NameAndTypeErrors) {
  int offset = -1;
  EXPECT_NE(error_of("x <= world_sise", &offset)
                .find("unknown name 'world_sise' (did you mean 'world_size'?)"),
            std::string::npos);
  EXPECT_EQ(offset, 5);
  EXPECT_NE(error_of("x + 1").find("expected a condition"), std::string::npos);
  EXPECT_NE(error_of("x and y > 1").find("'and' needs a condition, found a number"),
            std::string::npos);
  EXPECT_NE(error_of("attn + 1 > 0").find("needs a number, found a string"), std::string::npos);
  EXPECT_NE(error_of("attn < 'fused'").find("needs a number"), std::string::npos);
  EXPECT_NE(error_of("x == 'fused'").find("compares a number with a string"), std::string::npos);
}

TEST(ExprTest, TooDeepNestingIsAnError) {
  std::string text = "x";
  for (int i = 0; i < 100; ++i) text = "(x + " + text + ")";  // a 100-deep evaluation stack
  EXPECT_NE(error_of(text + " > 0").find("nests too deeply"), std::string::npos);
  // Hostile input must not overflow the parser's own stack.
  EXPECT_NE(error_of(std::string(5000, '(') + "x").find("nests too deeply"), std::string::npos);
  EXPECT_NE(error_of(std::string(5000, '-') + "x > 0").find("nests too deeply"), std::string::npos);
  EXPECT_NE(error_of(std::string(20000, ' ') + "x > 0").find("longer than 10000 characters"),
            std::string::npos);
  std::string nots;
  for (int i = 0; i < 2000; ++i) nots += "not ";
  EXPECT_NE(error_of(nots + "x > 0").find("nests too deeply"), std::string::npos);
}

}  // namespace
}  // namespace slapo::space
