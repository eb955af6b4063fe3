#include "models/family.h"

#include "core/named.h"

namespace slapo::models {

const std::vector<FamilyTraits>& model_families() {
  static const std::vector<FamilyTraits> families = {
      // name, description,
      //   blocks, embedding, head,
      //   attention, causal, position_embedding, head_bias, final_norm, layer_norm_eps, masked_lm
      {"gpt", "pre-LN causal decoder (GPT-2): wte, wpe | h.<i> | ln_f, head",  //
       "h", "wte", "head",                                                     //
       true, true, true, false, true, 1e-5, false},
      {"bert",
       "post-LN bidirectional encoder (BERT): embeddings.* | encoder.<i> | head.*, decoder",  //
       "encoder", "embeddings.word", "decoder",                                               //
       true, false, true, true, false, 1e-12, true},
      {"mlp", "residual MLP blocks (no attention): wte | h.<i> | ln_f, head",  //
       "h", "wte", "head",                                                     //
       false, false, false, false, true, 1e-5, false},
  };
  return families;
}

const FamilyTraits& family_traits(const std::string& family) {
  return find_named(model_families(), family, "model family", "families", ErrorCode::kNotFound);
}

}  // namespace slapo::models
