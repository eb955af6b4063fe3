// The tuner on fake runners with scripted objectives: budgets, pruning proofs against ground
// truth, resume, failures, and every strategy finding the optimum of small spaces.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "../cost/synthetic_workload.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/stats.h"
#include "cost/planner.h"
#include "cost/predictor.h"
#include "db/database.h"
#include "space/compiled_space.h"
#include "space/space_file.h"
#include "tuner/alike_failures.h"
#include "tuner/gaussian_process.h"
#include "tuner/measured_memory.h"
#include "tuner/memory_dominance.h"
#include "tuner/model_strategy.h"
#include "tuner/noise.h"
#include "tuner/tuner.h"

namespace slapo::tuner {
namespace {

// batch_size (memory up) × ckpt (memory down) × attn: out of memory when batch / (1 + 2·ckpt) > 48;
// throughput grows with batch, falls with checkpointing; "bad" crashes at batch 8.
const char* kSpace = R"(
[knobs]
batch_size = { pow2 = [1, 128], mem = "up" }
ckpt       = { values = [0.0, 0.5, 1.0], mem = "down" }
attn       = { choice = ["naive", "fused", "bad"] }
)";

bool oom(const Config& c) {
  return as_number(c.at("batch_size")) / (1 + 2 * as_number(c.at("ckpt"))) > 48;
}
double throughput(const Config& c) {
  const double b = as_number(c.at("batch_size")), k = as_number(c.at("ckpt"));
  const double attn = std::get<std::string>(c.at("attn")) == "fused" ? 1.2 : 1.0;
  return attn * b / (1 + 0.3 * k) / (1 + b / 200.0);
}

class FakeRunner : public runners::Runner {
 public:
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override {
    std::vector<TrialResult> out;
    for (const Config& c : candidates) {
      EXPECT_TRUE(space_->contains(c).ok) << "proposed an invalid configuration " << c.to_string();
      EXPECT_TRUE(ran.insert(c.canonical_json()).second) << "ran twice: " << c.to_string();
      if (oom(c))
        out.push_back(failed_trial(TrialStatus::kOom, "fake oom"));
      else if (std::get<std::string>(c.at("attn")) == "bad" && as_number(c.at("batch_size")) == 8)
        out.push_back(failed_trial(TrialStatus::kCrashed, "fake crash"));
      else {
        TrialResult r;
        r.metrics["samples_per_s"] = throughput(c);
        r.metrics["step_ms_median"] = 1000 / throughput(c);
        out.push_back(r);
      }
    }
    return out;
  }
  std::string kind() const override { return "fake"; }
  const space::CompiledSpace* space_ = nullptr;
  std::set<std::string> ran;
};

struct Bench {
  space::CompiledSpace space =
      space::CompiledSpace::compile(space::parse_space(kSpace, "fake.toml"));
  std::unique_ptr<db::Database> database = db::Database::in_memory();
  FakeRunner runner;
  db::TaskKey key;
  Bench() {
    runner.space_ = &space;
    key.workload_json = "{}";
    key.space_hash = "fake";
    key.runner = "fake";
    key.fingerprint_json = "{}";
  }
  double optimum() {
    double best = 0;
    space.for_each([&](const space::PointView& p) {
      const Config c = p.to_config();
      if (!oom(c) &&
          !(std::get<std::string>(c.at("attn")) == "bad" && as_number(c.at("batch_size")) == 8)) {
        best = std::max(best, throughput(c));
      }
    });
    return best;
  }
};

TEST(TunerTest, EveryStrategyFindsTheOptimumOfASmallSpace) {
  for (const std::string strategy : {"exhaustive", "random", "coordinate", "bayes", "auto"}) {
    Bench s;
    TunerOptions o;
    o.strategy = strategy;
    o.trials = 0;  // until the strategy has nothing left
    o.seed = 3;
    const TuneSummary summary = tune(s.space, s.runner, *s.database, s.key, o);
    ASSERT_TRUE(summary.best.has_value()) << strategy;
    EXPECT_DOUBLE_EQ(*summary.best->objective, s.optimum()) << strategy;
    EXPECT_GT(summary.failed, 0u)
        << strategy;  // OOMs and the crash were recorded, the search went on
  }
}

// A strategy this run cannot use (the model's, without a cost model) is refused before the
// database holds a task for it.
TEST(TunerTest, AStrategyThatCannotRunLeavesNoTask) {
  Bench b;
  TunerOptions o;
  o.strategy = "model";
  EXPECT_THROW(tune(b.space, b.runner, *b.database, b.key, o), Error);
  EXPECT_TRUE(b.database->tasks().empty());
}

TEST(TunerTest, PrunedPointsAreTrulyOomAndAreNotRun) {
  Bench s;
  TunerOptions o;
  o.strategy = "exhaustive";
  o.trials = 0;
  const TuneSummary summary = tune(s.space, s.runner, *s.database, s.key, o);
  EXPECT_GT(summary.pruned, 0u);
  EXPECT_EQ(summary.measured + summary.pruned, s.space.size());
  const auto trials = s.database->trials(summary.task_id);
  for (const auto& t : trials) {
    if (t.result.status != TrialStatus::kPruned) continue;
    EXPECT_TRUE(oom(t.config)) << "pruned a configuration that fits: " << t.config.to_string();
    EXPECT_FALSE(s.runner.ran.count(t.config.canonical_json()));
    ASSERT_TRUE(t.pruned_by.has_value());
    EXPECT_EQ(trials[static_cast<size_t>(*t.pruned_by)].result.status, TrialStatus::kOom);
  }
}

TEST(TunerTest, BudgetCountsMeasuredTrialsOnly) {
  Bench s;
  TunerOptions o;
  o.strategy = "exhaustive";
  o.trials = 40;
  const TuneSummary summary = tune(s.space, s.runner, *s.database, s.key, o);
  EXPECT_EQ(summary.measured, 40u);
  EXPECT_EQ(s.runner.ran.size(), 40u);
  EXPECT_NE(summary.stopped_because.find("trial budget"), std::string::npos);
}

// The run's noise is the median step spread of the ok trials it measured: trials that failed or
// were pruned have no steps, and a runner that reports no percentiles leaves it unknown.
TEST(TunerTest, TheSummaryGivesTheMedianStepSpreadOfTheOkTrials) {
  struct Spreading : FakeRunner {
    std::vector<TrialResult> run(const std::vector<Config>& candidates) override {
      std::vector<TrialResult> out = FakeRunner::run(candidates);
      for (size_t i = 0; i < out.size(); ++i) {
        if (out[i].status != TrialStatus::kOk) continue;
        // 1% at batch 1 up to 8% at batch 128 (pow2): a spread per trial the test can tally.
        const double spread = 0.01 * (1 + std::log2(as_number(candidates[i].at("batch_size"))));
        const double mid = out[i].metrics.at("step_ms_median");
        out[i].metrics[metric::kStepMsP10] = mid * (1 - spread / 2);
        out[i].metrics[metric::kStepMsP90] = mid * (1 + spread / 2);
        spreads.push_back(spread);
      }
      return out;
    }
    std::vector<double> spreads;
  };
  Bench s;
  Spreading runner;
  runner.space_ = &s.space;
  TunerOptions o;
  o.strategy = "exhaustive";
  o.trials = 0;
  const TuneSummary summary = tune(s.space, runner, *s.database, s.key, o);
  ASSERT_GT(summary.failed, 0u);  // failed and pruned trials are in the run, not in its noise
  ASSERT_GT(summary.pruned, 0u);
  ASSERT_TRUE(summary.step_spread.has_value());
  EXPECT_NEAR(*summary.step_spread, median(runner.spreads), 1e-12);
  EXPECT_GT(*summary.step_spread, 0.01);  // not the smallest batch's alone

  Bench quiet;  // FakeRunner reports a median step and no percentiles
  const TuneSummary unknown = tune(quiet.space, quiet.runner, *quiet.database, quiet.key, o);
  EXPECT_FALSE(unknown.step_spread.has_value());
}

TEST(TunerTest, ResumeRunsNothingRecorded) {
  Bench s;
  TunerOptions o;
  o.strategy = "random";
  o.trials = 6;
  o.seed = 9;
  const TuneSummary first = tune(s.space, s.runner, *s.database, s.key, o);
  EXPECT_EQ(first.measured, 6u);
  o.trials = 12;
  const TuneSummary second =
      tune(s.space, s.runner, *s.database, s.key, o);  // the same FakeRunner checks repeats
  EXPECT_EQ(second.resumed, first.measured + first.pruned);
  EXPECT_EQ(second.measured, 6u);
  EXPECT_EQ(second.task_id, first.task_id);
  const TuneSummary third = tune(s.space, s.runner, *s.database, s.key, o);
  EXPECT_EQ(third.measured, 0u);
}

TEST(TunerTest, PatienceAndMinimize) {
  Bench s;
  TunerOptions o;
  o.strategy = "exhaustive";
  o.trials = 0;
  o.patience = 3;
  const TuneSummary summary = tune(s.space, s.runner, *s.database, s.key, o);
  EXPECT_NE(summary.stopped_because.find("no improvement in 3"), std::string::npos);
  Bench m;
  TunerOptions mo;
  mo.strategy = "exhaustive";
  mo.trials = 0;
  mo.objective = {"step_ms_median", true};
  const TuneSummary fastest = tune(m.space, m.runner, *m.database, m.key, mo);
  EXPECT_DOUBLE_EQ(*fastest.best->objective, 1000 / m.optimum());
  // The same task with another objective is refused.
  EXPECT_THROW(tune(m.space, m.runner, *m.database, m.key, TunerOptions{}), Error);
}

TEST(TunerTest, ProgressReportsEveryTrial) {
  Bench s;
  TunerOptions o;
  o.strategy = "exhaustive";
  o.trials = 10;
  std::vector<Progress> seen;
  tune(s.space, s.runner, *s.database, s.key, o, [&](const Progress& p) { seen.push_back(p); });
  ASSERT_GE(seen.size(), 10u);
  EXPECT_EQ(seen.back().measured, 10u);
  EXPECT_EQ(seen.back().trials_left, 0u);
  for (size_t i = 1; i < seen.size(); ++i)
    EXPECT_GE(seen[i].best.value_or(0), seen[i - 1].best.value_or(0));
}

TEST(MemoryDominanceTest, OnlyTrendedKnobsOrderAndOthersMustBeEqual) {
  const auto space = space::CompiledSpace::compile(space::parse_space(kSpace, "fake.toml"));
  MemoryDominance d(space);
  auto c = [](int64_t b, double k, const char* a) {
    Config x;
    x.set("batch_size", b);
    x.set("ckpt", k);
    x.set("attn", std::string(a));
    return x;
  };
  d.add_oom(c(32, 0.5, "naive"), 4);
  EXPECT_EQ(d.proof_of_oom(c(64, 0.5, "naive")), 4);
  EXPECT_EQ(d.proof_of_oom(c(32, 0.0, "naive")), 4);
  EXPECT_EQ(d.proof_of_oom(c(32, 0.5, "naive")), 4);
  EXPECT_FALSE(
      d.proof_of_oom(c(64, 1.0, "naive")).has_value());  // more batch but more checkpointing
  EXPECT_FALSE(d.proof_of_oom(c(64, 0.5, "fused")).has_value());  // another implementation
  EXPECT_FALSE(d.proof_of_oom(c(16, 0.5, "naive")).has_value());
}

TEST(MeasuredMemoryTest, UnitsFromTheNameAndWhatLooksLikeMemory) {
  EXPECT_EQ(metric_bytes("peak_rss_mib", 2), 2.0 * 1048576);
  EXPECT_EQ(metric_bytes("peak_bytes", 7), 7.0);
  EXPECT_EQ(metric_bytes("mem_gb", 1.5), 1.5e9);
  EXPECT_FALSE(metric_bytes("throughput", 1).has_value());
  EXPECT_TRUE(looks_like_memory_metric("peak_rss_mib"));
  EXPECT_TRUE(looks_like_memory_metric("max_mem_bytes"));
  EXPECT_FALSE(looks_like_memory_metric("tokens_mib"));  // a unit, but not a memory peak
  EXPECT_FALSE(looks_like_memory_metric("step_ms_median"));
}

// The knob memory is fitted over and auto's ladder climbs: batch_size wherever it comes, else the
// first memory-up knob of numbers (not a flag, a choice or cut points).
TEST(MeasuredMemoryTest, TheBatchKnobIsBatchSizeElseTheFirstMemoryUpNumber) {
  auto batch_of = [](const std::string& knobs) {
    const auto space =
        space::CompiledSpace::compile(space::parse_space("[knobs]\n" + knobs, "knobs.toml"));
    const space::KnobInfo* knob = batch_knob(space);
    return knob ? knob->name : std::string("none");
  };
  EXPECT_EQ(batch_of("seq = { values = [64, 128], mem = \"up\" }\n"
                     "batch_size = { pow2 = [1, 8], mem = \"up\" }\n"),
            "batch_size");
  EXPECT_EQ(batch_of("wide = { values = [false, true], mem = \"up\" }\n"
                     "tokens = { range = [1, 4], mem = \"up\" }\n"
                     "more = { range = [1, 4], mem = \"up\" }\n"),
            "tokens");
  EXPECT_EQ(batch_of("ckpt = { range = [0, 4], mem = \"down\" }\n"), "none");
}

// Affine in the batch at the same other knobs, monotone along the trends.
TEST(MeasuredMemoryTest, PredictsOverTheBudgetFromAFitAndFromDominance) {
  const auto space = space::CompiledSpace::compile(space::parse_space(kSpace, "fake.toml"));
  const double mib = 1 << 20;
  MeasuredMemory memory(space, "", 2048 * mib);  // the metric is found in the reports
  auto report = [](double value) {
    TrialResult r;
    r.metrics["samples_per_s"] = 1;
    r.metrics["peak_rss_mib"] = value;
    return r;
  };
  auto at = [](int64_t batch, double ckpt, const char* attn) {
    Config c;
    c.set("batch_size", batch);
    c.set("ckpt", ckpt);
    c.set("attn", std::string(attn));
    return c;
  };
  memory.observe(at(8, 0.0, "naive"), report(600), 0);  // 200 + 50 MiB per sample
  EXPECT_EQ(memory.metric(), "peak_rss_mib");
  EXPECT_FALSE(memory.over_budget(at(64, 0.0, "naive")).has_value());  // one batch: no slope yet
  memory.observe(at(16, 0.0, "naive"), report(1000), 1);
  const auto over = memory.over_budget(at(64, 0.0, "naive"));  // 3400 MiB predicted
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(*over,
            "predicted out of memory: 3400 MiB over the budget of 2048 MiB (peak_rss_mib fitted "
            "over batch_size from trials 0, 1)");
  EXPECT_TRUE(memory.over_budget(at(32, 0.0, "naive")).has_value() == false);  // 1800 MiB fits
  EXPECT_FALSE(memory.over_budget(at(64, 0.0, "fused")).has_value());  // other knobs: not fitted
  // A measured report over the budget: everything at least as hungry is over it too.
  memory.observe(at(32, 0.5, "fused"), report(2500), 2);
  const auto hungrier = memory.over_budget(at(64, 0.0, "fused"));
  ASSERT_TRUE(hungrier.has_value());
  EXPECT_NE(hungrier->find("trial 2 needs less and reported peak_rss_mib of 2500 MiB"),
            std::string::npos)
      << *hungrier;
  EXPECT_FALSE(memory.over_budget(at(16, 0.5, "fused")).has_value());
}

// A trial that ran out of memory where the fit says it fits shows the metric misses part of what
// the budget caps; one the fit puts over the budget, or one without a fit, shows nothing.
TEST(MeasuredMemoryTest, AnOutOfMemoryTheFitPutUnderTheBudgetIsNoted) {
  const auto space = space::CompiledSpace::compile(space::parse_space(kSpace, "fake.toml"));
  MeasuredMemory memory(space, "peak_rss_mib", 2048.0 * (1 << 20));
  auto at = [](int64_t batch, const char* attn) {
    Config c;
    c.set("batch_size", batch);
    c.set("ckpt", 0.0);
    c.set("attn", std::string(attn));
    return c;
  };
  TrialResult report;
  report.metrics["peak_rss_mib"] = 600;
  memory.observe(at(8, "naive"), report, 0);
  report.metrics["peak_rss_mib"] = 1000;
  memory.observe(at(16, "naive"), report, 1);  // 200 MiB + 50 MiB per sample
  const TrialResult oom = failed_trial(TrialStatus::kOom, "out of memory");
  memory.observe(at(64, "naive"), oom, 2);  // 3400 MiB predicted: as the fit said
  memory.observe(at(32, "fused"), oom, 3);  // no fit there
  memory.observe(at(37, "naive"), oom, 6);  // 2050 MiB: at the budget, the boundary is near
  EXPECT_EQ(memory.misses(), "");
  memory.observe(at(32, "naive"), oom, 4);  // 1800 MiB predicted
  EXPECT_EQ(memory.misses(),
            "peak_rss_mib under-predicts what the budget caps: trial 4 (batch_size=32 ckpt=0.0 "
            "attn=naive) ran out of memory where its fit over batch_size predicted 1800 MiB, "
            "under the budget of 2048 MiB");
  memory.observe(at(24, "naive"), oom, 5);
  EXPECT_NE(memory.misses().find("trial 4 "), std::string::npos);  // the first one
  // Judged by the fit as it is now: one that ran out before the fit existed counts too.
  MeasuredMemory later(space, "peak_rss_mib", 2048.0 * (1 << 20));
  later.observe(at(32, "naive"), oom, 0);
  EXPECT_EQ(later.misses(), "");
  report.metrics["peak_rss_mib"] = 600;
  later.observe(at(8, "naive"), report, 1);
  report.metrics["peak_rss_mib"] = 1000;
  later.observe(at(16, "naive"), report, 2);
  EXPECT_NE(later.misses().find("trial 0 (batch_size=32"), std::string::npos) << later.misses();
}

// What a trial that ran out of memory reported is the peak it reached before failing: it proves
// the hungrier ones over the budget when it is over it already, but teaches the fit nothing.
TEST(MeasuredMemoryTest, AnOutOfMemoryTrialsPartialPeakIsNotFitted) {
  const auto space = space::CompiledSpace::compile(space::parse_space(kSpace, "fake.toml"));
  const double mib = 1 << 20;
  MeasuredMemory memory(space, "peak_rss_mib", 2048 * mib);
  auto at = [](int64_t batch) {
    Config c;
    c.set("batch_size", batch);
    c.set("ckpt", 0.0);
    c.set("attn", std::string("naive"));
    return c;
  };
  TrialResult ok;
  ok.metrics["peak_rss_mib"] = 600;
  memory.observe(at(8), ok, 0);
  TrialResult failed = failed_trial(TrialStatus::kOom, "out of memory");
  failed.metrics["peak_rss_mib"] = 700;  // where it stopped, well short of its need
  memory.observe(at(64), failed, 1);
  EXPECT_FALSE(memory.over_budget(at(128)).has_value());  // one finished batch: no fit
  failed.metrics["peak_rss_mib"] = 2100;  // over the budget before it failed: a proof
  memory.observe(at(64), failed, 2);
  EXPECT_TRUE(memory.over_budget(at(128)).has_value());
}

// The fake workload, reporting its memory as a command may: `base` MiB + `per_sample` MiB a
// sample, less with checkpointing; over 48 effective samples (budget_bytes()): out of memory.
class ReportingRunner : public runners::Runner {
 public:
  explicit ReportingRunner(FakeRunner& inner, double base = 100, double per_sample = 40)
      : inner_(inner), base_(base), per_sample_(per_sample) {}
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override {
    std::vector<TrialResult> out = inner_.run(candidates);
    for (size_t i = 0; i < out.size(); ++i) {
      const Config& c = candidates[i];
      const double effective = as_number(c.at("batch_size")) / (1 + 2 * as_number(c.at("ckpt")));
      out[i].metrics["peak_rss_mib"] = base_ + per_sample_ * effective;
      if (first.empty()) first = c.to_string();
    }
    return out;
  }
  std::string kind() const override { return "fake"; }
  double budget_bytes() const { return (base_ + per_sample_ * 48) * (1 << 20); }  // the oom line
  FakeRunner& inner_;
  double base_, per_sample_;
  std::string first;
};

// A command-like run: trials report their memory, and the first one is the lean corner. What the
// reports predict over the budget is recorded pruned, never run; every run one fits or is the
// one that taught the fit.
TEST(TunerTest, AReportedMemoryMetricKeepsARunOutOfOutOfMemory) {
  Bench b;
  ReportingRunner runner(b.runner);
  TunerOptions o;
  o.strategy = "random";
  o.trials = 0;
  o.memory_budget_bytes = runner.budget_bytes();
  o.lean_start = true;
  const TuneSummary s = tune(b.space, runner, *b.database, b.key, o);
  // The leanest corner of the first proposal: batch at its least, checkpointing at its most.
  EXPECT_EQ(runner.first.rfind("batch_size=1 ckpt=1.0 ", 0), 0u) << runner.first;
  size_t oom_run = 0, predicted = 0;
  for (const auto& t : b.database->trials(s.task_id)) {
    if (t.result.status == TrialStatus::kOom) ++oom_run;
    if (t.result.error.find("predicted out of memory") != std::string::npos) {
      ++predicted;
      EXPECT_TRUE(oom(t.config)) << "pruned a configuration that fits: " << t.config.to_string();
    }
  }
  EXPECT_GT(predicted, 0u);
  // Without the reports, dominance alone lets more out-of-memory trials run.
  Bench blind;
  TunerOptions plain = o;
  plain.memory_budget_bytes = 0;
  const TuneSummary without = tune(blind.space, blind.runner, *blind.database, blind.key, plain);
  size_t blind_oom = 0;
  for (const auto& t : blind.database->trials(without.task_id))
    blind_oom += t.result.status == TrialStatus::kOom ? 1 : 0;
  EXPECT_LT(oom_run, blind_oom);
}

TEST(NoiseTest, StepSpreadOfTheOkTrialsAndTheRangeOfEachRemeasuredTrial) {
  auto trial = [](int64_t index, TrialStatus status, double objective, double p10, double p90) {
    db::TrialRecord t;
    t.index = index;
    t.result.status = status;
    if (status == TrialStatus::kOk) t.objective = objective;
    t.result.metrics[metric::kStepMsP10] = p10;
    t.result.metrics[metric::kStepMsP90] = p90;
    t.result.metrics[metric::kStepMsMedian] = 100;
    return t;
  };
  const std::vector<db::TrialRecord> trials = {
      trial(0, TrialStatus::kOk, 80, 95, 105),    // its steps 10% apart
      trial(1, TrialStatus::kOk, 60, 98, 102),    // 4%
      trial(2, TrialStatus::kOom, 0, 50, 150),    // a failure's steps count for nothing
      trial(3, TrialStatus::kOk, 100, 99, 101)};  // 2%
  EXPECT_NEAR(*median_step_spread(trials), 0.04, 1e-12);
  EXPECT_FALSE(median_step_spread({trials[2]}).has_value());
  auto again = [](int64_t index, TrialStatus status, double objective) {
    db::Remeasurement r;
    r.trial_index = index;
    r.result.status = status;
    if (status == TrialStatus::kOk) r.objective = objective;
    return r;
  };
  EXPECT_FALSE(remeasured_spread(trials, {}).has_value());
  // Trial 0: 80, 100, 120 → 40 / 100; trial 1: 60 and a failed round → one measurement, left out;
  // trial 3: 100, 90 → 10 / 95.
  const std::vector<db::Remeasurement> rounds = {
      again(0, TrialStatus::kOk, 100), again(0, TrialStatus::kOk, 120),
      again(1, TrialStatus::kCrashed, 0), again(3, TrialStatus::kOk, 90)};
  EXPECT_NEAR(*remeasured_spread(trials, rounds), (0.4 + 10.0 / 95) / 2, 1e-12);
  EXPECT_FALSE(remeasured_spread(trials, {rounds[2]}).has_value());
}

TEST(StrategyTest, UnknownNameListsTheStrategies) {
  try {
    make_strategy("hyperband");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown strategy 'hyperband' (strategies: auto, model, bayes, exhaustive, random, "
              "coordinate, slapo)");
  }
}

}  // namespace
}  // namespace slapo::tuner

