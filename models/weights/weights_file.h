#pragma once
// Weights in and out of a zoo model (docs/weights.md): read a checkpoint — safetensors or
// torch.save, told apart by their first bytes — map its names onto the model's (hf_layouts.h),
// check every shape and dtype, and copy; save a model's parameters the same two ways.

#include <functional>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "models/model_spec.h"
#include "models/weights/safetensors.h"

namespace slapo::models {

// The tensors of the checkpoint at `path`: safetensors, or a zip written by torch.save.
NamedTensors read_weights(const std::string& path);

struct LoadOptions {
  std::string layout = "auto";  // "auto", or a name of weight_layouts()
  // Strict: a parameter of the model that the file does not give, or a name of the file that
  // maps to nothing, is an error (listing them); else they are reported and left as they are.
  bool strict = true;
  // A rank of a parallel job, loading into its scheduled model: what it holds of the file's tensor
  // for the parameter `name` — a slice of `full` (a tensor-parallel shard), `full` itself, or an
  // undefined tensor when it holds none of it (another pipeline stage's parameter). Only that is
  // read from the file and copied. Unset: every parameter whole.
  std::function<at::Tensor(const std::string& name, const at::Tensor& full)> rank_slice;
};

struct LoadReport {
  std::string path;
  std::string layout;                   // the layout the names were read in
  size_t loaded = 0;                    // parameters of the model given a value
  size_t elsewhere = 0;                 // with rank_slice: parameters other ranks hold, not read
  size_t loaded_bytes = 0;              // what was copied into the model
  std::vector<std::string> missing;     // parameters of the model the file does not give
  std::vector<std::string> unexpected;  // names of the file that map to nothing of the model
  std::vector<std::string> ignored;     // names the layout leaves out on purpose (hf_layouts.h)
  std::vector<std::string> converted;   // "name: BFloat16 → Float", floating point widened
  std::string to_string() const;        // one line
};

// Loads the checkpoint at `path` into `model` (a zoo model of `spec`, unscheduled) by parameter
// name. Parameters that share one tensor (the LM head tied to the embedding) are given by any of
// their names. A floating-point tensor is converted to the parameter's dtype; any other dtype
// mismatch, and any shape mismatch, is an error naming the tensor and both shapes. Errors are
// Error(kInvalidArgument) naming `path`; nothing is copied unless every check passed.
LoadReport load_weights(torch::nn::Module& model, const ModelSpec& spec, const std::string& path,
                        const LoadOptions& options = {});

// Saves `model`'s parameters (a tensor shared by several names once, under its first) under the
// names of `layout` (weight_layouts(): "zoo", or a Hugging Face layout of the model's family —
// map_from_zoo), as safetensors when `path` ends in ".safetensors", else as torch.save does.
// Throws Error(kInvalidArgument) naming the layout when it is unknown or not of `family` (when
// given).
void save_weights(const torch::nn::Module& model, const std::string& path,
                  const std::string& layout = "zoo", const std::string& family = "");

}  // namespace slapo::models
