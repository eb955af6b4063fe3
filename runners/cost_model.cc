#include "runners/cost_model.h"

#include <chrono>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/metrics.h"
#include "core/version.h"
#include "models/templates.h"
#include "runners/system_info.h"

namespace slapo::runners {

namespace {

// Knobs the model predicts across (or refuses): everything else changes the computation and is
// part of the profile key.
bool predicted_across(const std::string& knob) {
  static const char* const kKnobs[] = {"batch_size",        "ckpt_ratio", "ckpt_layers",
                                       "micro_batches",     "tp",         "pp",
                                       "pipeline_schedule", "dp",         "cuts"};
  for (const char* k : kKnobs) {
    if (knob == k) return true;
  }
  return false;
}

// The knobs of `config` that change the computation.
Config computation_knobs(const Config& config) {
  Config c;
  for (const auto& [name, value] : config.entries()) {
    if (!predicted_across(name)) c.set(name, value);
  }
  return c;
}

}  // namespace

WorkloadCostModel::WorkloadCostModel(Workload workload, db::Database* database,
                                     std::function<void(const std::string&)> on_note)
    : workload_(std::move(workload)),
      database_(database),
      on_note_(std::move(on_note)),
      fingerprint_(fingerprint_json(collect_system_info())) {
  batch_lo_ = std::max<int64_t>(1, workload_.batch_size / 2);
  batch_hi_ = workload_.batch_size;
}

WorkloadCostModel::~WorkloadCostModel() = default;

void WorkloadCostModel::use_batches_of(const space::CompiledSpace& space) {
  mappings_.clear();  // the profile keys name the batches
  for (const space::KnobInfo& knob : space.knobs()) {
    if (knob.name != "batch_size") continue;
    int64_t lo = INT64_MAX, hi = 0;
    space.for_each([&](const space::PointView& p) {
      const Config c = p.to_config();
      const int64_t b = workload_.batch_size_for(c);
      lo = std::min(lo, b);
      hi = std::max(hi, b);
      return true;
    });
    if (hi > 0) {
      batch_lo_ = lo;
      batch_hi_ = hi;
    }
  }
  if (batch_lo_ == batch_hi_) batch_lo_ = std::max<int64_t>(1, batch_hi_ / 2);
}

std::string WorkloadCostModel::profile_key(const Config& config) const {
  Workload w = workload_;
  w.batch_size = 0;  // predicted across
  w.memory_budget = 0;
  w.warmup = 0;
  w.steps = 0;
  nlohmann::ordered_json key;
  key["workload"] = nlohmann::ordered_json::parse(w.to_json());
  key["knobs"] = nlohmann::ordered_json::parse(computation_knobs(config).canonical_json());
  key["batches"] = {batch_lo_, batch_hi_};
  return key.dump();
}

double WorkloadCostModel::profile_space(const space::CompiledSpace& space) {
  const double before = profile_seconds_;
  space.for_each([&](const space::PointView& p) {
    const Config c = p.to_config();
    const Mapping& m = mapping(c);
    if (!m.why_not.empty()) return true;
    try {
      predictor_for(m.key, c);
    } catch (const Error&) {
      // A configuration whose key cannot be profiled is unpredictable; predict() says why.
    }
    return true;
  });
  return profile_seconds_ - before;
}

cost::Profile WorkloadCostModel::measure_profile(const Config& config, const std::string& key) {
  const auto start = std::chrono::steady_clock::now();
  const models::ModelSpec spec = workload_.spec();
  Workload w = workload_;
  w.warmup = 1;
  w.steps = 2;
  w.memory_budget = 0;  // the profile measures; the prediction decides what fits
  cost::Profile profile;
  profile.key_json = key;
  profile.fingerprint_json = fingerprint_;
  profile.code_revision = kGitRevision;
  profile.layers = spec.layers;
  // Without checkpointing at the smallest, a middle and the largest batch (the time per sample is
  // not constant); at the largest with one and with every block checkpointed; one sample with
  // every block checkpointed (the least a step needs).
  const int64_t mid =
      static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(batch_lo_ * batch_hi_))));
  std::vector<std::pair<int64_t, int64_t>> points = {{batch_lo_, 0}};
  if (mid > batch_lo_ && mid < batch_hi_) points.push_back({mid, 0});
  points.push_back({batch_hi_, 0});
  if (spec.layers > 1) points.push_back({batch_hi_, 1});
  points.push_back({batch_hi_, spec.layers});
  if (batch_hi_ > 1) points.push_back({1, spec.layers});
  for (const auto& [batch, ckpt] : points) {
    Config c = computation_knobs(config);
    c.set("batch_size", Value(batch));
    c.set("ckpt_layers", Value(ckpt));
    const TrialResult r = measure_trial(w, c);
    SLAPO_CHECK(r.status == TrialStatus::kOk, ErrorCode::kRuntime, "profiling ", c.to_string(),
                " failed (", to_string(r.status), "): ", r.error.substr(0, r.error.find('\n')));
    profile.points.push_back(
        {batch, ckpt, r.metrics.at(metric::kStepMsMedian), r.metrics.at(metric::kPeakBytes)});
  }
  profile.profile_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return profile;
}

