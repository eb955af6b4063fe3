#include "schedule/graph/fusion_chains.h"

#include <functional>
#include <optional>
#include <unordered_map>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>
#include <torch/csrc/jit/passes/subgraph_rewrite.h>

#include "schedule/graph/graph_match.h"
#include "schedule/kernels/fused_kernels.h"

namespace slapo::schedule {

using torch::jit::Value;
using ValueMap = std::unordered_map<std::string, Value*>;

struct FusedChain {
  const char* name;
  // Each form: a pattern and its replacement (TorchScript IR with the same inputs).
  std::vector<std::pair<std::string, std::string>> forms;
  // Whether an occurrence fits the kernel (shapes), given the pattern's values by name.
  std::function<bool(const ValueMap&)> fits;
};

namespace {

std::optional<std::vector<int64_t>> sizes_of(const Value* v) {
  const auto t = v->type()->cast<c10::TensorType>();
  if (!t) return std::nullopt;
  const auto sizes = t->sizes().concrete_sizes();
  if (!sizes) return std::nullopt;
  return *sizes;
}

// `b` is a 1-D bias along the last axis of `x`.
bool is_bias_of(const ValueMap& m, const char* b, const char* x) {
  const auto bs = sizes_of(m.at(b)), xs = sizes_of(m.at(x));
  return bs && xs && bs->size() == 1 && !xs->empty() && bs->at(0) == xs->back();
}

const char* const kBiasGelu = R"(
graph(%x, %b):
  %one : int = prim::Constant[value=1]()
  %exact : str = prim::Constant[value="none"]()
  %y = aten::add(%x, %b, %one)
  %z = aten::gelu(%y, %exact)
  return (%z))";
const char* const kBiasGeluFused = R"(
graph(%x, %b):
  %z = slapo::bias_gelu(%x, %b)
  return (%z))";

// The residual on either side of the add.
// (Each use of a constant gets a constant of its own: a pattern value matches one graph value,
// and the tracer makes one constant per use.)
std::string bias_dropout_add(bool residual_first) {
  return std::string(R"(
graph(%x, %b, %residual, %p, %seed, %axis, %parts, %rank, %independent):
  %one : int = prim::Constant[value=1]()
  %also_one : int = prim::Constant[value=1]()
  %y = aten::add(%x, %b, %one)
  %d = slapo::keyed_dropout(%y, %p, %seed, %axis, %parts, %rank, %independent)
  %z = aten::add()") +
         (residual_first ? "%residual, %d" : "%d, %residual") + R"(, %also_one)
  return (%z))";
}
const char* const kBiasDropoutAddFused = R"(
graph(%x, %b, %residual, %p, %seed, %axis, %parts, %rank, %independent):
  %z = slapo::bias_dropout_add(%x, %b, %residual, %p, %seed, %axis, %parts, %rank, %independent)
  return (%z))";

const char* const kLayerNorm = R"(
graph(%x, %shape, %weight, %bias, %eps, %cudnn):
  %z = aten::layer_norm(%x, %shape, %weight, %bias, %eps, %cudnn)
  return (%z))";
const char* const kLayerNormFused = R"(
graph(%x, %shape, %weight, %bias, %eps, %cudnn):
  %z = slapo::layer_norm(%x, %weight, %bias, %eps)
  return (%z))";

const std::vector<FusedChain>& chains() {
  static const std::vector<FusedChain> all = {
      {"bias_gelu",
       {{kBiasGelu, kBiasGeluFused}},
       [](const ValueMap& m) { return is_bias_of(m, "b", "x"); }},
      {"bias_dropout_add",
       {{bias_dropout_add(true), kBiasDropoutAddFused},
        {bias_dropout_add(false), kBiasDropoutAddFused}},
       [](const ValueMap& m) {
         const auto xs = sizes_of(m.at("x")), rs = sizes_of(m.at("residual"));
         return is_bias_of(m, "b", "x") && xs && rs && *xs == *rs;
       }},
      {"layer_norm",
       {{kLayerNorm, kLayerNormFused}},
       [](const ValueMap& m) {
         // Over the last axis, with an affine weight and bias (layer_norm requires the weight to
         // have the normalized shape, so weight [H] means normalized over the last axis).
         const auto xs = sizes_of(m.at("x")), ws = sizes_of(m.at("weight")),
                    bs = sizes_of(m.at("bias"));
         if (!xs || !ws || !bs || xs->empty()) return false;
         const std::vector<int64_t> last = {xs->back()};
         return *ws == last && *bs == last;
       }},
  };
  return all;
}

}  // namespace

const FusedChain* find_chain(const std::string& name) {
  for (const FusedChain& c : chains()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

std::string chain_names() {
  std::string out;
  for (const FusedChain& c : chains()) out += (out.empty() ? "" : ", ") + std::string(c.name);
  return out;
}

const char* chain_name(const FusedChain& chain) { return chain.name; }

size_t rewrite_chain(const FusedChain& chain, std::shared_ptr<torch::jit::Graph>& graph,
                     const std::unordered_set<const torch::jit::Node*>* only) {
  fused_kernels_linked();
  size_t rewritten = 0;
  for (const auto& [pattern, replacement] : chain.forms) {
    torch::jit::SubgraphRewriter rewriter;
    rewriter.RegisterRewritePattern(pattern, replacement);
    // The rewriter names the pattern's values; the shapes are those of the graph's values they
    // match.
    rewriter.runOnGraph(graph, [&](const torch::jit::Match& match, const ValueMap& pattern_values) {
      if (only && graph_surgery::operation_set(match) != *only) return false;
      ValueMap values;
      for (const auto& [name, v] : pattern_values) {
        auto it = match.values_map.find(v);
        if (it != match.values_map.end()) values[name] = it->second;
      }
      if (!chain.fits(values)) return false;
      ++rewritten;
      return true;
    });
  }
  return rewritten;
}

size_t count_chain(const FusedChain& chain, const torch::jit::Graph& graph) {
  std::shared_ptr<torch::jit::Graph> copy = const_cast<torch::jit::Graph&>(graph).copy();
  return rewrite_chain(chain, copy);
}

const FusedChain* chain_covering(const torch::jit::Graph& graph,
                                 const std::unordered_set<const torch::jit::Node*>& ops) {
  for (const FusedChain& c : chains()) {
    for (const auto& form : c.forms) {
      const auto pattern = graph_surgery::parse_pattern(form.first, "fuse");
      for (const torch::jit::Match& m : graph_surgery::matches(*pattern, graph)) {
        if (graph_surgery::operation_set(m) != ops) continue;
        ValueMap values;
        for (const Value* v : pattern->inputs()) {
          auto it = m.values_map.find(v);
          if (it != m.values_map.end()) values[v->debugName()] = it->second;
        }
        if (c.fits(values)) return &c;
      }
    }
  }
  return nullptr;
}

}  // namespace slapo::schedule
