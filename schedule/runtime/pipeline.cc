#include "schedule/runtime/pipeline.h"

#include <chrono>
#include <cmath>
#include <set>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include "core/error.h"
#include "schedule/language/sequence.h"
#include "schedule/runtime/keyed_dropout.h"

namespace slapo::schedule {

Pipelined& as_pipelined(SlotModule& model) {
  auto* p = dynamic_cast<Pipelined*>(&model);
  SLAPO_CHECK(p != nullptr, ErrorCode::kInvalidArgument, "pipeline: the model (", model.name(),
              ") does not implement schedule::Pipelined, so it cannot be split into stages");
  return *p;
}

SequenceImpl& body_of(SlotModule& model) {
  Pipelined& p = as_pipelined(model);
  auto* body = dynamic_cast<SequenceImpl*>(model.slot(p.body_slot()).module.ptr().get());
  SLAPO_CHECK(body != nullptr, ErrorCode::kInvalidArgument, "pipeline: slot '", p.body_slot(),
              "' is not a Sequence");
  return *body;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The carried tensors' descriptions travel ahead of them in one message: [count, then per tensor
// kPerTensor entries: defined, requires_grad, ndim, dtype, d0, d1, ...].
constexpr int64_t kPerTensor = 12;
constexpr int64_t kMaxDims = kPerTensor - 4;
constexpr int64_t kHeader = 1 + static_cast<int64_t>(kMaxCarried) * kPerTensor;

// What backward reaches through: a defined tensor that requires a gradient.
bool carries_gradient(const torch::Tensor& t) { return t.defined() && t.requires_grad(); }

}  // namespace

torch::Tensor Pipelined::prologue(const torch::Tensor&) {
  SLAPO_FAIL(ErrorCode::kInvalidArgument,
             "pipeline: the model implements neither prologue nor prologue_values");
}

torch::Tensor Pipelined::epilogue(const torch::Tensor&) {
  SLAPO_FAIL(ErrorCode::kInvalidArgument,
             "pipeline: the model implements neither epilogue nor epilogue_values");
}

StagePlan plan_stages(SlotModule& model, const std::vector<std::string>& cuts) {
  Pipelined& p = as_pipelined(model);
  const int64_t blocks = static_cast<int64_t>(body_of(model).size());
  std::set<int64_t> after;
  for (const std::string& cut : cuts) {
    const std::string prefix = p.body_slot() + ".";
    SLAPO_CHECK(cut.rfind(prefix, 0) == 0 && cut.find('.', prefix.size()) == std::string::npos,
                ErrorCode::kInvalidArgument, "pipeline: the cut after '", cut,
                "' is not between the blocks of '", p.body_slot(), "'; cut after '", prefix,
                "<i>'");
    after.insert(std::stoll(cut.substr(prefix.size())));
  }
  StagePlan plan;
  int64_t begin = 0;
  for (int64_t i : after) {
    plan.blocks.emplace_back(begin, i + 1);
    begin = i + 1;
  }
  plan.blocks.emplace_back(begin, blocks);
  plan.stages = static_cast<int64_t>(plan.blocks.size());
  return plan;
}

std::vector<std::pair<std::string, torch::Tensor>> stage_parameters(SlotModule& model,
                                                                    const StagePlan& plan,
                                                                    int64_t stage) {
  Pipelined& p = as_pipelined(model);
  std::vector<std::pair<std::string, torch::Tensor>> out;
  std::set<const c10::TensorImpl*> seen;
  auto add_module = [&](const std::string& prefix, torch::nn::Module& m) {
    for (const auto& param : m.named_parameters()) {
      if (seen.insert(param.value().unsafeGetTensorImpl()).second)
        out.emplace_back(prefix + "." + param.key(), param.value());
    }
  };
  if (stage == 0) {
    for (const std::string& slot : p.prologue_slots())
      add_module(slot, *model.slot(slot).module.ptr());
  }
  SequenceImpl& body = body_of(model);
  const auto [begin, end] = plan.blocks.at(static_cast<size_t>(stage));
  for (int64_t i = begin; i < end; ++i) {
    const std::string name = body.slot_names()[static_cast<size_t>(i)];
    add_module(p.body_slot() + "." + name, *body.slot(name).module.ptr());
  }
  if (stage == plan.stages - 1) {
    for (const std::string& slot : p.epilogue_slots())
      add_module(slot, *model.slot(slot).module.ptr());
  }
  // Parameters the root registers itself (e.g. a decoder bias) belong to the last stage.
  if (stage == plan.stages - 1) {
    for (const auto& param : model.named_parameters(/*recurse=*/false)) {
      if (seen.insert(param.value().unsafeGetTensorImpl()).second)
        out.emplace_back(param.key(), param.value());
    }
  }
  return out;
}

PipelineSchedule parse_pipeline_schedule(const std::string& name) {
  if (name == "gpipe") return PipelineSchedule::kGPipe;
  if (name == "1f1b") return PipelineSchedule::kOneFOneB;
  SLAPO_FAIL(ErrorCode::kInvalidArgument, "pipeline schedule '", name,
             "' is not one of: gpipe, 1f1b");
}

const char* pipeline_schedule_name(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::kGPipe ? "gpipe" : "1f1b";
}

struct PipelineRunner::MicroBatch {
  int64_t index = 0;
  int64_t begin = 0, size = 0;  // rows of the batch
  uint64_t step = 0;
  int64_t sample_offset = 0;
  Values inputs;       // received activations (stages after the first)
  Values outputs;      // this stage's outputs (stages before the last)
  torch::Tensor loss;  // the last stage's scaled loss
};

PipelineRunner::PipelineRunner(std::shared_ptr<SlotModule> model, StagePlan plan,
                               std::shared_ptr<Communicator> group, PipelineOptions options)
    : model_(std::move(model)),
      pipelined_(&as_pipelined(*model_)),
      plan_(std::move(plan)),
      group_(std::move(group)),
      options_(options) {
  SLAPO_CHECK(options_.micro_batches >= 1, ErrorCode::kInvalidArgument, "pipeline: micro_batches ",
              options_.micro_batches, " must be at least 1");
  const int64_t ranks = group_ ? group_->size() : 1;
  if (ranks == 1) {
    // One rank runs the whole body: the cuts only matter across ranks.
    plan_.blocks = {{0, plan_.blocks.back().second}};
    plan_.stages = 1;
  }
  SLAPO_CHECK(ranks == plan_.stages, ErrorCode::kInvalidArgument,
              "pipeline: the schedule cuts the model into ", plan_.stages,
              " stages but the pipeline group has ", ranks, " ranks");
  stage_ = group_ ? group_->rank() : 0;
}

Values PipelineRunner::receive_values(int64_t peer, int tag) {
  const auto start = std::chrono::steady_clock::now();
  torch::Tensor header = at::zeros({kHeader}, at::kLong);
  group_->recv(header, static_cast<int>(peer), tag);
  const auto h = header.accessor<int64_t, 1>();
  Values out(static_cast<size_t>(h[0]));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t at = 1 + static_cast<int64_t>(i) * kPerTensor;
    if (!h[at]) continue;  // absent
    std::vector<int64_t> shape(h.data() + at + 4, h.data() + at + 4 + h[at + 2]);
    out[i] = at::empty(shape, at::TensorOptions().dtype(static_cast<at::ScalarType>(h[at + 3])));
    group_->recv(out[i], static_cast<int>(peer), tag);
    if (h[at + 1]) out[i].requires_grad_(true);
  }
  timing_.wait_s += seconds_since(start);
  return out;
}