namespace slapo::tuner {
namespace {
// Regression: coordinate descent used to bounce between a point and its better, exhausted
// neighbour and give up with most of the space unmeasured.
TEST(TunerTest, CoordinateDescentCoversTheSpaceWhenAskedTo) {
  Bench s;
  TunerOptions o;
  o.strategy = "coordinate";
  o.trials = 0;
  o.seed = 5;
  const TuneSummary summary = tune(s.space, s.runner, *s.database, s.key, o);
  EXPECT_EQ(summary.measured + summary.pruned, s.space.size()) << summary.stopped_because;
}
}  // namespace
}  // namespace slapo::tuner

namespace slapo::tuner {
namespace {
TEST(TunerTest, SlapoHeuristicIsFaithful) {
  // The same scripted machine, with Slapo's knob names.
  const char* text = R"(
[knobs]
batch_size = { pow2 = [1, 128], mem = "up" }
ckpt_ratio = { values = [0.0, 0.5, 1.0], mem = "down" }
attn       = { choice = ["naive", "fused", "bad"] }
)";
  Bench s;
  s.space = space::CompiledSpace::compile(space::parse_space(text, "slapo.toml"));
  struct Renamed : FakeRunner {
    std::vector<TrialResult> run(const std::vector<Config>& candidates) override {
      std::vector<Config> renamed;
      for (const Config& c : candidates) {
        Config r;
        r.set("batch_size", c.at("batch_size"));
        r.set("ckpt", c.at("ckpt_ratio"));
        r.set("attn", c.at("attn"));
        renamed.push_back(r);
        order.push_back(c);
      }
      return FakeRunner::run(renamed);
    }
    std::vector<Config> order;
  } runner;
  const auto renamed_space = space::CompiledSpace::compile(space::parse_space(kSpace, "fake.toml"));
  runner.space_ = &renamed_space;
  TunerOptions o;
  o.strategy = "slapo";
  o.trials = 0;
  const TuneSummary summary = tune(s.space, runner, *s.database, s.key, o);
  ASSERT_GE(runner.order.size(), 4u);
  // Phase 1: binary search of the batch size at full checkpointing: 8, 32, 64, 128 all fit.
  const std::vector<int64_t> batches = {8, 32, 64, 128};
  for (size_t i = 0; i < batches.size(); ++i) {
    EXPECT_EQ(std::get<int64_t>(runner.order[i].at("batch_size")), batches[i]);
    EXPECT_EQ(std::get<double>(runner.order[i].at("ckpt_ratio")), 1.0);
    EXPECT_EQ(std::get<std::string>(runner.order[i].at("attn")),
              "naive");  // other knobs: the first point
  }
  // Phase 2 at batch 128: ratio 0.5 runs out of memory (128 / 2 > 48), 1.0 is known to fit.
  EXPECT_EQ(std::get<double>(runner.order[4].at("ckpt_ratio")), 0.5);
  EXPECT_EQ(s.database->trials(summary.task_id)[4].result.status, TrialStatus::kOom);
  ASSERT_TRUE(summary.best.has_value());
  EXPECT_NE(summary.stopped_because.find("nothing left"), std::string::npos);
  // It never leaves attn = naive, so it cannot find the fused optimum the other strategies find.
  EXPECT_LT(*summary.best->objective, Bench().optimum());
  // A space without its knobs is refused.
  Bench other;
  TunerOptions bad;
  bad.strategy = "slapo";
  EXPECT_THROW(tune(other.space, other.runner, *other.database, other.key, bad), Error);
}
}  // namespace
}  // namespace slapo::tuner

