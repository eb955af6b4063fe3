// A training program that starts with the tuned schedule: it looks up the best configuration of
// its workload on this machine in the tuning database and applies the template with it.
//   ./build/examples/tuned_training_example SPACE_FILE TUNE_DB
// Without a recorded configuration it trains with the template's defaults.

#include <iostream>

#include <torch/torch.h>

#include "db/lookup.h"
#include "models/templates.h"
#include "models/zoo.h"
#include "runners/system_info.h"
#include "runners/workload.h"
#include "schedule/language/build.h"
#include "schedule/runtime/keyed_dropout.h"
#include "space/space_file.h"

int main(int argc, char** argv) {
  using namespace slapo;
  if (argc != 3) {
    std::cerr << "usage: tuned_training_example SPACE_FILE TUNE_DB\n";
    return 2;
  }
  try {
    const space::Space declared = space::load_space_file(argv[1]);
    const runners::Workload workload =
        runners::Workload::from_json(declared.workload_json, argv[1]);
    // The task key the tuner recorded: the workload as measured, and this machine.
    auto database = db::Database::open_existing(argv[2]);
    const auto best = db::best_config_for(
        *database, workload.to_json(), runners::fingerprint_json(runners::collect_system_info()));
    const Config config = best ? *best : Config();
    std::cout << (best ? "using the tuned configuration: " : "no tuned configuration; defaults: ")
              << config.to_string() << "\n";

    const models::ModelSpec spec = models::model_preset(workload.model);
    auto model = models::build_model(spec, workload.seed);
    auto sch = schedule::create_schedule(model);
    models::apply_template(*sch, spec, workload.schedule_template(), config);
    std::cout << sch->to_string();
    const Value* batch = config.find("batch_size");
    const int64_t b = batch ? static_cast<int64_t>(as_number(*batch)) : workload.batch_size;
    const int64_t s = workload.seq_len > 0 ? workload.seq_len : spec.max_seq;
    torch::optim::AdamW optimizer(schedule::unique_parameters(*model),
                                  torch::optim::AdamWOptions(workload.lr));
    for (int step = 0; step < 3; ++step) {
      const torch::Tensor tokens = torch::randint(spec.vocab, {b, s + 1}, torch::kLong);
      // Dropout masks are keyed by (step, sample): say which step this is.
      schedule::DropoutScope scope(static_cast<uint64_t>(step), 0);
      optimizer.zero_grad();
      torch::Tensor loss = models::language_model_loss(
          models::model_forward(*model, tokens.narrow(1, 0, s)), tokens.narrow(1, 1, s));
      loss.backward();
      optimizer.step();
      std::cout << "step " << step << " loss " << loss.item<double>() << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "tuned_training_example: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
