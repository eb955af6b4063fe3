#include "runners/workload.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/stats.h"
#include "core/text.h"
#include "models/templates.h"
#include "models/training_batch.h"
#include "models/weights/weights_file.h"
#include "models/zoo.h"
#include "runners/heap_policy.h"  // minor_page_faults
#include "runners/machine_memory.h"
#include "runners/parallel_trainer.h"
#include "runners/runner.h"
#include "runners/token_batches.h"
#include "runners/tracking_allocator.h"

namespace slapo::runners {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int64_t knob_int(const Config& config, const char* name, int64_t fallback) {
  const Value* v = config.find(name);
  return v ? static_cast<int64_t>(as_number(*v)) : fallback;
}

// The [workload] table's keys: each row reads its key into a Workload and writes it back. The one
// list of keys: parsing, the canonical JSON (the task key: rows write in this order, and a row
// whose value is the default may stay silent) and the error for an unknown key all come from it.
struct WorkloadField {
  const char* key;
  // Reads `v` into `w`; `need(ok, what)` fails naming the key when !ok.
  std::function<void(const nlohmann::json& v, Workload& w,
                     const std::function<void(bool, const char*)>& need, const std::string& origin)>
      read;
  std::function<void(const Workload& w, nlohmann::ordered_json& j)> write;
};

template <typename T>
WorkloadField integer_field(const char* key, T Workload::*field, int64_t lo,
                            bool write_when_zero = true) {
  return {key,
          [field, lo](const nlohmann::json& v, Workload& w, const auto& need, const std::string&) {
            need(v.is_number_integer() && v.get<int64_t>() >= lo,
                 lo > 0 ? "a positive integer" : "an integer >= 0");
            w.*field = static_cast<T>(v.get<int64_t>());
          },
          [key, field, write_when_zero](const Workload& w, nlohmann::ordered_json& j) {
            if (write_when_zero || w.*field > 0) j[key] = w.*field;
          }};
}

// A string field; `allowed` (when not empty) lists its values, `what` says so in the error.
WorkloadField text_field(const char* key, std::string Workload::*field,
                         std::vector<std::string> allowed = {}, const char* what = "a string",
                         bool write_when_empty = true) {
  return {key,
          [field, allowed, what](const nlohmann::json& v, Workload& w, const auto& need,
                                 const std::string&) {
            need(v.is_string(), "a string");
            w.*field = v.get<std::string>();
            need(allowed.empty() ||
                     std::find(allowed.begin(), allowed.end(), w.*field) != allowed.end(),
                 what);
          },
          [key, field, write_when_empty](const Workload& w, nlohmann::ordered_json& j) {
            if (write_when_empty || !(w.*field).empty()) j[key] = w.*field;
          }};
}

const std::vector<WorkloadField>& workload_fields() {
  static const std::vector<WorkloadField> fields = {
      text_field("model", &Workload::model),
      text_field("template", &Workload::template_name, {}, "a string", /*write_when_empty=*/false),
      integer_field("batch_size", &Workload::batch_size, 1),
      integer_field("seq_len", &Workload::seq_len, 1, /*write_when_zero=*/false),
      integer_field("vocab", &Workload::vocab, 1, /*write_when_zero=*/false),
      integer_field("layers", &Workload::layers, 1, /*write_when_zero=*/false),
      text_field("dtype", &Workload::dtype, {"float32"},
                 "\"float32\" (the only dtype supported on the CPU so far)"),
      text_field("optimizer", &Workload::optimizer, {"adamw", "sgd"}, "\"adamw\" or \"sgd\""),
      {"lr",
       [](const nlohmann::json& v, Workload& w, const auto& need, const std::string&) {
         need(v.is_number() && v.get<double>() > 0, "a positive number");
         w.lr = v.get<double>();
       },
       [](const Workload& w, nlohmann::ordered_json& j) { j["lr"] = w.lr; }},
      integer_field("warmup", &Workload::warmup, 0),
      integer_field("steps", &Workload::steps, 1),
      integer_field("threads", &Workload::threads, 1),
      integer_field("seed", &Workload::seed, 0),
      {"memory_budget",
       [](const nlohmann::json& v, Workload& w, const auto& need, const std::string& origin) {
         if (v.is_number_integer())
           w.memory_budget = v.get<uint64_t>();
         else if (v.is_string())
           w.memory_budget =
               parse_bytes(v.get<std::string>(), origin + ": [workload] memory_budget");
         else
           need(false, "bytes or a size such as \"2GiB\"");
       },
       [](const Workload& w, nlohmann::ordered_json& j) {
         if (w.memory_budget > 0) j["memory_budget"] = w.memory_budget;
       }},
      // data_dtype is written only beside data.
      text_field("data", &Workload::data, {}, "a string", /*write_when_empty=*/false),
      {"data_dtype",
       [](const nlohmann::json& v, Workload& w, const auto& need, const std::string&) {
         need(v.is_string(), "a string");
         w.data_dtype = v.get<std::string>();
         need(w.data_dtype == "uint16" || w.data_dtype == "int32", "\"uint16\" or \"int32\"");
       },
       [](const Workload& w, nlohmann::ordered_json& j) {
         if (!w.data.empty()) j["data_dtype"] = w.data_dtype;
       }},
      text_field("weights", &Workload::weights, {}, "a string", /*write_when_empty=*/false),
  };
  return fields;
}

}  // namespace

