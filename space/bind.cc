#include "space/bind.h"

#include <algorithm>
#include <cmath>

#include "core/text.h"
#include "space/program.h"

namespace slapo::space {

namespace {

bool is_numeric(Type t) { return t == Type::kNumber || t == Type::kBool; }

std::string choice_list(const std::vector<std::string>& choices) {
  std::string s;
  for (size_t i = 0; i < choices.size(); ++i) s += (i ? ", " : "") + choices[i];
  return s;
}

class Binder {
 public:
  explicit Binder(const SymbolTable& symbols) : symbols_(symbols) {}

  ExprPtr bind(const Expr& e) {
    ExprPtr out = bind_node(e);
    return fold(std::move(out));
  }

 private:
  ExprPtr bind_node(const Expr& e) {
    switch (e.op) {
      case Op::kNumber:
      case Op::kString: {
        ExprPtr out = clone(e);
        if (e.op == Op::kString) out->type = Type::kString;
        return out;
      }
      case Op::kName: return bind_name(e);
      case Op::kSlot: return clone(e);
      case Op::kList: throw ExpressionError(e.offset, "a list may only follow 'in'");
      case Op::kEq:
      case Op::kNe: return bind_equality(e);
      case Op::kIn:
      case Op::kNotIn: return bind_membership(e);
      default: break;
    }
    auto out = std::make_unique<Expr>();
    out->op = e.op;
    out->offset = e.offset;
    for (const auto& arg : e.args) out->args.push_back(bind(*arg));
    switch (e.op) {
      case Op::kAnd:
      case Op::kOr:
      case Op::kImplies:
      case Op::kNot:
        for (const auto& arg : out->args) require(*arg, Type::kBool, e);
        out->type = Type::kBool;
        break;
      case Op::kLt:
      case Op::kLe:
      case Op::kGt:
      case Op::kGe:
        for (const auto& arg : out->args) require_number(*arg, e);
        out->type = Type::kBool;
        break;
      default:  // arithmetic, min, max, abs
        for (const auto& arg : out->args) require_number(*arg, e);
        out->type = Type::kNumber;
        break;
    }
    return out;
  }

  ExprPtr bind_name(const Expr& e) {
    auto it = symbols_.find(e.text);
    if (it == symbols_.end()) {
      std::vector<std::string> known;
      for (const auto& entry : symbols_) known.push_back(entry.first);
      const std::string near = nearest_name(e.text, known);
      throw ExpressionError(e.offset, "unknown name '" + e.text + "'" +
                                          (near.empty() ? " (not a knob or parameter)"
                                                        : " (did you mean '" + near + "'?)"));
    }
    const Symbol& sym = it->second;
    if (sym.kind == Symbol::Kind::kParameter) {
      if (auto* s = std::get_if<std::string>(&sym.value)) {
        auto out = std::make_unique<Expr>();
        out->op = Op::kString;
        out->text = *s;
        out->type = Type::kString;
        out->offset = e.offset;
        return out;
      }
      if (std::holds_alternative<IntList>(sym.value)) {
        throw ExpressionError(e.offset,
                              "parameter '" + e.text + "' is a list and cannot be used here");
      }
      const bool is_bool = std::holds_alternative<bool>(sym.value);
      return make_number(as_number(sym.value), !std::holds_alternative<double>(sym.value),
                         is_bool ? Type::kBool : Type::kNumber, e.offset);
    }
    if (sym.is_cut_points) {
      throw ExpressionError(e.offset, "knob '" + e.text +
                                          "' holds pipeline cut points and cannot be used in "
                                          "expressions; constrain stage sizes with its min/max");
    }
    auto out = std::make_unique<Expr>();
    out->op = Op::kSlot;
    out->slot = sym.slot;
    out->text = e.text;
    out->type = sym.type;
    out->offset = e.offset;
    return out;
  }

  const Symbol* choice_symbol(const Expr& bound) const {
    if (bound.op != Op::kSlot || bound.type != Type::kString) return nullptr;
    auto it = symbols_.find(bound.text);
    return it == symbols_.end() ? nullptr : &it->second;
  }

