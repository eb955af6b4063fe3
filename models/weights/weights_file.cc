#include "models/weights/weights_file.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "core/error.h"
#include "core/text.h"
#include "models/weights/hf_layouts.h"
#include "models/weights/torch_save.h"

namespace slapo::models {

namespace {

// "a, b, c and 4 more".
std::string some(const std::vector<std::string>& names, size_t shown = 4) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

}  // namespace

NamedTensors read_weights(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SLAPO_CHECK(in.good(), ErrorCode::kNotFound, path, ": cannot open the weights");
  char magic[4] = {};
  in.read(magic, 4);
  if (in.gcount() == 4 && std::memcmp(magic, "PK\x03\x04", 4) == 0) return read_torch_save(path);
  return SafetensorsFile::open(path).tensors();
}

std::string LoadReport::to_string() const {
  std::ostringstream s;
  s << path << ": " << loaded << " parameters loaded (layout " << layout << ")";
  if (elsewhere > 0) s << ", " << elsewhere << " held by other ranks not read";
  if (!missing.empty()) s << "; missing " << missing.size() << ": " << some(missing);
  if (!unexpected.empty()) s << "; unexpected " << unexpected.size() << ": " << some(unexpected);
  if (!ignored.empty()) s << "; ignored " << ignored.size() << ": " << some(ignored);
  if (!converted.empty()) s << "; converted " << converted.size() << ": " << some(converted, 2);
  return s.str();
}

LoadReport load_weights(torch::nn::Module& model, const ModelSpec& spec, const std::string& path,
                        const LoadOptions& options) {
  const NamedTensors file = read_weights(path);
  // The model's parameters, by name; names that share a tensor form one group.
  const auto params = model.named_parameters(/*recurse=*/true);
  std::map<const void*, std::vector<std::string>> aliases;
  for (const auto& p : params) aliases[p.value().unsafeGetTensorImpl()].push_back(p.key());

  std::vector<std::string> names;
  for (const auto& [name, tensor] : file) names.push_back(name);
  const WeightLayout* layout = nullptr;
  MappedTensors mapped;
  try {  // the layout's errors name no file: this one
    layout = &resolve_weight_layout(options.layout, spec.family, names,
                                    [&](const std::string& n) { return params.contains(n); });
    mapped = map_to_zoo(*layout, file);
  } catch (const Error& e) {
    SLAPO_FAIL(e.code(), path, ": ", e.what());
  }

  LoadReport report;
  report.path = path;
  report.layout = layout->name;
  report.ignored = mapped.ignored;
  report.unexpected = mapped.unknown;

  std::vector<std::pair<at::Tensor, at::Tensor>> copies;  // (parameter, value)
  std::map<const void*, std::string> given;               // tensor → the name that gave it
  for (const auto& [name, value] : mapped.tensors) {
    const at::Tensor* param = params.find(name);
    if (param == nullptr) {
      report.unexpected.push_back(name);
      continue;
    }
    const void* id = param->unsafeGetTensorImpl();
    const auto before = given.find(id);
    SLAPO_CHECK(before == given.end(), ErrorCode::kInvalidArgument, path, ": '", name, "' and '",
                before->second, "' both give one parameter of the model (tied: give one)");
    given[id] = name;
    at::Tensor v = value;
    if (options.rank_slice) {
      v = options.rank_slice(name, value);
      if (!v.defined()) {
        ++report.elsewhere;
        continue;
      }
    }
    SLAPO_CHECK(v.sizes() == param->sizes(), ErrorCode::kInvalidArgument, path, ": '", name,
                "' has shape ", v.sizes(), " in the file",
                options.rank_slice ? " (this rank's part)" : "", " and ", param->sizes(),
                " in the model (", spec.preset, ")");
    if (value.scalar_type() != param->scalar_type()) {
      SLAPO_CHECK(
          at::isFloatingType(value.scalar_type()) && at::isFloatingType(param->scalar_type()),
          ErrorCode::kInvalidArgument, path, ": '", name, "' is ", value.scalar_type(),
          " in the file and ", param->scalar_type(), " in the model");
      report.converted.push_back(name + ": " + c10::toString(value.scalar_type()) + " → " +
                                 c10::toString(param->scalar_type()));
      v = v.to(param->scalar_type());
    }
    copies.emplace_back(*param, v);
  }
  for (const auto& [id, names] : aliases)
    if (!given.count(id)) report.missing.push_back(names.front());
  std::sort(report.missing.begin(), report.missing.end());
  if (options.strict && !(report.missing.empty() && report.unexpected.empty())) {
    std::string what;
    if (!report.missing.empty())
      what += "the file lacks " + std::to_string(report.missing.size()) +
              " parameters of the model: " + some(report.missing);
    if (!report.unexpected.empty())
      what += std::string(what.empty() ? "" : "; ") + "the model has no parameter for " +
              std::to_string(report.unexpected.size()) +
              " of its tensors: " + some(report.unexpected);
    SLAPO_FAIL(ErrorCode::kInvalidArgument, path, ": does not fit ", spec.preset, " (read as ",
               layout->description, "): ", what);
  }
  torch::NoGradGuard no_grad;
  for (auto& [param, value] : copies) {
    param.copy_(value);
    report.loaded_bytes += param.nbytes();
  }
  report.loaded = copies.size();
  return report;
}

void save_weights(const torch::nn::Module& model, const std::string& path,
                  const std::string& layout, const std::string& family) {
  SLAPO_CHECK(layout != "auto", ErrorCode::kInvalidArgument,
              "saving weights takes a layout, not 'auto'");
  // Without a family, any layout of that name (the caller knows what the model is).
  std::string of_family = family;
  for (const WeightLayout& l : weight_layouts())
    if (l.name == layout && family.empty()) of_family = l.family;
  const WeightLayout& target = resolve_weight_layout(layout, of_family, {}, nullptr);
  NamedTensors tensors;
  std::set<const void*> seen;
  for (const auto& p : model.named_parameters(/*recurse=*/true))
    if (seen.insert(p.value().unsafeGetTensorImpl()).second)
      tensors.emplace_back(p.key(), p.value().detach());
  tensors = map_from_zoo(target, tensors);
  if (ends_with(path, ".safetensors"))
    write_safetensors(path, tensors);
  else
    write_torch_save(path, tensors);
}

}  // namespace slapo::models
