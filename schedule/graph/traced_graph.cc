#include "schedule/graph/traced_graph.h"

#include <cmath>
#include <sstream>

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "core/error.h"
#include "core/text.h"
#include "schedule/language/build.h"
#include "schedule/language/slot_module.h"
#include "schedule/runtime/keyed_dropout.h"
#include "schedule/runtime/rng_stream.h"

namespace slapo::schedule {

namespace {

// Collects the tracer's warnings ("converting a tensor to a number ... might cause the trace to be
// incorrect"): for us they are errors.
class WarningCollector : public c10::WarningHandler {
 public:
  void process(const c10::SourceLocation&, const std::string& msg, const bool) override {
    messages.push_back(msg);
  }
  std::vector<std::string> messages;
};

std::string shape_key(const std::vector<at::Tensor>& tensors) {
  std::ostringstream key;
  for (const at::Tensor& t : tensors) {
    if (t.defined()) {
      key << t.sizes() << t.scalar_type() << ";";
    } else {
      key << "none;";  // an absent optional input: another graph
    }
  }
  return key.str();
}

// The tensors of a graph's result: one, or a tuple's.
Values graph_outputs(const torch::jit::Stack& stack) {
  const c10::IValue& result = stack.at(0);
  if (!result.isTuple()) return {result.toTensor()};
  Values out;
  for (const c10::IValue& v : result.toTupleRef().elements()) out.push_back(v.toTensor());
  return out;
}

// The defined inputs, in order: the graph's inputs.
std::vector<at::Tensor> present(const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& x : inputs)
    if (x.defined()) out.push_back(x);
  return out;
}

}  // namespace

std::unique_ptr<torch::jit::GraphFunction> graph_function(
    const std::string& name, std::shared_ptr<torch::jit::Graph> graph) {
  return std::make_unique<torch::jit::GraphFunction>(name, std::move(graph), nullptr,
                                                     torch::jit::ExecutorExecutionMode::SIMPLE);
}

struct TracedGraph::Entry {
  std::shared_ptr<torch::jit::Graph> graph;
  std::unique_ptr<torch::jit::GraphFunction> function;
};

TracedGraph::TracedGraph(torch::nn::AnyModule module, Signature signature, std::string path)
    : module_(std::move(module)), signature_(std::move(signature)), path_(std::move(path)) {}

Values TracedGraph::eager(const Values& inputs) {
  return forward_values(module_, signature_, inputs, path_);
}

TracedGraph::~TracedGraph() = default;

std::vector<at::Tensor> TracedGraph::parameters() const {
  return unique_parameters(*module_.ptr());
}