  // Turns a string literal compared with choice knob `sym` into the choice's index.
  ExprPtr choice_index(const Symbol& sym, const std::string& knob, const Expr& literal) {
    const auto& choices = *sym.choices;
    auto pos = std::find(choices.begin(), choices.end(), literal.text);
    if (pos == choices.end()) {
      throw ExpressionError(literal.offset, "knob '" + knob + "' has no choice '" + literal.text +
                                                "' (choices: " + choice_list(choices) + ")");
    }
    ExprPtr index = make_number(static_cast<double>(pos - choices.begin()), true, Type::kNumber,
                                literal.offset);
    index->text = "'" + literal.text + "'";  // printed as written
    return index;
  }

  ExprPtr bind_equality(const Expr& e) {
    ExprPtr a = bind(*e.args[0]);
    ExprPtr b = bind(*e.args[1]);
    auto out = std::make_unique<Expr>();
    out->op = e.op;
    out->offset = e.offset;
    out->type = Type::kBool;
    if (is_numeric(a->type) && is_numeric(b->type)) {
      out->args.push_back(std::move(a));
      out->args.push_back(std::move(b));
      return out;
    }
    if (a->type != Type::kString || b->type != Type::kString) {
      throw ExpressionError(e.offset, std::string("'") + op_symbol(e.op) + "' compares a " +
                                          type_name(a->type) + " with a " + type_name(b->type));
    }
    if (a->op == Op::kString && b->op == Op::kString) {
      const bool equal = a->text == b->text;
      return make_number((e.op == Op::kEq) == equal ? 1 : 0, true, Type::kBool, e.offset);
    }
    const Symbol* sa = choice_symbol(*a);
    const Symbol* sb = choice_symbol(*b);
    if (sa && b->op == Op::kString) {
      b = choice_index(*sa, a->text, *b);
    } else if (sb && a->op == Op::kString) {
      a = choice_index(*sb, b->text, *a);
    } else if (sa && sb && *sa->choices == *sb->choices) {
      // Same choice lists: the indices compare like the strings.
    } else {
      throw ExpressionError(e.offset, "cannot compare knobs '" + a->text + "' and '" + b->text +
                                          "': their choices differ");
    }
    a->type = Type::kNumber;
    b->type = Type::kNumber;
    out->args.push_back(std::move(a));
    out->args.push_back(std::move(b));
    return out;
  }

  // x in [a, b, c]: constant lists stay a list (one instruction); others become == chains.
  ExprPtr bind_membership(const Expr& e) {
    ExprPtr x = bind(*e.args[0]);
    const Expr& list = *e.args[1];
    if (list.op != Op::kList) {
      throw ExpressionError(list.offset, std::string("expected a list like [1, 2, 4] after '") +
                                             op_symbol(e.op) + "'");
    }
    const Symbol* choice = choice_symbol(*x);
    if (!is_numeric(x->type) && !choice) {
      throw ExpressionError(x->offset, std::string("'") + op_symbol(e.op) +
                                           "' needs a number or a choice knob on its left");
    }
    std::vector<ExprPtr> items;
    bool all_constant = true;
    for (const auto& raw : list.args) {
      ExprPtr item = bind(*raw);
      if (choice) {
        if (item->op != Op::kString) {
          throw ExpressionError(item->offset,
                                "knob '" + x->text + "' is a choice: list its choices as strings");
        }
        item = choice_index(*choice, x->text, *item);
      } else if (!is_numeric(item->type)) {
        throw ExpressionError(
            item->offset,
            std::string("list items must be numbers here, found a ") + type_name(item->type));
      }
      all_constant = all_constant && item->op == Op::kNumber;
      items.push_back(std::move(item));
    }
    x->type = Type::kNumber;
    const bool negate = e.op == Op::kNotIn;
    if (all_constant) {
      auto out = std::make_unique<Expr>();
      out->op = e.op;
      out->offset = e.offset;
      out->type = Type::kBool;
      auto bound_list = std::make_unique<Expr>();
      bound_list->op = Op::kList;
      bound_list->type = Type::kList;
      bound_list->offset = list.offset;
      bound_list->args = std::move(items);
      out->args.push_back(std::move(x));
      out->args.push_back(std::move(bound_list));
      return out;
    }
    ExprPtr chain;
    for (auto& item : items) {
      auto cmp = std::make_unique<Expr>();
      cmp->op = negate ? Op::kNe : Op::kEq;
      cmp->offset = item->offset;
      cmp->type = Type::kBool;
      cmp->args.push_back(clone(*x));
      cmp->args.push_back(std::move(item));
      if (!chain) {
        chain = std::move(cmp);
      } else {
        auto join = std::make_unique<Expr>();
        join->op = negate ? Op::kAnd : Op::kOr;
        join->offset = e.offset;
        join->type = Type::kBool;
        join->args.push_back(std::move(chain));
        join->args.push_back(std::move(cmp));
        chain = std::move(join);
      }
    }
    if (!chain) return make_number(negate ? 1 : 0, true, Type::kBool, e.offset);
    return chain;
  }

