#!/usr/bin/python3
"""How far the block probe's derived keys lie from their base (docs/cost-model.md, "Keys that
differ only inside the blocks"): profiles SPACE afresh N times (`slapo-tune plan`, each in a
database of its own) and prints, per draw and then as the median over the draws, each derived
key's deep step without checkpointing less its base's at every batch the base measured — the
difference the probe composed, to set beside what trials of the two keys measure:

    /usr/bin/python3 benchmark/derived_bias.py SPACE [--n 9] [--tune ./build/slapo-tune]

Run it on an idle machine: every draw is timed.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def profiles(tune, space, db):
    plan = subprocess.run([tune, "plan", "--space", space, "--db", db, "--top", "1"],
                          capture_output=True, text=True)
    if plan.returncode != 0:
        sys.exit(f"slapo-tune plan --space {space}: exit {plan.returncode}: {plan.stderr.strip()}")
    listed = subprocess.run([tune, "db", "profiles", "--db", db, "--format", "json"],
                            capture_output=True, text=True, check=True)
    out = []
    for p in json.loads(listed.stdout.strip().splitlines()[-1]):
        profile = p["profile"] if isinstance(p["profile"], dict) else json.loads(p["profile"])
        out.append((json.loads(p["key"])["knobs"], profile))
    return out


def deep_plain(profile):
    """The deep variant's steps without checkpointing, by batch."""
    deep = max(q["layers"] for q in profile["points"])
    return {q["batch"]: q["step_ms"] for q in profile["points"]
            if q["layers"] == deep and q.get("ckpt_blocks", 0) == 0
            and q.get("micro_batches", 1) == 1}


def differences(draw):
    """Each derived key's deep steps less its base's (the measured key of the same knobs outside
    the blocks), by batch."""
    measured = [(k, p) for k, p in draw if not any(q.get("derived") for q in p["points"])]
    out = {}
    for knobs, profile in draw:
        if not any(q.get("derived") for q in profile["points"]):
            continue
        for base_knobs, base in measured:
            shared = [n for n in base_knobs if n in knobs and base_knobs[n] == knobs[n]]
            if len(shared) < len(base_knobs) - 1:
                continue  # not one knob apart: not its base
            mine, theirs = deep_plain(profile), deep_plain(base)
            label = json.dumps(knobs, sort_keys=True) + " - " + json.dumps(base_knobs, sort_keys=True)
            out[label] = {b: mine[b] - theirs[b] for b in sorted(theirs) if b in mine}
            break
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("space")
    parser.add_argument("--n", type=int, default=9)
    parser.add_argument("--tune", default="./build/slapo-tune")
    args = parser.parse_args()
    every = {}
    with tempfile.TemporaryDirectory() as work:
        for i in range(args.n):
            draw = differences(profiles(args.tune, args.space, os.path.join(work, f"{i}.db")))
            for label, by_batch in sorted(draw.items()):
                print(f"draw {i + 1}: {label}: " +
                      " ".join(f"{b}: {d:+.1f} ms" for b, d in by_batch.items()))
                for b, d in by_batch.items():
                    every.setdefault(label, {}).setdefault(b, []).append(d)
    for label, by_batch in sorted(every.items()):
        print(f"median of {args.n}: {label}: " +
              " ".join(f"{b}: {statistics.median(ds):+.1f} ms" for b, ds in by_batch.items()))


if __name__ == "__main__":
    main()