TracedGraph::Entry& TracedGraph::entry_for(const Values& inputs,
                                           const std::vector<at::Tensor>& params) {
  const std::string key = shape_key(inputs) + "|" + shape_key(params);
  auto it = graphs_.find(key);
  if (it != graphs_.end()) return *it->second;

  torch::jit::Stack stack;
  for (const at::Tensor& x : present(inputs)) stack.emplace_back(x);
  for (const at::Tensor& p : params) stack.emplace_back(p);
  WarningCollector warnings;
  std::shared_ptr<torch::jit::Graph> graph;
  // The same dropout key for the trace and for the check below.
  const DropoutKey key_for_check = fresh_dropout_key();
  try {
    c10::Warning::WarningHandlerGuard guard(&warnings);
    DropoutScope scope(key_for_check);
    auto traced = torch::jit::tracer::trace(
        stack,
        [&](torch::jit::Stack in) -> torch::jit::Stack {
          // The graph's inputs back in their places; absent ones stay absent.
          Values xs;
          size_t next = 0;
          for (const at::Tensor& x : inputs)
            xs.push_back(x.defined() ? in.at(next++).toTensor() : at::Tensor());
          Values ys = eager(xs);
          for (const at::Tensor& y : ys) {
            SLAPO_CHECK(y.defined(), ErrorCode::kInvalidArgument, "cannot trace '", path_,
                        "': its forward returned an undefined tensor, which a graph cannot hold");
          }
          // A graph function has one output: a tuple result stays a tuple.
          if (!signature_.tuple_output) return {ys.at(0)};
          return {c10::ivalue::Tuple::create(std::vector<c10::IValue>(ys.begin(), ys.end()))};
        },
        [](const torch::autograd::Variable&) { return std::string(); }, /*strict=*/true);
    graph = traced.first->graph;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    SLAPO_FAIL(ErrorCode::kInvalidArgument, "trace of '", path_,
               "' failed: ", first_line(e.what()));
  }
  for (const std::string& w : warnings.messages) {
    SLAPO_FAIL(ErrorCode::kInvalidArgument, "cannot trace '", path_, "': ", first_line(w),
               " (its forward reads tensor values in C++, so a trace would freeze them)");
  }
  torch::jit::EliminateDeadCode(graph);
  // The check below runs the graph as traced; the transforms come after it (they change what the
  // graph computes on purpose: a replacement module, a fused kernel's rounding).
  auto entry = std::make_unique<Entry>();
  entry->graph = graph;
  entry->function = graph_function("slapo_traced", graph);

  // The graph must reproduce the eager forward on what it was traced with, and on other inputs of
  // the same shape and range: a forward that reads tensor values in C++ (data-dependent control
  // flow) had its decisions frozen into the trace, and the tracer leaves no trace of the read.
  {
    torch::NoGradGuard no_grad;
    // The random inputs must not move the default generator under the model's feet.
    const at::Tensor rng_state = default_rng_state();
    struct Restore {
      const at::Tensor& state;
      ~Restore() { set_default_rng_state(state); }
    } restore{rng_state};
    // The examples, then six random inputs: a value-dependent branch that agrees with the
    // example on all six has a chance of 1 in 64 when each draw goes either way.
    for (int variant = 0; variant < 7; ++variant) {
      std::vector<at::Tensor> xs;
      for (const at::Tensor& x : inputs) {
        if (variant == 0 || !x.defined()) {
          xs.push_back(x);
        } else if (at::isFloatingType(x.scalar_type())) {
          // Alternately around the example's mean and around zero (a sign test on a sum would
          // rarely flip around a mean far from zero).
          const double mean = x.numel() > 0 ? x.mean().item<double>() : 0.0;
          const double std = x.numel() > 1 ? x.std().item<double>() : 1.0;
          xs.push_back(variant % 2 ? at::randn_like(x) * std + mean
                                   : at::randn_like(x) * (std + std::fabs(mean)));
        } else {
          const int64_t lo = x.numel() > 0 ? x.min().item<int64_t>() : 0;
          const int64_t hi = x.numel() > 0 ? x.max().item<int64_t>() : 1;
          xs.push_back(at::randint(lo, hi + 1, x.sizes(), x.options()));
        }
      }
      DropoutScope scope(key_for_check);
      const Values expected = eager(xs);
      torch::jit::Stack run_stack;
      for (const at::Tensor& x : present(xs)) run_stack.emplace_back(x);
      for (const at::Tensor& p : params) run_stack.emplace_back(p);
      entry->function->run(run_stack);
      const Values outputs = graph_outputs(run_stack);
      for (size_t i = 0; i < expected.size(); ++i) {
        const at::Tensor& traced = outputs.at(i);
        const bool same = traced.sizes() == expected[i].sizes() &&
                          (at::isFloatingType(traced.scalar_type())
                               ? at::allclose(traced, expected[i], 1e-5, 1e-6, /*equal_nan=*/true)
                               : at::equal(traced, expected[i]));
        SLAPO_CHECK(same, ErrorCode::kInvalidArgument, "cannot trace '", path_,
                    "': the traced graph differs from its forward on ",
                    variant == 0 ? "the example inputs" : "other inputs of the same shape",
                    expected.size() > 1 ? " (output " + std::to_string(i) + ")" : std::string(),
                    " (the forward depends on tensor values it reads in C++: data-dependent "
                    "control flow)");
      }
    }
  }
  for (const Transform& transform : transforms_) {
    transform(graph);
    torch::jit::EliminateDeadCode(graph);
  }
  entry->function = graph_function("slapo_traced", graph);
  if (first_.empty()) first_ = key;
  return *graphs_.emplace(key, std::move(entry)).first->second;
}

void TracedGraph::add_transform(Transform transform) {
  // On copies first: a transform that throws on one graph leaves every graph as it was.
  std::map<std::string, std::shared_ptr<torch::jit::Graph>> transformed;
  for (const auto& [key, entry] : graphs_) {
    std::shared_ptr<torch::jit::Graph> copy = entry->graph->copy();
    transform(copy);
    torch::jit::EliminateDeadCode(copy);
    transformed[key] = copy;
  }
  for (auto& [key, graph] : transformed) {
    Entry& entry = *graphs_.at(key);
    entry.graph = graph;
    entry.function = graph_function("slapo_traced", graph);
  }
  transforms_.push_back(std::move(transform));
  ++version_;
}

void TracedGraph::invalidate(torch::nn::AnyModule module) {
  SLAPO_CHECK(!rewritten(), ErrorCode::kInternal, "invalidate on '", path_,
              "': its graphs were rewritten");
  module_ = std::move(module);
  graphs_.clear();
  first_.clear();
  ++version_;
}

std::vector<std::shared_ptr<torch::jit::Graph>> TracedGraph::graphs() const {
  std::vector<std::shared_ptr<torch::jit::Graph>> out;
  for (const auto& [key, entry] : graphs_) out.push_back(entry->graph);
  return out;
}

Values TracedGraph::run(const Values& inputs) {
  const std::vector<at::Tensor> params =
      parameters();  // walked once per call: this is the hot path
  Entry& e = entry_for(inputs, params);
  torch::jit::Stack stack;
  for (const at::Tensor& x : inputs)
    if (x.defined()) stack.emplace_back(x);
  for (const at::Tensor& p : params) stack.emplace_back(p);
  e.function->run(stack);
  return graph_outputs(stack);
}

std::shared_ptr<torch::jit::Graph> TracedGraph::graph() const {
  return first_.empty() ? nullptr : graphs_.at(first_)->graph;
}

std::string TracedGraph::graph_text() const {
  auto g = graph();
  return g ? g->toString() : std::string();
}

}  // namespace slapo::schedule