Workload Workload::from_json(const std::string& json, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {  // parse_error, out_of_range (1e616)
    SLAPO_FAIL(ErrorCode::kInvalidArgument, origin, ": [workload] is not valid JSON: ", e.what());
  }
  SLAPO_CHECK(j.is_object(), ErrorCode::kInvalidArgument, origin, ": [workload] must be a table");
  Workload w;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const auto field = std::find_if(workload_fields().begin(), workload_fields().end(),
                                    [&](const WorkloadField& f) { return key == f.key; });
    if (field == workload_fields().end()) {
      std::string known;
      for (const WorkloadField& f : workload_fields())
        known += (known.empty() ? "" : ", ") + std::string(f.key);
      SLAPO_FAIL(ErrorCode::kInvalidArgument, origin, ": [workload] unknown key '", key,
                 "' (known: ", known, ")");
    }
    const auto need = [&](bool ok, const char* what) {
      SLAPO_CHECK(ok, ErrorCode::kInvalidArgument, origin, ": [workload] ", key, ": expected ",
                  what, ", found ", it.value().dump());
    };
    field->read(it.value(), w, need, origin);
  }
  SLAPO_CHECK(!w.model.empty(), ErrorCode::kInvalidArgument, origin,
              ": [workload] needs model = \"<preset>\"");
  return w;
}

std::string Workload::to_json() const {
  nlohmann::ordered_json j;
  for (const WorkloadField& f : workload_fields()) f.write(*this, j);
  return j.dump();
}

models::ModelSpec Workload::spec() const {
  models::ModelSpec s = models::model_preset(model);
  if (vocab > 0) s.vocab = vocab;
  if (layers > 0) s.layers = layers;
  return s;
}

int64_t Workload::batch_size_for(const Config& config) const {
  return knob_int(config, "batch_size", batch_size);
}

int64_t Workload::seq_len_for(const Config& config) const {
  return knob_int(config, "seq_len", seq_len > 0 ? seq_len : spec().max_seq);
}

std::string Workload::schedule_template() const {
  return template_name.empty() ? models::default_template(models::model_preset(model))
                               : template_name;
}

void check_workload(const Workload& w, const Config& config) {
  const models::ModelSpec spec = w.spec();
  models::check_template(w.schedule_template(), spec, config);
  const int64_t seq = w.seq_len_for(config);
  SLAPO_CHECK(seq >= 1 && seq <= spec.max_seq, ErrorCode::kInvalidArgument, "seq_len ", seq,
              " is not in [1, ", spec.max_seq, "] for model ", spec.preset);
  SLAPO_CHECK(w.batch_size_for(config) >= 1, ErrorCode::kInvalidArgument,
              "batch_size must be at least 1");
  // The checkpoint is readable and in a format slapo reads (its header; names and shapes are
  // checked where the model is built).
  if (!w.weights.empty()) {
    try {
      models::read_weights(w.weights);
    } catch (const Error& e) {
      SLAPO_FAIL(e.code(), "[workload] weights: ", e.what());
    }
  }
}

TrialResult measure_trial(const Workload& w, const Config& config) {
  return measure_trial(w, config, dist::local_groups());
}

