#include "runners/system_info.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <ATen/Parallel.h>
#include <torch/version.h>

#include "core/config.h"
#include "core/error.h"
#include "core/version.h"
#include "runners/heap_policy.h"

namespace slapo::runners {

namespace {

std::string blas_name_of(const std::string& path) {
  if (path.find("openblas-openmp") != std::string::npos) return "OpenBLAS (openmp)";
  if (path.find("openblas-pthread") != std::string::npos) return "OpenBLAS (pthread)";
  if (path.find("openblas-serial") != std::string::npos) return "OpenBLAS (serial)";
  if (path.find("openblas") != std::string::npos) return "OpenBLAS";
  if (path.find("mkl") != std::string::npos) return "MKL";
  if (path.find("blis") != std::string::npos) return "BLIS";
  if (path.find("atlas") != std::string::npos) return "ATLAS";
  if (path.find("libblas") != std::string::npos)
    return "reference BLAS (slow: run scripts/setup.sh)";
  return "unknown";
}

}  // namespace

SystemInfo collect_system_info() {
  SystemInfo info;
  {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
      if (line.rfind("model name", 0) == 0) {
        info.cpu_model = line.substr(line.find(':') + 2);
        break;
      }
    }
  }
  info.logical_cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  info.memory_bytes = static_cast<long long>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  info.torch_version = TORCH_VERSION;
  // Asking LibTorch for its thread count also makes sure libtorch_cpu (and its BLAS) is loaded.
  at::init_num_threads();
  info.torch_threads = at::get_num_threads();
  {
    // Every BLAS mapped into the process. LibTorch links libblas.so.3 and libopenblas.so.0; if
    // the alternatives point them at different builds, two thread pools fight over the cores.
    std::set<std::string> names;
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
      const auto slash = line.find('/');
      if (slash == std::string::npos) continue;
      const std::string path = line.substr(slash);
      const std::string base = path.substr(path.rfind('/') + 1);
      if (base.rfind("libblas.so", 0) == 0 || base.rfind("libopenblas", 0) == 0 ||
          base.rfind("libmkl_rt", 0) == 0 || base.rfind("libblis", 0) == 0) {
        char resolved[PATH_MAX];
        const std::string real = realpath(path.c_str(), resolved) ? resolved : path;
        if (names.insert(blas_name_of(real)).second) {
          info.blas_path += (info.blas_path.empty() ? "" : " + ") + real;
        }
      }
    }
    for (const std::string& name : names)
      info.blas_name += (info.blas_name.empty() ? "" : " + ") + name;
    if (names.size() > 1) info.blas_name = "mixed: " + info.blas_name + " (run scripts/setup.sh)";
    if (info.blas_name.empty()) info.blas_name = "none mapped";
  }
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  info.omp_wait_policy = policy ? policy : "default";
  info.heap = heap_policy();
  return info;
}

std::string fingerprint_json(const SystemInfo& info) {
  Config c;  // canonical JSON: sorted keys
  c.set("cpu", info.cpu_model);
  c.set("cores", int64_t{info.logical_cores});
  c.set("memory_bytes", int64_t{info.memory_bytes});
  c.set("torch", info.torch_version);
  c.set("blas", info.blas_name);
  c.set("omp_wait_policy", info.omp_wait_policy);
  c.set("heap", info.heap);
  c.set("cuda", info.cuda_available);
  c.set("slapo", std::string(kVersion));
  // The code that measures, not the whole revision: a commit of docs, tests or the tuner continues
  // the same tasks (CMakeLists.txt: kMeasuringRevision).
  c.set("measuring_code", std::string(kMeasuringRevision));
  return c.canonical_json();
}

bool is_code_field(const std::string& name) {
  return name == "measuring_code" || name == "git" || name == "slapo";
}

std::string machine_difference(const std::string& fingerprint_a, const std::string& fingerprint_b) {
  if (fingerprint_a == fingerprint_b) return "";
  Config a, b;
  try {
    a = Config::from_json(fingerprint_a, "a fingerprint");
    b = Config::from_json(fingerprint_b, "a fingerprint");
  } catch (const Error&) {
    return "unreadable";
  }
  std::set<std::string> names;
  for (const Config* c : {&a, &b})
    for (const auto& [name, value] : c->entries()) names.insert(name);
  std::string out;
  for (const std::string& name : names) {
    if (is_code_field(name)) continue;
    const Value* x = a.find(name);
    const Value* y = b.find(name);
    const std::string from = x ? to_string(*x) : "(none)";
    const std::string to = y ? to_string(*y) : "(none)";
    if (from == to) continue;
    out += (out.empty() ? "" : ", ") + name + " " + from + " -> " + to;
  }
  return out;
}

bool blas_is_optimized(const SystemInfo& info) {
  return info.blas_name.rfind("OpenBLAS", 0) == 0 || info.blas_name == "MKL" ||
         info.blas_name == "BLIS";
}

}  // namespace slapo::runners
