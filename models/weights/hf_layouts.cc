#include "models/weights/hf_layouts.h"

#include <map>
#include <regex>
#include <set>

#include <ATen/ATen.h>

#include "core/error.h"
#include "core/text.h"

namespace slapo::models {

namespace {

// How a checkpoint's tensor becomes the zoo's.
enum class Reshape {
  kNone,
  kConv1D,     // GPT-2's Conv1D: a 2-D weight [in, out] transposed; a bias as it is
  kConv1DQkv,  // GPT-2's c_attn: split in three along the output (q, k, v), then as kConv1D
};

// One rule: a name the pattern matches becomes `targets` ($1.. are the pattern's groups); an
// empty `targets` means the name is known and left out on purpose. Saving goes the other way:
// the targets become the pattern's own name, optional prefixes included (saved_name).
struct Rule {
  const char* pattern;
  std::vector<const char*> targets;
  Reshape reshape = Reshape::kNone;
};

const std::vector<Rule>& rules_of(const std::string& layout) {
  // GPT2LMHeadModel prefixes "transformer."; GPT2Model does not.
  static const std::vector<Rule> kGpt2 = {
      {R"((?:transformer\.)?wte\.weight)", {"wte.weight"}},
      {R"((?:transformer\.)?wpe\.weight)", {"wpe.weight"}},
      {R"((?:transformer\.)?h\.(\d+)\.ln_([12])\.(weight|bias))", {"h.$1.ln_$2.$3"}},
      {R"((?:transformer\.)?h\.(\d+)\.attn\.c_attn\.(weight|bias))",
       {"h.$1.attn.q_proj.$2", "h.$1.attn.k_proj.$2", "h.$1.attn.v_proj.$2"},
       Reshape::kConv1DQkv},
      {R"((?:transformer\.)?h\.(\d+)\.attn\.c_proj\.(weight|bias))",
       {"h.$1.attn.out_proj.$2"},
       Reshape::kConv1D},
      {R"((?:transformer\.)?h\.(\d+)\.mlp\.c_fc\.(weight|bias))",
       {"h.$1.mlp.fc_in.$2"},
       Reshape::kConv1D},
      {R"((?:transformer\.)?h\.(\d+)\.mlp\.c_proj\.(weight|bias))",
       {"h.$1.mlp.fc_out.$2"},
       Reshape::kConv1D},
      {R"((?:transformer\.)?ln_f\.(weight|bias))", {"ln_f.$1"}},
      {R"(lm_head\.weight)", {}},                                   // tied to wte
      {R"((?:transformer\.)?h\.\d+\.attn\.(?:masked_)?bias)", {}},  // the causal mask buffers
  };
  // BertForMaskedLM / BertForPreTraining prefix "bert."; old checkpoints name norms gamma/beta.
  static const std::vector<Rule> kBert = {
      {R"((?:bert\.)?embeddings\.word_embeddings\.weight)", {"embeddings.word.weight"}},
      {R"((?:bert\.)?embeddings\.position_embeddings\.weight)", {"embeddings.position.weight"}},
      {R"((?:bert\.)?embeddings\.token_type_embeddings\.weight)", {"embeddings.token_type.weight"}},
      {R"((?:bert\.)?embeddings\.LayerNorm\.(weight|bias))", {"embeddings.norm.$1"}},
      {R"((?:bert\.)?encoder\.layer\.(\d+)\.attention\.self\.query\.(weight|bias))",
       {"encoder.$1.attn.q_proj.$2"}},
      {R"((?:bert\.)?encoder\.layer\.(\d+)\.attention\.self\.key\.(weight|bias))",
       {"encoder.$1.attn.k_proj.$2"}},
      {R"((?:bert\.)?encoder\.layer\.(\d+)\.attention\.self\.value\.(weight|bias))",
       {"encoder.$1.attn.v_proj.$2"}},
      {R"((?:bert\.)?encoder\.layer\.(\d+)\.attention\.output\.dense\.(weight|bias))",
       {"encoder.$1.attn.out_proj.$2"}},
      {R"((?:bert\.)?encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.(weight|bias))",
       {"encoder.$1.attn_norm.$2"}},
      {R"((?:bert\.)?encoder\.layer\.(\d+)\.intermediate\.dense\.(weight|bias))",
       {"encoder.$1.mlp.fc_in.$2"}},
      {R"((?:bert\.)?encoder\.layer\.(\d+)\.output\.dense\.(weight|bias))",
       {"encoder.$1.mlp.fc_out.$2"}},
      {R"((?:bert\.)?encoder\.layer\.(\d+)\.output\.LayerNorm\.(weight|bias))",
       {"encoder.$1.mlp_norm.$2"}},
      {R"(cls\.predictions\.transform\.dense\.(weight|bias))", {"head.dense.$1"}},
      {R"(cls\.predictions\.transform\.LayerNorm\.(weight|bias))", {"head.norm.$1"}},
      {R"(cls\.predictions\.bias)", {"decoder.bias"}},
      {R"(cls\.predictions\.decoder\.(weight|bias))", {}},  // tied: the embedding, the bias above
      {R"((?:bert\.)?embeddings\.position_ids)", {}},       // a buffer of 0..max_seq-1
      {R"((?:bert\.)?pooler\.dense\.(weight|bias))", {}},   // the zoo has no pooler
      {R"(cls\.seq_relationship\.(weight|bias))", {}},      // nor next-sentence prediction
  };
  // LlamaForCausalLM / LlamaModel ("model." prefix optional); the zoo's llama has HF's q/k
  // layout (rotate-half rotary), so no permutation is needed.
  static const std::vector<Rule> kLlama = {
      {R"((?:model\.)?embed_tokens\.weight)", {"wte.weight"}},
      {R"((?:model\.)?layers\.(\d+)\.self_attn\.([qkv])_proj\.weight)",
       {"h.$1.attn.$2_proj.weight"}},
      {R"((?:model\.)?layers\.(\d+)\.self_attn\.o_proj\.weight)", {"h.$1.attn.out_proj.weight"}},
      {R"((?:model\.)?layers\.(\d+)\.mlp\.(gate|up|down)_proj\.weight)",
       {"h.$1.mlp.$2_proj.weight"}},
      {R"((?:model\.)?layers\.(\d+)\.input_layernorm\.weight)", {"h.$1.ln_1.weight"}},
      {R"((?:model\.)?layers\.(\d+)\.post_attention_layernorm\.weight)", {"h.$1.ln_2.weight"}},
      {R"((?:model\.)?norm\.weight)", {"ln_f.weight"}},
      {R"(lm_head\.weight)", {"head.weight"}},
      {R"((?:model\.)?layers\.\d+\.self_attn\.rotary_emb\.inv_freq)", {}},  // recomputed
  };
  // GPTNeoForCausalLM / GPTNeoModel ("transformer." prefix optional): nn.Linear throughout (no
  // Conv1D), q, k, v without biases under attn.attention.
  static const std::vector<Rule> kGptNeo = {
      {R"((?:transformer\.)?wte\.weight)", {"wte.weight"}},
      {R"((?:transformer\.)?wpe\.weight)", {"wpe.weight"}},
      {R"((?:transformer\.)?h\.(\d+)\.ln_([12])\.(weight|bias))", {"h.$1.ln_$2.$3"}},
      {R"((?:transformer\.)?h\.(\d+)\.attn\.attention\.([qkv])_proj\.weight)",
       {"h.$1.attn.$2_proj.weight"}},
      {R"((?:transformer\.)?h\.(\d+)\.attn\.attention\.out_proj\.(weight|bias))",
       {"h.$1.attn.out_proj.$2"}},
      {R"((?:transformer\.)?h\.(\d+)\.mlp\.c_fc\.(weight|bias))", {"h.$1.mlp.fc_in.$2"}},
      {R"((?:transformer\.)?h\.(\d+)\.mlp\.c_proj\.(weight|bias))", {"h.$1.mlp.fc_out.$2"}},
      {R"((?:transformer\.)?ln_f\.(weight|bias))", {"ln_f.$1"}},
      {R"(lm_head\.weight)", {}},                                              // tied to wte
      {R"((?:transformer\.)?h\.\d+\.attn\.attention\.(?:masked_)?bias)", {}},  // mask buffers
  };
  static const std::vector<Rule> kNone;
  if (layout == "gpt_neo") return kGptNeo;
  if (layout == "llama") return kLlama;
  if (layout == "gpt2") return kGpt2;
  if (layout == "bert") return kBert;
  return kNone;
}

// Old BERT checkpoints (TensorFlow ports) call a norm's weight and bias gamma and beta.
std::string modern_name(const std::string& name) {
  static const std::regex kGammaBeta(R"(LayerNorm\.(gamma|beta)$)");
  std::smatch m;
  if (!std::regex_search(name, m, kGammaBeta)) return name;
  return m.prefix().str() + (m[1] == "gamma" ? "LayerNorm.weight" : "LayerNorm.bias");
}

const std::vector<std::pair<Rule, std::regex>>& compiled(const std::string& layout) {
  static std::map<std::string, std::vector<std::pair<Rule, std::regex>>> cache;
  auto it = cache.find(layout);
  if (it == cache.end()) {
    std::vector<std::pair<Rule, std::regex>> out;
    for (const Rule& r : rules_of(layout)) out.emplace_back(r, std::regex(r.pattern));
    it = cache.emplace(layout, std::move(out)).first;
  }
  return it->second;
}

// The name a rule's pattern stands for, as the codebase's own save writes it: an optional prefix
// "(?:transformer\.)?" is written, each group "(...)" becomes $1, $2, ... in order, "\." a dot:
// "(?:transformer\.)?h\.(\d+)\.ln_([12])\.(weight|bias)" → "transformer.h.$1.ln_$2.$3".
std::string saved_name(const std::string& pattern) {
  std::string out;
  int group = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern.compare(i, 3, "(?:") == 0) {
      const size_t close = pattern.find(")?", i);
      out += saved_name(pattern.substr(i + 3, close - i - 3));
      i = close + 1;
    } else if (pattern[i] == '(') {
      out += "$" + std::to_string(++group);
      i = pattern.find(')', i);
    } else if (pattern[i] == '\\') {
      out += pattern[++i];
    } else {
      out += pattern[i];
    }
  }
  return out;
}

