// The static-graph primitives of Schedule: trace, print_graph, find, find_pattern, and fuse,
// replace and checkpoint on matches (schedule/graph/graph_match.h for how a match is named).

#include <regex>

#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>

#include "core/error.h"
#include "schedule/graph/fusion_chains.h"
#include "schedule/graph/graph_call.h"
#include "schedule/graph/nnc_probe.h"
#include "schedule/graph/traced_graph.h"
#include "schedule/language/replay.h"
#include "schedule/language/schedule.h"
#include "schedule/runtime/checkpoint.h"

namespace slapo::schedule {

namespace {

using graph_surgery::occurrence;
using graph_surgery::operation_set;
using graph_surgery::parse_pattern;

void check_compiler(const std::string& compiler, const std::string& where) {
  SLAPO_CHECK(compiler == "native" || compiler == "nnc", ErrorCode::kInvalidArgument, where,
              ": unknown compiler '", compiler, "' (native, nnc)");
  if (compiler == "nnc") {
    const std::string& missing = nnc_cpu_unavailable_reason();
    SLAPO_CHECK(
        !missing.empty(), ErrorCode::kInvalidArgument, where,
        ": compiler 'nnc' has a CPU backend in this LibTorch, but slapo does not drive it yet (no machine ",
        "here to test it on); use 'native'");
    SLAPO_FAIL(ErrorCode::kInvalidArgument, where,
               ": compiler 'nnc' has no working CPU backend: ", missing, "; use 'native'");
  }
}

torch::Tensor run_graph(torch::jit::GraphFunction& fn, const std::vector<torch::Tensor>& inputs) {
  torch::jit::Stack stack(inputs.begin(), inputs.end());
  fn.run(stack);
  return stack.at(0).toTensor();
}

}  // namespace

Slot* Schedule::own_slot() {
  if (parent_ == nullptr) return nullptr;
  auto* slots = dynamic_cast<SlotModule*>(parent_->module_.get());
  return slots != nullptr && slots->has_slot(slot_name_) ? &slots->slot(slot_name_) : nullptr;
}

void Schedule::check_traced_graphs(const char* primitive, Change change) {
  const std::string where = std::string(primitive) + " on '" + path_ + "': ";
  for (Schedule* node = this; node != nullptr; node = node->parent_) {
    Slot* slot = node->own_slot();
    if (slot == nullptr || !slot->policy.traced) continue;
    const bool self = node == this;
    const std::string traced = "'" + node->path_ + "'";
    // A policy is applied by the slot around its call; the graph of an ancestor inlines the
    // module's forward as traced, with no place for a checkpoint, a random stream or a collective.
    SLAPO_CHECK(
        self || change != Change::kPolicy, ErrorCode::kInvalidArgument, where, traced,
        " above it runs as a traced graph, which cannot hold a submodule's ", primitive,
        " (apply it to ", traced, " itself",
        std::string(primitive) == "checkpoint" ? ", or checkpoint a match of its graph)" : ")");
    if (change != Change::kModule) continue;
    SLAPO_CHECK(!slot->policy.traced->rewritten(), ErrorCode::kInvalidArgument, where,
                self ? "it" : traced + " above it",
                " is traced and its graph was rewritten (fuse, or replace or checkpoint of a "
                "match) for the module as it was; apply ",
                primitive, " before rewriting the graph");
  }
}

void Schedule::retrace_graphs() {
  for (Schedule* node = this; node != nullptr; node = node->parent_) {
    Slot* slot = node->own_slot();
    if (slot != nullptr && slot->policy.traced) slot->policy.traced->invalidate(slot->module);
  }
}

Schedule& Schedule::trace(const std::vector<torch::Tensor>& example_inputs) {
  Slot& slot = policy_slot("trace");
  SLAPO_CHECK(!slot.policy.traced, ErrorCode::kInvalidArgument, "trace on '", path_,
              "': already traced");
  // A graph inlines what is below it: nothing there may need its slot's policy at run time.
  for (const auto& [below_path, below] : named_schedules()) {
    if (below == this) continue;
    if (Slot* s = below->own_slot(); s != nullptr && !s->policy.plain()) {
      const char* what = s->policy.traced       ? "traced (trace one or the other)"
                         : s->policy.checkpoint ? "checkpointed"
                         : s->policy.rng        ? "given its own random stream (fork_rng)"
                                                : "synchronized (sync)";
      SLAPO_FAIL(ErrorCode::kInvalidArgument, "trace on '", path_, "': '", below_path,
                 "' below it is ", what, ", which a graph of '", path_, "' cannot hold");
    }
  }
  for (Schedule* node = parent_; node != nullptr; node = node->parent_) {
    Slot* s = node->own_slot();
    SLAPO_CHECK(s == nullptr || !s->policy.traced, ErrorCode::kInvalidArgument, "trace on '", path_,
                "': '", node->path_, "' above it is traced already (trace one or the other)");
  }
  auto traced = std::make_shared<TracedGraph>(slot.module, slot.signature, path_);
  if (!example_inputs.empty()) {
    SLAPO_CHECK(example_inputs.size() == slot.signature.inputs.size(), ErrorCode::kInvalidArgument,
                "trace on '", path_, "': its forward takes ", slot.signature.inputs.size(),
                " inputs, ", example_inputs.size(), " example inputs given");
    traced->run(example_inputs);  // traces and checks now
  }
  slot.policy.traced = traced;
  record_primitive("trace", "");
  return *this;
}

std::string Schedule::print_graph() {
  Slot& slot = policy_slot("print_graph");
  SLAPO_CHECK(slot.policy.traced && slot.policy.traced->graph(), ErrorCode::kInvalidArgument,
              "print_graph on '", path_, "': not traced",
              slot.policy.traced ? " yet (it is traced at its first call)" : " (use trace)");
  return slot.policy.traced->graph_text();
}

std::vector<std::string> Schedule::find(const std::string& path_regex) {
  std::regex re;
  try {
    re = std::regex(path_regex);
  } catch (const std::regex_error& e) {
    SLAPO_FAIL(ErrorCode::kParse, "find on '", path_, "': '", path_regex,
               "' is not a regular expression: ", e.what());
  }
  std::vector<std::string> out;
  for (const auto& [p, s] : named_schedules()) {
    if (std::regex_match(p, re)) out.push_back(p);
  }
  return out;
}

TracedGraph& Schedule::traced_slot(const char* primitive) {
  Slot& slot = policy_slot(primitive);
  SLAPO_CHECK(slot.policy.traced, ErrorCode::kInvalidArgument, primitive, " on '", path_,
              "': works on a traced graph; trace() the module first");
  return *slot.policy.traced;
}

std::vector<GraphMatch> Schedule::find_pattern(const std::string& pattern) {
  TracedGraph& traced = traced_slot("find");
  SLAPO_CHECK(traced.graph() != nullptr, ErrorCode::kInvalidArgument, "find on '", path_,
              "': a subgraph pattern needs a traced graph (trace it with example inputs first)");
  const auto pattern_graph = parse_pattern(pattern, "find on '" + path_ + "'");
  std::vector<GraphMatch> out;
  for (const torch::jit::Match& m : graph_surgery::matches(*pattern_graph, *traced.graph())) {
    GraphMatch match{path_, pattern, out.size(), traced.version(), {}};
    for (const torch::jit::Node* n : graph_surgery::operations(m))
      match.kinds.push_back(n->kind().toQualString());
    out.push_back(std::move(match));
  }
  return out;
}

std::vector<GraphMatch> Schedule::find_pattern(
    const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& pattern,
    const std::vector<torch::Tensor>& examples) {
  return find_pattern(graph_surgery::pattern_of(pattern, examples, "find on '" + path_ + "'"));
}

GraphMatch Schedule::deferred_match(const std::string& pattern, size_t index) {
  const TracedGraph& traced = traced_slot("find");
  parse_pattern(pattern, "find on '" + path_ + "'");
  return GraphMatch{path_, pattern, index, traced.version(), {}};
}

void Schedule::check_match(const GraphMatch& match, const char* primitive) {
  SLAPO_CHECK(match.path == path_, ErrorCode::kInvalidArgument, primitive, " on '", path_,
              "': ", match.to_string(), " was found in another module; apply it there");
  const TracedGraph& traced = traced_slot(primitive);
  SLAPO_CHECK(match.version == traced.version(), ErrorCode::kInvalidArgument, primitive, " on '",
              path_, "': stale ", match.to_string(), ": the graph changed since it was found (",
              traced.version() - match.version, " rewrite(s) later); find it again");
}

Schedule& Schedule::fuse(const GraphMatch& match, const std::string& compiler) {
  const std::string where = "fuse on '" + path_ + "'";
  check_compiler(compiler, where);
  check_match(match, "fuse");
  TracedGraph& traced = traced_slot("fuse");
  const auto pattern = parse_pattern(match.pattern, where);
  const size_t index = match.index;
  const std::string name = match.to_string();
  // Which chain: the one whose occurrence has exactly the match's operations, in each graph.
  auto fuse_in = [pattern, index, where, name](std::shared_ptr<torch::jit::Graph>& graph) {
    const auto ops = operation_set(occurrence(*pattern, *graph, index, where));
    const FusedChain* chain = chain_covering(*graph, ops);
    SLAPO_CHECK(chain != nullptr, ErrorCode::kInvalidArgument, where, ": ", name,
                " is not a chain the native compiler has a kernel for (", chain_names(), ")");
    rewrite_chain(*chain, graph, &ops);
  };
  traced.add_transform(fuse_in);  // tried on the graphs traced so far first: refused now, not later
  record_primitive("fuse_match", quote_argument(match.pattern) + ", " +
                                     std::to_string(match.index) + ", " + quote_argument(compiler));
  return *this;
}

Schedule& Schedule::fuse(const std::string& chain_name, const std::string& compiler,
                         size_t* matches) {
  const std::string where = "fuse on '" + path_ + "'";
  check_compiler(compiler, where);
  Slot& slot = policy_slot("fuse");
  SLAPO_CHECK(slot.policy.traced, ErrorCode::kInvalidArgument, where,
              ": fusion rewrites a traced graph; trace() the module first");
  const FusedChain* chain = find_chain(chain_name);
  SLAPO_CHECK(chain != nullptr, ErrorCode::kInvalidArgument, where, ": unknown chain '", chain_name,
              "' (chains: ", chain_names(), ")");
  size_t n = 0;
  for (const auto& graph : slot.policy.traced->graphs()) n += count_chain(*chain, *graph);
  slot.policy.traced->add_transform(
      [chain](std::shared_ptr<torch::jit::Graph>& graph) { rewrite_chain(*chain, graph); });
  if (matches) *matches = n;
  record_primitive("fuse", quote_argument(chain_name) + ", " + quote_argument(compiler));
  return *this;
}

Schedule& Schedule::replace_match(const GraphMatch& match, torch::nn::AnyModule module,
                                  Signature signature, const std::string& type_name) {
  const std::string where = "replace on '" + path_ + "'";
  check_match(match, "replace");
  TracedGraph& traced = traced_slot("replace");
  const auto pattern = parse_pattern(match.pattern, where);
  SLAPO_CHECK(signature.plain_tensors(), ErrorCode::kInvalidArgument, where,
              ": the new module's forward (", signature.text,
              ") must take tensors and return one tensor");
  const size_t arity = signature.inputs.size();
  const std::string name = match.to_string();
  auto check_arity = [pattern, arity, where, name](const torch::jit::Graph& graph,
                                                   const torch::jit::Match& found) {
    const size_t inputs = graph_surgery::tensor_inputs(*pattern, found);
    SLAPO_CHECK(inputs == arity, ErrorCode::kInvalidArgument, where,
                ": the new module's forward takes ", arity, " tensors but ", name, " has ", inputs,
                " tensor inputs");
  };
  // The module joins the model as a slot of the traced module: its parameters are the model's,
  // and the schedule can address it ("h.0.mlp.subgraph_0").
  auto owner = std::dynamic_pointer_cast<SlotModule>(module_);
  SLAPO_CHECK(
      owner != nullptr, ErrorCode::kInvalidArgument, where,
      ": the traced module is not a SlotModule, so the new module has no place in the model");
  std::string slot;
  for (int i = 0; slot.empty() || owner->has_slot(slot); ++i)
    slot = "subgraph_" + std::to_string(i);
  auto callable =
      std::make_shared<GraphCallable>([owner, slot](const std::vector<torch::Tensor>& xs) {
        return owner->call_values(slot, xs).at(0);
      });
  const size_t index = match.index;
  // Tried on the graphs traced so far before anything changes; the slot is added once it holds.
  traced.add_transform(
      [pattern, index, callable, where, check_arity](std::shared_ptr<torch::jit::Graph>& graph) {
        const torch::jit::Match found = occurrence(*pattern, *graph, index, where);
        check_arity(*graph, found);
        graph_surgery::replace_with_call(*graph, *pattern, found, callable->id(), where);
      });
  owner->add_slot_any(slot, std::move(module), std::move(signature));
  rebuild_children();
  record_primitive("replace_match", quote_argument(match.pattern) + ", " +
                                        std::to_string(match.index) + ", " + type_name);
  return *this;
}

Schedule& Schedule::checkpoint(const GraphMatch& match) {
  const std::string where = "checkpoint on '" + path_ + "'";
  check_match(match, "checkpoint");
  TracedGraph& traced = traced_slot("checkpoint");
  const auto pattern = parse_pattern(match.pattern, where);
  const size_t index = match.index;
  // One subgraph per traced graph (its constants are that shape's); the callables live as long as
  // the transform.
  auto callables = std::make_shared<std::vector<std::shared_ptr<GraphCallable>>>();
  traced.add_transform(
      [pattern, index, callables, where](std::shared_ptr<torch::jit::Graph>& graph) {
        const torch::jit::Match found = occurrence(*pattern, *graph, index, where);
        std::shared_ptr<torch::jit::GraphFunction> function =
            graph_function("slapo_checkpointed", graph_surgery::extract(*pattern, found, where));
        auto callable =
            std::make_shared<GraphCallable>([function](const std::vector<torch::Tensor>& xs) {
              ValuesFunction run = [function](const std::vector<torch::Tensor>& in) {
                return std::vector<torch::Tensor>{run_graph(*function, in)};
              };
              if (!torch::GradMode::is_enabled()) return run(xs).at(0);
              // Its parameters are among its inputs (a traced graph takes them as inputs).
              return checkpoint_call(run, xs, {}, {}).at(0);
            });
        graph_surgery::replace_with_call(*graph, *pattern, found, callable->id(), where);
        callables->push_back(std::move(callable));
      });
  record_primitive("checkpoint_match",
                   quote_argument(match.pattern) + ", " + std::to_string(match.index));
  return *this;
}

}  // namespace slapo::schedule
