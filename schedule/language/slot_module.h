#pragma once
// SlotModule: the base of every schedulable module.
//
// LibTorch's Module::replace_module only updates the children registry; a parent's typed member
// (`nn::Linear fc{nullptr}`) keeps pointing at the old child, and nn::Sequential/ModuleList
// dispatch through private vectors. So a schedulable module reaches each child through a named
// *slot* (an nn::AnyModule kept together with the registry), never through a typed member:
//
//   class MlpImpl : public SlotModule {
//     MlpImpl(int64_t d) { add_slot("fc_in", nn::Linear(d, 4 * d)); ... }
//     Tensor forward(const Tensor& x) { return call("fc_out", call("act", call("fc_in", x))); }
//   };
//
// The schedule swaps a slot's module (replace) and sets how it is called (checkpoint, a forked
// random stream) without the model's code changing. docs/schedule.md explains how to write one.

#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <typeindex>
#include <typeinfo>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>

namespace slapo::schedule {

// The forward signature of a module type without its class: Tensor(const Tensor&).
template <typename T>
struct ForwardSignature;
template <typename C, typename R, typename... A>
struct ForwardSignature<R (C::*)(A...)> {
  using type = R(A...);
  static constexpr size_t arity = sizeof...(A);
  static constexpr bool all_tensors =
      (std::is_same_v<std::decay_t<A>, torch::Tensor> && ...) && std::is_same_v<R, torch::Tensor>;
};
template <typename C, typename R, typename... A>
struct ForwardSignature<R (C::*)(A...) const> : ForwardSignature<R (C::*)(A...)> {};

// What the schedule needs to know of a slot's forward to swap or wrap it safely.
struct Signature {
  std::type_index type = typeid(void);
  std::string text;           // readable: "Tensor(const Tensor&)"
  size_t tensor_inputs = 0;   // number of inputs when all are tensors and it returns a tensor
  bool tensors_only = false;  // every input is a Tensor and the result is a Tensor

  bool operator==(const Signature& other) const { return type == other.type; }
  bool operator!=(const Signature& other) const { return !(*this == other); }
};

// The signature of module class Impl (e.g. torch::nn::LinearImpl).
template <typename Impl>
Signature signature_of_impl() {
  using S = ForwardSignature<decltype(&Impl::forward)>;
  Signature s;
  s.type = typeid(typename S::type);
  s.tensors_only = S::all_tensors;
  s.tensor_inputs = S::all_tensors ? S::arity : 0;
  s.text = "Tensor(" + std::string(S::arity == 0 ? "" : "const Tensor&");
  for (size_t i = 1; i < S::arity; ++i) s.text += ", const Tensor&";
  s.text += ")";
  if (!S::all_tensors) s.text = std::string("forward of ") + typeid(Impl).name();
  return s;
}

// The signature of a module holder (e.g. torch::nn::Linear).
template <typename Holder>
Signature signature_of() {
  return signature_of_impl<typename Holder::ContainedType>();
}

class RngStream;     // schedule/runtime/rng_stream.h
class TracedGraph;   // schedule/graph/traced_graph.h
class Communicator;  // schedule/runtime/communicator.h

// sync(mode, op): where a collective runs around a slot's forward (Slapo's modes).
enum class SyncMode { kFwdPre, kFwdPost, kBwdPost };
// The collective. Each runs with its conjugate in backward (schedule/runtime/collectives.h).
enum class SyncOp { kAllReduce, kAllGather, kReduceScatter, kSplit };

struct SyncSpec {
  SyncMode mode = SyncMode::kFwdPost;
  SyncOp op = SyncOp::kAllReduce;
  int64_t axis = -1;  // for all_gather, reduce_scatter and split
  std::shared_ptr<Communicator> group;
};

// How a slot is called; set by schedule primitives.
struct SlotPolicy {
  bool checkpoint = false;
  std::shared_ptr<RngStream> rng;  // an independent random stream (fork_rng), or none
  std::vector<SyncSpec> syncs;     // in the order they were applied
  // A Linear whose weight is sharded along its input features computes partial sums; its bias must
  // be added once, after the fwd_post all-reduce, not once per rank.
  bool bias_after_reduce = false;
  // trace(): the module's forward runs as a TorchScript graph.
  std::shared_ptr<TracedGraph> traced;

  // Nothing to do around the module's forward: it is called as it is.
  // (bias_after_reduce comes with a sync, so it is covered by syncs.)
  bool plain() const { return !checkpoint && !rng && syncs.empty() && !traced; }
};

struct Slot {
  torch::nn::AnyModule module;
  Signature signature;
  SlotPolicy policy;
};

class SlotModule : public torch::nn::Module {
 public:
  // Registers `module` as child `name` and as a slot. Returns the module.
  template <typename Holder>
  Holder add_slot(const std::string& name, Holder module) {
    register_module(name, module.ptr());
    slots_[name] = Slot{torch::nn::AnyModule(module), signature_of<Holder>(), {}};
    order_.push_back(name);
    return module;
  }

  // The same for a module held by shared_ptr.
  template <typename Impl>
  std::shared_ptr<Impl> add_slot(const std::string& name, std::shared_ptr<Impl> module) {
    register_module(name, module);
    slots_[name] = Slot{torch::nn::AnyModule(module), signature_of_impl<Impl>(), {}};
    order_.push_back(name);
    return module;
  }

  // The same for a module known only by its AnyModule and signature.
  void add_slot_any(const std::string& name, torch::nn::AnyModule module, Signature signature);

  // Calls slot `name` with its policy (checkpoint, forked random stream).
  template <typename... Args>
  torch::Tensor call(const std::string& name, Args&&... args) {
    Slot& s = slot(name);
    if (s.policy.plain()) {
      return s.module.forward(std::forward<Args>(args)...);
    }
    return call_with_policy(s, {args...});
  }

  // The same, for a forward over 1 to 4 tensors given as a list.
  torch::Tensor call_tensors(const std::string& name, const std::vector<torch::Tensor>& inputs);

  bool has_slot(const std::string& name) const { return slots_.count(name) > 0; }
  // REQUIRES: has_slot(name); otherwise Error(kNotFound) listing the slots.
  Slot& slot(const std::string& name);
  const Slot& slot(const std::string& name) const;
  // Slot names in the order they were added.
  const std::vector<std::string>& slot_names() const { return order_; }

  // Swaps the module of slot `name` (registry and slot together). The policy stays.
  void set_slot_module(const std::string& name, torch::nn::AnyModule module, Signature signature);

 private:
  torch::Tensor call_with_policy(Slot& s, std::vector<torch::Tensor> inputs);
  std::string name_of_module() const;

  std::map<std::string, Slot> slots_;
  std::vector<std::string> order_;
};

// Calls an AnyModule whose forward takes `inputs.size()` tensors (1 to 4).
torch::Tensor forward_tensors(torch::nn::AnyModule& module,
                              const std::vector<torch::Tensor>& inputs);
inline torch::Tensor forward_tensors(const torch::nn::AnyModule& module,
                                     const std::vector<torch::Tensor>& inputs) {
  return forward_tensors(const_cast<torch::nn::AnyModule&>(module), inputs);
}

}  // namespace slapo::schedule
