#include "schedule/graph/nnc_probe.h"

#include <torch/csrc/jit/tensorexpr/codegen.h>
#include <torch/csrc/jit/tensorexpr/stmt.h>

namespace slapo::schedule {

namespace {

std::string probe() {
  try {
    // An empty kernel: LibTorch looks the generator up by name and fails when it is not there.
    namespace te = torch::jit::tensorexpr;
    te::CreateCodeGen("llvm_codegen", te::alloc<te::Block>(std::vector<te::StmtPtr>{}), {},
                      at::kCPU);
    return "";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return "LibTorch's TensorExpr fuser has no CPU code generator here (llvm_codegen: " +
           what.substr(0, what.find('\n')) + "; this LibTorch was built without LLVM)";
  }
}

}  // namespace

const std::string& nnc_cpu_unavailable_reason() {
  static const std::string reason = probe();
  return reason;
}

}  // namespace slapo::schedule
