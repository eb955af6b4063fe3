#include "schedule/language/schedule.h"

#include <algorithm>
#include <sstream>

#include "core/config.h"
#include "core/error.h"
#include "core/text.h"
#include "schedule/language/decomposed_linear.h"
#include "schedule/language/replay.h"
#include "schedule/language/sequence.h"
#include "schedule/language/shard_aware.h"
#include "schedule/runtime/communicator.h"
#include "schedule/runtime/keyed_dropout.h"
#include "schedule/runtime/rng_stream.h"

#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

namespace slapo::schedule {

struct Schedule::Root {
  ScheduleOptions options;
  std::shared_ptr<SlotModule> model;
  ScheduleRecord record;
  std::map<const c10::TensorImpl*, std::map<std::string, std::string>> annotations;
  std::map<const c10::TensorImpl*, size_t> sharded;  // tensor → index in record.shards
};

namespace {

std::string join_path(const std::string& a, const std::string& b) {
  return a.empty() ? b : a + "." + b;
}

}  // namespace

int64_t ScheduleOptions::tp_parts() const { return tp_group ? tp_group->size() : tp_size; }
int64_t ScheduleOptions::tp_rank() const { return tp_group ? tp_group->rank() : 0; }

std::string AppliedPrimitive::to_string() const {
  return "sch[" + quote_argument(path) + "]." + primitive + "(" + args + ")";
}

Schedule::Schedule(Root* root, Schedule* parent, std::string path, std::string slot_name,
                   std::shared_ptr<torch::nn::Module> module)
    : root_(root),
      parent_(parent),
      path_(std::move(path)),
      slot_name_(std::move(slot_name)),
      module_(std::move(module)) {
  rebuild_children();
}

Schedule::~Schedule() = default;

ScheduleHandle Schedule::create(std::shared_ptr<SlotModule> root, ScheduleOptions options) {
  SLAPO_CHECK(root != nullptr, ErrorCode::kInvalidArgument, "create_schedule: the model is null");
  auto state = std::make_unique<Root>();
  state->options = options;
  state->model = root;
  ScheduleHandle sch(new Schedule(state.get(), nullptr, "", "", root));
  sch->owned_root_ = std::move(state);
  return sch;
}

void Schedule::rebuild_children() {
  children_.clear();
  if (auto* slots = dynamic_cast<SlotModule*>(module_.get())) {
    for (const std::string& name : slots->slot_names()) {
      children_.emplace_back(
          new Schedule(root_, this, join_path(path_, name), name, slots->slot(name).module.ptr()));
    }
    return;
  }
  for (const auto& item : module_->named_children()) {
    children_.emplace_back(
        new Schedule(root_, this, join_path(path_, item.key()), item.key(), item.value()));
  }
}

Schedule* Schedule::find_child(const std::string& name) {
  for (auto& child : children_) {
    if (child->slot_name_ == name) return child.get();
  }
  return nullptr;
}

Schedule& Schedule::operator[](const std::string& path) {
  Schedule* node = this;
  size_t start = 0;
  while (start < path.size()) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    Schedule* next = node->find_child(part);
    if (!next) {
      // The nearest valid paths: the closest full paths by edit distance, and this level's
      // children.
      const std::string wanted = join_path(path_, path);
      std::vector<std::pair<size_t, std::string>> scored;
      for (const auto& [p, s] : root_schedule().named_schedules()) {
        if (!p.empty()) scored.emplace_back(edit_distance(wanted, p), p);
      }
      std::sort(scored.begin(), scored.end());
      std::string near;
      for (size_t i = 0; i < scored.size() && i < 3; ++i)
        near += (i ? ", " : "") + scored[i].second;
      std::string children;
      for (const auto& c : node->children_)
        children += (children.empty() ? "" : ", ") + c->slot_name_;
      SLAPO_FAIL(
          ErrorCode::kNotFound, "no module at path '", wanted, "': '",
          node->path_.empty() ? "the model" : node->path_, "' has no child '", part, "'",
          children.empty() ? std::string(" (it has no children)") : " (children: " + children + ")",
          near.empty() ? std::string() : "; nearest paths: " + near);
    }
    node = next;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return *node;
}

Schedule& Schedule::root_schedule() {
  Schedule* node = this;
  while (node->parent_) node = node->parent_;
  return *node;
}

std::vector<std::pair<std::string, Schedule*>> Schedule::named_schedules() {
  std::vector<std::pair<std::string, Schedule*>> out;
  std::vector<Schedule*> stack = {this};
  while (!stack.empty()) {
    Schedule* s = stack.back();
    stack.pop_back();
    out.emplace_back(s->path_, s);
    for (auto it = s->children_.rbegin(); it != s->children_.rend(); ++it)
      stack.push_back(it->get());
  }
  return out;
}

const ScheduleOptions& Schedule::options() const { return root_->options; }
const ScheduleRecord& Schedule::record() const { return root_->record; }
std::shared_ptr<SlotModule> Schedule::model() const { return root_->model; }

std::string Schedule::to_string() const {
  std::string out;
  for (const AppliedPrimitive& p : root_->record.applied) out += p.to_string() + "\n";
  return out;
}

void Schedule::record_primitive(const std::string& primitive, const std::string& args) {
  root_->record.applied.push_back({path_, primitive, args});
}

SlotModule& Schedule::parent_slots(const char* primitive) {
  SLAPO_CHECK(parent_ != nullptr, ErrorCode::kInvalidArgument, primitive,
              ": cannot be applied to the root of the model; apply it to a submodule");
  auto* slots = dynamic_cast<SlotModule*>(parent_->module_.get());
  SLAPO_CHECK(slots != nullptr, ErrorCode::kInvalidArgument, primitive, " on '", path_,
              "': its parent '", parent_->path_,
              "' is not schedulable (not a SlotModule, see docs/schedule.md)");
  return *slots;
}

torch::Tensor Schedule::tensor_named(const std::string& name, const char* primitive) {
  for (const auto& p : module_->named_parameters(/*recurse=*/false)) {
    if (p.key() == name) return p.value();
  }
  for (const auto& b : module_->named_buffers(/*recurse=*/false)) {
    if (b.key() == name) return b.value();
  }
  std::string known;
  for (const auto& p : module_->named_parameters(false))
    known += (known.empty() ? "" : ", ") + p.key();
  for (const auto& b : module_->named_buffers(false))
    known += (known.empty() ? "" : ", ") + b.key();
  SLAPO_FAIL(ErrorCode::kNotFound, primitive, ": '", path_.empty() ? "the model" : path_,
             "' has no parameter or buffer '", name, "'",
             known.empty() ? std::string(" (it has none)") : " (it has: " + known + ")");
}

Schedule& Schedule::replace_any(torch::nn::AnyModule module, Signature signature,
                                const std::string& type_name) {
  SlotModule& parent = parent_slots("replace");
  check_traced_graphs("replace", Change::kModule);
  const Signature& current = parent.slot(slot_name_).signature;
  SLAPO_CHECK(signature == current, ErrorCode::kInvalidArgument, "replace on '", path_,
              "': the new module's forward is ", signature.text, " but the slot expects ",
              current.text);
  // Annotations follow parameters and buffers of the same name into the new module.
  std::map<std::string, std::map<std::string, std::string>> moved;
  for (const auto& p : module_->named_parameters()) {
    auto it = root_->annotations.find(p.value().unsafeGetTensorImpl());
    if (it != root_->annotations.end()) moved[p.key()] = it->second;
  }
  for (const auto& b : module_->named_buffers()) {
    auto it = root_->annotations.find(b.value().unsafeGetTensorImpl());
    if (it != root_->annotations.end()) moved[b.key()] = it->second;
  }
  parent.set_slot_module(slot_name_, module, signature);
  module_ = module.ptr();
  for (const auto& p : module_->named_parameters()) {
    auto it = moved.find(p.key());
    if (it != moved.end()) root_->annotations[p.value().unsafeGetTensorImpl()] = it->second;
  }
  for (const auto& b : module_->named_buffers()) {
    auto it = moved.find(b.key());
    if (it != moved.end()) root_->annotations[b.value().unsafeGetTensorImpl()] = it->second;
  }
  rebuild_children();
  retrace_graphs();
  root_->record.replaced.emplace_back(path_, type_name);
  record_primitive("replace", type_name);
  return *this;
}

Slot& Schedule::policy_slot(const char* primitive) {
  Slot& slot = parent_slots(primitive).slot(slot_name_);
  // The policy calls the module through a list of tensors (module_values.h).
  SLAPO_CHECK(slot.signature.by_values, ErrorCode::kInvalidArgument, primitive, " on '", path_,
              "': supports modules whose forward takes 1 to ", kMaxValueInputs,
              " tensors or optional tensors and returns a tensor or a tuple of up to ",
              kMaxValueOutputs, " tensors; this one is ", slot.signature.text);
  return slot;
}

Schedule& Schedule::checkpoint() {
  Slot& slot = policy_slot("checkpoint");
  check_traced_graphs("checkpoint", Change::kPolicy);
  SLAPO_CHECK(!slot.policy.checkpoint, ErrorCode::kInvalidArgument, "checkpoint on '", path_,
              "': already checkpointed");
  slot.policy.checkpoint = true;
  root_->record.checkpointed.push_back(path_);
  record_primitive("checkpoint", "");
  return *this;
}

Schedule& Schedule::fork_rng(std::optional<uint64_t> seed) {
  Slot& slot = policy_slot("fork_rng");
  check_traced_graphs("fork_rng", Change::kPolicy);
  const bool keyed_dropout = dynamic_cast<KeyedDropoutImpl*>(module_.get()) != nullptr;
  if (keyed_dropout) check_traced_graphs("fork_rng", Change::kModule);  // its seed changes
  SLAPO_CHECK(!slot.policy.rng, ErrorCode::kInvalidArgument, "fork_rng on '", path_,
              "': already has its own stream");
  // Without an explicit seed: the options' seed mixed with the path, stable across runs.
  const uint64_t s =
      seed ? *seed
           : std::stoull(stable_hash(std::to_string(root_->options.seed) + ":" + path_), nullptr,
                         16);
  slot.policy.rng = std::make_shared<RngStream>(s);
  // A keyed dropout draws from its own seed, not from the default generator: re-seed it, and
  // where its data is sharded each tensor-parallel rank gets its own stream.
  if (keyed_dropout) {
    dynamic_cast<KeyedDropoutImpl&>(*module_).fork(s);
    retrace_graphs();  // a graph of it traced before holds the old seed
  }
  root_->record.forked.push_back(path_);
  record_primitive("fork_rng", seed ? std::to_string(*seed) : "");
  return *this;
}

Schedule& Schedule::annotate(const std::string& name, const std::string& key,
                             const std::string& value) {
  torch::Tensor t = tensor_named(name, "annotate");
  root_->annotations[t.unsafeGetTensorImpl()][key] = value;
  record_primitive(
      "annotate", quote_argument(name) + ", " + quote_argument(key) + ", " + quote_argument(value));
  return *this;
}

std::map<std::string, std::string> Schedule::annotations(const std::string& name) {
  torch::Tensor t = tensor_named(name, "annotations");
  auto it = root_->annotations.find(t.unsafeGetTensorImpl());
  return it == root_->annotations.end() ? std::map<std::string, std::string>{} : it->second;
}

Schedule& Schedule::shard(const std::string& name, int64_t axis) {
  torch::Tensor t = tensor_named(name, "shard");
  check_traced_graphs("shard", Change::kModule);
  const int64_t dims = t.dim();
  SLAPO_CHECK(axis >= 0 && axis < dims, ErrorCode::kInvalidArgument, "shard on '", path_,
              "': axis ", axis, " is out of range for '", name, "' of shape ", t.sizes(), " (",
              dims, " dimensions)");
  const int64_t parts = root_->options.tp_parts();
  SLAPO_CHECK(t.size(axis) % parts == 0, ErrorCode::kInvalidArgument, "shard on '", path_, "': '",
              name, "' has size ", t.size(axis), " along axis ", axis,
              ", which does not divide into ", parts, " parts");
  auto previous = root_->sharded.find(t.unsafeGetTensorImpl());
  if (previous != root_->sharded.end()) {
    const ShardSpec& s = root_->record.shards[previous->second];
    SLAPO_FAIL(ErrorCode::kInvalidArgument, "shard on '", path_, "': '", name,
               "' is already sharded along axis ", s.axis, " (by '", join_path(s.path, s.param),
               "')");
  }
  ShardSpec spec{path_, name, axis, parts, {}};
  // Tied parameters are one tensor under several names: the shard applies to all of them.
  const std::string full = join_path(path_, name);
  for (const auto& p : root_->model->named_parameters()) {
    if (p.value().unsafeGetTensorImpl() == t.unsafeGetTensorImpl() && p.key() != full)
      spec.tied.push_back(p.key());
  }
  root_->sharded[t.unsafeGetTensorImpl()] = root_->record.shards.size();
  root_->record.shards.push_back(spec);
  if (root_->options.tp_group && parts > 1) {
    // Keep this rank's slice. set_ changes the one tensor that the module, its tied names and an
    // optimizer made later all hold; the clone drops the rest of the storage.
    torch::NoGradGuard no_grad;
    const int64_t len = t.size(axis) / parts;
    const int64_t rank = root_->options.tp_rank();
    t.set_(t.narrow(axis, rank * len, len).clone());
    if (auto* aware = dynamic_cast<ShardAware*>(module_.get()))
      aware->on_shard(name, axis, parts, rank);
  }
  retrace_graphs();  // shapes and, for a ShardAware module, what it computes have changed
  record_primitive("shard", quote_argument(name) + ", " + std::to_string(axis));
  return *this;
}

std::vector<std::pair<std::string, const ShardSpec*>> Schedule::shards_below() {
  std::vector<std::pair<std::string, const ShardSpec*>> out;
  for (const auto& p : module_->named_parameters()) {
    auto it = root_->sharded.find(p.value().unsafeGetTensorImpl());
    if (it != root_->sharded.end()) out.emplace_back(p.key(), &root_->record.shards[it->second]);
  }
  for (const auto& b : module_->named_buffers()) {
    auto it = root_->sharded.find(b.value().unsafeGetTensorImpl());
    if (it != root_->sharded.end()) out.emplace_back(b.key(), &root_->record.shards[it->second]);
  }
  return out;
}

namespace {

SyncMode parse_sync_mode(const std::string& path, const std::string& mode) {
  if (mode == "fwd_pre") return SyncMode::kFwdPre;
  if (mode == "fwd_post") return SyncMode::kFwdPost;
  if (mode == "bwd_post") return SyncMode::kBwdPost;
  SLAPO_FAIL(ErrorCode::kInvalidArgument, "sync on '", path, "': unknown mode '", mode,
             "' (modes: fwd_pre, fwd_post, bwd_post)");
}

SyncOp parse_sync_op(const std::string& path, const std::string& op) {
  if (op == "all_reduce") return SyncOp::kAllReduce;
  if (op == "all_gather") return SyncOp::kAllGather;
  if (op == "reduce_scatter") return SyncOp::kReduceScatter;
  if (op == "split") return SyncOp::kSplit;
  SLAPO_FAIL(ErrorCode::kInvalidArgument, "sync on '", path, "': unknown op '", op,
             "' (ops: all_reduce, all_gather, reduce_scatter, split)");
}

}  // namespace

Schedule& Schedule::sync(const std::string& mode_name, const std::string& op_name, int64_t axis) {
  const SyncMode mode = parse_sync_mode(path_, mode_name);
  const SyncOp op = parse_sync_op(path_, op_name);
  const std::string what = "sync(\"" + mode_name + "\", \"" + op_name + "\") on '" + path_ + "'";
  check_traced_graphs("sync", Change::kPolicy);
  SLAPO_CHECK(
      mode != SyncMode::kBwdPost || op == SyncOp::kAllReduce || op == SyncOp::kReduceScatter,
      ErrorCode::kInvalidArgument, what, ": bwd_post takes all_reduce or reduce_scatter");
  SLAPO_CHECK(op != SyncOp::kSplit || mode == SyncMode::kFwdPre, ErrorCode::kInvalidArgument, what,
              ": split only applies to the inputs (fwd_pre)");
  // What is sharded here decides which collectives make sense. For a Linear or an Embedding the
  // layout of the output follows from the weight's axis; other modules need some shard below.
  const auto shards = shards_below();
  SLAPO_CHECK(!shards.empty(), ErrorCode::kInvalidArgument, what, ": nothing at or below '", path_,
              "' is sharded, so there is nothing to synchronize (shard a parameter first)");
  std::optional<int64_t> weight_axis;
  for (const auto& [name, spec] : shards) {
    if (name == "weight") weight_axis = spec->axis;
  }
  const bool linear = dynamic_cast<torch::nn::LinearImpl*>(module_.get()) != nullptr ||
                      dynamic_cast<DecomposedLinearImpl*>(module_.get()) != nullptr;
  const bool embedding = dynamic_cast<torch::nn::EmbeddingImpl*>(module_.get()) != nullptr;
  // The output of a Linear is partial sums when its weight is split along the inputs (axis 1) and
  // split along its last axis when the weight is split along the outputs (axis 0); an embedding's
  // the other way round.
  const int64_t partial_axis = linear ? 1 : 0;
  const int64_t split_axis = linear ? 0 : 1;
  if ((linear || embedding) && mode == SyncMode::kFwdPost) {
    const bool wants_partial = op == SyncOp::kAllReduce || op == SyncOp::kReduceScatter;
    const int64_t needed = wants_partial ? partial_axis : split_axis;
    SLAPO_CHECK(
        weight_axis == needed, ErrorCode::kInvalidArgument, what,
        ": needs 'weight' sharded along axis ", needed,
        wants_partial ? " (partial sums to reduce)" : " (an output split along its last axis)",
        weight_axis ? ", but it is sharded along axis " + std::to_string(*weight_axis)
                    : std::string(", but it is not sharded"));
    SLAPO_CHECK(op != SyncOp::kAllGather || axis == -1, ErrorCode::kInvalidArgument, what,
                ": the output is split along", " its last axis (-1), not along axis ", axis);
  }
  if (linear && op == SyncOp::kSplit) {
    SLAPO_CHECK(
        weight_axis == 1 && axis == -1, ErrorCode::kInvalidArgument, what,
        ": splitting the input along its last axis needs 'weight' sharded along axis 1 (its inputs)",
        " and axis -1");
  }
  Slot& slot = policy_slot("sync");
  // The collective acts on the hidden state: the first input and the first output.
  SLAPO_CHECK(slot.signature.inputs.at(0) == InputKind::kTensor, ErrorCode::kInvalidArgument, what,
              ": the forward's first input is optional (", slot.signature.text,
              "); sync acts on the first input and output, which must be tensors");
  if (root_->options.tp_group) {
    slot.policy.syncs.push_back(SyncSpec{mode, op, axis, root_->options.tp_group});
    if (linear && mode == SyncMode::kFwdPost && op == SyncOp::kAllReduce) {
      const bool has_bias = module_->named_parameters(false).contains("bias");
      const bool bias_sharded = std::any_of(shards.begin(), shards.end(),
                                            [](const auto& s) { return s.first == "bias"; });
      SLAPO_CHECK(!slot.policy.checkpoint, ErrorCode::kInvalidArgument, what,
                  ": checkpoint the module around this Linear instead of the Linear itself");
      slot.policy.bias_after_reduce = has_bias && !bias_sharded;
    }
  }
  root_->record.syncs.push_back({path_, mode_name, op_name, axis});
  const bool has_axis = op != SyncOp::kAllReduce;
  record_primitive("sync", quote_argument(mode_name) + ", " + quote_argument(op_name) +
                               (has_axis ? ", " + std::to_string(axis) : ""));
  return *this;
}

Schedule& Schedule::decompose() {
  auto linear = std::dynamic_pointer_cast<torch::nn::LinearImpl>(module_);
  SLAPO_CHECK(linear != nullptr, ErrorCode::kInvalidArgument, "decompose on '", path_,
              "': only an nn::Linear can be decomposed (this is ", module_->name(), ")");
  check_traced_graphs("decompose", Change::kModule);
  for (const char* name : {"weight", "bias"}) {
    if (!module_->named_parameters(false).contains(name)) continue;
    SLAPO_CHECK(!root_->sharded.count(module_->named_parameters(false)[name].unsafeGetTensorImpl()),
                ErrorCode::kInvalidArgument, "decompose on '", path_,
                "': must come before shard, but '", name, "' is already sharded");
  }
  replace(DecomposedLinear(*linear));
  // replace() recorded itself; the schedule text says what was meant.
  root_->record.applied.back() = AppliedPrimitive{path_, "decompose", ""};
  root_->record.replaced.back().second = "decompose";
  return *this;
}

Schedule& Schedule::cut_pipeline_stage() {
  SLAPO_CHECK(
      parent_ != nullptr, ErrorCode::kInvalidArgument,
      "cut_pipeline_stage: cannot cut at the root of the model; cut after a child of a Sequence");
  const auto* sequence = dynamic_cast<SequenceImpl*>(parent_->module_.get());
  SLAPO_CHECK(sequence != nullptr, ErrorCode::kInvalidArgument, "cut_pipeline_stage on '", path_,
              "': its parent '", parent_->path_,
              "' is not a Sequence; stages can only be cut between sequential children");
  SLAPO_CHECK(slot_name_ != sequence->slot_names().back(), ErrorCode::kInvalidArgument,
              "cut_pipeline_stage on '", path_, "': it is the last child of '", parent_->path_,
              "', so the stage after it would be empty");
  auto& cuts = root_->record.cuts;
  SLAPO_CHECK(std::find(cuts.begin(), cuts.end(), path_) == cuts.end(), ErrorCode::kInvalidArgument,
              "cut_pipeline_stage on '", path_, "': already cut there");
  cuts.push_back(path_);
  record_primitive("cut_pipeline_stage", "");
  return *this;
}

}  // namespace slapo::schedule
