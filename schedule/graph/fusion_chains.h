#pragma once
// The chains of operations fuse(…, "native") knows how to put into one of the project's kernels,
// as TorchScript IR patterns over a traced graph, and the rewrite that puts them there.
//
//   bias_gelu         aten::add(x, b) → aten::gelu(·, "none")           → slapo::bias_gelu
//   bias_dropout_add  aten::add(x, b) → slapo::keyed_dropout → + residual → slapo::bias_dropout_add
//   layer_norm        aten::layer_norm over the last axis                → slapo::layer_norm
//
// A chain applies only where the shapes fit the kernel (a 1-D bias along the last axis, a residual
// of the output's shape, weights present): an add of two activations is not a bias add.

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace torch::jit {
struct Graph;
struct Node;
}  // namespace torch::jit

namespace slapo::schedule {

struct FusedChain;  // fusion_chains.cc

// The chain called `name`, or null.
const FusedChain* find_chain(const std::string& name);
// "bias_gelu, bias_dropout_add, layer_norm"
std::string chain_names();
const char* chain_name(const FusedChain& chain);

// Rewrites the occurrences of `chain` in `graph` into its kernel — every one, or only the one whose
// operations are `only`. Returns how many it rewrote.
size_t rewrite_chain(const FusedChain& chain, std::shared_ptr<torch::jit::Graph>& graph,
                     const std::unordered_set<const torch::jit::Node*>* only = nullptr);
// How many occurrences rewrite_chain would rewrite (on a copy of the graph).
size_t count_chain(const FusedChain& chain, const torch::jit::Graph& graph);
// The chain one of whose occurrences in `graph` has exactly the operations `ops`, or null.
const FusedChain* chain_covering(const torch::jit::Graph& graph,
                                 const std::unordered_set<const torch::jit::Node*>& ops);

}  // namespace slapo::schedule
