// slapo-tune plan: the whole space ranked by the cost model's prediction (cost/planner.h).

#include <iomanip>
#include <ostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/cost_setup.h"
#include "cli/count_option.h"
#include "core/error.h"
#include "core/metrics.h"
#include "core/objective_direction.h"
#include "cost/planner.h"
#include "space/compiled_space.h"

namespace slapo::cli {

namespace {

constexpr const char* kPlanUsage =
    "usage: slapo-tune plan --space FILE [--top K] [--objective M] [--db FILE] [--json]\n"
    "\n"
    "Predicts every configuration of the space file's [workload] from its profile on this machine\n"
    "and prints the best K by the objective (samples_per_s by default, or tokens_per_s or tflops;\n"
    "the least step_ms_median or peak_bytes), with their breakdowns. Configurations\n"
    "predicted over the workload's memory budget are left out and counted, and so are those the\n"
    "model cannot predict (with the first reason). Configurations predicted exactly alike (knobs\n"
    "that change nothing there, such as how tp = 1 would split the model) are one row: the first\n"
    "of them, with how many more and the knobs that differ. Nothing is measured but the profile.\n";

void declare(PlanOptions* o, OptionSet& set) {
  o->space.declare(set);
  // clang-format off
  set.visible.add_options()
      ("top", count_value(&o->top)->default_value(Count{10}, "10"), "how many configurations to print")
      ("objective", po::value<std::string>(&o->objective), "samples_per_s (default), tokens_per_s, tflops, step_ms_median or peak_bytes")
      ("minimize", po::bool_switch(&o->minimize), "smaller is better (the default for step_ms_median and peak_bytes)")
      ("maximize", po::bool_switch(&o->maximize), "larger is better (the default for the rates)")
      ("db", po::value<std::string>(&o->db), "keep profiles in this tuning database (default: measure, keep none)")
      ("reprofile", po::bool_switch(&o->reprofile), "measure the profiles again even when stored")
      ("json", po::bool_switch(&o->json), "print the plan as one JSON object")
      ("each-config", po::bool_switch(&o->each_config), "rank every configuration on a row of its own, alike ones too")
      ("nproc", po::value<int>(&o->nproc)->default_value(0, "any"), "only layouts of this many ranks (as a tuning run's --nproc); the others are counted as invalid");
  // clang-format on
}

// ", N invalid (why), M not predictable (why)": what the plan left out besides what is predicted
// out of memory, each kind with its first reason (invalid only when there are some).
std::string left_out(const cost::Plan& plan) {
  std::string out;
  if (plan.invalid > 0)
    out += ", " + std::to_string(plan.invalid) + " invalid (" + plan.invalid_reason + ")";
  out += ", " + std::to_string(plan.unpredictable) + " not predictable";
  if (plan.unpredictable > 0) out += " (" + plan.unpredictable_reason + ")";
  return out;
}

// Why a plan ranks no configuration, in one line.
std::string nothing_planned(const std::string& file, const cost::Plan& plan,
                            const cost::PlanOptions& options, const std::string& limit_note) {
  std::string why = "plan: no configuration of " + file + " is predicted ";
  why += options.memory_budget_bytes <= 0 ? std::string("at all")
         : limit_note.empty()
             ? "to fit its memory budget of " + format_bytes(options.memory_budget_bytes)
             : "to fit " + limit_note + " (the space sets no memory budget)";
  why += ": " + std::to_string(plan.predicted_oom) + " predicted out of memory" + left_out(plan);
  return why;
}

}  // namespace

PlanOptions parse_plan(const Args& args) {
  PlanOptions o = parse_options<PlanOptions>(args, declare);
  if (o.help) return o;
  SLAPO_CHECK(!o.space.file.empty(), ErrorCode::kInvalidArgument, "plan: --space FILE is required");
  SLAPO_CHECK(o.top >= 1, ErrorCode::kInvalidArgument, "plan: --top ", o.top,
              ": print at least one configuration");
  SLAPO_CHECK(o.nproc >= 0 && o.nproc <= 1024, ErrorCode::kInvalidArgument, "plan: --nproc ",
              o.nproc, ": expected 1 to 1024 ranks (or 0: any)");
  if (!o.objective.empty()) {
    for_flag("--objective", o.objective, [&] { cost::check_predicted_metric(o.objective); });
  }
  return o;
}

int run_plan(const PlanOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << help_text<PlanOptions>(kPlanUsage, declare);
    return kExitOk;
  }
  const space::Space declared = o.space.load();
  const space::CompiledSpace compiled = space::CompiledSpace::compile(declared);
  cost::PlanOptions options;
  options.top = o.top;
  options.group_alike = !o.each_config;
  options.objective =
      resolve_objective(o.objective.empty() ? std::string(metric::kSamplesPerS) : o.objective,
                        o.minimize, o.maximize)
          .objective;
  std::unique_ptr<db::Database> database = o.db.empty() ? nullptr : db::Database::open(o.db);
  auto model = make_cost_model(declared, compiled, database.get(), o.reprofile, err);
  model->set_ranks_per_trial(o.nproc);
  options.memory_budget_bytes = model->memory_budget_bytes();
  const std::string limit_note = model->memory_limit_note();
  cost::check_plannable(compiled, options, /*can_compose=*/true);  // before profiling for it
  const double profile_s = model->profile_space(compiled);
  const cost::Plan plan = cost::plan(compiled, model->as_function(), options, model->composer());
  // Nothing to rank is the work failing, not a plan of nothing: one line says why, the table or
  // the JSON still say what was counted.
  if (plan.top.empty())
    err << "slapo-tune: error: " << nothing_planned(o.space.file, plan, options, limit_note)
        << "\n";
  if (o.json) {
    nlohmann::ordered_json j;
    nlohmann::ordered_json top = nlohmann::ordered_json::array();
    for (const cost::PlannedConfig& c : plan.top) {
      nlohmann::ordered_json row = nlohmann::ordered_json::parse(c.prediction.to_json());
      row["index"] = c.index;
      row["config"] = nlohmann::ordered_json::parse(c.config.to_json());
      row["alike"] = c.alike;
      row["alike_knobs"] = c.alike_knobs;
      top.push_back(row);
    }
    j["objective"] = options.objective.to_string();  // "max samples_per_s", "min peak_bytes"
    j["top"] = top;
    j["considered"] = plan.considered;
    j["predicted_oom"] = plan.predicted_oom;
    j["invalid"] = plan.invalid;
    j["invalid_reason"] = plan.invalid_reason;
    j["unpredictable"] = plan.unpredictable;
    j["unpredictable_reason"] = plan.unpredictable_reason;
    j["method"] = plan.method;
    j["plan_s"] = plan.seconds;
    j["profile_s"] = profile_s;
    out << j.dump() << "\n";
    return plan.top.empty() ? kExitFailure : kExitOk;
  }
  out << "plan of " << o.space.file << " (" << options.objective.to_string()
      << "): " << compiled.size() << " configurations, " << plan.considered << " predicted, "
      << plan.predicted_oom << " predicted out of memory";
  if (options.memory_budget_bytes > 0 && limit_note.empty())
    out << " (budget " << format_bytes(options.memory_budget_bytes) << ")";
  else if (options.memory_budget_bytes > 0 && plan.predicted_oom > 0)  // what left them out
    out << " (no memory budget: " << limit_note << ")";
  out << left_out(plan) << "\n"
      << std::fixed << std::setprecision(2) << "method: " << plan.method << " (" << plan.seconds
      << " s; profiling " << profile_s << " s)\n\n";
  // A throughput other than samples/s gets a column of its own when it is the objective.
  const bool tokens = options.objective.metric == metric::kTokensPerS;
  const bool tflops = options.objective.metric == metric::kTflops;
  out << std::right << std::setw(4) << "rank" << std::setw(12) << "samples/s";
  if (tokens || tflops) out << std::setw(12) << (tokens ? "tokens/s" : "TFLOP/s");
  out << std::setw(11) << "step ms" << std::setw(12) << "peak" << std::setw(12) << "recompute"
      << std::setw(12) << "collectives" << std::setw(12) << "bubble"
      << "  config\n";
  int rank = 1;
  for (const cost::PlannedConfig& c : plan.top) {
    auto part = [&](const char* name) {
      for (const auto& [n, ms] : c.prediction.time_ms) {
        if (n == name) return ms;
      }
      return 0.0;
    };
    out << std::setw(4) << rank++ << std::setw(12) << std::setprecision(1)
        << c.prediction.samples_per_s;
    if (tokens) out << std::setw(12) << c.prediction.tokens_per_s;
    if (tflops)
      out << std::setw(12) << std::setprecision(4) << c.prediction.tflops << std::setprecision(1);
    out << std::setw(11) << c.prediction.step_ms << std::setw(12)
        << format_bytes(c.prediction.peak_bytes) << std::setw(9) << part("recompute") << " ms"
        << std::setw(9) << part("collectives") << " ms" << std::setw(9) << part("bubble") << " ms  "
        << c.config.to_string();
    if (c.alike > 0) {
      out << "  (+" << c.alike << " alike:";
      for (const std::string& knob : c.alike_knobs) out << " " << knob;
      out << ")";
    }
    out << "\n";
  }
  return plan.top.empty() ? kExitFailure : kExitOk;
}

}  // namespace slapo::cli
