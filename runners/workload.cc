#include "runners/workload.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "core/error.h"
#include "core/stats.h"
#include "models/templates.h"
#include "models/zoo.h"
#include "runners/parallel_trainer.h"
#include "runners/runner.h"
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

// Token batches: from the data file (consecutive windows) or synthetic (seeded).
class Batches {
 public:
  Batches(const Workload& w, int64_t vocab, int64_t batch, int64_t seq) : batch_(batch), seq_(seq), vocab_(vocab) {
    torch::manual_seed(w.seed + 1);
    if (w.data.empty()) return;
    std::ifstream in(w.data, std::ios::binary);
    SLAPO_CHECK(in.good(), ErrorCode::kNotFound, "workload data: cannot open ", w.data);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const bool u16 = w.data_dtype == "uint16";
    const size_t width = u16 ? 2 : 4;
    const size_t n = bytes.size() / width;
    SLAPO_CHECK(n >= static_cast<size_t>(batch * seq + 1), ErrorCode::kInvalidArgument, "workload data ", w.data,
                ": ", n, " tokens, fewer than one batch (", batch * seq + 1, ")");
    data_ = torch::empty({static_cast<int64_t>(n)}, torch::kLong);
    auto* out = data_.data_ptr<int64_t>();
    for (size_t i = 0; i < n; ++i) {
      out[i] = u16 ? *reinterpret_cast<const uint16_t*>(&bytes[i * 2]) : *reinterpret_cast<const int32_t*>(&bytes[i * 4]);
    }
    SLAPO_CHECK(data_.max().item<int64_t>() < vocab && data_.min().item<int64_t>() >= 0, ErrorCode::kInvalidArgument,
                "workload data ", w.data, ": token ids outside [0, ", vocab, ")");
  }

  // Inputs and next-token targets.
  std::pair<torch::Tensor, torch::Tensor> next() {
    if (!data_.defined()) {
      torch::Tensor t = torch::randint(vocab_, {batch_, seq_ + 1}, torch::kLong);
      return {t.narrow(1, 0, seq_), t.narrow(1, 1, seq_)};
    }
    const int64_t span = batch_ * seq_ + 1;
    if (offset_ + span > data_.size(0)) offset_ = 0;
    torch::Tensor window = data_.narrow(0, offset_, span);
    offset_ += batch_ * seq_;
    return {window.narrow(0, 0, span - 1).view({batch_, seq_}), window.narrow(0, 1, span - 1).view({batch_, seq_})};
  }

 private:
  int64_t batch_, seq_, vocab_;
  torch::Tensor data_;
  int64_t offset_ = 0;
};

}  // namespace

Workload Workload::from_json(const std::string& json, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::parse_error& e) {
    SLAPO_FAIL(ErrorCode::kInvalidArgument, origin, ": [workload] is not valid JSON: ", e.what());
  }
  SLAPO_CHECK(j.is_object(), ErrorCode::kInvalidArgument, origin, ": [workload] must be a table");
  Workload w;
  auto need = [&](bool ok, const std::string& key, const char* what) {
    SLAPO_CHECK(ok, ErrorCode::kInvalidArgument, origin, ": [workload] ", key, ": expected ", what, ", found ",
                j[key].dump());
  };
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const auto& v = it.value();
    auto integer = [&](auto* field, int64_t lo) {
      need(v.is_number_integer() && v.get<int64_t>() >= lo, key, lo > 0 ? "a positive integer" : "an integer >= 0");
      *field = static_cast<std::remove_pointer_t<decltype(field)>>(v.get<int64_t>());
    };
    auto text = [&](std::string* field) {
      need(v.is_string(), key, "a string");
      *field = v.get<std::string>();
    };
    if (key == "model") text(&w.model);
    else if (key == "template") text(&w.template_name);
    else if (key == "batch_size") integer(&w.batch_size, 1);
    else if (key == "seq_len") integer(&w.seq_len, 1);
    else if (key == "vocab") integer(&w.vocab, 1);
    else if (key == "warmup") integer(&w.warmup, 0);
    else if (key == "steps") integer(&w.steps, 1);
    else if (key == "threads") integer(&w.threads, 1);
    else if (key == "seed") integer(&w.seed, 0);
    else if (key == "data") text(&w.data);
    else if (key == "lr") {
      need(v.is_number() && v.get<double>() > 0, key, "a positive number");
      w.lr = v.get<double>();
    } else if (key == "dtype") {
      text(&w.dtype);
      need(w.dtype == "float32", key, "\"float32\" (the only dtype supported on the CPU so far)");
    } else if (key == "optimizer") {
      text(&w.optimizer);
      need(w.optimizer == "adamw" || w.optimizer == "sgd", key, "\"adamw\" or \"sgd\"");
    } else if (key == "data_dtype") {
      text(&w.data_dtype);
      need(w.data_dtype == "uint16" || w.data_dtype == "int32", key, "\"uint16\" or \"int32\"");
    } else if (key == "memory_budget") {
      if (v.is_number_integer()) w.memory_budget = v.get<uint64_t>();
      else if (v.is_string()) w.memory_budget = parse_bytes(v.get<std::string>(), origin + ": [workload] memory_budget");
      else need(false, key, "bytes or a size such as \"2GiB\"");
    } else {
      SLAPO_FAIL(ErrorCode::kInvalidArgument, origin, ": [workload] unknown key '", key,
                 "' (known: model, template, batch_size, seq_len, vocab, dtype, optimizer, lr, warmup, steps, "
                 "threads, seed, memory_budget, data, data_dtype)");
    }
  }
  SLAPO_CHECK(!w.model.empty(), ErrorCode::kInvalidArgument, origin, ": [workload] needs model = \"<preset>\"");
  return w;
}

