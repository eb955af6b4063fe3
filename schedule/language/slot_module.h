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
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>

#include "schedule/language/module_values.h"

namespace slapo::schedule {

class RngStream;     // schedule/runtime/rng_stream.h
class TracedGraph;   // schedule/graph/traced_graph.h
class Communicator;  // schedule/runtime/communicator.h

// sync(mode, op): where a collective runs around a slot's forward (Slapo's modes). fwd_pre and
// bwd_post act on the forward's first input, fwd_post on its first output: the hidden state, as in
// a block that also takes a mask or returns its attention probabilities.
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

  // Calls slot `name` with its policy (checkpoint, forked random stream, syncs, traced graph).
  // R is the forward's result type: torch::Tensor, or std::tuple<torch::Tensor, ...>.
  template <typename R = torch::Tensor, typename... Args>
  R call(const std::string& name, Args&&... args) {
    Slot& s = slot(name);
    if (s.policy.plain()) {
      return s.module.forward<R>(std::forward<Args>(args)...);
    }
    check_result_count(s, name, FromValues<R>::count);
    return FromValues<R>::get(call_with_policy(s, name, {to_value(args)...}));
  }

  // The same through Values: one tensor per forward input (undefined for an absent optional),
  // the result's tensors back. REQUIRES: the slot's signature is by_values.
  Values call_values(const std::string& name, const Values& inputs);

  bool has_slot(const std::string& name) const { return slots_.count(name) > 0; }
  // REQUIRES: has_slot(name); otherwise Error(kNotFound) listing the slots.
  Slot& slot(const std::string& name);
  const Slot& slot(const std::string& name) const;
  // Slot names in the order they were added.
  const std::vector<std::string>& slot_names() const { return order_; }

  // Swaps the module of slot `name` (registry and slot together). The policy stays.
  void set_slot_module(const std::string& name, torch::nn::AnyModule module, Signature signature);

 private:
  Values call_with_policy(Slot& s, const std::string& name, Values inputs);
  void check_result_count(const Slot& s, const std::string& name, size_t count) const;
  std::string name_of_module() const;

  std::map<std::string, Slot> slots_;
  std::vector<std::string> order_;
};

}  // namespace slapo::schedule
