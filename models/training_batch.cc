#include "models/training_batch.h"

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>

#include "core/error.h"
#include "models/family.h"
#include "models/model_registry.h"
#include "models/zoo.h"

namespace slapo::models {

int64_t masked_positions(int64_t seq) {
  return std::clamp<int64_t>(std::llround(kMaskedShare * static_cast<double>(seq)), 1, seq);
}

int64_t mask_token(const ModelSpec& spec) { return spec.vocab - 1; }

TrainingBatch training_batch(const ModelSpec& spec, const at::Tensor& window) {
  if (const FamilyRegistration* own = registered_family(spec.family); own && own->batch)
    return own->batch(spec, window);
  SLAPO_CHECK(window.dim() == 2 && window.size(1) >= 2, ErrorCode::kInvalidArgument,
              "training_batch: expected a window of [batch, seq + 1] tokens, got ", window.sizes());
  const int64_t batch = window.size(0);
  const int64_t seq = window.size(1) - 1;
  at::Tensor tokens = window.narrow(1, 0, seq);
  if (!spec.traits().masked_lm) return {tokens, window.narrow(1, 1, seq)};

  // k positions per sequence, without repetition: the k largest of uniform draws.
  const int64_t k = masked_positions(seq);
  const at::Tensor chosen = std::get<1>(at::rand({batch, seq}).topk(k, /*dim=*/1));
  const at::Tensor originals = tokens.gather(1, chosen);
  const at::Tensor fate = at::rand({batch, k});
  const at::Tensor random_tokens = at::randint(spec.vocab, {batch, k}, tokens.options());
  at::Tensor replaced = at::where(fate < 0.8, at::full_like(originals, mask_token(spec)),
                                  at::where(fate < 0.9, random_tokens, originals));
  TrainingBatch out;
  out.inputs = tokens.clone().scatter_(1, chosen, replaced);
  out.targets = at::full_like(tokens, kIgnoredTarget).scatter_(1, chosen, originals);
  return out;
}

LossFn training_loss(const ModelSpec& spec) {
  if (const FamilyRegistration* own = registered_family(spec.family); own && own->loss)
    return own->loss;
  return language_model_loss;
}

}  // namespace slapo::models