// The groups of a rule's pattern, in order, without their parentheses ("\\d+", "[qkv]").
std::vector<std::string> pattern_groups(const std::string& pattern) {
  std::vector<std::string> groups;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\') {
      ++i;
    } else if (pattern[i] == '(' && pattern.compare(i, 3, "(?:") != 0) {
      const size_t close = pattern.find(')', i);
      groups.push_back(pattern.substr(i + 1, close - i - 1));
      i = close;
    }
  }
  return groups;
}

// A target name ("h.$1.attn.$2_proj.weight") as a regular expression over the zoo's names, each
// $k standing for what the pattern's group k matches (so "[qkv]" does not take "out_proj"), with
// the $ number of each of its groups in order.
std::pair<std::regex, std::vector<int>> target_regex(const std::string& target,
                                                     const std::string& pattern) {
  const std::vector<std::string> groups = pattern_groups(pattern);
  std::string re;
  std::vector<int> order;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == '$') {
      order.push_back(target[++i] - '0');
      re += "(" + groups.at(static_cast<size_t>(order.back() - 1)) + ")";
    } else {
      if (target[i] == '.') re += '\\';
      re += target[i];
    }
  }
  return {std::regex(re), order};
}

// `text` with $1.. replaced by `groups` (index 0 is $1).
std::string substitute(const std::string& text, const std::vector<std::string>& groups) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '$' && i + 1 < text.size()) {
      out += groups.at(static_cast<size_t>(text[++i] - '1'));
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

const std::vector<WeightLayout>& weight_layouts() {
  static const std::vector<WeightLayout> layouts = {
      {"zoo", "", "the zoo's own parameter names (what slapo saves)"},
      {"gpt2", "gpt", "Hugging Face GPT-2 (GPT2Model, GPT2LMHeadModel)"},
      {"bert", "bert", "Hugging Face BERT (BertModel, BertForMaskedLM, BertForPreTraining)"},
      {"gpt_neo", "gpt_neo", "Hugging Face GPT-Neo (GPTNeoModel, GPTNeoForCausalLM)"},
      {"llama", "llama", "Hugging Face LLaMA (LlamaModel, LlamaForCausalLM)"},
  };
  return layouts;
}

const WeightLayout& resolve_weight_layout(
    const std::string& requested, const std::string& family, const std::vector<std::string>& names,
    const std::function<bool(const std::string&)>& is_parameter) {
  std::string known;
  for (const WeightLayout& l : weight_layouts()) {
    known += (known.empty() ? "" : ", ") + l.name;
    if (l.name != requested) continue;
    SLAPO_CHECK(l.family.empty() || l.family == family, ErrorCode::kInvalidArgument,
                "weight layout '", l.name, "' is for ", l.family, " models, not ", family);
    return l;
  }
  SLAPO_CHECK(requested == "auto", ErrorCode::kInvalidArgument, "unknown weight layout '",
              requested, "' (layouts: auto, ", known, ")");
  const WeightLayout* best = &weight_layouts().front();
  size_t best_hits = 0;
  for (const WeightLayout& l : weight_layouts()) {
    if (!l.family.empty() && l.family != family) continue;
    size_t hits = 0;
    for (const std::string& name : names) {
      if (l.name == "zoo") {
        hits += is_parameter(name);
        continue;
      }
      std::smatch m;
      const std::string modern = modern_name(name);
      for (const auto& [rule, re] : compiled(l.name)) {
        if (!std::regex_match(modern, m, re)) continue;
        for (const char* target : rule.targets) hits += is_parameter(m.format(target));
        break;
      }
    }
    if (hits > best_hits) best = &l, best_hits = hits;
  }
  return *best;
}

MappedTensors map_to_zoo(const WeightLayout& layout, const NamedTensors& tensors) {
  MappedTensors out;
  if (layout.name == "zoo") {
    out.tensors = tensors;
    return out;
  }
  for (const auto& [original, tensor] : tensors) {
    const std::string name = modern_name(original);
    const std::pair<Rule, std::regex>* hit = nullptr;
    std::smatch m;
    for (const auto& entry : compiled(layout.name))
      if (std::regex_match(name, m, entry.second)) {
        hit = &entry;
        break;
      }
    if (hit == nullptr) {
      out.unknown.push_back(original);
      continue;
    }
    const Rule& rule = hit->first;
    if (rule.targets.empty()) {
      out.ignored.push_back(original);
      continue;
    }
    std::vector<at::Tensor> parts = {tensor};
    if (rule.reshape == Reshape::kConv1DQkv) {
      const int64_t axis = tensor.dim() - 1;  // the output: columns of a weight, a bias' entries
      SLAPO_CHECK(tensor.dim() >= 1 && tensor.size(axis) % 3 == 0, ErrorCode::kInvalidArgument,
                  "tensor '", original, "' of shape ", tensor.sizes(),
                  ": expected query, key and value side by side along its last axis");
      parts = tensor.chunk(3, axis);
    }
    for (size_t i = 0; i < rule.targets.size(); ++i) {
      at::Tensor t = parts[i];
      if (rule.reshape != Reshape::kNone && ends_with(name, ".weight")) {
        SLAPO_CHECK(t.dim() == 2, ErrorCode::kInvalidArgument, "tensor '", original, "' of shape ",
                    tensor.sizes(), ": a Conv1D weight is 2-D");
        t = t.t();
      }
      out.tensors.emplace_back(m.format(rule.targets[i]), t);
    }
  }
  return out;
}

NamedTensors map_from_zoo(const WeightLayout& layout, const NamedTensors& tensors) {
  if (layout.name == "zoo") return tensors;
  std::map<std::string, at::Tensor> by_name(tensors.begin(), tensors.end());
  std::set<std::string> used;
  NamedTensors out;
  for (const auto& [name, tensor] : tensors) {
    if (used.count(name)) continue;
    bool saved = false;
    for (const auto& [rule, re] : compiled(layout.name)) {
      if (rule.targets.empty()) continue;
      // The rule's targets, one of which is this name: the groups come from the one it matches.
      std::vector<std::string> groups;
      bool matched = false;
      for (const char* target : rule.targets) {
        const auto [target_re, order] = target_regex(target, rule.pattern);
        std::smatch m;
        if (!std::regex_match(name, m, target_re)) continue;
        for (size_t g = 0; g < order.size(); ++g) {
          const auto at = static_cast<size_t>(order[g] - 1);
          if (groups.size() <= at) groups.resize(at + 1);
          groups[at] = m[static_cast<int>(g) + 1].str();
        }
        matched = true;
        break;
      }
      if (!matched) continue;
      std::vector<at::Tensor> parts;
      for (const char* target : rule.targets) {
        const std::string part = substitute(target, groups);
        auto it = by_name.find(part);
        SLAPO_CHECK(it != by_name.end(), ErrorCode::kInvalidArgument, "cannot save '", name,
                    "' as ", layout.description, ": '", part, "' is missing");
        at::Tensor t = it->second;
        if (rule.reshape != Reshape::kNone && ends_with(part, ".weight")) t = t.t();
        parts.push_back(t);
        used.insert(part);
      }
      // c_attn holds q, k and v side by side along its last axis (map_to_zoo splits it there).
      at::Tensor value = parts.size() == 1 ? parts[0] : at::cat(parts, parts[0].dim() - 1);
      out.emplace_back(substitute(saved_name(rule.pattern), groups), value.contiguous());
      saved = true;
      break;
    }
    SLAPO_CHECK(saved, ErrorCode::kInvalidArgument, "cannot save '", name, "' as ",
                layout.description, ": the layout has no name for it");
  }
  return out;
}

}  // namespace slapo::models
