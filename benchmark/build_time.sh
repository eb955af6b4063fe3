#!/usr/bin/env bash
# What the build's two savings are worth (cmake/torch_pch.cmake, cmake/unity_groups.cmake): the
# whole project built from scratch twice, one build after the other (never two at once: they share
# the cores), each in a fresh directory, Release, with the same number of jobs —
#   unity (the default): with the precompiled header, units compiled alone, then in unity groups;
#   pch:                 without the precompiled header, then with it (units compiled alone).
# Prints each build's wall and CPU time, then, from the builds' .ninja_log and compile commands,
# the compile time of the units the change touches against the others: the others are the
# control — they compile the same either way, so their ratio is the machine's drift between the
# two builds. A unity group's time is set against its units' times in the first build.
#
#   bash benchmark/build_time.sh [unity|pch]   # JOBS=2; on this 2-core machine unity took 38 min
#                                              # (1500 + 757 s), pch about 50 (1573 + 1405 s)
#
# Needs what scripts/setup.sh installs; leaves the build directories in $OUT (default a new
# directory in /tmp) for a look at any unit's time.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-unity}
case "$what" in
  unity) before=(-DSLAPO_PRECOMPILE_TORCH=ON -DSLAPO_UNITY_BUILD=OFF)
         after=(-DSLAPO_PRECOMPILE_TORCH=ON -DSLAPO_UNITY_BUILD=ON) ;;
  pch)   before=(-DSLAPO_PRECOMPILE_TORCH=OFF)
         after=(-DSLAPO_PRECOMPILE_TORCH=ON -DSLAPO_UNITY_BUILD=OFF) ;;
  *) echo "build_time.sh: '$what': expected unity or pch" >&2; exit 2 ;;
esac
jobs=${JOBS:-2}
out=${OUT:-$(mktemp -d /tmp/slapo-build-time.XXXXXX)}
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
for side in before after; do
  dir="$out/$what-$side"
  rm -rf "$dir"
  declare -n options=$side
  cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${options[@]}" >/dev/null
  /usr/bin/time -f "$what, $side: wall %e s, user %U s, sys %S s" \
    cmake --build "$dir" -j "$jobs" >"$dir.log" 2>&1 || { tail -30 "$dir.log"; exit 1; }
  tail -1 "$dir.log"
done
/usr/bin/python3 - "$what" "$out/$what-before" "$out/$what-after" <<'PY'
import json, os, re, sys

what, before, after = sys.argv[1:]

def unit_seconds(build):  # output file -> seconds of its compile (.ninja_log v5)
    times = {}
    for line in open(f"{build}/.ninja_log"):
        if not line.startswith("#"):
            start, end, _, output, _ = line.rstrip("\n").split("\t")
            times[output] = (int(end) - int(start)) / 1000
    return times

def commands(build):  # [(output, sources it compiles, takes the header, is a unity group)]
    found = []
    for e in json.load(open(f"{build}/compile_commands.json")):
        output = e["command"].split(" -o ")[1].split()[0]
        group = "/Unity/unity_" in e["file"]
        sources = re.findall(r'#include "([^"]+)"', open(e["file"]).read()) if group else [e["file"]]
        found.append((output, [os.path.realpath(s) for s in sources], "cmake_pch" in e["command"],
                      group))
    return found

first, second = unit_seconds(before), unit_seconds(after)
alone = {sources[0]: output for output, sources, _, _ in commands(before)}
label = {"unity": ("units compiled in unity groups", "units compiled alone (control)"),
         "pch": ("units with the header", "units without it (control)")}[what]
sums = {True: [0, 0, 0.0, 0.0], False: [0, 0, 0.0, 0.0]}  # units, commands, before s, after s
for output, sources, pch, group in commands(after):
    if output not in second or any(alone.get(s) not in first for s in sources):
        continue  # the header's own unit: only in a build with it
    s = sums[group if what == "unity" else pch]
    s[0] += len(sources)
    s[1] += 1
    s[2] += sum(first[alone[u]] for u in sources)
    s[3] += second[output]
for touched in (True, False):
    n, c, a, b = sums[touched]
    print(f"{label[0 if touched else 1]}: {n} in {c} commands, compile {a:.0f} s -> {b:.0f} s, "
          f"ratio {b / a:.3f}")
header = sum(s for o, s in second.items() if o.endswith(".gch") or "slapo_torch_pch" in o)
print(f"the header itself (and its empty unit): {header:.0f} s")
PY
