#!/usr/bin/env bash
# Which units take LibTorch's precompiled header (cmake/torch_pch.cmake), read off the build's
# compile commands: one that parses LibTorch's front end through the project's headers takes it;
# none that never include LibTorch, none that include only tensors, none compiled with options of
# its own. With unity groups on (cmake/unity_groups.cmake), a unit in a group takes the header as
# its group's command does: the groups must not hand it to a unit it was not meant for, nor take
# it from one; units with options of their own stay alone.
# Usage: torch_pch_test.sh BUILD_DIR SOURCE_DIR UNITY(ON|OFF)
set -euo pipefail
/usr/bin/python3 - "$1/compile_commands.json" "$2" "${3:-OFF}" <<'PY'
import json, os, re, sys

root = os.path.realpath(sys.argv[2]) + "/"
unity = sys.argv[3].upper() in ("ON", "TRUE", "1", "YES")
units = {}   # a unit by its path in the source tree -> whether its command takes the header
grouped = {} # a unit compiled inside a unity group -> the group's file
for e in json.load(open(sys.argv[1])):
    takes = "cmake_pch" in e["command"]
    if "/Unity/unity_" in e["file"]:  # CMake's unity source: one #include per unit it holds
        members = re.findall(r'#include "([^"]+)"', open(e["file"]).read())
        for m in members:
            path = os.path.realpath(m).removeprefix(root)
            units[path] = takes
            grouped[path] = e["file"]
    else:
        units[os.path.realpath(e["file"]).removeprefix(root)] = takes
failures = []
def expect(path, takes, why, in_group):
    if path not in units:
        sys.exit(f"torch_pch_test: {path}: not in the compile commands")
    if units[path] != takes:
        failures.append(f"{path} {'should' if takes else 'should not'} take the header: {why}")
    if (path in grouped) != (unity and in_group):
        failures.append(f"{path} {'should' if unity and in_group else 'should not'} be compiled "
                        "in a unity group")
expect("tests/schedule/static_graph_test.cc", True, "it parses LibTorch's front end", True)
expect("schedule/language/slot_module.cc", True, "<torch/nn/...> through its own header", True)
expect("runners/tracking_allocator.cc", False, "it includes only tensors' headers (c10/)", True)
expect("schedule/kernels/fused_adamw.cc", False, "compiled with options of its own", False)
expect("cli/main.cc", False, "it includes no LibTorch", False)  # slapo-tune's only unit
for folder in ("core/", "space/", "db/", "tuner/", "cost/"):
    taken = [f for f, t in units.items() if t and f.startswith(folder)]
    if taken:
        failures.append(f"{taken[0]} takes the header: {folder} never includes LibTorch")
if not any(units.values()):
    failures.append("no unit takes the header")
if unity and not grouped:
    failures.append("no unity group although unity groups are on")
if not unity and grouped:
    failures.append(f"{next(iter(grouped))} is in a unity group although they are off")
if failures:
    sys.exit("torch_pch_test: " + "; ".join(failures))
groups = len(set(grouped.values()))
print(f"{sum(units.values())} of {len(units)} units take the header; "
      f"{len(grouped)} units compiled in {groups} unity groups")
PY