namespace slapo::tuner {
namespace {

TEST(GaussianProcessTest, InterpolatesAndIsUncertainAwayFromTheData) {
  Eigen::MatrixXd x(6, 1);
  Eigen::VectorXd y(6);
  for (int i = 0; i < 6; ++i) {
    x(i, 0) = i / 10.0;  // 0 .. 0.5
    y(i) = std::sin(6 * x(i, 0)) * 10 + 50;
  }
  GaussianProcess gp;
  gp.fit(x, y);
  Eigen::MatrixXd q(3, 1);
  q << 0.2, 0.25, 1.0;
  Eigen::VectorXd mean, var;
  gp.predict(q, &mean, &var);
  EXPECT_NEAR(mean(0), y(2), 0.5);                          // at a data point
  EXPECT_NEAR(mean(1), std::sin(6 * 0.25) * 10 + 50, 1.0);  // between two
  EXPECT_LT(var(0), var(2));                                // far from the data: unsure
  EXPECT_GT(std::sqrt(var(2)), 1.0);
  EXPECT_NEAR(normal_cdf(0), 0.5, 1e-12);
  EXPECT_NEAR(normal_cdf(1.96), 0.975, 1e-3);
}

// The model-based strategy reaches the optimum of the scripted space in fewer measured trials
// than random search (median over seeds).
TEST(TunerTest, ModelBasedReachesTheOptimumSoonerThanRandom) {
  auto median_trials = [](const std::string& strategy) {
    std::vector<double> counts;
    for (uint64_t seed = 0; seed < 9; ++seed) {
      Bench s;
      TunerOptions o;
      o.strategy = strategy;
      o.trials = 0;
      o.seed = seed;
      const double optimum = s.optimum();
      double found = INFINITY;
      tune(s.space, s.runner, *s.database, s.key, o, [&](const Progress& p) {
        if (p.objective && *p.objective >= optimum && std::isinf(found))
          found = static_cast<double>(p.measured);
      });
      counts.push_back(found);
    }
    std::sort(counts.begin(), counts.end());
    return counts[counts.size() / 2];
  };
  const double bayes = median_trials("bayes"), random = median_trials("random");
  EXPECT_LT(bayes, random) << "bayes " << bayes << ", random " << random;
}

// The fake objective, measured with luck: the first measurement of each configuration in `lucky`
// comes out 30% high; a configuration in `flaky` runs out of memory when measured again.
class NoisyRunner : public runners::Runner {
 public:
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override {
    std::vector<TrialResult> out;
    for (const Config& c : candidates) {
      const int n = runs[c.canonical_json()]++;
      if (oom(c) || (n > 0 && flaky.count(c.canonical_json()))) {
        out.push_back(failed_trial(TrialStatus::kOom, "fake oom"));
        continue;
      }
      TrialResult r;
      r.metrics["samples_per_s"] =
          throughput(c) * (n == 0 && lucky.count(c.canonical_json()) ? 1.3 : 1.0);
      out.push_back(r);
    }
    return out;
  }
  std::string kind() const override { return "fake"; }
  std::set<std::string> lucky, flaky;
  std::map<std::string, int> runs;
};

Config config_of(int64_t batch, double ckpt, const std::string& attn) {
  Config c;
  c.set("batch_size", batch);
  c.set("ckpt", ckpt);
  c.set("attn", attn);
  return c;
}

struct NoisyBench : Bench {
  NoisyRunner noisy;
  // The optimum (fused attention, batch 128, full checkpointing: 72.0) and the runner-up (naive:
  // 60.0), whose first measurement is lucky (78.1).
  const Config optimum_config = config_of(128, 1.0, "fused");
  const Config runner_up = config_of(128, 1.0, "naive");
  NoisyBench() { noisy.lucky.insert(runner_up.canonical_json()); }
  TunerOptions options(size_t confirm) const {
    TunerOptions o;
    o.strategy = "exhaustive";
    o.trials = 0;
    o.confirm = confirm;
    return o;
  }
};

TEST(ConfirmationTest, WithoutItTheLuckyMeasurementWins) {
  NoisyBench s;
  const TuneSummary summary = tune(s.space, s.noisy, *s.database, s.key, s.options(0));
  ASSERT_TRUE(summary.best.has_value());
  EXPECT_EQ(summary.best->config, s.runner_up);
  EXPECT_EQ(summary.remeasured, 0u);
  EXPECT_FALSE(summary.remeasured_spread.has_value());
}

TEST(ConfirmationTest, TheBestFewAreMeasuredAgainAndRankedByTheirMedian) {
  NoisyBench s;
  std::vector<Progress> again;
  const TuneSummary summary =
      tune(s.space, s.noisy, *s.database, s.key, s.options(2), [&](const Progress& p) {
        if (p.round > 0) again.push_back(p);
      });
  ASSERT_TRUE(summary.best.has_value());
  EXPECT_EQ(summary.best->config, s.optimum_config);
  EXPECT_EQ(summary.best->remeasured, 2);
  EXPECT_NEAR(*summary.best->confirmed_objective, s.optimum(), 1e-9);
  EXPECT_EQ(summary.remeasured, 4u);  // the top two, two rounds each
  EXPECT_EQ(s.noisy.runs[s.runner_up.canonical_json()], 3);
  // In rounds: both are measured once before either is measured twice.
  ASSERT_EQ(again.size(), 4u);
  EXPECT_EQ(again[0].measured, summary.measured);  // re-measurements are not trials
  EXPECT_EQ(again[0].round, 1);
  EXPECT_EQ(again[1].round, 1);
  EXPECT_EQ(again[2].round, 2);
  EXPECT_NE(again[0].config, again[1].config);
  const auto lucky = s.database->find_trial(summary.task_id, s.runner_up);
  EXPECT_NEAR(*lucky->confirmed_objective, throughput(s.runner_up),
              1e-9);  // median of 78.1, 60, 60
  // Across their trials: the runner-up's range 18.1 over its median 60, the optimum's none.
  ASSERT_TRUE(summary.remeasured_spread.has_value());
  EXPECT_NEAR(*summary.remeasured_spread, (0.3 + 0.0) / 2, 1e-9);

  // Running it again re-measures nothing.
  const TuneSummary resumed = tune(s.space, s.noisy, *s.database, s.key, s.options(2));
  EXPECT_EQ(resumed.measured, 0u);
  EXPECT_EQ(resumed.remeasured, 0u);
  EXPECT_EQ(resumed.best->config, s.optimum_config);
}

TEST(ConfirmationTest, AFailedReMeasurementDropsTheTrialAndTheNextIsConfirmed) {
  NoisyBench s;
  s.noisy.flaky.insert(s.optimum_config.canonical_json());
  const TuneSummary summary = tune(s.space, s.noisy, *s.database, s.key, s.options(1));
  ASSERT_TRUE(summary.best.has_value());
  // The lucky runner-up is re-measured first (median 69.1 < 72.0), then the optimum, which runs
  // out of memory: it leaves the ranking and is not measured again; the runner-up, top once more,
  // gets its second round.
  EXPECT_EQ(s.noisy.runs[s.optimum_config.canonical_json()], 2);
  EXPECT_EQ(s.noisy.runs[s.runner_up.canonical_json()], 3);
  EXPECT_EQ(summary.remeasured, 3u);
  EXPECT_EQ(summary.remeasure_failed, 1u);
  EXPECT_EQ(summary.best->config, s.runner_up);
  EXPECT_EQ(summary.best->remeasured, 2);
}

TEST(ConfirmationTest, ConfirmsAtMostTwiceAsManyTrialsAsAsked) {
  NoisyBench s;
  // Two lucky ones above the optimum: each falls below it once measured again; with --confirm 1
  // the second is the last one the confirmation may take, so the optimum is left measured once.
  s.noisy.lucky.insert(config_of(128, 1.0, "bad").canonical_json());
  TunerOptions o = s.options(1);
  o.confirm_rounds = 1;
  const TuneSummary summary = tune(s.space, s.noisy, *s.database, s.key, o);
  EXPECT_EQ(summary.remeasured, 2u);
  EXPECT_EQ(s.noisy.runs[s.optimum_config.canonical_json()], 1);
  EXPECT_EQ(summary.best->config, s.optimum_config);
}

TEST(ConfirmationTest, StopsAtTheTimeLimit) {
  NoisyBench s;
  tune(s.space, s.noisy, *s.database, s.key, s.options(0));  // the search, whole
  TunerOptions o = s.options(3);
  o.time_limit_s = 1e-9;  // spent before the confirmation starts
  const TuneSummary summary = tune(s.space, s.noisy, *s.database, s.key, o);
  EXPECT_EQ(summary.remeasured, 0u);
  EXPECT_NE(summary.stopped_because.find("the confirmation stopped at the time limit"),
            std::string::npos)
      << summary.stopped_because;
}

TEST(ConfirmationTest, HoldsAcrossAResume) {
  NoisyBench s;
  // The first run stops before it meets the lucky runner-up or the optimum (the last of the
  // exhaustive walk's order among the largest batches), and confirms its best two.
  TunerOptions first = s.options(2);
  first.trials = 30;
  const TuneSummary before = tune(s.space, s.noisy, *s.database, s.key, first);
  ASSERT_GT(before.remeasured, 0u);
  // Resumed over the whole space with --confirm 1 (the two trials confirmed before do not use up
  // this run's share): the lucky runner-up's single 78.1 ranks above every confirmed median, so it
  // is measured again before it could be reported best (median 69.0), and the optimum is
  // confirmed in its place.
  const TuneSummary after = tune(s.space, s.noisy, *s.database, s.key, s.options(1));
  ASSERT_TRUE(after.best.has_value());
  EXPECT_EQ(after.best->config, s.optimum_config);
  EXPECT_EQ(after.best->remeasured, 2);
  EXPECT_EQ(s.noisy.runs[s.runner_up.canonical_json()], 2);
}

// Returns kInterrupted (having raised the interrupt, as a signal would) on its `interrupt_at`-th
// run; counts the configurations it measured to the end.
class InterruptingRunner : public FakeRunner {
 public:
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override {
    if (++calls == interrupt_at) {
      request_interrupt();
      return {failed_trial(TrialStatus::kInterrupted, "interrupted by the user")};
    }
    return FakeRunner::run(candidates);
  }
  int calls = 0, interrupt_at = -1;
};

TEST(TunerTest, AnInterruptedTrialIsRecordedAndMeasuredOnResumeNothingTwice) {
  Bench s;
  InterruptingRunner runner;
  runner.space_ = &s.space;
  runner.interrupt_at = 4;
  TunerOptions o;
  o.strategy = "exhaustive";
  o.trials = 10;
  o.confirm = 1;
  const TuneSummary stopped = tune(s.space, runner, *s.database, s.key, o);
  EXPECT_EQ(stopped.stopped_because, "interrupted");
  EXPECT_EQ(stopped.measured, 3u);
  EXPECT_EQ(stopped.remeasured, 0u);  // no confirmation after an interrupt
  const auto recorded = s.database->trials(stopped.task_id);
  ASSERT_EQ(recorded.size(), 4u);
  EXPECT_EQ(recorded[3].result.status, TrialStatus::kInterrupted);
  const Config interrupted = recorded[3].config;
  clear_interrupt();
  // Resumed: the interrupted configuration is measured (under its index), nothing else again.
  o.confirm = 0;  // (a confirmation would measure the best again, which FakeRunner forbids)
  const TuneSummary resumed = tune(s.space, runner, *s.database, s.key, o);
  EXPECT_EQ(resumed.resumed, 3u);
  EXPECT_EQ(resumed.measured, 7u);
  const auto after = s.database->find_trial(resumed.task_id, interrupted);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->index, 3);
  EXPECT_NE(after->result.status, TrialStatus::kInterrupted);
  EXPECT_EQ(s.database->trials(resumed.task_id).size(), 10u);
  // (FakeRunner fails the test if any configuration is measured twice.)
}

// The fake objective with one glitch: the first measurement of `glitch` comes out 50 times low, as
// a trial does when something else takes the machine.
class GlitchRunner : public FakeRunner {
 public:
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override {
    std::vector<TrialResult> out;
    for (const Config& c : candidates) {
      TrialResult r;
      r.metrics["samples_per_s"] = throughput(c) * (c == glitch && !glitched ? 0.02 : 1.0);
      if (c == glitch) glitched = true;
      out.push_back(r);
    }
    return out;
  }
  Config glitch;
  bool glitched = false;
};

TEST(TunerTest, AnObviousOutlierIsMeasuredAgainAndRankedByItsMedian) {
  Bench s;
  GlitchRunner runner;
  runner.space_ = &s.space;
  TunerOptions o;
  o.strategy = "exhaustive";
  o.trials = 0;
  const std::string space = R"(
[knobs]
batch_size = { values = [20, 24, 28, 32, 36, 40, 44] }
ckpt       = { values = [0.0, 0.5, 1.0] }
attn       = { choice = ["naive"] }
)";
  const space::CompiledSpace narrow =
      space::CompiledSpace::compile(space::parse_space(space, "narrow.toml"));
  runner.glitch = narrow.at(narrow.size() - 1);  // measured last: beside its neighbours
  const TuneSummary summary = tune(narrow, runner, *s.database, s.key, o);
  EXPECT_EQ(summary.remeasured, 2u);  // the glitch, twice; nothing else
  const auto glitched = s.database->find_trial(summary.task_id, runner.glitch);
  ASSERT_TRUE(glitched.has_value());
  EXPECT_NEAR(*glitched->objective, throughput(runner.glitch) * 0.02, 1e-9);  // kept as measured
  EXPECT_NEAR(*glitched->confirmed_objective, throughput(runner.glitch), 1e-9);
}

