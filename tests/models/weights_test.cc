// Weights in and out of zoo models: checkpoints in Hugging Face's GPT-2 and BERT layouts, written
// by reference models in Python (hf_reference.py: random weights, no hub) as safetensors and as
// torch.save writes them, load into the zoo's gpt-tiny and bert-tiny, whose logits and loss then
// agree with the reference's; slapo's own files round-trip exactly and torch.load reads them.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <torch/torch.h>

#include "core/error.h"
#include "core/process.h"
#include "models/weights/hf_layouts.h"
#include "models/weights/safetensors.h"
#include "models/weights/torch_save.h"
#include "models/weights/weights_file.h"
#include "models/zoo.h"

namespace slapo::models {
namespace {

namespace fs = std::filesystem;

const std::string kReference = std::string(SLAPO_SOURCE_DIR) + "/tests/models/hf_reference.py";

bool have_torch() {
  return access("/usr/bin/python3", X_OK) == 0 &&
         std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

// The reference's files, written once per test binary into a temporary folder.
const std::string& reference_dir() {
  static const std::string dir = [] {
    const fs::path d = fs::temp_directory_path() / ("slapo-weights-" + std::to_string(getpid()));
    fs::create_directories(d);
    const ProcessResult r = run_process({"/usr/bin/python3", kReference, d.string()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return d.string();
  }();
  return dir;
}

std::map<std::string, torch::Tensor> expected(const std::string& name) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& [k, v] :
       SafetensorsFile::open(reference_dir() + "/" + name + ".expected.safetensors").tensors())
    out[k] = v;
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

struct Case {
  const char* file;    // in the reference folder
  const char* preset;  // the zoo model it fits
  const char* expect;  // the reference's outputs
  const char* layout;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.file; }

class HfCheckpointTest : public ::testing::TestWithParam<Case> {};

TEST_P(HfCheckpointTest, LoadsIntoTheZooAndComputesWhatTheReferenceComputes) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed (scripts/setup.sh does)";
  const Case& c = GetParam();
  const ModelSpec spec = model_preset(c.preset);
  auto model = build_model(spec, 99);
  const LoadReport report = load_weights(*model, spec, reference_dir() + "/" + c.file);
  EXPECT_EQ(report.layout, c.layout) << report.to_string();
  EXPECT_TRUE(report.missing.empty() && report.unexpected.empty()) << report.to_string();
  EXPECT_GT(report.loaded, 10u) << report.to_string();

  model->eval();
  const auto want = expected(c.expect);
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = model_forward(*model, want.at("tokens"));
  const double loss = language_model_loss(logits, want.at("targets")).item<double>();
  EXPECT_LT((logits - want.at("logits")).abs().max().item<double>(), 1e-5) << report.to_string();
  EXPECT_NEAR(loss, want.at("loss").item<double>(), 1e-5);
  // The model's own random weights compute something else: the comparison can fail.
  auto fresh = build_model(spec, 99);
  fresh->eval();
  EXPECT_GT(
      (model_forward(*fresh, want.at("tokens")) - want.at("logits")).abs().max().item<double>(),
      1e-2);
}

INSTANTIATE_TEST_SUITE_P(
    Files, HfCheckpointTest,
    ::testing::Values(Case{"gpt2.safetensors", "gpt-tiny", "gpt2", "gpt2"},
                      Case{"gpt2.pt", "gpt-tiny", "gpt2", "gpt2"},
                      Case{"bert.safetensors", "bert-tiny", "bert", "bert"},
                      Case{"bert.pt", "bert-tiny", "bert", "bert"},
                      Case{"llama.safetensors", "llama-tiny", "llama", "llama"},
                      Case{"gpt_neo.safetensors", "gpt-neo-tiny", "gpt_neo", "gpt_neo"},
                      Case{"gpt_neo.pt", "gpt-neo-tiny", "gpt_neo", "gpt_neo"},
                      Case{"llama.pt", "llama-tiny", "llama", "llama"},
                      // {"model": state dict in bfloat16, "step": .., "lr": ..}, widened to float.
                      Case{"gpt2-bf16-checkpoint.pt", "gpt-tiny", "gpt2-bf16-checkpoint", "gpt2"}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string n = info.param.file;
      for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

// Saved back in the layout it was read in, a checkpoint is the reference's file again: every
// tensor the reference wrote under its name and value, but for what the layout leaves out (tied
// copies, buffers, BERT's pooler — the zoo has no place for them).
TEST_P(HfCheckpointTest, SavedBackInItsLayoutItIsTheReferencesFile) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed (scripts/setup.sh does)";
  const Case& c = GetParam();
  if (std::string(c.file).find("bf16") != std::string::npos) GTEST_SKIP() << "widened on load";
  const ModelSpec spec = model_preset(c.preset);
  auto model = build_model(spec, 3);
  const std::string original = reference_dir() + "/" + c.file;
  const LoadReport report = load_weights(*model, spec, original);
  const std::string saved = reference_dir() + "/saved-" + c.file;
  save_weights(*model, saved, c.layout, spec.family);
  std::map<std::string, torch::Tensor> want;
  for (const auto& [name, t] : read_weights(original)) want[name] = t;
  std::set<std::string> written;
  for (const auto& [name, t] : read_weights(saved)) {
    written.insert(name);
    auto it = want.find(name);
    ASSERT_NE(it, want.end()) << name << " is not a name of " << c.file;
    EXPECT_TRUE(t.equal(it->second)) << name;
  }
  for (const auto& [name, t] : want) {
    const bool left_out =
        std::find(report.ignored.begin(), report.ignored.end(), name) != report.ignored.end();
    EXPECT_TRUE(written.count(name) || left_out) << name << " was not saved";
  }
  EXPECT_GT(written.size(), 10u);
}

TEST(WeightsTest, ALayoutOfAnotherFamilyIsRefusedOnSave) {
  const ModelSpec gpt = model_preset("gpt-tiny");
  auto model = build_model(gpt, 1);
  EXPECT_NE(error_of([&] {
              save_weights(*model, "/tmp/never.safetensors", "bert", gpt.family);
            }).find("weight layout 'bert' is for bert models, not gpt"),
            std::string::npos);
  // A model with a parameter the layout has no name for: named.
  torch::nn::Module extra;
  extra.register_module("wte", std::make_shared<torch::nn::Module>())
      ->register_parameter("weight", torch::zeros({4, 2}));
  extra.register_module("adapter", std::make_shared<torch::nn::Module>())
      ->register_parameter("weight", torch::zeros({2, 2}));
  EXPECT_NE(error_of([&] {
              save_weights(extra, "/tmp/never.safetensors", "gpt2", "gpt");
            }).find("cannot save 'adapter.weight' as Hugging Face GPT-2"),
            std::string::npos);
  EXPECT_FALSE(fs::exists("/tmp/never.safetensors"));
}

TEST(WeightsTest, WhatTheLayoutLeavesOutAndWhatItConvertsIsReported) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed";
  const ModelSpec bert = model_preset("bert-tiny");
  auto model = build_model(bert, 1);
  const LoadReport r = load_weights(*model, bert, reference_dir() + "/bert.pt");
  // The pooler, the tied decoder (weight and bias) and the position ids: left out on purpose.
  EXPECT_NE(r.to_string().find("ignored 5"), std::string::npos) << r.to_string();
  const ModelSpec gpt = model_preset("gpt-tiny");
  auto g = build_model(gpt, 1);
  const LoadReport c = load_weights(*g, gpt, reference_dir() + "/gpt2-bf16-checkpoint.pt");
  EXPECT_FALSE(c.converted.empty());
  EXPECT_NE(c.to_string().find("BFloat16 → Float"), std::string::npos) << c.to_string();
}

TEST(WeightsTest, SavedWeightsRoundTripExactlyAndTorchLoadReadsThem) {
  const ModelSpec spec = model_preset("gpt-tiny");
  auto source = build_model(spec, 5);
  const fs::path dir = fs::temp_directory_path() / ("slapo-save-" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const char* file : {"w.safetensors", "w.pt"}) {
    const std::string path = (dir / file).string();
    save_weights(*source, path);
    auto target = build_model(spec, 6);
    const LoadReport r = load_weights(*target, spec, path);
    EXPECT_EQ(r.layout, "zoo");
    const auto want = source->named_parameters();
    for (const auto& p : target->named_parameters())
      EXPECT_TRUE(p.value().equal(*want.find(p.key()))) << file << ": " << p.key();
    // head.weight is the embedding: saved once, given to both names by the tie.
    EXPECT_TRUE(target->named_parameters()
                    .find("head.weight")
                    ->is_same(*target->named_parameters().find("wte.weight")));
  }
  if (!have_torch()) return;
  const ProcessResult check =
      run_process({"/usr/bin/python3", kReference, "--check", (dir / "w.pt").string(),
                   (dir / "w.safetensors").string()});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("same 36"), std::string::npos) << check.out;  // head.weight is wte
}

// A rank of a parallel job reads only what it holds: a slice of a sharded parameter, nothing of
// another stage's. (Here a model whose fc_in weights are the first half of the file's rows and
// whose block 1 belongs to another stage.)
TEST(WeightsTest, ARankReadsOnlyItsShardsAndItsStage) {
  const ModelSpec spec = model_preset("gpt-tiny");
  auto source = build_model(spec, 5);
  const std::string path =
      (fs::temp_directory_path() / ("slapo-rank-" + std::to_string(getpid()) + ".safetensors"))
          .string();
  save_weights(*source, path);
  auto target = build_model(spec, 6);
  const std::string fc_in = "h.0.mlp.fc_in.weight";
  {
    torch::NoGradGuard no_grad;
    at::Tensor w = *target->named_parameters().find(fc_in);
    w.set_(w.narrow(0, 0, w.size(0) / 2).clone());  // as shard("weight", 0) leaves rank 0's
  }
  const auto untouched = target->named_parameters().find("h.1.attn.q_proj.weight")->clone();
  LoadOptions options;
  options.rank_slice = [&](const std::string& name, const at::Tensor& full) -> at::Tensor {
    if (name.rfind("h.1.", 0) == 0) return at::Tensor();
    return name == fc_in ? full.narrow(0, 0, full.size(0) / 2) : full;
  };
  const LoadReport r = load_weights(*target, spec, path, options);
  const auto want = source->named_parameters();
  const auto got = target->named_parameters();
  EXPECT_TRUE(got.find(fc_in)->equal(want.find(fc_in)->narrow(0, 0, got.find(fc_in)->size(0))));
  EXPECT_TRUE(got.find("h.0.attn.q_proj.weight")->equal(*want.find("h.0.attn.q_proj.weight")));
  EXPECT_TRUE(got.find("h.1.attn.q_proj.weight")->equal(untouched));  // another stage's: not read
  EXPECT_EQ(r.elsewhere, 16u) << r.to_string();                       // block 1's parameters
  EXPECT_EQ(r.loaded + r.elsewhere, 36u) << r.to_string();
  EXPECT_NE(r.to_string().find("16 held by other ranks not read"), std::string::npos);
  size_t bytes = 0;
  for (const auto& p : got)
    if (p.key().rfind("h.1.", 0) != 0 && p.key() != "head.weight") bytes += p.value().nbytes();
  EXPECT_EQ(r.loaded_bytes, bytes);
}

TEST(WeightsTest, AFileThatDoesNotFitIsRefusedNamingWhatAndChangesNothing) {
  const ModelSpec tiny = model_preset("gpt-tiny");
  const fs::path dir = fs::temp_directory_path() / ("slapo-bad-" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto source = build_model(tiny, 5);
  const std::string good = (dir / "tiny.safetensors").string();
  save_weights(*source, good);

  // Another model's shapes.
  const ModelSpec mini = model_preset("gpt-mini");
  auto other = build_model(mini, 1);
  const torch::Tensor before = other->named_parameters().find("ln_f.weight")->clone();
  EXPECT_NE(
      error_of([&] { load_weights(*other, mini, good); })
          .find("tiny.safetensors: 'wte.weight' has shape [128, 32] in the file and [8192, 256] in "
                "the model (gpt-mini)"),
      std::string::npos)
      << error_of([&] { load_weights(*other, mini, good); });
  EXPECT_TRUE(other->named_parameters().find("ln_f.weight")->equal(before));  // nothing copied

  // A file without some parameters: strict refuses, listing them; not strict reports them.
  NamedTensors partial;
  for (const auto& [name, t] : SafetensorsFile::open(good).tensors())
    if (name.rfind("ln_f.", 0) != 0) partial.emplace_back(name, t);
  partial.emplace_back("extra.weight", torch::zeros({2}));
  const std::string part = (dir / "partial.safetensors").string();
  write_safetensors(part, partial);
  auto target = build_model(tiny, 7);
  const std::string e = error_of([&] { load_weights(*target, tiny, part); });
  EXPECT_NE(e.find("partial.safetensors: does not fit gpt-tiny"), std::string::npos) << e;
  EXPECT_NE(e.find("lacks 2 parameters of the model: ln_f.bias, ln_f.weight"), std::string::npos)
      << e;
  EXPECT_NE(e.find("no parameter for 1 of its tensors: extra.weight"), std::string::npos) << e;
  LoadOptions lenient;
  lenient.strict = false;
  const LoadReport r = load_weights(*target, tiny, part, lenient);
  EXPECT_EQ(r.missing.size(), 2u);
  EXPECT_EQ(r.unexpected, std::vector<std::string>{"extra.weight"});

  // A layout of another family, an unknown one.
  EXPECT_NE(error_of([&] {
              LoadOptions o;
              o.layout = "bert";
              load_weights(*target, tiny, good, o);
            }).find("weight layout 'bert' is for bert models, not gpt"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              LoadOptions o;
              o.layout = "opt";
              load_weights(*target, tiny, good, o);
            }).find("unknown weight layout 'opt' (layouts: auto, zoo, gpt2, bert, gpt_neo, llama)"),
            std::string::npos);
}

TEST(SafetensorsTest, AMalformedFileIsRefusedInOneLine) {
  const fs::path dir = fs::temp_directory_path() / ("slapo-st-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const auto file = [&](const std::string& name, const std::string& header, size_t data_bytes,
                        uint64_t claimed = 0) {
    const std::string path = (dir / name).string();
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = claimed ? claimed : header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
    out << header << std::string(data_bytes, '\0');
    return path;
  };
  const auto refused = [](const std::string& path) {
    return error_of([&] { SafetensorsFile::open(path); });
  };
  EXPECT_NE(
      refused(file("huge.safetensors", "{}", 0, 1ull << 40)).find("claims 1099511627776 bytes"),
      std::string::npos);
  EXPECT_NE(refused(file("json.safetensors", "{nope", 0)).find("header is not JSON"),
            std::string::npos);
  EXPECT_NE(refused(file("dtype.safetensors",
                         R"({"a": {"dtype": "F8", "shape": [1], "data_offsets": [0, 1]}})", 1))
                .find("tensor 'a': dtype 'F8' is not one slapo reads"),
            std::string::npos);
  EXPECT_NE(
      refused(file("size.safetensors",
                   R"({"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})", 24))
          .find("tensor 'a': 20 bytes of data for shape [2,3] of F32 (24 expected)"),
      std::string::npos);
  EXPECT_NE(refused(file("past.safetensors",
                         R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8))
                .find("outside the file's 8 bytes of data"),
            std::string::npos);
  EXPECT_NE(refused((dir / "missing.safetensors").string()).find("cannot open"), std::string::npos);
  EXPECT_NE(refused(dir.string()).find("not a regular file"), std::string::npos);
  // A zip that torch.save did not write.
  const std::string zip = file("fake.pt", "", 0);
  {
    std::ofstream out(zip, std::ios::binary);
    out << "PK\x03\x04 not really a zip";
  }
  EXPECT_NE(error_of([&] { read_weights(zip); }).find("fake.pt: not a readable torch.save file"),
            std::string::npos)
      << error_of([&] { read_weights(zip); });
  // A well-formed file reads back what was written, every dtype it holds.
  const std::string ok = (dir / "ok.safetensors").string();
  write_safetensors(ok, {{"f", torch::arange(6, torch::kFloat).view({2, 3}).t()},
                         {"i", torch::tensor({-1, 2}, torch::kLong)},
                         {"h", torch::ones({3}, torch::kBFloat16)}});
  const NamedTensors back = SafetensorsFile::open(ok).tensors();
  ASSERT_EQ(back.size(), 3u);
  EXPECT_TRUE(back[0].second.equal(torch::arange(6, torch::kFloat).view({2, 3}).t()));
  EXPECT_TRUE(back[1].second.equal(torch::tensor({-1, 2}, torch::kLong)));
  EXPECT_EQ(back[2].second.scalar_type(), torch::kBFloat16);
}

}  // namespace
}  // namespace slapo::models
