#!/usr/bin/env bash
# The slow tests (long training, large sizes), left out of the default run, then the benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pytest -q -m slow
.venv/bin/python benchmarks/bench_engines.py --issue2 --table
.venv/bin/python benchmarks/bench_training.py
.venv/bin/python benchmarks/bench_flow_step.py
.venv/bin/python benchmarks/bench_after_choice.py
.venv/bin/python benchmarks/bench_sweep_points.py
.venv/bin/python benchmarks/bench_startup.py
# The large-world benchmark reads the classic .POMDP files from the folder given as the first argument.
if [ $# -ge 1 ]; then .venv/bin/python benchmarks/bench_large.py "$1"; else echo "bench_large.py: give the folder of classic .POMDP files as this script's argument"; fi