torch::Tensor PipelineRunner::receive_like(const torch::Tensor& like, int64_t peer, int tag) {
  const auto start = std::chrono::steady_clock::now();
  torch::Tensor out = at::empty(like.sizes(), like.options().requires_grad(false));
  group_->recv(out, static_cast<int>(peer), tag);
  timing_.wait_s += seconds_since(start);
  return out;
}

void PipelineRunner::send_values(const Values& values, int64_t peer, int tag) {
  SLAPO_CHECK(values.size() <= kMaxCarried, ErrorCode::kInvalidArgument,
              "pipeline: a stage passes ", values.size(), " tensors to the next; at most ",
              kMaxCarried);
  torch::Tensor header = at::zeros({kHeader}, at::kLong);
  auto h = header.accessor<int64_t, 1>();
  h[0] = static_cast<int64_t>(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const torch::Tensor& t = values[i];
    const int64_t at = 1 + static_cast<int64_t>(i) * kPerTensor;
    if (!t.defined()) continue;
    SLAPO_CHECK(t.dim() <= kMaxDims, ErrorCode::kInvalidArgument,
                "pipeline: cannot send a tensor of ", t.dim(), " dimensions (at most ", kMaxDims,
                ")");
    h[at] = 1;
    h[at + 1] = carries_gradient(t) ? 1 : 0;
    h[at + 2] = t.dim();
    h[at + 3] = static_cast<int64_t>(t.scalar_type());
    for (int64_t d = 0; d < t.dim(); ++d) h[at + 4 + d] = t.size(d);
  }
  pending_.push_back(group_->send(header, static_cast<int>(peer), tag));
  pending_tensors_.push_back(header);
  for (const torch::Tensor& t : values) {
    if (t.defined()) send_data(t, peer, tag);
  }
}

