#include "models/family.h"

#include "core/error.h"

namespace slapo::models {

const std::vector<FamilyTraits>& model_families() {
  static const std::vector<FamilyTraits> families = [] {
    FamilyTraits gpt;
    gpt.name = "gpt";
    gpt.description = "pre-LN causal decoder (GPT-2): wte, wpe | h.<i> | ln_f, head";
    gpt.blocks = "h";
    gpt.embedding = "wte";
    gpt.head = "head";

    FamilyTraits bert;
    bert.name = "bert";
    bert.description = "post-LN bidirectional encoder (BERT): embeddings.* | encoder.<i> | head.*, decoder";
    bert.blocks = "encoder";
    bert.embedding = "embeddings.word";
    bert.head = "decoder";
    bert.causal = false;
    bert.head_bias = true;
    bert.final_norm = false;
    bert.layer_norm_eps = 1e-12;

    FamilyTraits mlp;
    mlp.name = "mlp";
    mlp.description = "residual MLP blocks (no attention): wte | h.<i> | ln_f, head";
    mlp.blocks = "h";
    mlp.embedding = "wte";
    mlp.head = "head";
    mlp.attention = false;
    mlp.causal = false;
    mlp.position_embedding = false;
    return std::vector<FamilyTraits>{gpt, bert, mlp};
  }();
  return families;
}

const FamilyTraits& family_traits(const std::string& family) {
  std::string names;
  for (const FamilyTraits& f : model_families()) {
    if (f.name == family) return f;
    names += (names.empty() ? "" : ", ") + f.name;
  }
  SLAPO_FAIL(ErrorCode::kNotFound, "unknown model family '", family, "' (families: ", names, ")");
}

}  // namespace slapo::models