// auto starts with the frontier ladder: from the first configuration no saving knob can lower
// (batch 1, no checkpointing, naive), a binary search for the largest batch that fits: 8 fits,
// 32 fits, 64 runs out of memory (64 > 48); a resumed run goes on from what is recorded.
TEST(TunerTest, AutoStartsWithTheFrontierLadder) {
  const std::vector<Config> rungs = {config_of(8, 0.0, "naive"), config_of(32, 0.0, "naive"),
                                     config_of(64, 0.0, "naive")};
  Bench s;
  TunerOptions o;
  o.strategy = "auto";
  o.trials = 3;
  std::vector<Config> first;
  tune(s.space, s.runner, *s.database, s.key, o,
       [&](const Progress& p) { first.push_back(p.config); });
  EXPECT_EQ(first, rungs);

  Bench resumed;
  o.trials = 2;
  tune(resumed.space, resumed.runner, *resumed.database, resumed.key, o);
  o.trials = 4;
  std::vector<Config> next;
  tune(resumed.space, resumed.runner, *resumed.database, resumed.key, o,
       [&](const Progress& p) { next.push_back(p.config); });
  ASSERT_GE(next.size(), 1u);
  EXPECT_EQ(next[0], rungs[2]);
}

// Where the trials report their memory, the ladder measures the batch knob's lowest value once a
// rung fits and the next is not sure to, so that the run's fit over the two prunes the rungs over
// the budget instead of running them out of memory; while the next is sure to (the rung's peak
// scaled by the batch within the budget), it waits.
TEST(TunerTest, TheFrontierLadderAnchorsTheMemoryFitAtTheLowestBatch) {
  // The first `n` points measured or pruned, in order, as "batch status".
  auto rungs = [](double base, double per_sample, size_t n) {
    Bench b;
    ReportingRunner runner(b.runner, base, per_sample);
    TunerOptions o;
    o.strategy = "auto";
    o.trials = 4;  // measured: pruned points are not
    o.memory_budget_bytes = runner.budget_bytes();
    std::vector<std::string> seen;
    tune(b.space, runner, *b.database, b.key, o, [&](const Progress& p) {
      if (seen.size() < n) {  // the ladder's: without checkpointing, none out of memory
        EXPECT_EQ(as_number(p.config.at("ckpt")), 0.0) << p.config.to_string();
        EXPECT_NE(p.status, TrialStatus::kOom) << p.config.to_string();
        if (p.status == TrialStatus::kPruned)
          EXPECT_NE(p.error.find("predicted out of memory"), std::string::npos) << p.error;
      }
      seen.push_back(std::to_string(static_cast<int64_t>(as_number(p.config.at("batch_size")))) +
                     " " + to_string(p.status));
    });
    seen.resize(n);
    return seen;
  };
  // 600 MiB + 30 a sample: 8 samples use 41% of the budget, so 32 may not fit: 1 is measured
  // first, and the fit over 1 and 8 lets 32 run and prunes 64. Without the anchor, the third rung
  // is 64, run out of memory (AutoStartsWithTheFrontierLadder).
  EXPECT_EQ(rungs(600, 30, 4), (std::vector<std::string>{"8 ok", "1 ok", "32 ok", "64 pruned"}));
  // 100 MiB + 40 a sample: 8 samples use 21%, so 32 fits for sure; 8 and 32 make the fit.
  EXPECT_EQ(rungs(100, 40, 3), (std::vector<std::string>{"8 ok", "32 ok", "64 pruned"}));
}