TrialResult measure_trial(const Workload& w, const Config& config,
                          const dist::ParallelGroups& groups) {
  TrialResult result;
  try {
    check_workload(w, config);
    models::parallel_knobs(w.spec(), config, groups.layout.world())
        .layout.check_world(groups.layout.world());
  } catch (const Error& e) {
    return failed_trial(TrialStatus::kInvalid, e.what());
  }
  torch::set_num_threads(w.threads);
  TrackingAllocator& tracker = TrackingAllocator::instance();
  const size_t baseline = tracker.live_bytes();
  // The budget covers what this trial allocates, not what the process held before it. Without
  // one, this machine's memory holds it: past its ceiling the step fails as out of memory, with
  // its reason, where the kernel's killer would end the worker after minutes of thrashing
  // (runners/machine_memory.h).
  if (w.memory_budget > 0) {
    tracker.set_budget(baseline + w.memory_budget);
  } else if (const std::optional<MachineMemory> machine = machine_memory(groups.layout.world())) {
    tracker.set_budget(baseline + static_cast<size_t>(machine->tensor_ceiling()),
                       "out of " + machine->ceiling_reason());
  }
  tracker.reset_peak();
  struct BudgetReset {
    TrackingAllocator& t;
    ~BudgetReset() { t.set_budget(0); }
  } reset{tracker};

  const models::ModelSpec spec = w.spec();
  const int64_t batch = w.batch_size_for(config);
  const int64_t seq = w.seq_len_for(config);
  std::vector<double> step_ms;
  double loss_first = NAN, loss_last = NAN;
  double comm_s = 0, wait_s = 0, timed_s = 0;
  long timed_faults = 0;
  try {
    const auto build_start = Clock::now();
    std::unique_ptr<ParallelTrainer> trainer;
    try {
      TrainerSetup setup{spec, w.schedule_template(), config, w.seed, w.optimizer, w.lr, w.weights};
      trainer = std::make_unique<ParallelTrainer>(setup, groups);
    } catch (const c10::OutOfMemoryError&) {
      throw;
    } catch (const std::exception& e) {
      return failed_trial(TrialStatus::kScheduleError, e.what());
    }
    result.metrics[metric::kBuildMs] = ms_since(build_start);

    TokenBatches batches(w, spec, batch, seq);
    const auto train_start = Clock::now();
    for (int step = 0; step < w.warmup + w.steps; ++step) {
      auto [tokens, targets] = batches.next();
      const double comm_before = trainer->communication_seconds();
      const long faults_before = minor_page_faults();
      const auto start = Clock::now();
      const double value = trainer->step(tokens, targets, static_cast<uint64_t>(step));
      if (step >= w.warmup) {
        step_ms.push_back(ms_since(start));
        timed_faults += minor_page_faults() - faults_before;
        comm_s += trainer->communication_seconds() - comm_before;
        wait_s += trainer->pipeline_timing().wait_s;
        timed_s += step_ms.back() / 1000;
      }
      if (!std::isfinite(value)) {
        return failed_trial(TrialStatus::kRuntimeError, "non-finite loss " + std::to_string(value) +
                                                            " at step " + std::to_string(step));
      }
      if (step == 0) loss_first = value;
      loss_last = value;
    }
    // Warm-up and timed steps: what a trial costs beyond building (for overhead accounting).
    result.metrics[metric::kTrainMs] = ms_since(train_start);
  } catch (const c10::OutOfMemoryError& e) {
    TrialResult oom = failed_trial(TrialStatus::kOom, first_line(e.what()));
    oom.metrics[metric::kPeakBytes] = static_cast<double>(tracker.peak_bytes() - baseline);
    return oom;
  } catch (const Error& e) {
    return failed_trial(
        is_user_error(e.code()) ? TrialStatus::kInvalid : TrialStatus::kRuntimeError, e.what());
  } catch (const std::exception& e) {
    return failed_trial(TrialStatus::kRuntimeError, first_line(e.what()));
  }
  const double median = percentile(step_ms, 0.5);
  const double tokens = static_cast<double>(batch * seq);
  result.metrics[metric::kStepMsMedian] = median;
  result.metrics[metric::kStepMsP10] = percentile(step_ms, 0.1);
  result.metrics[metric::kStepMsP90] = percentile(step_ms, 0.9);
  result.metrics[metric::kSamplesPerS] = static_cast<double>(batch) / (median / 1000);
  result.metrics[metric::kTokensPerS] = tokens / (median / 1000);
  result.metrics[metric::kTflops] =
      spec.train_flops(seq) * static_cast<double>(batch) / (median / 1000) / 1e12;
  result.metrics[metric::kLossFirst] = loss_first;
  result.metrics[metric::kLossLast] = loss_last;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  // Across ranks: the largest peak and RSS (the rank that would run out first), the mean shares.
  torch::Tensor worst =
      torch::tensor({static_cast<double>(tracker.peak_bytes() - baseline),
                     static_cast<double>(usage.ru_maxrss) * 1024,
                     static_cast<double>(timed_faults) /
                         static_cast<double>(std::max<size_t>(1, step_ms.size()))},
                    torch::kDouble);
  groups.world->all_reduce(worst, schedule::ReduceOp::kMax);
  torch::Tensor shares = torch::tensor({comm_s / timed_s, wait_s / timed_s}, torch::kDouble);
  groups.world->all_reduce(shares);
  shares /= groups.layout.world();
  result.metrics[metric::kPeakBytes] = worst[0].item<double>();
  result.metrics[metric::kMaxRssBytes] = worst[1].item<double>();
  result.metrics[metric::kPageFaultsPerStep] = worst[2].item<double>();
  if (groups.layout.world() > 1) {
    result.metrics[metric::kCommShare] = shares[0].item<double>();
    result.metrics[metric::kBubbleShare] = shares[1].item<double>();
  }
  return result;
}

}  // namespace slapo::runners
