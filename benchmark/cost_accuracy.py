#!/usr/bin/python3
"""The cost model's accuracy on configurations drawn at random from a space: predicted against
measured step time and peak tensor memory, one trial at a time (never two at once).

    /usr/bin/python3 benchmark/cost_accuracy.py SPACE.toml [--n 12] [--seed 1] [--nproc 1] [--repeat 1] [--tune build/slapo-tune]

With --nproc 2, every trial is a job of two ranks (the space's layouts must fill them). With
--repeat N, every configuration is measured N times (each pass after the whole one before, so
they lie minutes apart): the step is their median, and the median over the configurations of
log(slowest / fastest) is printed as the measurement's own noise (with two, |log(one / other)|:
the error a perfect model would show against one trial).

Prints each configuration's prediction and measurement, then per space: the median absolute error
of the peak memory, the largest under- and over-prediction, the median absolute percentage error
of the step time, its level (measured over predicted, median) and the median error around that
level (what is left when the host's speed at the trials and at the profile differ), Spearman's
rank correlation of step time, and what profiling cost against the
mean trial: the whole space, its keys and the costliest key's profile. Exits 0 whatever the figures: targets are read from its output (docs/benchmarks.md)."""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile


def tune(args, *words):
    out = subprocess.run([args.tune, *words], capture_output=True, text=True)
    # A trial that ran out of memory or failed exits 1 and still prints its result.
    if out.returncode == 1 and words[0] == "trial" and out.stdout.strip().startswith("{"):
        return out.stdout.strip().splitlines()[-1]
    if out.returncode != 0:
        sys.exit(f"slapo-tune {' '.join(words[:2])}: exit {out.returncode}: {out.stderr.strip()}")
    return out.stdout.strip().splitlines()[-1]


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5
    vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (va * vb) if va and vb else float("nan")


def median(v):
    s = sorted(v)
    n = len(s)
    return (s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2) if n else float("nan")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("space")
    p.add_argument("--n", type=int, default=12)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--nproc", type=int, default=1)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--tune", default="build/slapo-tune")
    args = p.parse_args()
    if args.repeat < 1:
        p.error(f"--repeat {args.repeat}: measure each configuration at least once")
    # The profiles' database, removed when the script ends.
    work = tempfile.TemporaryDirectory()
    db = os.path.join(work.name, "profiles.db")
    # Profiling happens here, once for every key of the space; its cost is reported.
    plan = json.loads(tune(args, "plan", "--space", args.space, "--db", db, "--top", "1", "--json"))
    # What each key's profile cost (a derived key's is the work that derived it); the collectives'
    # profile of a layout is no key's, and counted in profile_s only.
    stored = json.loads(subprocess.run([args.tune, "db", "profiles", "--db", db, "--format", "json"],
                                       capture_output=True, text=True, check=True).stdout)
    key_seconds = [p["profile"]["profile_s"] for p in stored if "collectives" not in json.loads(p["key"])]
    configs = json.loads(subprocess.run([args.tune, "space", "sample", args.space, "--n", str(args.n), "--seed",
                                         str(args.seed), "--format", "json"], capture_output=True, text=True,
                                        check=True).stdout)
    rows = []
    texts = [json.dumps({k: v for k, v in c.items() if k != "index"}) for c in configs]
    passes = []  # per pass, each configuration's trial
    for _ in range(args.repeat):
        passes.append([json.loads(tune(args, "trial", "--space", args.space, "--config", text, "--nproc",
                                       str(args.nproc), "--json")) for text in texts])
    for i, text in enumerate(texts):
        pred = json.loads(tune(args, "predict", "--space", args.space, "--config", text, "--db", db, "--json"))
        trials = [p[i] for p in passes]
        meas = trials[0]
        m = meas.get("metrics", {})
        steps = [t["metrics"]["step_ms_median"] for t in trials if t["status"] == "ok"]
        # Measured with the workload's budget: an out-of-memory trial has its peak at the budget.
        row = {"config": text, "status": meas["status"], "pred_ms": pred["step_ms"], "pred_peak": pred["peak_bytes"],
               "fits": pred["fits"], "ms": median(steps) if steps else None, "peak": m.get("peak_bytes"),
               "wall_s": m.get("wall_s")}
        if len(steps) > 1:
            row["ms_each"] = steps
        rows.append(row)
        print(json.dumps(row), flush=True)
    ok = [r for r in rows if r["status"] == "ok"]
    peak_err = [abs(r["pred_peak"] / r["peak"] - 1) for r in ok]
    under = [1 - r["pred_peak"] / r["peak"] for r in ok]
    ms_err = [abs(r["pred_ms"] / r["ms"] - 1) for r in ok]
    # The level: measured over predicted, median. A profile is one draw of the machine's state and
    # the trials another, minutes later; on a host whose speed drifts that moves every step alike.
    # The error around the level is what is left: the model's shape, which ranks configurations.
    level = median([r["ms"] / r["pred_ms"] for r in ok])
    around = [abs(r["ms"] / (r["pred_ms"] * level) - 1) for r in ok]
    oom_right = sum(1 for r in rows if (r["status"] == "oom") == (not r["fits"]))
    walls = [r["wall_s"] for r in rows if r["wall_s"]]
    summary = {
        "space": args.space, "configs": len(rows), "ok": len(ok),
        "peak_median_abs_error": median(peak_err), "peak_worst_under_prediction": max(under) if under else None,
        "peak_worst_over_prediction": -min(under) if under else None,
        "step_median_abs_error": median(ms_err), "step_level": level,
        "step_median_abs_error_around_level": median(around), "step_spearman": spearman([r["pred_ms"] for r in ok], [r["ms"] for r in ok]),
        "oom_predicted_right": f"{oom_right}/{len(rows)}",
        "step_noise_between_repeats": median([math.log(max(r["ms_each"]) / min(r["ms_each"])) for r in ok
                                              if "ms_each" in r]) if args.repeat > 1 else None,
        "profile_s": plan["profile_s"], "mean_trial_s": sum(walls) / len(walls) if walls else None,
        "profile_keys": len(key_seconds), "profile_costliest_key_s": max(key_seconds) if key_seconds else None,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
