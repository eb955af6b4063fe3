#pragma once
// The names of other codebases' checkpoints mapped onto the zoo's (docs/weights.md): Hugging Face
// transformers' GPT-2 (GPT2Model / GPT2LMHeadModel), BERT (BertModel / BertForMaskedLM /
// BertForPreTraining), GPT-Neo (GPTNeoModel / GPTNeoForCausalLM) and LLaMA (LlamaModel /
// LlamaForCausalLM). A layout is a list of rules; each
// maps a name (a regular expression over the whole name) to one or more zoo names with how the
// tensor changes on the way: GPT-2's Conv1D keeps weights as [in, out] (transposed to nn::Linear's
// [out, in]) and its attention's query, key and value as one c_attn (split in three along the
// output).

#include <functional>
#include <string>
#include <vector>

#include "models/model_spec.h"
#include "models/weights/safetensors.h"

namespace slapo::models {

struct WeightLayout {
  std::string name;         // "zoo", "gpt2", "bert", "gpt_neo", "llama"
  std::string family;       // the zoo family it maps onto; empty: any ("zoo")
  std::string description;  // one line, for errors and docs
};

// Every layout slapo maps, "zoo" (the zoo's own names) first.
const std::vector<WeightLayout>& weight_layouts();

// The layout of a checkpoint whose tensors are `names`, for a model of `family` whose parameter
// names `is_parameter` recognises: `requested` when not "auto" (Error naming the layouts when
// unknown or of another family); else the layout under which the most names become parameters of
// the model ("zoo" on a tie: GPT-2's names without their prefix are the zoo's).
const WeightLayout& resolve_weight_layout(
    const std::string& requested, const std::string& family, const std::vector<std::string>& names,
    const std::function<bool(const std::string&)>& is_parameter);

struct MappedTensors {
  NamedTensors tensors;              // by zoo name
  std::vector<std::string> ignored;  // the checkpoint's names the zoo has no place for, on purpose
                                     // (a tied copy of the embedding, BERT's pooler, buffers)
  std::vector<std::string> unknown;  // names no rule of the layout maps
};

// `tensors` renamed (and reshaped) into the zoo's names by `layout`. Throws Error(kInvalidArgument)
// naming the tensor when a rule's reshaping does not apply (c_attn not divisible by three, a
// Conv1D weight that is not 2-D).
MappedTensors map_to_zoo(const WeightLayout& layout, const NamedTensors& tensors);

// The other way: the zoo's `tensors` under `layout`'s names, as that codebase saves them (GPT-2's
// Conv1D weights transposed and q, k, v joined into c_attn; the "transformer.", "bert.", "model."
// prefixes of its LM-head models). Tied copies and buffers the layout ignores are not written.
// Throws Error(kInvalidArgument) naming the tensor the layout has no name for.
NamedTensors map_from_zoo(const WeightLayout& layout, const NamedTensors& tensors);

}  // namespace slapo::models
