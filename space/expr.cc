#include "space/expr.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "core/value.h"

namespace slapo::space {

using slapo::to_string;

namespace {

enum class Tok { kEnd, kNumber, kString, kIdent, kOp };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;
  double number = 0;
  bool is_integer = false;
  int offset = 0;
};

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::kEnd: return "the end of the expression";
    case Tok::kNumber: return "number '" + t.text + "'";
    case Tok::kString: return "string '" + t.text + "'";
    case Tok::kIdent: return "'" + t.text + "'";
    case Tok::kOp: return "'" + t.text + "'";
  }
  return "?";
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  Token next() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    Token t;
    t.offset = static_cast<int>(pos_);
    if (pos_ >= text_.size()) return t;
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && pos_ + 1 < text_.size() &&
         std::isdigit(static_cast<unsigned char>(text_[pos_ + 1])))) {
      return number(t);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = pos_;
      while (end < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_')) {
        ++end;
      }
      t.kind = Tok::kIdent;
      t.text = std::string(text_.substr(pos_, end - pos_));
      pos_ = end;
      return t;
    }
    if (c == '\'' || c == '"') {
      size_t end = text_.find(c, pos_ + 1);
      if (end == std::string_view::npos) {
        throw ExpressionError(t.offset,
                              "unterminated string: missing closing " + std::string(1, c));
      }
      t.kind = Tok::kString;
      t.text = std::string(text_.substr(pos_ + 1, end - pos_ - 1));
      pos_ = end + 1;
      return t;
    }
    static const char* kTwoChar[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : kTwoChar) {
      if (text_.substr(pos_, 2) == op) {
        t.kind = Tok::kOp;
        t.text = op;
        pos_ += 2;
        return t;
      }
    }
    if (std::string_view("+-*/%<>()[]{},").find(c) != std::string_view::npos) {
      t.kind = Tok::kOp;
      t.text = std::string(1, c);
      ++pos_;
      return t;
    }
    if (c == '=') throw ExpressionError(t.offset, "unexpected '=': use '==' to compare");
    throw ExpressionError(t.offset, std::string("unexpected character '") + c + "'");
  }

 private:
  Token number(Token t) {
    size_t end = pos_;
    bool is_integer = true;
    while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
    if (end < text_.size() && text_[end] == '.') {
      is_integer = false;
      ++end;
      while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
    }
    if (end < text_.size() && (text_[end] == 'e' || text_[end] == 'E')) {
      size_t exp = end + 1;
      if (exp < text_.size() && (text_[exp] == '+' || text_[exp] == '-')) ++exp;
      if (exp < text_.size() && std::isdigit(static_cast<unsigned char>(text_[exp]))) {
        is_integer = false;
        end = exp;
        while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
      }
    }
    if (end < text_.size() &&
        (std::isalpha(static_cast<unsigned char>(text_[end])) || text_[end] == '_')) {
      throw ExpressionError(static_cast<int>(end), "a name cannot start with a digit");
    }
    t.kind = Tok::kNumber;
    t.text = std::string(text_.substr(pos_, end - pos_));
    t.number = std::strtod(t.text.c_str(), nullptr);
    t.is_integer = is_integer && std::fabs(t.number) < 9007199254740992.0;
    pos_ = end;
    return t;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

bool is_keyword(const std::string& s) {
  static const char* kKeywords[] = {"and",  "or",   "not",   "in",   "if",
                                    "then", "true", "false", "True", "False"};
  for (const char* k : kKeywords) {
    if (s == k) return true;
  }
  return false;
}

// Precedence climbing, lowest first: if/then, or, and, not, comparisons, + -, * / // %,
// unary -, **, primary.
class Parser {
 public:
  explicit Parser(std::string_view text) : lexer_(text) { advance(); }

  ExprPtr parse() {
    ExprPtr e = implication();
    if (cur_.kind != Tok::kEnd) {
      throw ExpressionError(cur_.offset,
                            "expected an operator or the end, found " + describe(cur_));
    }
    return e;
  }

 private:
  void advance() { cur_ = lexer_.next(); }
  bool at_op(const char* op) const { return cur_.kind == Tok::kOp && cur_.text == op; }
  bool at_ident(const char* word) const { return cur_.kind == Tok::kIdent && cur_.text == word; }
  void expect_op(const char* op, const char* context) {
    if (!at_op(op)) {
      throw ExpressionError(cur_.offset, std::string("expected '") + op + "' " + context +
                                             ", found " + describe(cur_));
    }
    advance();
  }

  static ExprPtr node(Op op, int offset) {
    auto e = std::make_unique<Expr>();
    e->op = op;
    e->offset = offset;
    return e;
  }
  static ExprPtr binary(Op op, ExprPtr a, ExprPtr b, int offset) {
    auto e = node(op, offset);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr implication() {
    if (at_ident("if")) {
      const int offset = cur_.offset;
      advance();
      ExprPtr condition = disjunction();
      if (!at_ident("then")) {
        throw ExpressionError(
            cur_.offset, "expected 'then' after the condition of 'if', found " + describe(cur_));
      }
      advance();
      ExprPtr consequence = implication();
      return binary(Op::kImplies, std::move(condition), std::move(consequence), offset);
    }
    return disjunction();
  }

  ExprPtr disjunction() {
    ExprPtr e = conjunction();
    while (at_ident("or")) {
      const int offset = cur_.offset;
      advance();
      e = binary(Op::kOr, std::move(e), conjunction(), offset);
    }
    return e;
  }

  ExprPtr conjunction() {
    ExprPtr e = negation();
    while (at_ident("and")) {
      const int offset = cur_.offset;
      advance();
      e = binary(Op::kAnd, std::move(e), negation(), offset);
    }
    return e;
  }

  ExprPtr negation() {
    if (at_ident("not")) {
      if (++prefix_run_ > kMaxDepth)
        throw ExpressionError(cur_.offset, "expression nests too deeply");
      auto e = node(Op::kNot, cur_.offset);
      advance();
      e->args.push_back(negation());
      return e;
    }
    return comparison();
  }

  bool comparison_op(Op* op) {
    static const struct {
      const char* text;
      Op op;
    } kOps[] = {{"==", Op::kEq}, {"!=", Op::kNe}, {"<", Op::kLt},
                {"<=", Op::kLe}, {">", Op::kGt},  {">=", Op::kGe}};
    if (cur_.kind == Tok::kOp) {
      for (const auto& entry : kOps) {
        if (cur_.text == entry.text) {
          *op = entry.op;
          return true;
        }
      }
    }
    if (at_ident("in")) {
      *op = Op::kIn;
      return true;
    }
    return false;
  }

  // a < b <= c means (a < b) and (b <= c), as in Python.
  ExprPtr comparison() {
    ExprPtr left = additive();
    ExprPtr result;
    const Expr* previous_right = nullptr;
    for (;;) {
      Op op;
      const int offset = cur_.offset;
      if (at_ident("not")) {
        advance();
        if (!at_ident("in")) {
          throw ExpressionError(cur_.offset,
                                "expected 'in' after 'not' here, found " + describe(cur_));
        }
        op = Op::kNotIn;
      } else if (!comparison_op(&op)) {
        break;
      }
      advance();
      ExprPtr right = (op == Op::kIn || op == Op::kNotIn) ? list_or_additive() : additive();
      ExprPtr lhs = previous_right ? clone(*previous_right) : std::move(left);
      const Expr* right_raw = right.get();
      ExprPtr cmp = binary(op, std::move(lhs), std::move(right), offset);
      result =
          result ? binary(Op::kAnd, std::move(result), std::move(cmp), offset) : std::move(cmp);
      previous_right = right_raw;
    }
    return result ? std::move(result) : std::move(left);
  }

  ExprPtr list_or_additive() {
    if (at_op("[") || at_op("{")) {
      const char* close = at_op("[") ? "]" : "}";
      auto list = node(Op::kList, cur_.offset);
      advance();
      if (!at_op(close)) {
        for (;;) {
          list->args.push_back(additive());
          if (at_op(",")) {
            advance();
            if (at_op(close)) break;
            continue;
          }
          break;
        }
      }
      expect_op(close, "to close the list");
      return list;
    }
    return additive();
  }

  ExprPtr additive() {
    ExprPtr e = multiplicative();
    while (at_op("+") || at_op("-")) {
      const Op op = at_op("+") ? Op::kAdd : Op::kSub;
      const int offset = cur_.offset;
      advance();
      e = binary(op, std::move(e), multiplicative(), offset);
    }
    return e;
  }

  ExprPtr multiplicative() {
    ExprPtr e = unary();
    for (;;) {
      Op op;
      if (at_op("*"))
        op = Op::kMul;
      else if (at_op("/"))
        op = Op::kDiv;
      else if (at_op("//"))
        op = Op::kFloorDiv;
      else if (at_op("%"))
        op = Op::kMod;
      else
        break;
      const int offset = cur_.offset;
      advance();
      e = binary(op, std::move(e), unary(), offset);
    }
    return e;
  }

  ExprPtr unary() {
    if (at_op("-") || at_op("+") || at_ident("not")) {
      // Chains of prefix operators recurse without reaching primary(): count them too.
      if (++prefix_run_ > kMaxDepth)
        throw ExpressionError(cur_.offset, "expression nests too deeply");
    } else {
      prefix_run_ = 0;
    }
    if (at_op("-") || at_op("+")) {
      const bool negate = at_op("-");
      const int offset = cur_.offset;
      advance();
      ExprPtr operand = unary();
      if (!negate) return operand;
      auto e = node(Op::kNeg, offset);
      e->args.push_back(std::move(operand));
      return e;
    }
    return power();
  }

  // ** binds tighter than unary minus on its left and is right-associative: -2**2 == -4.
  ExprPtr power() {
    ExprPtr base = primary();
    if (at_op("**")) {
      const int offset = cur_.offset;
      advance();
      return binary(Op::kPow, std::move(base), unary(), offset);
    }
    return base;
  }

  ExprPtr primary() {
    // Every nested construct passes through here: bound the recursion on hostile input.
    struct DepthGuard {
      int* depth;
      explicit DepthGuard(int* d, int offset) : depth(d) {
        if (++*depth > kMaxDepth) throw ExpressionError(offset, "expression nests too deeply");
      }
      ~DepthGuard() { --*depth; }
    } guard(&depth_, cur_.offset);
    const Token t = cur_;
    switch (t.kind) {
      case Tok::kNumber: {
        advance();
        return make_number(t.number, t.is_integer, Type::kNumber, t.offset);
      }
      case Tok::kString: {
        advance();
        auto e = node(Op::kString, t.offset);
        e->text = t.text;
        return e;
      }
      case Tok::kIdent: {
        if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
          advance();
          return make_number(t.text[0] == 't' || t.text[0] == 'T' ? 1 : 0, true, Type::kBool,
                             t.offset);
        }
        if (is_keyword(t.text)) {
          throw ExpressionError(t.offset, "expected a value, found keyword '" + t.text + "'");
        }
        advance();
        if (at_op("(")) return call(t);
        auto e = node(Op::kName, t.offset);
        e->text = t.text;
        return e;
      }
      case Tok::kOp:
        if (t.text == "(") {
          advance();
          ExprPtr e = implication();
          expect_op(")", "to close '('");
          return e;
        }
        if (t.text == "[" || t.text == "{") {
          throw ExpressionError(t.offset, "a list may only follow 'in'");
        }
        break;
      case Tok::kEnd: break;
    }
    throw ExpressionError(t.offset, "expected a number, a name or '(', found " + describe(t));
  }

  ExprPtr call(const Token& name) {
    Op op;
    if (name.text == "min")
      op = Op::kMin;
    else if (name.text == "max")
      op = Op::kMax;
    else if (name.text == "abs")
      op = Op::kAbs;
    else
      throw ExpressionError(name.offset,
                            "unknown function '" + name.text + "' (known: min, max, abs)");
    auto e = node(op, name.offset);
    advance();  // '('
    if (!at_op(")")) {
      for (;;) {
        e->args.push_back(implication());
        if (!at_op(",")) break;
        advance();
      }
    }
    expect_op(")", ("to close the arguments of " + name.text + "()").c_str());
    if (op == Op::kAbs && e->args.size() != 1) {
      throw ExpressionError(name.offset, "abs() takes exactly one argument");
    }
    if (op != Op::kAbs && e->args.size() < 2) {
      throw ExpressionError(name.offset, name.text + "() takes at least two arguments");
    }
    return e;
  }

  static constexpr int kMaxDepth = 200;
  Lexer lexer_;
  Token cur_;
  int depth_ = 0;
  int prefix_run_ = 0;
};

int precedence(Op op) {
  switch (op) {
    case Op::kImplies: return 1;
    case Op::kOr: return 2;
    case Op::kAnd: return 3;
    case Op::kNot: return 4;
    case Op::kEq:
    case Op::kNe:
    case Op::kLt:
    case Op::kLe:
    case Op::kGt:
    case Op::kGe:
    case Op::kIn:
    case Op::kNotIn: return 5;
    case Op::kAdd:
    case Op::kSub: return 6;
    case Op::kMul:
    case Op::kDiv:
    case Op::kFloorDiv:
    case Op::kMod: return 7;
    case Op::kNeg: return 8;
    case Op::kPow: return 9;
    default: return 10;
  }
}

}  // namespace

