#!/usr/bin/env bash
# Installs every Debian package slapo needs, idempotently, and selects the OpenMP OpenBLAS as the
# system BLAS/LAPACK (LibTorch otherwise loads the reference BLAS and is ~25x slower).
# Quick when everything is present: it asks dpkg first and touches apt only for what is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libtorch-dev libgloo-dev            # LibTorch 1.13 (CPU) and Gloo headers for c10d
  libopenblas0-openmp                 # optimized BLAS sharing libgomp's thread pool
  libeigen3-dev                       # model-based search (tuner)
  libsqlite3-dev sqlite3              # tuning database
  libboost-program-options-dev        # CLI
  libgtest-dev libgmock-dev           # tests
  libbenchmark-dev                    # micro-benchmarks
  libtomlplusplus-dev                 # space files
  nlohmann-json3-dev                  # JSON configs and results
  clang libclang-rt-14-dev            # libFuzzer target (optional in CI, installed here)
  clang-format                        # scripts/format.sh (checked by scripts/test.sh)
  python3-torch                       # PyTorch eager reference for benchmarks, the example training script
  chromium                            # the HTML report, rendered headless in a test
  procps                              # ps, for the test that no trial outlives an interrupt
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# libopenblas0-pthread (if also installed, e.g. pulled in by libopenblas-dev) wins the alternatives
# by priority; pin the OpenMP one everywhere LibTorch looks: libtorch_cpu links libblas.so.3,
# liblapack.so.3 and libopenblas.so.0, and a mix loads two OpenBLAS thread pools.
arch_triplet=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
for lib in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
  target="/usr/lib/${arch_triplet}/openblas-openmp/${lib}"
  name="${lib}-${arch_triplet}"
  if [ -e "$target" ]; then
    current=$(update-alternatives --query "$name" 2>/dev/null | awk '/^Value:/{print $2}')
    if [ "$current" != "$target" ]; then
      $SUDO update-alternatives --set "$name" "$target" >/dev/null
    fi
  fi
done
echo "setup: all packages present; BLAS: $(readlink -f /usr/lib/${arch_triplet}/libblas.so.3)," \
  "$(readlink -f /usr/lib/${arch_triplet}/libopenblas.so.0)"
