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

namespace {

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

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A tensor's shape and dtype travel ahead of it: [ndim, dtype, d0, d1, ...], padded to kHeader.
constexpr int64_t kHeader = 10;

}  // namespace

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
  torch::Tensor input;   // received activation (stages after the first)
  torch::Tensor output;  // this stage's output (stages before the last)
  torch::Tensor loss;    // the last stage's scaled loss
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

torch::Tensor PipelineRunner::receive(int64_t peer, int tag, const torch::Tensor* like) {
  const auto start = std::chrono::steady_clock::now();
  torch::Tensor out;
  if (like) {
    out = at::empty(like->sizes(), like->options());
  } else {
    torch::Tensor header = at::zeros({kHeader}, at::kLong);
    group_->recv(header, static_cast<int>(peer), tag);
    const int64_t ndim = header[0].item<int64_t>();
    std::vector<int64_t> shape;
    for (int64_t i = 0; i < ndim; ++i) shape.push_back(header[2 + i].item<int64_t>());
    out = at::empty(
        shape, at::TensorOptions().dtype(static_cast<at::ScalarType>(header[1].item<int64_t>())));
  }
  group_->recv(out, static_cast<int>(peer), tag);
  timing_.wait_s += seconds_since(start);
  return out;
}

void PipelineRunner::send(const torch::Tensor& tensor, int64_t peer, int tag, bool with_header) {
  torch::Tensor data = tensor.detach().contiguous();
  if (with_header) {
    SLAPO_CHECK(data.dim() <= kHeader - 2, ErrorCode::kInvalidArgument,
                "pipeline: cannot send a tensor of ", data.dim(), " dimensions");
    torch::Tensor header = at::zeros({kHeader}, at::kLong);
    header[0] = data.dim();
    header[1] = static_cast<int64_t>(data.scalar_type());
    for (int64_t i = 0; i < data.dim(); ++i) header[2 + i] = data.size(i);
    pending_.push_back(group_->send(header, static_cast<int>(peer), tag));
    pending_tensors_.push_back(header);
  }
  // Kept alive, and waited on, until the end of run(): waiting here could deadlock two neighbours
  // sending to each other.
  pending_.push_back(group_->send(data, static_cast<int>(peer), tag));
  pending_tensors_.push_back(data);
}

void PipelineRunner::forward(MicroBatch& mb, const torch::Tensor& inputs,
                             const torch::Tensor& targets, const LossFn& loss) {
  DropoutScope scope(mb.step, mb.sample_offset);
  torch::Tensor x;
  if (first()) {
    x = pipelined_->prologue(inputs.narrow(0, mb.begin, mb.size));
  } else {
    mb.input = receive(stage_ - 1, static_cast<int>(2 * mb.index), nullptr).requires_grad_(true);
    x = mb.input;
  }
  SequenceImpl& body = body_of(*model_);
  const auto [begin, end] = plan_.blocks[static_cast<size_t>(stage_)];
  torch::Tensor y = body.forward_range(begin, end, x);
  if (last()) {
    torch::Tensor out = pipelined_->epilogue(y);
    mb.loss = loss(out, targets.narrow(0, mb.begin, mb.size)) /
              static_cast<double>(options_.micro_batches);
  } else {
    mb.output = y;
    send(y, stage_ + 1, static_cast<int>(2 * mb.index), /*with_header=*/true);
  }
}

void PipelineRunner::backward(MicroBatch& mb) {
  // Checkpointed blocks recompute in backward: they take the key from their forward
  // (checkpoint.cc).
  if (last()) {
    torch::autograd::backward({mb.loss});
  } else {
    torch::Tensor grad = receive(stage_ + 1, static_cast<int>(2 * mb.index + 1), &mb.output);
    torch::autograd::backward({mb.output}, {grad});
  }
  if (!first())
    send(mb.input.grad(), stage_ - 1, static_cast<int>(2 * mb.index + 1), /*with_header=*/false);
  mb.output = torch::Tensor();
  mb.input = torch::Tensor();
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
