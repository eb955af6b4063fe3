// Tuner efficiency on recorded objective tables (docs/benchmarks.md).
//
//   ./build/benchmark/tuner_efficiency benchmark/tables/gpt-mini-batch-ckpt-attn \
//                                      benchmark/tables/bert-mini-batch-ckpt [--seeds 30]
//
// A table is a space file (NAME.toml) and every configuration of it measured on this machine
// (NAME.json: `slapo-tune db export --format json` of an exhaustive run; NAME.2.json, NAME.3.json,
// ... for more passes: a configuration's objective is then its median over the passes, and it is
// out of memory when most passes say so). A table-lookup runner
// replays the measurements, so every strategy is judged on the same real objective, with its real
// out-of-memory region, and each of 30 seeds costs milliseconds. For each strategy: the measured
// trials until the table's optimum is first measured (pruned points are not trials), and the best
// found within 10, 20 and 30 trials as a share of the optimum, as median and p90 over the seeds.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "space/compiled_space.h"
#include "space/space_file.h"
#include "tuner/tuner.h"

namespace {

using namespace slapo;

struct Table {
  std::string name;
  space::Space declared;
  std::map<std::string, TrialResult> results;  // canonical config → what was measured
  double optimum = 0;
  size_t passes = 1;  // recordings merged
};

Table load_table(const std::string& base) {
  Table t;
  t.name = base.substr(base.find_last_of('/') + 1);
  t.declared = space::load_space_file(base + ".toml");
  std::vector<std::string> passes = {base + ".json"};
  for (int i = 2;; ++i) {
    const std::string more = base + "." + std::to_string(i) + ".json";
    if (!std::ifstream(more).good()) break;
    passes.push_back(more);
  }
  std::map<std::string, std::vector<double>> objectives;  // config → ok objectives
  std::map<std::string, int> failures;
  std::map<std::string, std::string> failure_status;
  for (const std::string& path : passes) {
    std::ifstream in(path);
    SLAPO_CHECK(in.good(), ErrorCode::kNotFound, path, ": cannot open (record it: see docs/benchmarks.md)");
    for (const auto& row : nlohmann::json::parse(in)) {
      const std::string key = Config::from_json(row["config"].dump()).canonical_json();
      const std::string status = row["status"];
      if (status == "ok") {
        objectives[key].push_back(row["objective"].get<double>());
      } else {
        ++failures[key];
        failure_status[key] = status;
      }
    }
  }
  t.passes = passes.size();
  double best = -INFINITY;
  std::set<std::string> keys;
  for (const auto& [k, v] : objectives) keys.insert(k);
  for (const auto& [k, v] : failures) keys.insert(k);
  for (const std::string& key : keys) {
    std::vector<double>& v = objectives[key];
    TrialResult r;
    if (static_cast<int>(v.size()) > failures[key]) {
      std::sort(v.begin(), v.end());
      const double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
      r.metrics["samples_per_s"] = median;
      best = std::max(best, median);
    } else {
      // A pruned point was proven out of memory by a recorded trial: that is what it is.
      const std::string status = failure_status[key];
      r.status = status == "pruned" ? TrialStatus::kOom
                                    : trial_status_from_string(status).value_or(TrialStatus::kRuntimeError);
      r.error = "recorded " + status;
    }
    t.results[key] = r;
  }
  t.optimum = best;
  return t;
}

class TableRunner : public runners::Runner {
 public:
  explicit TableRunner(const Table& t) : table_(t) {}
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override {
    std::vector<TrialResult> out;
    for (const Config& c : candidates) {
      auto it = table_.results.find(c.canonical_json());
      out.push_back(it != table_.results.end() ? it->second
                                               : failed_trial(TrialStatus::kRuntimeError, "not in the table"));
    }
    return out;
  }
  std::string kind() const override { return "table"; }