// A cost model of the fake workload: the true throughput times `scale` (its error), memory 1 MB a
// sample of batch / (1 + 2·ckpt) (out of memory above 48 with a 48 MB budget), "bad" unpredictable.
class FakeCostModel : public CostModel {
 public:
  explicit FakeCostModel(double scale) : scale_(scale) {}
  cost::Predicted predict(const Config& c) override {
    cost::Predicted p;
    if (std::get<std::string>(c.at("attn")) == "bad") {
      p.why_not = "bad is not predicted";
      return p;
    }
    cost::Prediction pr;
    pr.samples_per_s = scale_ * throughput(c);
    pr.step_ms = 1000 / pr.samples_per_s;
    pr.peak_bytes = as_number(c.at("batch_size")) / (1 + 2 * as_number(c.at("ckpt"))) * 1e6;
    p.prediction = pr;
    return p;
  }
  void observe(const Config&, const TrialResult&) override { ++observed; }
  double memory_budget_bytes() const override { return 48e6; }
  int observed = 0;

 private:
  double scale_;
};

// Exact everywhere but at the optimum (batch 128, every block checkpointed, fused attention),
// which it predicts just below the runner-up (the same with naive attention): a ranking 18% off.
class MisrankingCostModel : public FakeCostModel {
 public:
  MisrankingCostModel() : FakeCostModel(1.0) {}
  cost::Predicted predict(const Config& c) override {
    cost::Predicted p = FakeCostModel::predict(c);
    if (p.prediction && as_number(c.at("batch_size")) == 128 && as_number(c.at("ckpt")) == 1.0 &&
        std::get<std::string>(c.at("attn")) == "fused") {
      Config runner_up = c;
      runner_up.set("attn", Value(std::string("naive")));
      p.prediction->samples_per_s = 0.99 * throughput(runner_up);
      p.prediction->step_ms = 1000 / p.prediction->samples_per_s;
    }
    return p;
  }
};

TEST(ModelStrategyTest, AStepSpreadIsP10ToP90OfTheMedian) {
  std::map<std::string, double> m = {{metric::kStepMsP10, 98}, {metric::kStepMsP90, 102}};
  EXPECT_FALSE(step_spread(m).has_value());  // no median
  m[metric::kStepMsMedian] = 100;
  ASSERT_TRUE(step_spread(m).has_value());
  EXPECT_NEAR(*step_spread(m), 0.04, 1e-12);
  m[metric::kStepMsP90] = 98;  // one timed step: no spread to tell
  EXPECT_FALSE(step_spread(m).has_value());
}

// A one-knob space whose objective the model predicts as 100 + x; the predictions of x at or
// above `calibrated_from` are of a key a trial has calibrated.
class LineCostModel : public CostModel {
 public:
  explicit LineCostModel(double calibrated_from = 100) : calibrated_from_(calibrated_from) {}
  cost::Predicted predict(const Config& c) override {
    cost::Predicted p;
    cost::Prediction pr;
    pr.samples_per_s = 100 + as_number(c.at("x"));
    pr.step_ms = 1000 / pr.samples_per_s;
    p.prediction = pr;
    p.time_calibrated = as_number(c.at("x")) >= calibrated_from_;
    return p;
  }
  void observe(const Config&, const TrialResult&) override {}
  double memory_budget_bytes() const override { return 0; }

 private:
  double calibrated_from_;
};

