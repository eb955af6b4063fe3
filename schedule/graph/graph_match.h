#pragma once
// Subgraphs of a traced graph: matching a TorchScript IR pattern, and the surgery the static-graph
// primitives do on a match (fuse, replace, checkpoint).
//
// A GraphMatch names an occurrence by (pattern, index in graph order) rather than by node: a
// traced module has one graph per input shape, traced when the shape first arrives, and a
// primitive applied to a match applies to the same occurrence in every one of them. It also
// carries the version of the module's graphs it was found in; a primitive given a match from an
// older version refuses it (the nodes it named may be gone).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace at {
class Tensor;
}

namespace torch::jit {
struct Graph;
struct Match;
struct Node;
}  // namespace torch::jit

namespace slapo::schedule {

struct GraphMatch {
  std::string path;                // the traced module
  std::string pattern;             // the TorchScript IR it was found with
  size_t index = 0;                // which occurrence, in graph order
  int64_t version = 0;             // the version of the module's graphs it was found in
  std::vector<std::string> kinds;  // the matched operations, in graph order ("aten::gelu")
  std::string to_string() const;   // match 0 of 'h.0.mlp' (aten::add, aten::gelu)
};

namespace graph_surgery {

// The TorchScript IR of `fn` traced on `examples`, as a pattern (types dropped: a pattern matches
// by operations and constants, not shapes). Throws, naming `where`, when it cannot be traced.
std::string pattern_of(const std::function<at::Tensor(const std::vector<at::Tensor>&)>& fn,
                       const std::vector<at::Tensor>& examples, const std::string& where);
// Parses a pattern; a malformed one throws Error(kParse) starting with `where`.
std::shared_ptr<torch::jit::Graph> parse_pattern(const std::string& ir, const std::string& where);
// The occurrences of `pattern` in `graph`, in graph order.
std::vector<torch::jit::Match> matches(const torch::jit::Graph& pattern,
                                       const torch::jit::Graph& graph);
// The match's operations (not its constants), in graph order.
std::vector<torch::jit::Node*> operations(const torch::jit::Match& match);
std::unordered_set<const torch::jit::Node*> operation_set(const torch::jit::Match& match);
// Occurrence `index` of `pattern` in `graph`; throws, naming `where`, when the graph has fewer.
torch::jit::Match occurrence(const torch::jit::Graph& pattern, const torch::jit::Graph& graph,
                             size_t index, const std::string& where);
// Replaces the match by one node `slapo::call(callable_id, [its tensor inputs])`. Its non-tensor
// inputs must be constants (they are baked into what the callable runs).
void replace_with_call(torch::jit::Graph& graph, const torch::jit::Graph& pattern,
                       const torch::jit::Match& match, int64_t callable_id,
                       const std::string& where);
// How many tensor inputs the match has (what slapo::call passes).
size_t tensor_inputs(const torch::jit::Graph& pattern, const torch::jit::Match& match);
// The match as a graph of its own over its tensor inputs (constants copied in).
std::shared_ptr<torch::jit::Graph> extract(const torch::jit::Graph& pattern,
                                           const torch::jit::Match& match,
                                           const std::string& where);

}  // namespace graph_surgery

}  // namespace slapo::schedule