cost::Predictor& WorkloadCostModel::predictor_for(const std::string& key, const Config& config) {
  auto it = predictors_.find(key);
  if (it != predictors_.end()) return *it->second;
  std::optional<cost::Profile> profile;
  if (database_ && !reprofile_) {
    if (const std::optional<std::string> stored = database_->profile(key)) {
      cost::Profile p = cost::Profile::from_json(*stored, "the stored profile");
      if (p.fingerprint_json != fingerprint_) {
        if (on_note_) on_note_("a stored profile is of another machine: profiling again");
      } else if (p.code_revision != kGitRevision) {
        if (on_note_)
          on_note_("a stored profile is of slapo " + p.code_revision + ", not " + kGitRevision +
                   ": profiling again");
      } else {
        profile = std::move(p);
        if (on_note_) on_note_("profile reused for " + computation_knobs(config).to_string());
      }
    }
  }
  if (!profile) {
    profile = measure_profile(config, key);
    profile_seconds_ += profile->profile_s;
    if (database_) database_->put_profile(key, profile->to_json());
    if (on_note_) {
      on_note_("profiled " +
               (computation_knobs(config).entries().empty()
                    ? std::string("the workload")
                    : computation_knobs(config).to_string()) +
               " in " + std::to_string(static_cast<int>(profile->profile_s + 0.5)) + " s");
    }
  }
  auto predictor = std::make_unique<cost::Predictor>(std::move(*profile));
  return *predictors_.emplace(key, std::move(predictor)).first->second;
}

const WorkloadCostModel::Mapping& WorkloadCostModel::mapping(const Config& config) {
  const std::string canonical = config.canonical_json();
  auto it = mappings_.find(canonical);
  if (it != mappings_.end()) return it->second;
  Mapping m;
  try {
    const models::TemplateConfig tc =
        models::parse_template_config(workload_.schedule_template(), workload_.spec(), config);
    if (tc.parallel.world() > 1) {
      m.why_not = "a layout of " + std::to_string(tc.parallel.world()) + " ranks (" +
                  tc.parallel.layout.to_string() +
                  ") is not predicted yet: the cost model profiles one rank";
    } else {
      m.key = profile_key(config);
      m.input = {workload_.batch_size_for(config), tc.checkpointed_blocks,
                 tc.parallel.micro_batches};
    }
  } catch (const Error& e) {
    m.why_not = e.what();
  }
  return mappings_.emplace(canonical, std::move(m)).first->second;
}

cost::Predicted WorkloadCostModel::predict(const Config& config) {
  cost::Predicted out;
  const Mapping& m = mapping(config);
  if (!m.why_not.empty()) {
    out.why_not = m.why_not;
    return out;
  }
  try {
    out.prediction = predictor_for(m.key, config).predict(m.input);
  } catch (const Error& e) {
    out.why_not = e.what();
  }
  return out;
}

void WorkloadCostModel::calibrate(const Config& config, const TrialResult& result) {
  const Mapping& m = mapping(config);
  if (!m.why_not.empty()) return;
  cost::Predictor& predictor = predictor_for(m.key, config);
  if (result.status == TrialStatus::kOk && result.metrics.count(metric::kStepMsMedian) &&
      result.metrics.count(metric::kPeakBytes)) {
    predictor.calibrate(m.input, result.metrics.at(metric::kStepMsMedian),
                        result.metrics.at(metric::kPeakBytes));
  } else if (result.status == TrialStatus::kOom && workload_.memory_budget > 0) {
    predictor.calibrate_oom(m.input, static_cast<double>(workload_.memory_budget));
  }
}

}  // namespace slapo::runners
