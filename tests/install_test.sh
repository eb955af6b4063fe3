#!/usr/bin/env bash
# slapo installed as C++ libraries are used: `cmake --install` into a fresh prefix, a user project
# (examples/installed) configured out of tree with find_package(slapo), built and run; then CPack's
# Debian package, checked for what it must hold. Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -x "$work/prefix/bin/slapo-tune"
"$work/prefix/bin/slapo-tune" --version | grep -q '^slapo-tune '
test -f "$work/prefix/include/slapo/schedule/language/schedule.h"
test -f "$work/prefix/include/slapo/core/version.h"

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S "$source/examples/installed" -B "$work/user" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/user" -j 2 >/dev/null
"$work/user/user_model" | tail -1 | grep -qx 'verified'
(cd "$work" && "$work/user/user_weights" "$work/w.safetensors") | grep -qx 'same logits'
# The user's own model tuned by the user's program, its trials measured by its own workers.
"$work/user/user_tuning" single-device --space "$source/examples/own_model/shift-mixer.toml" \
  --db "$work/own.db" --strategy random --trials 2 --json >/dev/null
"$work/user/user_tuning" db trials --db "$work/own.db" --format json | grep -c '"status": "ok"' \
  | grep -qx 2

# A package a Debian machine installs: the binary, the libraries, the headers, the config.
(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" >/dev/null)
deb=$(ls "$work"/slapo-dev_*.deb)
contents=$(dpkg-deb -c "$deb")
for path in ./usr/bin/slapo-tune ./usr/lib/libslapo_schedule.a ./usr/lib/cmake/slapo/slapoConfig.cmake \
            ./usr/include/slapo/models/zoo.h; do
  grep -q " $path\$" <<<"$contents" || { echo "missing from the package: $path"; exit 1; }
done
dpkg-deb -f "$deb" Depends | grep -q 'libtorch-dev'
echo "installed, built out of tree, ran; packaged as $(basename "$deb")"