void PipelineRunner::send_data(const torch::Tensor& tensor, int64_t peer, int tag) {
  torch::Tensor data = tensor.detach().contiguous();
  // Kept alive, and waited on, until the end of run(): waiting here could deadlock two neighbours
  // sending to each other.
  pending_.push_back(group_->send(data, static_cast<int>(peer), tag));
  pending_tensors_.push_back(data);
}

void PipelineRunner::forward(MicroBatch& mb, const torch::Tensor& inputs,
                             const torch::Tensor& targets, const LossFn& loss) {
  DropoutScope scope(mb.step, mb.sample_offset);
  Values x;
  if (first()) {
    x = pipelined_->prologue_values(inputs.narrow(0, mb.begin, mb.size));
  } else {
    mb.inputs = receive_values(stage_ - 1, static_cast<int>(2 * mb.index));
    x = mb.inputs;
  }
  SequenceImpl& body = body_of(*model_);
  const auto [begin, end] = plan_.blocks[static_cast<size_t>(stage_)];
  Values y = body.forward_values(std::move(x), begin, end);
  if (last()) {
    mb.loss = pipelined_->epilogue_loss(y, targets.narrow(0, mb.begin, mb.size), loss) /
              static_cast<double>(options_.micro_batches);
  } else {
    send_values(y, stage_ + 1, static_cast<int>(2 * mb.index));
    mb.outputs = std::move(y);
  }
}

void PipelineRunner::backward(MicroBatch& mb) {
  // Checkpointed blocks recompute in backward: they take the key from their forward
  // (checkpoint.cc).
  if (last()) {
    torch::autograd::backward({mb.loss});
  } else {
    // A gradient for each output that carries one, in order.
    std::vector<torch::Tensor> outputs, grads;
    for (const torch::Tensor& y : mb.outputs) {
      if (!carries_gradient(y)) continue;
      grads.push_back(receive_like(y, stage_ + 1, static_cast<int>(2 * mb.index + 1)));
      outputs.push_back(y);
    }
    if (!outputs.empty()) torch::autograd::backward(outputs, grads);
  }
  if (!first()) {
    for (const torch::Tensor& x : mb.inputs) {
      if (!carries_gradient(x)) continue;
      // An input the stage did not use (a mask) has no gradient: zeros keep the protocol.
      const torch::Tensor g = x.grad().defined() ? x.grad() : at::zeros_like(x.detach());
      send_data(g, stage_ - 1, static_cast<int>(2 * mb.index + 1));
    }
  }
  mb.outputs.clear();
  mb.inputs.clear();
}

double PipelineRunner::run(const torch::Tensor& inputs, const torch::Tensor& targets,
                           const LossFn& loss, uint64_t step, int64_t sample_offset) {
  const auto start = std::chrono::steady_clock::now();
  timing_ = {};
  const int64_t m = options_.micro_batches;
  const int64_t batch = inputs.size(0);
  SLAPO_CHECK(batch % m == 0, ErrorCode::kInvalidArgument, "pipeline: the batch of ", batch,
              " samples does not split into ", m, " micro-batches");
  std::vector<MicroBatch> mbs(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    MicroBatch& mb = mbs[static_cast<size_t>(i)];
    mb.index = i;
    mb.size = batch / m;
    mb.begin = i * mb.size;
    mb.step = step;
    mb.sample_offset = sample_offset + mb.begin;
  }
  auto fwd = [&](int64_t i) { forward(mbs[static_cast<size_t>(i)], inputs, targets, loss); };
  auto bwd = [&](int64_t i) { backward(mbs[static_cast<size_t>(i)]); };
  if (options_.schedule == PipelineSchedule::kGPipe) {
    for (int64_t i = 0; i < m; ++i) fwd(i);
    for (int64_t i = 0; i < m; ++i) bwd(i);
  } else {
    const int64_t warmup = std::min(plan_.stages - stage_ - 1, m);
    for (int64_t i = 0; i < warmup; ++i) fwd(i);
    for (int64_t i = 0; i < m - warmup; ++i) {
      fwd(warmup + i);
      bwd(i);
    }
    for (int64_t i = m - warmup; i < m; ++i) bwd(i);
  }
  for (auto& handle : pending_) handle->wait();
  pending_.clear();
  pending_tensors_.clear();
  double total = NAN;
  if (last()) {
    total = 0;
    for (const MicroBatch& mb : mbs) total += mb.loss.item<double>();
  }
  timing_.total_s = seconds_since(start);
  return total;
}

}  // namespace slapo::schedule
