#pragma once
// Pipeline parallelism: each rank of a pipeline group runs one stage of the model, and
// micro-batches flow between stages over point-to-point messages.
//
// A model takes part by implementing Pipelined: its forward is epilogue(body(prologue(input))) with
// the body a Sequence slot (the zoo's models: embeddings | blocks | final norm and LM head).
// cut_pipeline_stage() cuts the body; stage 0 also runs the prologue, the last stage the epilogue
// and the loss.
//
// Schedules (both give the same gradients: backward runs the micro-batches in the same order):
//   gpipe  all forwards, then all backwards: simple, keeps m micro-batches of activations
//   1f1b   p - s - 1 forwards of warm-up, then one forward and one backward in turn, then the
//          remaining backwards: at most p - s micro-batches of activations alive on stage s
// The loss of each micro-batch is divided by m, so the accumulated gradients are those of the
// full batch's mean loss.
//
// What passes between stages is the list the prologue returns: the hidden state and any tensors
// the blocks take besides it (an attention mask), each with its shape, dtype and whether it
// carries a gradient; an absent one (undefined) passes as absent.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "schedule/language/slot_module.h"
#include "schedule/runtime/communicator.h"

namespace slapo::schedule {

// The loss of one micro-batch: (the epilogue's output, targets) → a scalar mean.
using LossFn =
    std::function<torch::Tensor(const torch::Tensor& output, const torch::Tensor& targets)>;

class Pipelined {
 public:
  virtual ~Pipelined() = default;
  // The slot holding the body Sequence ("h").
  virtual std::string body_slot() const = 0;
  // The slots the prologue and the epilogue call (their parameters belong to the first and the
  // last stage).
  virtual std::vector<std::string> prologue_slots() const = 0;
  virtual std::vector<std::string> epilogue_slots() const = 0;
  // A model whose blocks take only the hidden state implements these two.
  virtual torch::Tensor prologue(const torch::Tensor& input);
  virtual torch::Tensor epilogue(const torch::Tensor& hidden);
  // A model whose blocks take more (schedule/language/sequence.h) overrides these instead: the
  // prologue returns [hidden, extra...], which the body's blocks take and the stages pass on; the
  // epilogue receives them after the last block.
  virtual Values prologue_values(const torch::Tensor& input) { return {prologue(input)}; }
  virtual torch::Tensor epilogue_values(const Values& carried) { return epilogue(carried.at(0)); }
  // The loss of a training step from the carried tensors: loss(epilogue, targets), unless the
  // model computes it another way (a fused LM head and cross-entropy, models/fused_lm_head.h).
  virtual torch::Tensor epilogue_loss(const Values& carried, const torch::Tensor& targets,
                                      const LossFn& loss) {
    return loss(epilogue_values(carried), targets);
  }
};

class SequenceImpl;

// `model` as a Pipelined model, and its body. Throw Error(kInvalidArgument) for a model that is
// not one, or whose body slot is not a Sequence.
Pipelined& as_pipelined(SlotModule& model);
SequenceImpl& body_of(SlotModule& model);

// The most tensors a stage passes to the next.
constexpr size_t kMaxCarried = 8;

struct StagePlan {
  int64_t stages = 1;
  std::vector<std::pair<int64_t, int64_t>> blocks;  // [begin, end) of the body, per stage
};

// The stages that `cuts` (paths after which a stage begins) make of `model`, a Pipelined model.
// Every cut must be a child of the body. Throws Error(kInvalidArgument) naming the cut otherwise.
StagePlan plan_stages(SlotModule& model, const std::vector<std::string>& cuts);

// The parameters stage `stage` runs with, by name, each tensor once: the prologue's on the first
// stage, the body's blocks of the stage, the epilogue's on the last stage.
std::vector<std::pair<std::string, torch::Tensor>> stage_parameters(SlotModule& model,
                                                                    const StagePlan& plan,
                                                                    int64_t stage);

enum class PipelineSchedule { kGPipe, kOneFOneB };
// "gpipe" | "1f1b"; throws naming the value otherwise.
PipelineSchedule parse_pipeline_schedule(const std::string& name);
const char* pipeline_schedule_name(PipelineSchedule schedule);

struct PipelineOptions {
  int64_t micro_batches = 1;
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
};

// Where a stage's time went during the last run(): the bubble is the time spent waiting for a
// neighbour.
struct PipelineTiming {
  double total_s = 0;
  double wait_s = 0;  // blocked in receives
};

class PipelineRunner {
 public:
  // `group` is the pipeline group (rank = stage); null or size 1 runs every stage here, with the
  // micro-batches as gradient accumulation.
  PipelineRunner(std::shared_ptr<SlotModule> model, StagePlan plan,
                 std::shared_ptr<Communicator> group, PipelineOptions options);

  // Forward and backward of one batch (gradients accumulate into the stage's parameters).
  // `inputs` and `targets` are this pipeline's batch [batch, ...]; the first stage reads inputs,
  // the last targets. `step` and `sample_offset` (the batch's first global sample) key dropout.
  // Returns the batch's mean loss on the last stage and NaN on the others.
  double run(const torch::Tensor& inputs, const torch::Tensor& targets, const LossFn& loss,
             uint64_t step, int64_t sample_offset);

  int64_t stage() const { return stage_; }
  int64_t stages() const { return plan_.stages; }
  bool first() const { return stage_ == 0; }
  bool last() const { return stage_ == plan_.stages - 1; }
  const PipelineTiming& timing() const { return timing_; }

 private:
  struct MicroBatch;
  void forward(MicroBatch& mb, const torch::Tensor& inputs, const torch::Tensor& targets,
               const LossFn& loss);
  void backward(MicroBatch& mb);
  // Tensors with their shapes (a header first), and gradients of known shapes.
  Values receive_values(int64_t peer, int tag);
  void send_values(const Values& values, int64_t peer, int tag);
  torch::Tensor receive_like(const torch::Tensor& like, int64_t peer, int tag);
  void send_data(const torch::Tensor& tensor, int64_t peer, int tag);

  std::shared_ptr<SlotModule> model_;
  Pipelined* pipelined_;
  StagePlan plan_;
  std::shared_ptr<Communicator> group_;
  PipelineOptions options_;
  int64_t stage_ = 0;
  PipelineTiming timing_;
  std::vector<std::unique_ptr<SendHandle>> pending_;
  std::vector<torch::Tensor> pending_tensors_;
};

}  // namespace slapo::schedule
