// slapo-tune version (or --version): the build and the machine facts that decide whether numbers
// mean anything.

#include <ostream>

#include "cli/commands.h"
#include "core/version.h"
#include "runners/system_info.h"

namespace slapo::cli {

namespace {

constexpr const char* kVersionUsage =
    "usage: slapo-tune version\n"
    "\n"
    "Prints slapo's version, LibTorch's, the BLAS in use, and the machine.\n";

void declare(VersionOptions*, OptionSet&) {}

}  // namespace

VersionOptions parse_version(const Args& args) {
  return parse_options<VersionOptions>(args, declare);
}

int run_version(const VersionOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << help_text<VersionOptions>(kVersionUsage, declare);
    return kExitOk;
  }
  const runners::SystemInfo info = runners::collect_system_info();
  out << "slapo-tune " << kVersion << " (git " << kGitRevision << ", measuring code "
      << kMeasuringRevision << ")\n"
      << "libtorch " << info.torch_version << ", " << info.torch_threads << " threads"
      << (info.cuda_available ? ", CUDA" : ", CPU only") << "\n"
      << "blas " << info.blas_name << (info.blas_path.empty() ? "" : " (" + info.blas_path + ")")
      << "\n"
      << "cpu " << info.cpu_model << ", " << info.logical_cores << " logical cores, "
      << info.memory_bytes / (1024 * 1024) << " MiB\n"
      << "OMP_WAIT_POLICY " << info.omp_wait_policy << "\n"
      << "heap " << info.heap
      << (info.heap == "retained"
              ? " (freed memory kept for the next step; SLAPO_HEAP=system: glibc's)"
              : " (glibc's, or as the environment set it)")
      << "\n";
  if (!runners::blas_is_optimized(info)) {
    err << "warning: LibTorch is not using an optimized BLAS; timings will be ~25x slower. "
           "Run scripts/setup.sh.\n";
  }
  return kExitOk;
}

}  // namespace slapo::cli
