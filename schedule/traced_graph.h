#pragma once
// TracedGraph: a slot's module traced into a TorchScript graph ("trace by need": only this
// submodule; the structure above it stays as it is). The slot keeps its module — names,
// parameters, shards and the schedule tree are unchanged — but its forward runs the graph, with
// the module's parameters as graph inputs so that gradients reach them.
//
// Graphs are shape-specialised (sizes read in C++ become constants), so there is one graph per
// shape of the inputs and parameters: a new shape is traced when it first arrives, and every trace
// is checked against the eager forward on the inputs it was traced with (same dropout key) — a
// module whose forward depends on values it reads in C++ (data-dependent control flow) fails that
// check, or the tracer's own warning, with a message saying why.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/modules/container/any.h>

namespace torch::jit {
struct Graph;
struct GraphFunction;
}  // namespace torch::jit

namespace slapo::schedule {

class TracedGraph {
 public:
  // `module` is the slot's module; `path` names it in errors.
  TracedGraph(torch::nn::AnyModule module, std::string path);
  ~TracedGraph();

  // Traces for these inputs' shapes (if not yet) and runs the graph.
  at::Tensor run(const std::vector<at::Tensor>& inputs);
  // The graph of the first shape traced, as TorchScript IR text.
  std::string graph_text() const;
  std::shared_ptr<torch::jit::Graph> graph() const;
  size_t shapes() const { return graphs_.size(); }
  // Bumped whenever a graph of this slot changes (a match from an older version is stale).
  int64_t version() const { return version_; }
  // Rewrites `pattern` into `replacement` (TorchScript IR) in every graph of this slot, the ones
  // traced later included. Returns how many matches the current graphs had.
  size_t add_rewrite(const std::string& pattern, const std::string& replacement);

 private:
  struct Entry;
  Entry& entry_for(const std::vector<at::Tensor>& inputs);
  std::vector<at::Tensor> parameters() const;

  torch::nn::AnyModule module_;
  std::string path_;
  std::map<std::string, std::unique_ptr<Entry>> graphs_;  // by input and parameter shapes
  std::vector<std::pair<std::string, std::string>> rewrites_;
  std::string first_;
  int64_t version_ = 0;
};

}  // namespace slapo::schedule