 private:
  const Table& table_;
};

struct Run {
  double trials_to_optimum = INFINITY;  // measured trials until the optimum was measured
  double trials_to_98 = INFINITY;       // ... until a configuration within 2% of it was
  double best_at[3] = {0, 0, 0};        // best within 10, 20, 30 measured trials / optimum
};

Run run_once(const Table& table, const space::CompiledSpace& space, const std::string& strategy, uint64_t seed) {
  TableRunner runner(table);
  auto database = db::Database::in_memory();
  db::TaskKey key;
  key.workload_json = "{}";
  key.space_hash = table.name;
  key.runner = "table";
  key.fingerprint_json = "{}";
  tuner::TunerOptions options;
  options.strategy = strategy;
  options.trials = 0;  // until the strategy has nothing left
  options.seed = seed;
  Run run;
  double best = 0;
  const size_t limits[3] = {10, 20, 30};
  tuner::tune(space, runner, *database, key, options, [&](const tuner::Progress& p) {
    if (p.status == TrialStatus::kPruned) return;
    if (p.objective) best = std::max(best, *p.objective);
    for (int i = 0; i < 3; ++i) {
      if (p.measured <= limits[i]) run.best_at[i] = best / table.optimum;
    }
    if (p.objective && *p.objective >= table.optimum && std::isinf(run.trials_to_optimum)) {
      run.trials_to_optimum = static_cast<double>(p.measured);
    }
    if (p.objective && *p.objective >= 0.98 * table.optimum && std::isinf(run.trials_to_98)) {
      run.trials_to_98 = static_cast<double>(p.measured);
    }
  });
  // A strategy that stopped early keeps its best for the later limits.
  for (int i = 1; i < 3; ++i) run.best_at[i] = std::max(run.best_at[i], run.best_at[i - 1]);
  return run;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos)), hi = static_cast<size_t>(std::ceil(pos));
  if (std::isinf(v[hi])) return v[hi];
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

std::string trials(double v) {
  if (std::isinf(v)) return "never";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> tables;
  int seeds = 30;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seeds" && i + 1 < argc) seeds = std::atoi(argv[++i]);
    else tables.push_back(a);
  }
  if (tables.empty()) {
    std::cerr << "usage: tuner_efficiency TABLE [TABLE ...] [--seeds N]   (TABLE: path without .toml/.json)\n";
    return 2;
  }
  const std::vector<std::string> strategies = {"auto", "bayes", "coordinate", "random", "slapo", "exhaustive"};
  int verdict = 0;
  try {
    for (const std::string& base : tables) {
      const Table table = load_table(base);
      const space::CompiledSpace space = space::CompiledSpace::compile(table.declared);
      size_t ok = 0;
      for (const auto& [k, r] : table.results) ok += r.status == TrialStatus::kOk;
      std::printf("\n%s: %llu configurations (%zu ok, %zu out of memory or failed; median of %zu passes), optimum "
                  "%.4g samples/s, %d seeds\n",
                  table.name.c_str(), static_cast<unsigned long long>(space.size()), ok, table.results.size() - ok,
                  table.passes, table.optimum, seeds);
      std::printf("%-11s %11s %8s %9s %8s %9s %9s %9s\n", "strategy", "to optimum", "p90", "to 98%", "p90",
                  "best@10", "best@20", "best@30");
      std::map<std::string, double> medians;
      for (const std::string& strategy : strategies) {
        std::vector<double> to_opt, to_98, at[3];
        for (int seed = 0; seed < seeds; ++seed) {
          const Run r = run_once(table, space, strategy, static_cast<uint64_t>(seed));
          to_opt.push_back(r.trials_to_optimum);
          to_98.push_back(r.trials_to_98);
          for (int i = 0; i < 3; ++i) at[i].push_back(r.best_at[i]);
        }
        medians[strategy] = quantile(to_opt, 0.5);
        std::printf("%-11s %11s %8s %9s %8s %8.1f%% %8.1f%% %8.1f%%\n", strategy.c_str(),
                    trials(quantile(to_opt, 0.5)).c_str(), trials(quantile(to_opt, 0.9)).c_str(),
                    trials(quantile(to_98, 0.5)).c_str(), trials(quantile(to_98, 0.9)).c_str(), 100 * quantile(at[0], 0.5),
                    100 * quantile(at[1], 0.5), 100 * quantile(at[2], 0.5));
      }
      const double reference = std::min(medians["slapo"], medians["random"]);
      const bool met = medians["auto"] <= reference / 2;
      std::printf("target: auto's median %s <= half of min(slapo, random) = %s / 2: %s\n", trials(medians["auto"]).c_str(),
                  trials(reference).c_str(), met ? "met" : "NOT met");
      if (!met) verdict = 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "tuner_efficiency: " << e.what() << "\n";
    return 2;
  }
  return verdict;
}
