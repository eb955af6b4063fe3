#!/usr/bin/python3
"""The cost model against the recorded objective tables (benchmark/tables/NAME.toml with its passes
NAME.json, NAME.2.json, ...): profile the table's space on this machine, predict every
configuration, and compare with the recorded measurements (the median over the passes).

    /usr/bin/python3 benchmark/cost_tables.py benchmark/tables/gpt-mini-batch-ckpt-attn [--tune build/slapo-tune]

Reports the accuracy (peak memory median absolute error and worst under-prediction, step time
median absolute percentage error, Spearman's rank correlation), the out-of-memory verdicts, and,
measuring in the model's predicted order without calibration (the `model` strategy's first
proposals), how many measured trials reach the recorded optimum and a configuration within 3% of
it, and how many of the first ten ran out of memory. The tables were recorded earlier: drift
between then and now counts against the model."""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cost_accuracy import median, spearman  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("table", help="the table's path without extension")
    p.add_argument("--tune", default="build/slapo-tune")
    args = p.parse_args()
    space = args.table + ".toml"
    passes = [args.table + ".json"] + sorted(glob.glob(args.table + ".[0-9].json"))
    recorded = {}
    for path in passes:
        for t in json.load(open(path)):
            key = json.dumps(t["config"], sort_keys=True)
            r = recorded.setdefault(key, {"status": [], "objective": [], "ms": [], "peak": []})
            r["status"].append(t["status"])
            if t["status"] == "ok":
                r["objective"].append(t["objective"])
                r["ms"].append(t["metrics"]["step_ms_median"])
                r["peak"].append(t["metrics"]["peak_bytes"])
    # The profiles' database, removed when the script ends.
    work = tempfile.TemporaryDirectory()
    db = os.path.join(work.name, "profiles.db")
    out = subprocess.run([args.tune, "plan", "--space", space, "--db", db, "--top", str(len(recorded)), "--json", "--each-config"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"plan: {out.stderr.strip()}")
    plan = json.loads(out.stdout.strip().splitlines()[-1])
    # Predictions of every configuration, the ones over the budget too (predict each).
    budget_fits = {}
    for key in recorded:
        pr = subprocess.run([args.tune, "predict", "--space", space, "--db", db, "--config", key, "--json"],
                            capture_output=True, text=True, check=True)
        budget_fits[key] = json.loads(pr.stdout.strip().splitlines()[-1])
    ok = {k: r for k, r in recorded.items() if r["objective"] and all(s == "ok" for s in r["status"])}
    oom = {k for k, r in recorded.items() if all(s == "oom" for s in r["status"])}
    peak_err = [abs(budget_fits[k]["peak_bytes"] / median(r["peak"]) - 1) for k, r in ok.items()]
    under = [1 - budget_fits[k]["peak_bytes"] / median(r["peak"]) for k, r in ok.items()]
    ms_err = [abs(budget_fits[k]["step_ms"] / median(r["ms"]) - 1) for k, r in ok.items()]
    pred_ms = [budget_fits[k]["step_ms"] for k in ok]
    meas_ms = [median(r["ms"]) for r in ok.values()]
    oom_right = sum(1 for k in recorded if (k in oom) == (not budget_fits[k]["fits"]))
    best = max(median(r["objective"]) for r in ok.values())
    # The model's order: the plan (fitting configurations, best first).
    order = [json.dumps(c["config"], sort_keys=True) for c in plan["top"]]
    to_optimum = to_tie = None
    for i, key in enumerate(order, 1):
        value = median(recorded[key]["objective"]) if key in ok else None
        if value is not None and to_tie is None and value >= 0.97 * best:
            to_tie = i
        if value is not None and value == best and to_optimum is None:
            to_optimum = i
    first_ten_oom = sum(1 for key in order[:10] if key in oom)
    walls = [t["metrics"]["wall_s"] for t in json.load(open(passes[0])) if t["status"] == "ok"]
    print(json.dumps({
        "table": os.path.basename(args.table), "configs": len(recorded), "ok": len(ok), "oom": len(oom),
        "peak_median_abs_error": median(peak_err), "peak_worst_under_prediction": max(under),
        "step_median_abs_error": median(ms_err), "step_spearman": spearman(pred_ms, meas_ms),
        "oom_predicted_right": f"{oom_right}/{len(recorded)}",
        "trials_to_optimum": to_optimum, "trials_to_within_3pct": to_tie, "oom_in_first_10": first_ten_oom,
        "profile_s": plan["profile_s"], "mean_recorded_trial_s": sum(walls) / len(walls),
    }))


if __name__ == "__main__":
    main()