  void require(const Expr& arg, Type want, const Expr& parent) {
    if (arg.type != want) {
      throw ExpressionError(arg.offset, std::string("'") + op_symbol(parent.op) + "' needs a " +
                                            type_name(want) + ", found a " + type_name(arg.type));
    }
  }
  void require_number(const Expr& arg, const Expr& parent) {
    if (!is_numeric(arg.type)) {
      throw ExpressionError(arg.offset, std::string("'") + op_symbol(parent.op) +
                                            "' needs a number, found a " + type_name(arg.type));
    }
  }

  // Replaces a node whose operands are all constants by its value.
  ExprPtr fold(ExprPtr e) {
    if (e->op == Op::kNumber || e->op == Op::kString || e->op == Op::kSlot || e->op == Op::kList) {
      return e;
    }
    for (const auto& arg : e->args) {
      if (arg->op == Op::kList) {
        for (const auto& item : arg->args) {
          if (item->op != Op::kNumber) return e;
        }
      } else if (arg->op != Op::kNumber) {
        return e;
      }
    }
    Program program = Program::compile(*e);
    bool fault = false;
    const double value = program.eval(nullptr, &fault);
    if (fault)
      throw ExpressionError(e->offset,
                            "division by zero (or no finite result) in a constant expression");
    const bool integral =
        std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 9007199254740992.0;
    return make_number(value, integral, e->type, e->offset);
  }

  const SymbolTable& symbols_;
};

}  // namespace

ExprPtr bind_expression(const Expr& parsed, const SymbolTable& symbols) {
  return Binder(symbols).bind(parsed);
}

ExprPtr bind_condition(const Expr& parsed, const SymbolTable& symbols) {
  ExprPtr bound = bind_expression(parsed, symbols);
  if (bound->type != Type::kBool) {
    throw ExpressionError(0, std::string("expected a condition (a comparison, 'and', "
                                         "'or', 'not' or 'if ... then ...'), found a ") +
                                 type_name(bound->type));
  }
  return bound;
}

double bind_constant_number(const Expr& parsed, const SymbolTable& symbols) {
  ExprPtr bound = bind_expression(parsed, symbols);
  if (bound->op == Op::kSlot || !bound->args.empty()) {
    throw ExpressionError(parsed.offset, "expected an expression of parameters only, not of knobs");
  }
  if (bound->op != Op::kNumber || bound->type != Type::kNumber) {
    throw ExpressionError(parsed.offset,
                          std::string("expected a number, found a ") + type_name(bound->type));
  }
  return bound->number;
}

std::string nearest_name(const std::string& name, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = 3;
  for (const auto& candidate : known) {
    const size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

const char* type_name(Type type) {
  switch (type) {
    case Type::kNumber: return "number";
    case Type::kBool: return "condition";
    case Type::kString: return "string";
    case Type::kList: return "list";
    case Type::kUnknown: break;
  }
  return "value";
}

}  // namespace slapo::space