std::string Workload::to_json() const {
  nlohmann::ordered_json j;
  j["model"] = model;
  if (!template_name.empty()) j["template"] = template_name;
  j["batch_size"] = batch_size;
  if (seq_len > 0) j["seq_len"] = seq_len;
  if (vocab > 0) j["vocab"] = vocab;
  j["dtype"] = dtype;
  j["optimizer"] = optimizer;
  j["lr"] = lr;
  j["warmup"] = warmup;
  j["steps"] = steps;
  j["threads"] = threads;
  j["seed"] = seed;
  if (memory_budget > 0) j["memory_budget"] = memory_budget;
  if (!data.empty()) {
    j["data"] = data;
    j["data_dtype"] = data_dtype;
  }
  return j.dump();
}

models::ModelSpec Workload::spec() const {
  models::ModelSpec s = models::model_preset(model);
  if (vocab > 0) s.vocab = vocab;
  return s;
}

int64_t Workload::batch_size_for(const Config& config) const { return knob_int(config, "batch_size", batch_size); }

int64_t Workload::seq_len_for(const Config& config) const {
  return knob_int(config, "seq_len", seq_len > 0 ? seq_len : spec().max_seq);
}

std::string Workload::schedule_template() const {
  return template_name.empty() ? models::default_template(models::model_preset(model)) : template_name;
}

void check_workload(const Workload& w, const Config& config) {
  const models::ModelSpec spec = w.spec();
  models::check_template(w.schedule_template(), spec, config);
  const int64_t seq = w.seq_len_for(config);
  SLAPO_CHECK(seq >= 1 && seq <= spec.max_seq, ErrorCode::kInvalidArgument, "seq_len ", seq, " is not in [1, ",
              spec.max_seq, "] for model ", spec.preset);
  SLAPO_CHECK(w.batch_size_for(config) >= 1, ErrorCode::kInvalidArgument,
              "batch_size must be at least 1");
}

TrialResult measure_trial(const Workload& w, const Config& config) {
  return measure_trial(w, config, dist::local_groups());
}

