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
//
// Any forward of tensors and optional tensors to a tensor or a tuple of tensors can be traced
// (module_values.h): an absent optional input is not a graph input — which inputs are present is
// part of the key, like the shapes — and each tensor of a tuple result is a graph output.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/modules/container/any.h>

#include "schedule/language/module_values.h"

namespace torch::jit {
struct Graph;
struct GraphFunction;
}  // namespace torch::jit

namespace slapo::schedule {

// A function that runs `graph` op by op with eager autograd (the "simple" executor): the graph is
// already what we want it to be, so the profiling executor's specializations, guards and symbolic
// autodiff would only add cost (and rewrite what fuse() put there).
std::unique_ptr<torch::jit::GraphFunction> graph_function(const std::string& name,
                                                          std::shared_ptr<torch::jit::Graph> graph);

class TracedGraph {
 public:
  // `module` is the slot's module and `signature` its forward's; `path` names it in errors.
  TracedGraph(torch::nn::AnyModule module, Signature signature, std::string path);
  ~TracedGraph();

  // Traces for these inputs' shapes (if not yet) and runs the graph: the forward's outputs.
  Values run(const Values& inputs);
  // The graph of the first shape traced, as TorchScript IR text.
  std::string graph_text() const;
  std::shared_ptr<torch::jit::Graph> graph() const;
  size_t shapes() const { return graphs_.size(); }
  // Bumped whenever the graphs of this slot are transformed (a match from an older version is
  // stale). Tracing a new shape does not change it: the new graph gets the same transforms.
  int64_t version() const { return version_; }
  // A rewrite of one graph. It may throw; then no graph of this slot changes.
  using Transform = std::function<void(std::shared_ptr<torch::jit::Graph>&)>;
  // Applies `transform` to every graph of this slot now and to each graph traced later.
  void add_transform(Transform transform);
  // The graphs traced so far, one per shape.
  std::vector<std::shared_ptr<torch::jit::Graph>> graphs() const;
  // Whether fuse, replace or checkpoint of a match rewrote this slot's graphs: such rewrites were
  // found in graphs of the module as it was, so they cannot follow it through a change.
  bool rewritten() const { return !transforms_.empty(); }
  // The module changed (it, or something below it, was replaced or sharded): every graph is
  // forgotten and traced again at the next call, of `module` (the slot's module now). Matches
  // found before are stale. REQUIRES: !rewritten() (the schedule refuses the change otherwise).
  void invalidate(torch::nn::AnyModule module);

 private:
  struct Entry;
  Entry& entry_for(const Values& inputs, const std::vector<at::Tensor>& params);
  std::vector<at::Tensor> parameters() const;
  // The eager forward (what a graph must reproduce).
  Values eager(const Values& inputs);

  torch::nn::AnyModule module_;
  Signature signature_;
  std::string path_;
  std::map<std::string, std::unique_ptr<Entry>> graphs_;  // by input and parameter shapes
  std::vector<Transform> transforms_;
  std::string first_;
  int64_t version_ = 0;
};

}  // namespace slapo::schedule
