#!/usr/bin/env bash
# Which units take LibTorch's precompiled header (cmake/torch_pch.cmake), read off the build's
# compile commands: one that parses LibTorch's front end through the project's headers takes it;
# none that never include LibTorch, none that include only tensors, none compiled with options of
# its own. Usage: torch_pch_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
/usr/bin/python3 - "$1/compile_commands.json" "$2" <<'PY'
import json, os, sys

root = os.path.realpath(sys.argv[2]) + "/"
units = {os.path.realpath(e["file"]).removeprefix(root): "cmake_pch" in e["command"]
         for e in json.load(open(sys.argv[1]))}
failures = []
def expect(path, takes, why):  # a unit by its path in the source tree
    if path not in units:
        sys.exit(f"torch_pch_test: {path}: not in the compile commands")
    if units[path] != takes:
        failures.append(f"{path} {'should' if takes else 'should not'} take the header: {why}")
expect("tests/schedule/static_graph_test.cc", True, "it parses LibTorch's front end")
expect("schedule/language/slot_module.cc", True, "<torch/nn/...> through its own header")
expect("runners/tracking_allocator.cc", False, "it includes only tensors' headers (c10/)")
expect("schedule/kernels/fused_adamw.cc", False, "compiled with options of its own")
expect("cli/main.cc", False, "it includes no LibTorch")
for folder in ("core/", "space/", "db/", "tuner/", "cost/"):
    taken = [f for f, t in units.items() if t and f.startswith(folder)]
    if taken:
        failures.append(f"{taken[0]} takes the header: {folder} never includes LibTorch")
if not any(units.values()):
    failures.append("no unit takes the header")
if failures:
    sys.exit("torch_pch_test: " + "; ".join(failures))
print(f"{sum(units.values())} of {len(units)} units take the header")
PY