TrialResult measure_trial(const Workload& w, const Config& config, const dist::ParallelGroups& groups) {
  TrialResult result;
  try {
    check_workload(w, config);
    const models::ParallelKnobs knobs = models::parallel_knobs(w.spec(), config);
    SLAPO_CHECK(knobs.world() == groups.layout.world(), ErrorCode::kInvalidArgument, "the configuration (tp=",
                knobs.tp, " pp=", knobs.pp, " dp=", knobs.dp, ") needs ", knobs.world(), " ranks; this run has ",
                groups.layout.world(), " (use the single-node runner: --nproc ", knobs.world(), ")");
  } catch (const Error& e) {
    return failed_trial(TrialStatus::kInvalid, e.what());
  }
  torch::set_num_threads(w.threads);
  TrackingAllocator& tracker = TrackingAllocator::instance();
  const size_t baseline = tracker.live_bytes();
  // The budget covers what this trial allocates, not what the process held before it.
  if (w.memory_budget > 0) tracker.set_budget(baseline + w.memory_budget);
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
  try {
    const auto build_start = Clock::now();
    std::unique_ptr<ParallelTrainer> trainer;
    try {
      TrainerSetup setup{spec, w.schedule_template(), config, w.seed, w.optimizer, w.lr};
      trainer = std::make_unique<ParallelTrainer>(setup, groups);
    } catch (const c10::OutOfMemoryError&) {
      throw;
    } catch (const std::exception& e) {
      return failed_trial(TrialStatus::kScheduleError, e.what());
    }
    result.metrics[metric::kBuildMs] = ms_since(build_start);

    Batches batches(w, spec.vocab, batch, seq);
    const auto train_start = Clock::now();
    for (int step = 0; step < w.warmup + w.steps; ++step) {
      auto [tokens, targets] = batches.next();
      const double comm_before = trainer->communication_seconds();
      const auto start = Clock::now();
      const double value = trainer->step(tokens, targets, static_cast<uint64_t>(step));
      if (step >= w.warmup) {
        step_ms.push_back(ms_since(start));
        comm_s += trainer->communication_seconds() - comm_before;
        wait_s += trainer->pipeline_timing().wait_s;
        timed_s += step_ms.back() / 1000;
      }
      if (!std::isfinite(value)) {
        return failed_trial(TrialStatus::kRuntimeError, "non-finite loss " + std::to_string(value) + " at step " +
                                                            std::to_string(step));
      }
      if (step == 0) loss_first = value;
      loss_last = value;
    }
    // Warm-up and timed steps: what a trial costs beyond building (for overhead accounting).
    result.metrics["train_ms"] = ms_since(train_start);
  } catch (const c10::OutOfMemoryError& e) {
    TrialResult oom = failed_trial(TrialStatus::kOom, std::string(e.what()).substr(0, std::string(e.what()).find('\n')));
    oom.metrics[metric::kPeakBytes] = static_cast<double>(tracker.peak_bytes() - baseline);
    return oom;
  } catch (const Error& e) {
    return failed_trial(is_user_error(e.code()) ? TrialStatus::kInvalid : TrialStatus::kRuntimeError, e.what());
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return failed_trial(TrialStatus::kRuntimeError, what.substr(0, what.find('\n')));
  }
  const double median = percentile(step_ms, 0.5);
  const double tokens = static_cast<double>(batch * seq);
  result.metrics[metric::kStepMsMedian] = median;
  result.metrics[metric::kStepMsP10] = percentile(step_ms, 0.1);
  result.metrics[metric::kStepMsP90] = percentile(step_ms, 0.9);
  result.metrics[metric::kSamplesPerS] = static_cast<double>(batch) / (median / 1000);
  result.metrics[metric::kTokensPerS] = tokens / (median / 1000);
  // Model FLOPs: forward + backward (2× forward) of the stated count; recomputation not counted.
  result.metrics[metric::kTflops] = 3 * spec.forward_flops(seq) * static_cast<double>(batch) / (median / 1000) / 1e12;
  result.metrics[metric::kLossFirst] = loss_first;
  result.metrics[metric::kLossLast] = loss_last;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  // Across ranks: the largest peak and RSS (the rank that would run out first), the mean shares.
  torch::Tensor worst = torch::tensor({static_cast<double>(tracker.peak_bytes() - baseline),
                                       static_cast<double>(usage.ru_maxrss) * 1024}, torch::kDouble);
  groups.world->all_reduce(worst, schedule::ReduceOp::kMax);
  torch::Tensor shares = torch::tensor({comm_s / timed_s, wait_s / timed_s}, torch::kDouble);
  groups.world->all_reduce(shares);
  shares /= groups.layout.world();
  result.metrics[metric::kPeakBytes] = worst[0].item<double>();
  result.metrics[metric::kMaxRssBytes] = worst[1].item<double>();
  if (groups.layout.world() > 1) {
    result.metrics[metric::kCommShare] = shares[0].item<double>();
    result.metrics[metric::kBubbleShare] = shares[1].item<double>();
  }
  return result;
}

}  // namespace slapo::runners
