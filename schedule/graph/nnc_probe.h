#pragma once
// Whether LibTorch's TensorExpr fuser (NNC) can generate CPU code in this process: it needs the
// LLVM code generator, which a LibTorch built without LLVM (Debian's) does not register; its
// fallback interpreter is ~1000x slower than eager, so without LLVM NNC is no compiler for us.

#include <string>

namespace slapo::schedule {

// Empty when NNC has a CPU code generator; otherwise why not (asked of LibTorch once, at run time).
const std::string& nnc_cpu_unavailable_reason();

}  // namespace slapo::schedule