ExprPtr parse_expression(std::string_view text) {
  // Left-associative chains parse in a loop but are walked recursively later: bound the size.
  constexpr size_t kMaxLength = 10000;
  if (text.size() > kMaxLength) {
    throw ExpressionError(static_cast<int>(kMaxLength), "expression longer than 10000 characters");
  }
  return Parser(text).parse();
}

ExprPtr make_number(double value, bool is_integer, Type type, int offset) {
  auto e = std::make_unique<Expr>();
  e->op = Op::kNumber;
  e->number = value;
  e->is_integer = is_integer;
  e->type = type;
  e->offset = offset;
  return e;
}

ExprPtr clone(const Expr& expr) {
  auto e = std::make_unique<Expr>();
  e->op = expr.op;
  e->number = expr.number;
  e->is_integer = expr.is_integer;
  e->text = expr.text;
  e->slot = expr.slot;
  e->type = expr.type;
  e->offset = expr.offset;
  for (const auto& arg : expr.args) e->args.push_back(clone(*arg));
  return e;
}

const char* op_symbol(Op op) {
  switch (op) {
    case Op::kNeg: return "-";
    case Op::kNot: return "not";
    case Op::kAbs: return "abs";
    case Op::kAdd: return "+";
    case Op::kSub: return "-";
    case Op::kMul: return "*";
    case Op::kDiv: return "/";
    case Op::kFloorDiv: return "//";
    case Op::kMod: return "%";
    case Op::kPow: return "**";
    case Op::kEq: return "==";
    case Op::kNe: return "!=";
    case Op::kLt: return "<";
    case Op::kLe: return "<=";
    case Op::kGt: return ">";
    case Op::kGe: return ">=";
    case Op::kIn: return "in";
    case Op::kNotIn: return "not in";
    case Op::kAnd: return "and";
    case Op::kOr: return "or";
    case Op::kImplies: return "then";
    case Op::kMin: return "min";
    case Op::kMax: return "max";
    default: return "?";
  }
}

