#!/usr/bin/env bash
# Configures and builds slapo into build/ (Release by default). Extra arguments go to CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} "$@" >/dev/null
else
  cmake -S . -B "$BUILD_DIR" "$@" >/dev/null
fi
# Two cores: a LibTorch translation unit needs ~1.5 GB of RAM and 10–40 s (LibTorch's header is
# precompiled once, cmake/torch_pch.cmake, and a target's units are compiled together in unity
# groups, cmake/unity_groups.cmake); -j2 keeps both busy.
cmake --build "$BUILD_DIR" -j "${JOBS:-2}"
