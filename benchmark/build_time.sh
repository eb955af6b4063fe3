#!/usr/bin/env bash
# What LibTorch's precompiled header (cmake/torch_pch.cmake) saves: the whole project built from
# scratch twice, one build after the other (never two at once: they share the cores), without the
# header (-DSLAPO_PRECOMPILE_TORCH=OFF) and with it, each in a fresh directory, Release, with the
# same number of jobs. Prints each build's wall and CPU time, then, from the builds' .ninja_log,
# the compile time of the units that take the header against the others — the others are the
# control: they compile the same either way, so their ratio is the machine's drift between the
# two builds.
#
#   bash benchmark/build_time.sh        # JOBS=2; about 50 minutes on this 2-core machine (1573 + 1405 s)
#
# Needs what scripts/setup.sh installs; leaves the build directories in $OUT (default a new
# directory in /tmp) for a look at any unit's time.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-2}
out=${OUT:-$(mktemp -d /tmp/slapo-build-time.XXXXXX)}
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
for mode in OFF ON; do
  dir="$out/pch-$mode"
  rm -rf "$dir"
  cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DSLAPO_PRECOMPILE_TORCH=$mode >/dev/null
  /usr/bin/time -f "precompiled header $mode: wall %e s, user %U s, sys %S s" \
    cmake --build "$dir" -j "$jobs" >"$dir.log" 2>&1 || { tail -30 "$dir.log"; exit 1; }
  tail -1 "$dir.log"
done
# Each unit's compile time in both builds, split by whether the ON build gave it the header.
/usr/bin/python3 - "$out/pch-OFF" "$out/pch-ON" <<'EOF'
import json, sys

def unit_seconds(build):  # output file -> seconds of its last compile (.ninja_log v5)
    times = {}
    for line in open(f"{build}/.ninja_log"):
        if line.startswith("#"):
            continue
        start, end, _, output, _ = line.rstrip("\n").split("\t")
        times[output] = (int(end) - int(start)) / 1000
    return times

off, on = unit_seconds(sys.argv[1]), unit_seconds(sys.argv[2])
groups = {True: [0, 0.0, 0.0], False: [0, 0.0, 0.0]}
for entry in json.load(open(f"{sys.argv[2]}/compile_commands.json")):
    output = entry["command"].split(" -o ")[1].split()[0]
    if output not in off or output not in on:
        continue  # the header's own unit: only in the ON build
    g = groups["cmake_pch" in entry["command"]]
    g[0] += 1
    g[1] += off[output]
    g[2] += on[output]
header = sum(s for o, s in on.items() if o.endswith(".gch") or "slapo_torch_pch" in o)
for uses, (n, a, b) in sorted(groups.items(), reverse=True):
    label = "units with the header" if uses else "units without it (control)"
    print(f"{label}: {n}, compile {a:.0f} s -> {b:.0f} s, ratio {b / a:.3f}")
print(f"the header itself (and its empty unit): {header:.0f} s")
EOF