// x = 10, 9, 8 measured: 104 (5.6% below its prediction), 109 and 108, every step 5% apart. Is
// x = 7 (107) worth measuring? Of a calibrated key, off by at most the errors so far (5.6%), it
// cannot beat 109 by more than the noise; of a key no trial has calibrated yet, it is as
// uncertain as the prior (10%): measured.
TEST(ModelStrategyTest, AKeyNoTrialHasCalibratedIsGivenTheUncalibratedError) {
  const space::CompiledSpace space = space::CompiledSpace::compile(
      space::parse_space("[knobs]\nx = { range = [1, 10] }\n", "x.toml"));
  for (const double calibrated_from : {8.0, 1.0}) {
    LineCostModel model(calibrated_from);
    std::unique_ptr<Strategy> strategy = make_model_strategy(&model);
    strategy->begin(space, 0, Objective{"samples_per_s", false});
    std::set<std::string> known;
    const KnownFn is_known = [&](const Config& c) { return known.count(c.canonical_json()) > 0; };
    std::vector<Observation> measured;
    for (const Config& c : strategy->propose(3, is_known)) {
      known.insert(c.canonical_json());
      const double x = as_number(c.at("x"));
      measured.push_back({c, TrialStatus::kOk, x == 10 ? 104.0 : 100 + x, 0.05});
    }
    ASSERT_EQ(measured.size(), 3u);
    strategy->observe(measured);
    const std::vector<Config> next = strategy->propose(1, is_known);
    if (calibrated_from == 8.0) {
      ASSERT_EQ(next.size(), 1u) << strategy->why_done();
      EXPECT_EQ(as_number(next[0].at("x")), 7);
    } else {
      EXPECT_TRUE(next.empty()) << next[0].to_string();
      EXPECT_NE(strategy->why_done().find("(5.6%; 10.0% for a key no trial has calibrated)"),
                std::string::npos)
          << strategy->why_done();
    }
  }
}

// The noise the search stops within is what the measured trials' own steps show: the same
// measurements and predictions go on to the next configuration when the trials' steps lay 1%
// apart, and stop when they lay 8% apart — or report no spread (the 5% constant).
TEST(ModelStrategyTest, TheNoiseIsWhatTheTrialsOwnStepsShow) {
  const space::CompiledSpace space = space::CompiledSpace::compile(
      space::parse_space("[knobs]\nx = { range = [1, 10] }\n", "x.toml"));
  const Objective objective{"samples_per_s", false};
  for (const std::optional<double> spread :
       {std::optional<double>(0.01), std::optional<double>(0.08), std::optional<double>()}) {
    LineCostModel model;
    std::unique_ptr<Strategy> strategy = make_model_strategy(&model);
    strategy->begin(space, 0, objective);
    std::set<std::string> known;
    const KnownFn is_known = [&](const Config& c) { return known.count(c.canonical_json()) > 0; };
    const std::vector<Config> first = strategy->propose(3, is_known);
    ASSERT_EQ(first.size(), 3u);  // x = 10, 9, 8: predicted 110, 109, 108
    // x = 10 measured 104 (the model's error so far: |log(104/110)| = 5.6%), the others as
    // predicted: the best is 109, and x = 7 (107) could beat it by 3.7% were it off by 5.6%.
    std::vector<Observation> measured;
    for (const Config& c : first) {
      known.insert(c.canonical_json());
      const double x = as_number(c.at("x"));
      measured.push_back({c, TrialStatus::kOk, x == 10 ? 104.0 : 100 + x, spread});
    }
    strategy->observe(measured);
    const std::vector<Config> next = strategy->propose(1, is_known);
    if (spread == 0.01) {
      ASSERT_EQ(next.size(), 1u);
      EXPECT_EQ(as_number(next[0].at("x")), 7);
    } else {
      EXPECT_TRUE(next.empty()) << next[0].to_string();
      EXPECT_NE(strategy->why_done().find(spread ? "noise (8.0%)" : "noise (5.0%)"),
                std::string::npos)
          << strategy->why_done();
    }
  }
}

// Proposes one configuration at a time, each measured ok at `measure`(config) with steps `spread`
// apart, until the strategy stops or `at_most` trials: the configurations, in order.
std::vector<Config> search(Strategy& strategy, std::set<std::string>& known, int at_most,
                           const std::function<double(const Config&)>& measure, double spread) {
  const KnownFn is_known = [&](const Config& c) { return known.count(c.canonical_json()) > 0; };
  std::vector<Config> proposed;
  for (int trial = 0; trial < at_most; ++trial) {
    const std::vector<Config> next = strategy.propose(1, is_known);
    if (next.empty()) break;
    const Config& c = next.front();
    known.insert(c.canonical_json());
    proposed.push_back(c);
    strategy.observe({{c, TrialStatus::kOk, measure(c), spread}});
  }
  return proposed;
}

// A model exact for attention "a" (100 + x) that predicts "b" 10% below it (90 + x) where it runs
// 20% above (120 + x). The trials of "a" say nothing of the error of "b": before the rule stops,
// the best predicted configuration of the value no trial has had (a pruned point is none) is
// measured once — and then nothing of "a" is worth measuring.
TEST(ModelStrategyTest, EveryValueOfAnUnorderedKnobIsMeasuredOnceBeforeTheRuleStops) {
  const space::CompiledSpace space = space::CompiledSpace::compile(space::parse_space(
      "[knobs]\nx = { range = [1, 5] }\nattn = { choice = [\"a\", \"b\"] }\n", "x.toml"));
  class AttnCostModel : public CostModel {
   public:
    cost::Predicted predict(const Config& c) override {
      cost::Predicted p;
      cost::Prediction pr;
      pr.samples_per_s =
          (std::get<std::string>(c.at("attn")) == "a" ? 100 : 90) + as_number(c.at("x"));
      pr.step_ms = 1000 / pr.samples_per_s;
      p.prediction = pr;
      return p;
    }
    void observe(const Config&, const TrialResult&) override {}
    double memory_budget_bytes() const override { return 0; }
  } model;
  std::unique_ptr<Strategy> strategy = make_model_strategy(&model);
  strategy->begin(space, 0, Objective{"samples_per_s", false});
  std::set<std::string> known;
  // A point of "b" pruned (never run) does not count as a trial of it.
  Config pruned;
  pruned.set("x", Value(int64_t{1}));
  pruned.set("attn", Value(std::string("b")));
  known.insert(pruned.canonical_json());
  strategy->observe({{pruned, TrialStatus::kOom, std::nullopt, std::nullopt, /*ran=*/false}});
  const std::vector<Config> proposed = search(
      *strategy, known, 10,
      [](const Config& c) {
        return (std::get<std::string>(c.at("attn")) == "a" ? 100 : 120) + as_number(c.at("x"));
      },
      0.05);
  ASSERT_FALSE(proposed.empty());
  EXPECT_EQ(std::get<std::string>(proposed.front().at("attn")), "a");
  const auto b = std::find_if(proposed.begin(), proposed.end(), [](const Config& c) {
    return std::get<std::string>(c.at("attn")) == "b";
  });
  ASSERT_NE(b, proposed.end()) << "the rule stopped before any trial of attn = b";
  EXPECT_EQ(as_number(b->at("x")), 5);  // its predicted best
  EXPECT_LT(proposed.size(), 10u);      // and the search still stops
  EXPECT_NE(strategy->why_done().find("no configuration left could beat"), std::string::npos)
      << strategy->why_done();
}

// A model that knows knob `split` changes nothing (its computation is x's alone, as tp = 1's split
// knobs): a configuration that computes what a measured one does is never measured, not as the
// first of an unmeasured value either — the search measures each x once, and stops by the rule.
class SplitBlindCostModel : public LineCostModel {
 public:
  std::string computation(const Config& c) override { return "x=" + to_string(c.at("x")); }
};

TEST(ModelStrategyTest, WhatAMeasuredConfigurationComputesIsNotMeasuredAgain) {
  const space::CompiledSpace space = space::CompiledSpace::compile(space::parse_space(
      "[knobs]\nx = { range = [1, 10] }\nsplit = { choice = [\"p\", \"q\"] }\n", "x.toml"));
  for (const bool knows : {true, false}) {
    SplitBlindCostModel blind;
    LineCostModel line;
    CostModel* model = knows ? static_cast<CostModel*>(&blind) : &line;
    std::unique_ptr<Strategy> strategy = make_model_strategy(model);
    strategy->begin(space, 0, Objective{"samples_per_s", false});
    std::set<std::string> known;
    const std::vector<Config> proposed = search(
        *strategy, known, 20, [](const Config& c) { return 100 + as_number(c.at("x")); }, 0.01);
    ASSERT_FALSE(proposed.empty());
    std::set<double> xs;
    bool any_q = false;
    for (const Config& c : proposed) {
      xs.insert(as_number(c.at("x")));
      any_q = any_q || std::get<std::string>(c.at("split")) == "q";
    }
    if (knows) {
      EXPECT_EQ(xs.size(), proposed.size()) << "an x measured twice";
      EXPECT_FALSE(any_q) << "split = q changes nothing, and was measured";
      EXPECT_NE(strategy->why_done().find("no configuration left could beat"), std::string::npos)
          << strategy->why_done();
    } else {
      EXPECT_TRUE(any_q);  // without the model's word, q is a value no trial has had
    }
  }
}

TEST(ModelStrategyTest, OneExactPredictionDoesNotEndTheSearchBeforeTheModelsErrorIsKnown) {
  // The runner-up is measured first, exactly as predicted. A rule of "nothing predicted to beat
  // the best by 5%" stops there; with the model's error still at its prior (10%), the optimum,
  // predicted 1% below the best, could beat it: it is measured next.
  Bench b;
  MisrankingCostModel model;
  TunerOptions o;
  o.strategy = "model";
  o.trials = 0;
  o.cost_model = &model;
  std::vector<double> measured;
  const TuneSummary summary =
      tune(b.space, b.runner, *b.database, b.key, o, [&](const Progress& p) {
        if (p.status == TrialStatus::kOk) measured.push_back(*p.objective);
      });
  ASSERT_GE(measured.size(), 2u);
  EXPECT_LT(measured[0], b.optimum());
  EXPECT_NEAR(measured[1], b.optimum(), 1e-12);
  ASSERT_TRUE(summary.best.has_value());
  EXPECT_NEAR(*summary.best->objective, b.optimum(), 1e-12);
  EXPECT_LT(summary.measured, 6u);  // and still stops soon after
}

