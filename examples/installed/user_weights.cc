// A user program linking slapo::models from an installed slapo: builds a zoo model, saves its
// weights, loads them into another copy and checks that both compute the same logits.
// Exit 0 when they do.

#include <iostream>

#include <torch/torch.h>

#include "models/weights/weights_file.h"
#include "models/zoo.h"

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "user_weights.safetensors";
  const slapo::models::ModelSpec spec = slapo::models::model_preset("llama-tiny");
  auto saved = slapo::models::build_model(spec, 1);
  slapo::models::save_weights(*saved, path);
  auto loaded = slapo::models::build_model(spec, 2);
  const slapo::models::LoadReport report = slapo::models::load_weights(*loaded, spec, path);
  std::cout << report.to_string() << "\n";
  const torch::Tensor tokens = torch::randint(spec.vocab, {2, 8}, torch::kLong);
  torch::NoGradGuard no_grad;
  const bool same = torch::equal(slapo::models::model_forward(*saved, tokens),
                                 slapo::models::model_forward(*loaded, tokens));
  std::cout << (same ? "same logits" : "different logits") << "\n";
  return same ? 0 : 1;
}
