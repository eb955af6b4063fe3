#!/usr/bin/python3
"""Two builds' peak-memory predictions side by side, against one trial of each configuration: the
cost model's memory before and after a change, on configurations drawn at random from a space.
    /usr/bin/python3 benchmark/memory_two_builds.py SPACE.toml --before OLD/slapo-tune
        [--after build/slapo-tune] [--n 8] [--seed 1] [--nproc 1] [--checkpointed]
Each build profiles the space in a fresh database of its own (`plan`), then predicts every drawn
configuration; each configuration runs once, with the --after build (a trial measures the same
bytes whichever build runs it: the tracking allocator's peak is exact, so a loaded machine does
not change it). With --checkpointed, only configurations that checkpoint blocks are drawn.
Prints each configuration's measured peak and both errors, then per build the median absolute
error, the largest under- and over-prediction. Exits 0 whatever the figures (docs/benchmarks.md)."""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile


def run(*words):
    return subprocess.run(list(words), capture_output=True, text=True)


def fail(message):
    print(f"memory_two_builds.py: {message}", file=sys.stderr)
    sys.exit(2)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("space")
    p.add_argument("--before", required=True)
    p.add_argument("--after", default="build/slapo-tune")
    p.add_argument("--n", type=int, default=8)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--nproc", default="1")
    p.add_argument("--checkpointed", action="store_true")
    args = p.parse_args()
    builds = {"before": args.before, "after": args.after}
    for flag, tune in builds.items():
        if not (os.path.isfile(tune) and os.access(tune, os.X_OK)):
            fail(f"--{flag} {tune}: no such executable (a build's slapo-tune)")
    if not os.path.isfile(args.space):
        fail(f"{args.space}: no such space file")
    with tempfile.TemporaryDirectory() as work:
        dbs = {tag: os.path.join(work, tag + ".db") for tag in builds}
        for tag, tune in builds.items():
            out = run(tune, "plan", "--space", args.space, "--db", dbs[tag], "--top", "1",
                      "--nproc", args.nproc)
            if out.returncode != 0:
                fail(f"--{tag} {tune}: plan of {args.space}: exit {out.returncode}: "
                     f"{out.stderr.strip().splitlines()[-1] if out.stderr.strip() else ''}")
        listed = run(args.after, "space", "list", args.space, "--limit", "0", "--format", "json")
        if listed.returncode != 0:
            fail(f"{args.space}: slapo-tune space list: {listed.stderr.strip()}")
        configs = json.loads(listed.stdout)
        if args.checkpointed:
            configs = [c for c in configs if c.get("ckpt_layers", 0) or c.get("ckpt_ratio", 0)]
        random.seed(args.seed)
        drawn = random.sample(configs, min(args.n, len(configs)))
        errors = {tag: [] for tag in builds}
        for config in drawn:
            predicted = {}
            for tag, tune in builds.items():
                out = run(tune, "predict", "--space", args.space, "--db", dbs[tag], "--config",
                          json.dumps(config), "--json", "--nproc", args.nproc)
                predicted[tag] = json.loads(out.stdout)["peak_bytes"] if out.returncode == 0 else None
            trial = run(args.after, "trial", "--space", args.space, "--config", json.dumps(config),
                        "--json", "--nproc", args.nproc)
            lines = trial.stdout.strip().splitlines()
            result = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
            if result.get("status") != "ok":
                print(f"{json.dumps(config)}: {result.get('status', 'failed')}, not compared")
                continue
            measured = result["metrics"]["peak_bytes"]
            row = []
            for tag in builds:
                if predicted[tag] is None:
                    row.append(f"{tag} not predicted")
                    continue
                error = 100 * (predicted[tag] - measured) / measured
                errors[tag].append(error)
                row.append(f"{tag} {error:+.2f}%")
            print(f"{json.dumps(config)}: {measured:.0f} bytes; {', '.join(row)}", flush=True)
        name = os.path.basename(args.space)
        for tag, e in errors.items():
            if e:
                print(f"{name} {tag}: {len(e)} configurations, peak median abs. error "
                      f"{statistics.median(abs(x) for x in e):.2f}%, worst under {min(e):+.2f}%, "
                      f"worst over {max(e):+.2f}%")


if __name__ == "__main__":
    main()
