#!/usr/bin/env bash
# Quick start, command 1: install what is missing, build (Release), run the main job — a real
# tuning run of gpt-mini on the CPU under a 512 MiB tensor memory budget (about a minute and a half:
# the cost model's profiles, the predicted best measured, the best two measured twice more and
# ranked by their median), then the best configuration measured again from the record, and the run
# as an HTML report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/slapo-tune --version
db=build/quickstart.db
rm -f "$db" "$db-wal" "$db-shm"   # a fresh task each time (the same command on a kept db resumes)
./build/slapo-tune single-device --space examples/spaces/gpt-mini-tune.toml --db "$db" \
  --trials 12 --confirm 2 --time-limit 90 --seed 1
./build/slapo-tune replay --db "$db" --print-schedule
./build/slapo-tune report --db "$db" --out build/quickstart-report.html
