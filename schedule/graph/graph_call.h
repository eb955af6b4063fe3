#pragma once
// The operator `slapo::call(int id, Tensor[] inputs) -> Tensor`: how a traced graph calls C++ code
// that TorchScript cannot hold — a module that replaces a subgraph, or a subgraph that runs under
// checkpointing. The code is registered under a handle; the graph names the handle.
//
// Autograd: the operator is CompositeImplicitAutograd, so the ops inside record their own
// gradients (the module's parameters get theirs; a checkpoint brings its own function).

#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

namespace slapo::schedule {

// What a graph calls: tensors in, one tensor out.
using TensorFunction = std::function<at::Tensor(const std::vector<at::Tensor>&)>;

// Registers `fn` while it lives; graphs call it as slapo::call(id(), [tensors]).
class GraphCallable {
 public:
  explicit GraphCallable(TensorFunction fn);
  ~GraphCallable();
  GraphCallable(const GraphCallable&) = delete;
  GraphCallable& operator=(const GraphCallable&) = delete;
  int64_t id() const { return id_; }

 private:
  int64_t id_;
};

}  // namespace slapo::schedule