TEST(ModelStrategyTest, MeasuresThePredictedBestFirstAndStopsWithinTheNoise) {
  Bench b;
  FakeCostModel model(0.9);  // predicts 10% low, but in the right order
  TunerOptions o;
  o.strategy = "model";
  o.trials = 0;
  o.cost_model = &model;
  std::vector<Progress> seen;  // the measured trials (the model's prunes come first)
  const TuneSummary summary =
      tune(b.space, b.runner, *b.database, b.key, o, [&](const Progress& p) {
        if (p.status != TrialStatus::kPruned) seen.push_back(p);
      });
  ASSERT_FALSE(seen.empty());
  // The first trial is the optimum: the model ranks exactly, and skips what it predicts out of
  // memory (nothing ran out of memory) and what it cannot predict.
  EXPECT_NEAR(*seen[0].objective, b.optimum(), 1e-12);
  for (const Progress& p : seen) {
    EXPECT_EQ(p.status, TrialStatus::kOk) << p.config.to_string();
    EXPECT_NE(std::get<std::string>(p.config.at("attn")), "bad");
  }
  // It stops once nothing could beat the best by more than the noise, were its prediction off by
  // the model's error: far fewer than the 33 that fit.
  EXPECT_LT(summary.measured, 6u);
  // What the model predicts over the budget is recorded as pruned with the prediction as the
  // reason, and never run: exactly the configurations that run out of memory here.
  size_t predicted_oom = 0;
  for (const db::TrialRecord& t : b.database->trials(1)) {
    if (t.strategy != "cost model") continue;
    ++predicted_oom;
    EXPECT_EQ(t.result.status, TrialStatus::kPruned);
    EXPECT_TRUE(oom(t.config)) << t.config.to_string();
    EXPECT_NE(t.result.error.find("predicted out of memory: "), std::string::npos)
        << t.result.error;
    EXPECT_EQ(b.runner.ran.count(t.config.canonical_json()), 0u);
  }
  size_t oom_total = 0;
  b.space.for_each([&](const space::PointView& p) {
    const Config c = p.to_config();
    oom_total += oom(c) && std::get<std::string>(c.at("attn")) != "bad" ? 1 : 0;
    return true;
  });
  EXPECT_EQ(predicted_oom, oom_total);
  EXPECT_EQ(summary.pruned, oom_total);
  // Resumed: nothing is pruned or measured twice; the recorded best already holds.
  const TuneSummary again = tune(b.space, b.runner, *b.database, b.key, o);
  EXPECT_EQ(again.pruned, 0u);
  EXPECT_EQ(again.measured, 0u);
  EXPECT_EQ(again.resumed, summary.measured + summary.pruned);
  // The model's error: 10% low every time (|log 0.9| = 10.5%), the prior 10% counted twice —
  // the median of the two and of the trials' errors, among them that of naive attention's best,
  // measured once before the rule stopped (fused attention is the faster).
  EXPECT_EQ(summary.stopped_because,
            "no configuration left could beat the best measured by more than the noise (5.0%) "
            "were its prediction off by the model's error so far (10.3%; 10.3% for a key no trial "
            "has calibrated)");
  EXPECT_TRUE(std::any_of(seen.begin(), seen.end(), [](const Progress& p) {
    return std::get<std::string>(p.config.at("attn")) == "naive";
  }));
  EXPECT_EQ(model.observed, static_cast<int>(summary.measured));
  // auto uses the model when there is one: the strategy its first measured trial records.
  auto auto_strategy_with = [](CostModel* cost_model) {
    Bench b;
    TunerOptions o;
    o.trials = 3;
    o.cost_model = cost_model;
    tune(b.space, b.runner, *b.database, b.key, o);
    const auto trials = b.database->trials(1, {TrialStatus::kOk});
    return trials.empty() ? std::string("no trial") : trials[0].strategy;
  };
  EXPECT_EQ(auto_strategy_with(&model), "auto/model");
  // And when the space's first configuration is one it does not predict (a layout of another
  // world than the run's ranks): the model covers the workload all the same.
  class FirstUnpredicted : public FakeCostModel {
   public:
    FirstUnpredicted() : FakeCostModel(0.9) {}
    cost::Predicted predict(const Config& c) override {
      if (as_number(c.at("batch_size")) == 1) return {std::nullopt, "one sample is not predicted"};
      return FakeCostModel::predict(c);
    }
  } first_unpredicted;
  ASSERT_FALSE(first_unpredicted.predict(Bench().space.at(0)).prediction);
  EXPECT_EQ(auto_strategy_with(&first_unpredicted), "auto/model");
  // Without a cost model, `model` is refused in one line.
  Bench c;
  TunerOptions co;
  co.strategy = "model";
  EXPECT_THROW(tune(c.space, c.runner, *c.database, c.key, co), Error);
}

}  // namespace
}  // namespace slapo::tuner

namespace slapo::tuner {
namespace {

// A configuration of x = `x`.
Config at_x(int64_t x) {
  Config c;
  c.set("x", Value(x));
  return c;
}

TEST(AlikeFailuresTest, StopsAfterTheLimitOfTheSameFailureBeforeAnySuccess) {
  AlikeFailures alike(3, {"x"});
  EXPECT_FALSE(alike.observe(at_x(1), TrialStatus::kRuntimeError, "sh: trainer: not found\nmore"));
  EXPECT_FALSE(alike.observe(at_x(2), TrialStatus::kRuntimeError, "sh: trainer: not found\nother"));
  EXPECT_TRUE(alike.observe(at_x(3), TrialStatus::kRuntimeError, "sh: trainer: not found"));
  EXPECT_NE(alike.why().find("3 trials in a row failed alike (runtime_error: sh: trainer: not "
                             "found)"),
            std::string::npos)
      << alike.why();
}

TEST(AlikeFailuresTest, FailuresOfTheConfigurationsDoNotStopARun) {
  AlikeFailures differing(2, {"x"});
  EXPECT_FALSE(differing.observe(at_x(1), TrialStatus::kRuntimeError, "a"));
  EXPECT_FALSE(differing.observe(at_x(2), TrialStatus::kRuntimeError, "b"));  // another error
  EXPECT_FALSE(differing.observe(at_x(3), TrialStatus::kCrashed, "b"));       // another status
  EXPECT_FALSE(differing.observe(at_x(4), TrialStatus::kOom, "b"));           // breaks the row
  EXPECT_FALSE(differing.observe(at_x(5), TrialStatus::kCrashed, "b"));
  EXPECT_TRUE(differing.observe(at_x(6), TrialStatus::kCrashed, "b"));
  // A failure of one value of a knob alone (the largest batch, say) is that value's, however many
  // trials of it fail.
  AlikeFailures one_value(2, {"x"});
  for (int i = 0; i < 10; ++i)
    EXPECT_FALSE(one_value.observe(at_x(64), TrialStatus::kRuntimeError, "x"));
  EXPECT_TRUE(one_value.observe(at_x(32), TrialStatus::kRuntimeError, "x"));
  // Out of memory, timeouts, invalid configurations and schedule errors are what some
  // configurations are.
  AlikeFailures theirs(2, {"x"});
  for (TrialStatus s : {TrialStatus::kOom, TrialStatus::kTimeout, TrialStatus::kInvalid,
                        TrialStatus::kScheduleError}) {
    EXPECT_FALSE(theirs.observe(at_x(1), s, "x"));
    EXPECT_FALSE(theirs.observe(at_x(2), s, "x"));
  }
  // After a success, failures are the configurations'.
  AlikeFailures after(2, {"x"});
  EXPECT_FALSE(after.observe(at_x(1), TrialStatus::kOk, ""));
  EXPECT_FALSE(after.observe(at_x(2), TrialStatus::kRuntimeError, "x"));
  EXPECT_FALSE(after.observe(at_x(3), TrialStatus::kRuntimeError, "x"));
  AlikeFailures resumed(2, {"x"});
  resumed.succeeded();
  EXPECT_FALSE(resumed.observe(at_x(1), TrialStatus::kRuntimeError, "x"));
  EXPECT_FALSE(resumed.observe(at_x(2), TrialStatus::kRuntimeError, "x"));
  AlikeFailures never(0, {"x"});
  for (int i = 0; i < 10; ++i)
    EXPECT_FALSE(never.observe(at_x(i), TrialStatus::kRuntimeError, "x"));
}

// Every configuration fails with one error (a command not found): the run stops after five,
// records them with their reason, and measures on when told to, or when the task has succeeded.
class BrokenRunner : public runners::Runner {
 public:
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override {
    std::vector<TrialResult> out;
    for (size_t i = 0; i < candidates.size(); ++i)
      out.push_back(
          failed_trial(TrialStatus::kRuntimeError, "exit code 127: sh: train: not found"));
    return out;
  }
  std::string kind() const override { return "fake"; }
};

TEST(TunerTest, ARunWhoseTrialsAllFailAlikeStopsAndKeepsThem) {
  Bench s;
  BrokenRunner broken;
  TunerOptions o;
  o.strategy = "exhaustive";
  o.trials = 0;
  const TuneSummary stopped = tune(s.space, broken, *s.database, s.key, o);
  EXPECT_FALSE(stopped.best.has_value());
  EXPECT_NE(stopped.stopped_because.find(
                " trials in a row failed alike (runtime_error: exit code 127: sh: "
                "train: not found) before any succeeded, whatever the value of each knob"),
            std::string::npos)
      << stopped.stopped_because;
  // It stopped at the first trial by which every knob had taken two values (and five had failed).
  const auto recorded = s.database->trials(stopped.task_id);
  ASSERT_EQ(recorded.size(), stopped.measured);
  EXPECT_GE(recorded.size(), 5u);
  EXPECT_LT(recorded.size(), s.space.size());
  const auto every_knob_varies = [&](size_t n) {
    for (const char* knob : {"batch_size", "ckpt", "attn"}) {
      std::set<std::string> values;
      for (size_t i = 0; i < n; ++i) values.insert(to_string(recorded[i].config.at(knob)));
      if (values.size() < 2) return false;
    }
    return true;
  };
  EXPECT_TRUE(every_knob_varies(recorded.size()));
  if (recorded.size() > 5) {
    EXPECT_FALSE(every_knob_varies(recorded.size() - 1));
  }
  for (const auto& t : recorded) EXPECT_EQ(t.result.error, "exit code 127: sh: train: not found");

  // Told to measure on regardless: the next 12 are measured.
  o.stop_after_failures = 0;
  o.trials = recorded.size() + 12;
  EXPECT_EQ(tune(s.space, broken, *s.database, s.key, o).measured, 12u);

  // A task that has succeeded before: its later failures are the configurations'.
  Bench ok;
  TunerOptions first;
  first.strategy = "exhaustive";
  first.trials = 1;
  ASSERT_TRUE(tune(ok.space, ok.runner, *ok.database, ok.key, first).best.has_value());
  TunerOptions more;
  more.strategy = "exhaustive";
  more.trials = 12;
  EXPECT_EQ(tune(ok.space, broken, *ok.database, ok.key, more).measured, 11u);
}

// A 64-block model over four pipeline stages: 39,711 cut sets × batch × micro-batches, 317,688
// configurations — too many to rank whole after every trial. The synthetic workload's profile
// (tests/cost/synthetic_workload.h) predicts it, and the model composes a configuration's cuts for
// the planner's cut search.
constexpr const char* kDeepPipeline = R"([knobs]
pp = { values = [4] }
batch_size = { values = [32, 64] }
micro_batches = { values = [4, 8, 16, 32] }
cuts = { layers = 64, stages = "pp" }
)";

class PipelineCostModel : public CostModel {
 public:
  PipelineCostModel()
      : predictor_(cost::testing::SyntheticWorkload().profile(64),
                   cost::testing::synthetic_collectives()) {}
  cost::Predicted predict(const Config& c) override {
    cost::PredictInput in = input(c);
    in.cuts = std::get<IntList>(c.at("cuts"));
    cost::Predicted p;
    p.prediction = predictor_.predict(in);
    return p;
  }
  cost::ConfigComposer composer() override {
    return [this](const Config& c) {
      cost::Composable out;
      out.predictor = &predictor_;
      out.input = input(c);
      return out;
    };
  }
  void observe(const Config&, const TrialResult&) override {}
  double memory_budget_bytes() const override { return 0; }