std::string to_text(const Expr& e) {
  auto child = [&](const Expr& c, bool right) {
    std::string s = to_text(c);
    const int mine = precedence(e.op), theirs = precedence(c.op);
    const bool paren =
        theirs < mine || (theirs == mine && right && e.op != Op::kAnd && e.op != Op::kOr);
    return paren ? "(" + s + ")" : s;
  };
  switch (e.op) {
    case Op::kNumber:
      if (!e.text.empty()) return e.text;  // a choice, as written
      if (e.type == Type::kBool) return e.number != 0 ? "true" : "false";
      if (e.is_integer) return std::to_string(static_cast<long long>(e.number));
      return slapo::to_string(Value(e.number));
    case Op::kString: return "'" + e.text + "'";
    case Op::kName:
    case Op::kSlot: return e.text;
    case Op::kList: {
      std::string s = "[";
      for (size_t i = 0; i < e.args.size(); ++i) s += (i ? ", " : "") + to_text(*e.args[i]);
      return s + "]";
    }
    case Op::kNeg: return "-" + child(*e.args[0], false);
    case Op::kNot: return "not " + child(*e.args[0], false);
    case Op::kAbs:
    case Op::kMin:
    case Op::kMax: {
      std::string s = std::string(op_symbol(e.op)) + "(";
      for (size_t i = 0; i < e.args.size(); ++i) s += (i ? ", " : "") + to_text(*e.args[i]);
      return s + ")";
    }
    case Op::kImplies: return "if " + child(*e.args[0], false) + " then " + to_text(*e.args[1]);
    default:
      return child(*e.args[0], false) + " " + op_symbol(e.op) + " " + child(*e.args[1], true);
  }
}

}  // namespace slapo::space
