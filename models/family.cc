#include "models/family.h"

#include "models/family_table.h"

#include "core/named.h"

namespace slapo::models {

std::vector<FamilyTraits>& mutable_model_families() {
  static std::vector<FamilyTraits> families = [] {
    std::vector<FamilyTraits> out;
    FamilyTraits gpt;
    gpt.name = "gpt";
    gpt.description = "pre-LN causal decoder (GPT-2): wte, wpe | h.<i> | ln_f, head";
    gpt.blocks = "h";
    gpt.embedding = "wte";
    gpt.head = "head";
    out.push_back(gpt);

    FamilyTraits bert;
    bert.name = "bert";
    bert.description =
        "post-LN bidirectional encoder (BERT): embeddings.* | encoder.<i> | head.*, decoder";
    bert.blocks = "encoder";
    bert.embedding = "embeddings.word";
    bert.head = "decoder";
    bert.causal = false;
    bert.head_bias = true;
    bert.final_norm = false;
    bert.layer_norm_eps = 1e-12;
    bert.masked_lm = true;
    out.push_back(bert);

    FamilyTraits mlp;
    mlp.name = "mlp";
    mlp.description = "residual MLP blocks (no attention): wte | h.<i> | ln_f, head";
    mlp.blocks = "h";
    mlp.embedding = "wte";
    mlp.head = "head";
    mlp.attention = false;
    mlp.causal = false;
    mlp.position_embedding = false;
    out.push_back(mlp);

    FamilyTraits neo = gpt;
    neo.name = "gpt_neo";
    neo.description =
        "GPT-Neo decoder (GPT-2's with global and local attention alternating, unscaled, q/k/v "
        "without biases): wte, wpe | h.<i> | ln_f, head";
    neo.qkv_bias = false;
    neo.scaled_attention = false;
    neo.gelu_tanh = true;
    out.push_back(neo);

    FamilyTraits llama;
    llama.name = "llama";
    llama.description =
        "LLaMA decoder (RMSNorm, rotary, SwiGLU, grouped-query attention): wte | h.<i> | ln_f, "
        "head (untied)";
    llama.blocks = "h";
    llama.embedding = "wte";
    llama.head = "head";
    llama.position_embedding = false;
    llama.layer_norm_eps = 1e-5;
    llama.gated_mlp = true;
    llama.rms_norm = true;
    llama.rotary = true;
    llama.tied_head = false;
    out.push_back(llama);
    return out;
  }();
  return families;
}

const std::vector<FamilyTraits>& model_families() { return mutable_model_families(); }

const FamilyTraits& family_traits(const std::string& family) {
  return find_named(model_families(), family, "model family", "families", ErrorCode::kNotFound);
}

}  // namespace slapo::models