 private:
  static cost::PredictInput input(const Config& c) {
    cost::PredictInput in;
    in.pp = 4;
    in.batch = static_cast<int64_t>(as_number(c.at("batch_size")));
    in.micro_batches = static_cast<int64_t>(as_number(c.at("micro_batches")));
    return in;
  }
  cost::Predictor predictor_;
};

// Measures what any model predicts, exactly.
class ExactRunner : public runners::Runner {
 public:
  explicit ExactRunner(CostModel* model) : model_(model) {}
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override {
    std::vector<TrialResult> out;
    for (const Config& c : candidates) {
      const cost::Prediction p = *model_->predict(c).prediction;
      TrialResult r;
      r.metrics["samples_per_s"] = p.samples_per_s;
      r.metrics["step_ms_median"] = p.step_ms;
      out.push_back(r);
    }
    return out;
  }
  std::string kind() const override { return "fake"; }

 private:
  CostModel* model_;
};

// Tunes `space` with `model` by `strategy` ("model" or "auto"), every trial measuring what the
// model predicts, until the strategy stops; its trials in order. Expects the model strategy to
// have searched (auto records "auto/model"), stopped by its rule within `most` trials.
std::vector<Progress> tune_exactly(const space::CompiledSpace& space, CostModel* model,
                                   const std::string& strategy, size_t most) {
  std::unique_ptr<db::Database> database = db::Database::in_memory();
  db::TaskKey key;
  key.workload_json = key.fingerprint_json = "{}";
  key.space_hash = key.runner = "fake";
  ExactRunner runner(model);
  TunerOptions o;
  o.strategy = strategy;
  o.trials = 0;
  o.cost_model = model;
  std::vector<Progress> seen;
  const TuneSummary summary =
      tune(space, runner, *database, key, o, [&](const Progress& p) { seen.push_back(p); });
  EXPECT_LE(summary.measured, most) << strategy;
  EXPECT_NE(summary.stopped_because.find("no configuration left could beat the best"),
            std::string::npos)
      << summary.stopped_because;
  const auto trials = database->trials(summary.task_id);
  EXPECT_FALSE(trials.empty()) << strategy;
  if (!trials.empty()) {
    EXPECT_EQ(trials[0].strategy, strategy == "auto" ? "auto/model" : "model");
  }
  return seen;
}

// A space too large to rank whole is searched by the planner where it chooses the cuts: the
// candidates are each configuration of the other knobs with the cuts the model predicts best.
TEST(ModelStrategyTest, ASpaceTooLargeToRankIsSearchedByThePlannersCuts) {
  const space::CompiledSpace space =
      space::CompiledSpace::compile(space::parse_space(kDeepPipeline, "deep.toml"));
  ASSERT_GT(space.size(), kMaxModelRanked);
  const Objective throughput{"samples_per_s", false};
  EXPECT_EQ(why_model_cannot_search(space, throughput, /*can_compose=*/true), "");
  // Without a composer, or ranked by a metric the cut search does not minimize, it is predicted
  // once and ranked within the best predicted (ModelStrategyTest.ASpaceTooLargeToRankAndWithout
  // ACutKnobIsRankedWithinThePoolPredictedBest).
  EXPECT_EQ(why_model_cannot_search(space, throughput, false), "");
  EXPECT_EQ(why_model_cannot_search(space, Objective{"peak_bytes", true}, true), "");
  // Too many configurations of the other knobs to plan after every trial, and too many to predict
  // each once: refused, saying why.
  const space::CompiledSpace wide = space::CompiledSpace::compile(space::parse_space(
      std::string(kDeepPipeline) + "x = { range = [1, 100001] }\n", "wide.toml"));
  EXPECT_EQ(why_model_cannot_search(wide, throughput, true),
            "31769117688 configurations are too many to predict each (at most 100000000), and the "
            "planner's cut-point search, which searches larger spaces, needs a cut knob, a time "
            "objective, a built-in workload and at most 100000 configurations of the other knobs");

  // Each configuration of the other knobs' best cuts, by the planner.
  PipelineCostModel model;
  cost::PlanOptions options;
  options.top = 100;
  options.group_alike = false;
  const cost::Plan plan = cost::plan(
      space, [&](const Config& c) { return model.predict(c); }, options, model.composer());
  ASSERT_EQ(plan.top.size(), 8u);
  std::set<std::string> best_cuts;
  for (const cost::PlannedConfig& p : plan.top) best_cuts.insert(p.config.canonical_json());

  for (const std::string strategy : {"model", "auto"}) {
    const std::vector<Progress> seen = tune_exactly(space, &model, strategy, 7);
    ASSERT_FALSE(seen.empty()) << strategy;
    // The model's optimum over the whole space first, then only other configurations' best cuts,
    // until nothing left could beat it by more than the noise.
    EXPECT_EQ(seen[0].config, plan.top[0].config) << strategy;
    for (const Progress& p : seen) EXPECT_EQ(best_cuts.count(p.config.canonical_json()), 1u);
  }
}

// 150,000 configurations of one knob, predicted best at x = 120,000 and worse by 1 a thousand
// steps away from it.
class PeakCostModel : public CostModel {
 public:
  cost::Predicted predict(const Config& c) override {
    ++predicted;
    cost::Predicted p;
    cost::Prediction pr;
    pr.samples_per_s = 200 - std::abs(as_number(c.at("x")) - 120000) / 1000;
    pr.step_ms = 1000 / pr.samples_per_s;
    p.prediction = pr;
    return p;
  }
  void observe(const Config&, const TrialResult&) override {}
  double memory_budget_bytes() const override { return 0; }
  size_t predicted = 0;  // predictions made
};

// Too large to rank after every trial and without a cut knob: predicted once, and ranked after
// every measurement within the 100,000 configurations predicted best — the predicted best first,
// never one outside them, stopped by the rule.
TEST(ModelStrategyTest, ASpaceTooLargeToRankAndWithoutACutKnobIsRankedWithinThePoolPredictedBest) {
  const space::CompiledSpace space = space::CompiledSpace::compile(
      space::parse_space("[knobs]\nx = { range = [1, 150000] }\n", "x.toml"));
  ASSERT_GT(space.size(), kMaxModelRanked);
  PeakCostModel model;
  ASSERT_EQ(why_model_cannot_search(space, Objective{"samples_per_s", false}, false), "");
  for (const std::string strategy : {"model", "auto"}) {
    const std::vector<Progress> seen = tune_exactly(space, &model, strategy, 9);
    ASSERT_FALSE(seen.empty()) << strategy;
    EXPECT_EQ(as_number(seen[0].config.at("x")), 120000) << strategy;
    // The pool: 120,000 ± 50,000 (the space ends at 150,000).
    for (const Progress& p : seen) EXPECT_GT(as_number(p.config.at("x")), 70000);
  }
  // The space is predicted whole once; after a measurement, only the pool is ranked again.
  std::unique_ptr<Strategy> strategy = make_model_strategy(&model);
  strategy->begin(space, 1, Objective{"samples_per_s", false});
  model.predicted = 0;
  const std::vector<Config> first = strategy->propose(1, [](const Config&) { return false; });
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(model.predicted, 150000u + 100000u);  // the pool's pass, then the pool ranked
  strategy->observe({{first[0], TrialStatus::kOk, 200.0, 0.01, true}});
  model.predicted = 0;
  strategy->propose(
      1, [&](const Config& c) { return c.canonical_json() == first[0].canonical_json(); });
  EXPECT_EQ(model.predicted, 100000u - 1);  // the pool, less the measured one
}

}  // namespace
}  // namespace slapo::tuner
