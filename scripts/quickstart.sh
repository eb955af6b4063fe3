#!/usr/bin/env bash
# Quick start, command 1: install what is missing, build (Release), run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/slapo-tune --version
# The main job until the tuner lands: analyse and count the example training space.
./build/slapo-tune space show examples/spaces/gpt-training.toml
./build/slapo-tune space sample examples/spaces/gpt-training.toml --n 5 --seed 1
./build/slapo-tune space count examples/spaces/pipeline-cuts.toml
