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

namespace {
// "GptBlock.attn": the module's class and the slot, for errors.
std::string join(const std::string& module, const std::string& slot) { return module + "." + slot; }
}  // namespace

void SlotModule::add_slot_any(const std::string& name, torch::nn::AnyModule module,
                              Signature signature) {
  SLAPO_CHECK(!has_slot(name), ErrorCode::kInvalidArgument, "'", name_of_module(),
              "' already has a slot '", name, "'");
  register_module(name, module.ptr());
  slots_[name] = Slot{std::move(module), std::move(signature), {}};
  order_.push_back(name);
}

Values SlotModule::call_values(const std::string& name, const Values& inputs) {
  Slot& s = slot(name);
  if (s.policy.plain()) {
    return forward_values(s.module, s.signature, inputs, join(name_of_module(), name));
  }
  return call_with_policy(s, name, inputs);
}

void SlotModule::check_result_count(const Slot& s, const std::string& name, size_t count) const {
  SLAPO_CHECK(s.signature.by_values && s.signature.outputs == count, ErrorCode::kInvalidArgument,
              "call of '", join(name_of_module(), name), "': its forward is ", s.signature.text,
              ", called for a result of ", count, count == 1 ? " tensor" : " tensors");
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

Values SlotModule::call_with_policy(Slot& s, const std::string& name, Values inputs) {
  const std::string where = join(name_of_module(), name);
  SLAPO_CHECK(s.signature.by_values, ErrorCode::kInvalidArgument, "call of '", where,
              "': a checkpointed, forked, synchronized or traced module needs a forward of tensors "
              "and optional tensors to tensors; this one is ",
              s.signature.text);
  // The syncs act on the hidden state: the first input, the first output (slot_module.h).
  for (const SyncSpec& sync : s.policy.syncs) {
    if (sync.mode == SyncMode::kFwdPost) continue;
    inputs.at(0) = apply_sync(sync, inputs.at(0));
  }
  auto run = [&]() -> Values {
    if (s.policy.bias_after_reduce) {
      // A Linear or a DecomposedLinear: the product alone; the bias comes after the reduce.
      return {torch::nn::functional::linear(inputs.at(0),
                                            s.module.ptr()->named_parameters(false)["weight"])};
    }
    // A traced module runs its graph, checkpointed or not.
    std::shared_ptr<TracedGraph> traced = s.policy.traced;
    ValuesFunction forward = [module = s.module, signature = s.signature, traced,
                              where](const Values& xs) mutable {
      return traced ? traced->run(xs) : forward_values(module, signature, xs, where);
    };
    if (s.policy.checkpoint && s.module.ptr()->is_training() && torch::GradMode::is_enabled()) {
      std::vector<std::shared_ptr<RngStream>> streams;
      collect_streams(*s.module.ptr(), &streams);
      return checkpoint_call(std::move(forward), inputs, s.module.ptr()->parameters(),
                             std::move(streams));
    }
    return forward(inputs);
  };
  Values out = s.policy.rng ? s.policy.rng->run(run) : run();
  for (const SyncSpec& sync : s.policy.syncs) {
    if (sync.mode == SyncMode::kFwdPost) out.at(0) = apply_sync(sync, out.at(0));
  }
  if (s.policy.bias_after_reduce) {
    const auto params = s.module.ptr()->named_parameters(false);
    if (params.contains("bias")) out.at(0) = out.at(0) + params["bias"];
  }
  return out;
}

}  // namespace slapo::schedule
