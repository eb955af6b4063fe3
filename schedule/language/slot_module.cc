#include "schedule/language/slot_module.h"

#include <torch/csrc/autograd/grad_mode.h>
#include <torch/nn/functional/linear.h>
#include <torch/nn/modules/linear.h>

#include "core/error.h"
#include "schedule/graph/traced_graph.h"
#include "schedule/runtime/checkpoint.h"
#include "schedule/runtime/collectives.h"
#include "schedule/runtime/rng_stream.h"

namespace slapo::schedule {

namespace {
// Every forked stream in the subtree of `module` (inclusive).
void collect_streams(torch::nn::Module& module, std::vector<std::shared_ptr<RngStream>>* out) {
  for (const auto& m : module.modules(/*include_self=*/true)) {
    if (auto* slots = dynamic_cast<SlotModule*>(m.get())) {
      for (const std::string& name : slots->slot_names()) {
        if (slots->slot(name).policy.rng) out->push_back(slots->slot(name).policy.rng);
      }
    }
  }
}
}  // namespace

Slot& SlotModule::slot(const std::string& name) {
  return const_cast<Slot&>(static_cast<const SlotModule*>(this)->slot(name));
}

const Slot& SlotModule::slot(const std::string& name) const {
  auto it = slots_.find(name);
  if (it == slots_.end()) {
    std::string known;
    for (const std::string& n : order_) known += (known.empty() ? "" : ", ") + n;
    SLAPO_FAIL(ErrorCode::kNotFound, name_of_module(), " has no slot '", name, "' (slots: ", known,
               ")");
  }
  return it->second;
}

std::string SlotModule::name_of_module() const { return name(); }

void SlotModule::add_slot_any(const std::string& name, torch::nn::AnyModule module,
                              Signature signature) {
  SLAPO_CHECK(!has_slot(name), ErrorCode::kInvalidArgument, "'", name_of_module(),
              "' already has a slot '", name, "'");
  register_module(name, module.ptr());
  slots_[name] = Slot{std::move(module), std::move(signature), {}};
  order_.push_back(name);
}

torch::Tensor SlotModule::call_tensors(const std::string& name,
                                       const std::vector<torch::Tensor>& inputs) {
  Slot& s = slot(name);
  if (s.policy.plain()) {
    return forward_tensors(s.module, inputs);
  }
  return call_with_policy(s, inputs);
}

void SlotModule::set_slot_module(const std::string& name, torch::nn::AnyModule module,
                                 Signature signature) {
  Slot& s = slot(name);
  replace_module(name, module.ptr());
  s.module = std::move(module);
  s.signature = std::move(signature);
}

namespace {

torch::Tensor apply_sync(const SyncSpec& sync, const torch::Tensor& x) {
  Communicator& group = *sync.group;
  if (sync.mode == SyncMode::kBwdPost) {
    // Forward does the conjugate of what backward must do to the input's gradient.
    if (sync.op == SyncOp::kAllReduce) return copy_to_group(x, group);
    return gather_reduce_scatter(x, group, sync.axis);  // kReduceScatter (checked by sync())
  }
  switch (sync.op) {
    case SyncOp::kAllReduce: return reduce_from_group(x, group);
    case SyncOp::kAllGather: return gather_from_group(x, group, sync.axis);
    case SyncOp::kReduceScatter: return reduce_scatter_group(x, group, sync.axis);
    case SyncOp::kSplit: return split_to_group(x, group, sync.axis);
  }
  return x;
}

}  // namespace

torch::Tensor SlotModule::call_with_policy(Slot& s, std::vector<torch::Tensor> inputs) {
  for (const SyncSpec& sync : s.policy.syncs) {
    if (sync.mode == SyncMode::kFwdPost) continue;
    for (torch::Tensor& x : inputs) x = apply_sync(sync, x);
  }
  auto run = [&]() -> torch::Tensor {
    if (s.policy.bias_after_reduce) {
      // A Linear or a DecomposedLinear: the product alone; the bias comes after the reduce.
      return torch::nn::functional::linear(inputs.at(0),
                                           s.module.ptr()->named_parameters(false)["weight"]);
    }
    // A traced module runs its graph, checkpointed or not.
    std::shared_ptr<TracedGraph> traced = s.policy.traced;
    TensorFunction forward = [module = s.module, traced](const std::vector<torch::Tensor>& xs) {
      return traced ? traced->run(xs) : forward_tensors(module, xs);
    };
    if (s.policy.checkpoint && s.module.ptr()->is_training() && torch::GradMode::is_enabled()) {
      std::vector<std::shared_ptr<RngStream>> streams;
      collect_streams(*s.module.ptr(), &streams);
      return checkpoint_call(std::move(forward), inputs, s.module.ptr()->parameters(),
                             std::move(streams));
    }
    return forward(inputs);
  };
  torch::Tensor out = s.policy.rng ? s.policy.rng->run(run) : run();
  for (const SyncSpec& sync : s.policy.syncs) {
    if (sync.mode == SyncMode::kFwdPost) out = apply_sync(sync, out);
  }
  if (s.policy.bias_after_reduce) {
    const auto params = s.module.ptr()->named_parameters(false);
    if (params.contains("bias")) out = out + params["bias"];
  }
  return out;
}

torch::Tensor forward_tensors(torch::nn::AnyModule& module, const std::vector<torch::Tensor>& in) {
  switch (in.size()) {
    case 1: return module.forward(in[0]);
    case 2: return module.forward(in[0], in[1]);
    case 3: return module.forward(in[0], in[1], in[2]);
    case 4: return module.forward(in[0], in[1], in[2], in[3]);
    default:
      SLAPO_FAIL(ErrorCode::kInvalidArgument,
                 "a checkpointed or forked module takes 1 to 4 tensors, got ", in.size());
  }
}

}  // namespace slapo::schedule
