// slapo-tune predict: one configuration's predicted step time and peak tensor memory, with the
// breakdown, from the cost model (cost/predictor.h) — nothing measured but the profile.

#include <iomanip>
#include <ostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/config_arg.h"
#include "cli/cost_setup.h"
#include "core/error.h"
#include "space/compiled_space.h"

namespace slapo::cli {

namespace {

constexpr const char* kPredictUsage =
    "usage: slapo-tune predict --space FILE --config JSON|@FILE [--db FILE] [--reprofile] "
    "[--json]\n"
    "\n"
    "Predicts the step time and the peak tensor memory of one configuration of the space file's\n"
    "[workload] from a profile of the workload on this machine (four short steps-only runs, kept "
    "in\n"
    "--db and reused while the machine and slapo's revision are the same). docs/cost-model.md "
    "says\n"
    "how the prediction is composed and what it does not cover.\n";

void declare(PredictOptions* o, OptionSet& set) {
  o->space.declare(set);
  // clang-format off
  set.visible.add_options()
      ("config", po::value<std::string>(&o->config), "the configuration: JSON text or @FILE")
      ("db", po::value<std::string>(&o->db), "keep profiles in this tuning database (default: measure, keep none)")
      ("reprofile", po::bool_switch(&o->reprofile), "measure the profile again even when one is stored")
      ("json", po::bool_switch(&o->json), "print the prediction as one JSON object")
      ("nproc", po::value<int>(&o->nproc)->default_value(0, "its own layout"), "the job's ranks (as a tuning run's --nproc): without dp, data parallelism fills the ranks tp and pp leave");
  // clang-format on
}

}  // namespace

PredictOptions parse_predict(const Args& args) {
  PredictOptions o = parse_options<PredictOptions>(args, declare);
  if (o.help) return o;
  SLAPO_CHECK(!o.space.file.empty(), ErrorCode::kInvalidArgument,
              "predict: --space FILE is required");
  SLAPO_CHECK(!o.config.empty(), ErrorCode::kInvalidArgument, "predict: --config JSON is required");
  SLAPO_CHECK(o.nproc >= 0 && o.nproc <= 1024, ErrorCode::kInvalidArgument, "predict: --nproc ",
              o.nproc, ": expected 1 to 1024 ranks (or 0: the configuration's own layout)");
  return o;
}

int run_predict(const PredictOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << help_text<PredictOptions>(kPredictUsage, declare);
    return kExitOk;
  }
  const space::Space declared = o.space.load();
  const Config config = config_in_space(declared, o.config);
  const space::CompiledSpace compiled = space::CompiledSpace::compile(declared);
  std::unique_ptr<db::Database> database = o.db.empty() ? nullptr : db::Database::open(o.db);
  auto model = make_cost_model(declared, compiled, database.get(), o.reprofile, err);
  model->set_ranks_per_trial(o.nproc);
  const cost::Predicted p = model->predict(config);
  SLAPO_CHECK(p.prediction.has_value(), ErrorCode::kInvalidArgument,
              "predict: ", config.to_string(),
              p.invalid ? " is invalid (no trial runs it): " : " cannot be predicted: ", p.why_not);
  const cost::Prediction& pr = *p.prediction;
  const double budget = model->memory_budget_bytes();  // the space's, or this machine's memory
  if (o.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(pr.to_json());
    j["config"] = nlohmann::ordered_json::parse(config.to_json());
    j["fits"] = budget <= 0 || pr.peak_bytes <= budget;
    j["profile_s"] = model->profile_seconds();
    out << j.dump() << "\n";
    return kExitOk;
  }
  out << "config     " << config.to_string() << "\n"
      << std::fixed << std::setprecision(1) << "step       " << pr.step_ms << " ms ("
      << pr.samples_per_s << " samples/s, " << std::setprecision(0) << pr.tokens_per_s
      << " tokens/s, " << std::setprecision(4) << pr.tflops << " TFLOP/s)\n"
      << std::setprecision(1);
  for (const auto& [name, ms] : pr.time_ms)
    out << "  " << std::left << std::setw(16) << name << ms << " ms\n";
  out << "peak       " << format_bytes(pr.peak_bytes) << ", at " << cost::to_string(pr.peak_at);
  if (budget > 0)
    out << (pr.peak_bytes <= budget ? " (fits " : " (over ")
        << (model->memory_limit_note().empty() ? format_bytes(budget) : model->memory_limit_note())
        << ")";
  out << "\n";
  for (const auto& [name, bytes] : pr.memory_bytes) {
    out << "  " << std::left << std::setw(16) << name << format_bytes(bytes) << "\n";
  }
  if (pr.stages.size() > 1) {
    out << "stages\n";
    for (size_t s = 0; s < pr.stages.size(); ++s) {
      out << "  " << s + 1 << ": " << pr.stages[s].blocks << " blocks, "
          << pr.stages[s].micro_batch_ms << " ms per micro-batch, peak "
          << format_bytes(pr.stages[s].peak_bytes) << ", at "
          << cost::to_string(pr.stages[s].peak_at) << "\n";
    }
  }
  for (const std::string& note : pr.notes) out << "note: " << note << "\n";
  return kExitOk;
}

}  // namespace slapo::cli
