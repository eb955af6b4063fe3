#include "schedule/graph/graph_match.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>

#include <ATen/core/Tensor.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "core/error.h"

namespace slapo::schedule {

std::string GraphMatch::to_string() const {
  std::ostringstream out;
  out << "match " << index << " of '" << path << "' (";
  for (size_t i = 0; i < kinds.size(); ++i) out << (i ? ", " : "") << kinds[i];
  out << ")";
  return out.str();
}

namespace graph_surgery {

using torch::jit::Graph;
using torch::jit::Match;
using torch::jit::Node;
using torch::jit::Value;

namespace {

bool is_tensor(const Value* v) { return v->type()->isSubtypeOf(*c10::TensorType::get()); }

// The graph values the pattern's inputs stand for, in the pattern's order.
std::vector<Value*> inputs_of(const Graph& pattern, const Match& match) {
  std::vector<Value*> out;
  for (const Value* p : pattern.inputs()) {
    auto it = match.values_map.find(p);
    // An input the pattern does not use is not matched to anything.
    if (it != match.values_map.end()) out.push_back(it->second);
  }
  return out;
}

}  // namespace

std::string pattern_of(const std::function<at::Tensor(const std::vector<at::Tensor>&)>& fn,
                       const std::vector<at::Tensor>& examples, const std::string& where) {
  SLAPO_CHECK(!examples.empty(), ErrorCode::kInvalidArgument, where,
              ": a pattern function needs example inputs");
  torch::jit::Stack stack(examples.begin(), examples.end());
  std::shared_ptr<Graph> graph;
  try {
    auto traced = torch::jit::tracer::trace(
        stack,
        [&](torch::jit::Stack in) -> torch::jit::Stack {
          std::vector<at::Tensor> xs;
          for (const c10::IValue& v : in) xs.push_back(v.toTensor());
          return {fn(xs)};
        },
        [](const torch::autograd::Variable&) { return std::string(); }, /*strict=*/true);
    graph = traced.first->graph;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    SLAPO_FAIL(ErrorCode::kInvalidArgument, where,
               ": the pattern function could not be traced: ", what.substr(0, what.find('\n')));
  }
  torch::jit::EliminateDeadCode(graph);
  // Shapes are not part of a pattern: every tensor value becomes a plain Tensor.
  for (Value* v : graph->inputs()) {
    if (is_tensor(v)) v->setType(c10::TensorType::get());
  }
  for (Node* n : graph->nodes()) {
    for (Value* v : n->outputs()) {
      if (is_tensor(v)) v->setType(c10::TensorType::get());
    }
  }
  return graph->toString();
}

std::shared_ptr<Graph> parse_pattern(const std::string& ir, const std::string& where) {
  auto graph = std::make_shared<Graph>();
  try {
    torch::jit::parseIR(ir, graph.get());
  } catch (const std::exception& e) {
    const std::string what = e.what();
    SLAPO_FAIL(ErrorCode::kParse, where, ": malformed pattern: ", what.substr(0, what.find('\n')));
  }
  SLAPO_CHECK(graph->outputs().size() == 1, ErrorCode::kParse, where,
              ": a pattern returns one value, this one ", graph->outputs().size());
  return graph;
}

std::vector<Match> matches(const Graph& pattern, const Graph& graph) {
  std::vector<Match> found = torch::jit::findPatternMatches(pattern, const_cast<Graph&>(graph));
  // In graph order of the anchor (the node producing the pattern's output).
  std::stable_sort(found.begin(), found.end(),
                   [](const Match& a, const Match& b) { return a.anchor->isBefore(b.anchor); });
  return found;
}

std::vector<Node*> operations(const Match& match) {
  std::vector<Node*> out;
  for (const auto& [pattern_node, node] : match.nodes_map) {
    const c10::Symbol kind = node->kind();
    if (kind != c10::prim::Constant && kind != c10::prim::Param && kind != c10::prim::Return)
      out.push_back(node);
  }
  std::sort(out.begin(), out.end(), [](Node* a, Node* b) { return a->isBefore(b); });
  return out;
}

std::unordered_set<const Node*> operation_set(const Match& match) {
  const std::vector<Node*> ops = operations(match);
  return {ops.begin(), ops.end()};
}

Match occurrence(const Graph& pattern, const Graph& graph, size_t index, const std::string& where) {
  std::vector<Match> found = matches(pattern, graph);
  SLAPO_CHECK(index < found.size(), ErrorCode::kInvalidArgument, where,
              ": a graph of this module (traced for another ", "input shape) has ", found.size(),
              " occurrences of the pattern, not ", index + 1);
  return found[index];
}

size_t tensor_inputs(const Graph& pattern, const Match& match) {
  const std::vector<Value*> in = inputs_of(pattern, match);
  return static_cast<size_t>(std::count_if(in.begin(), in.end(), is_tensor));
}

void replace_with_call(Graph& graph, const Graph& pattern, const Match& match, int64_t callable_id,
                       const std::string& where) {
  std::vector<Value*> tensors;
  for (Value* v : inputs_of(pattern, match)) {
    if (is_tensor(v)) {
      tensors.push_back(v);
    } else {
      SLAPO_CHECK(v->node()->kind() == c10::prim::Constant, ErrorCode::kInvalidArgument, where,
                  ": input %", v->debugName(), " of the match is neither a tensor nor a constant");
    }
  }
  const std::vector<Node*> ops = operations(match);
  SLAPO_CHECK(!ops.empty(), ErrorCode::kInvalidArgument, where, ": the match has no operations");
  Value* output = match.values_map.at(pattern.outputs()[0]);
  Node* call = nullptr;
  {
    torch::jit::WithInsertPoint point(ops.back());
    Value* id = graph.insertConstant(callable_id);
    Value* list = graph.insertNode(graph.createList(c10::TensorType::get(), tensors))->output();
    call =
        graph.insertNode(graph.create(c10::Symbol::fromQualString("slapo::call"), {id, list}, 1));
    call->output()->setType(output->type());
  }
  output->replaceAllUsesWith(call->output());
  // The matcher guarantees that only the output leaves the match; destroy users first.
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) (*it)->destroy();
}

std::shared_ptr<Graph> extract(const Graph& pattern, const Match& match, const std::string& where) {
  auto sub = std::make_shared<Graph>();
  std::unordered_map<Value*, Value*> env;
  auto copy_constant = [&](Value* v) {
    Node* c = sub->createClone(v->node(), [](Value*) -> Value* { return nullptr; });
    sub->appendNode(c);
    return env[v] = c->output();
  };
  for (Value* v : inputs_of(pattern, match)) {
    if (env.count(v)) continue;
    if (is_tensor(v)) {
      env[v] = sub->addInput()->setType(v->type());
    } else {
      SLAPO_CHECK(v->node()->kind() == c10::prim::Constant, ErrorCode::kInvalidArgument, where,
                  ": input %", v->debugName(), " of the match is neither a tensor nor a constant");
      copy_constant(v);
    }
  }
  for (Node* n : operations(match)) {
    Node* c = sub->createClone(n, [&](Value* v) -> Value* {
      auto it = env.find(v);
      if (it != env.end()) return it->second;
      SLAPO_CHECK(v->node()->kind() == c10::prim::Constant, ErrorCode::kInvalidArgument, where,
                  ": %", v->debugName(), " is used inside the match but comes from outside it");
      return copy_constant(v);
    });
    sub->appendNode(c);
    for (size_t i = 0; i < n->outputs().size(); ++i) env[n->outputs()[i]] = c->outputs()[i];
  }
  sub->registerOutput(env.at(match.values_map.at(pattern.outputs()[0])));
  return sub;
}

}  // namespace graph_surgery

}  // namespace slapo::schedule
