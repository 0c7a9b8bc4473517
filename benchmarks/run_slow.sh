#!/usr/bin/env bash
# The slow tests (long training, large sizes), left out of the default run, then the benchmarks (each script's
# --help lists its modes). The large-world and solving benchmarks read the classic .POMDP files from the folder
# given as the first argument.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pytest -q -m slow
.venv/bin/python benchmarks/bench_evaluate.py engines --section dense-power table
.venv/bin/python benchmarks/bench_evaluate.py after-choice
.venv/bin/python benchmarks/bench_evaluate.py overhead
.venv/bin/python benchmarks/bench_evaluate.py backward
.venv/bin/python benchmarks/bench_training.py engines
.venv/bin/python benchmarks/bench_training.py step
.venv/bin/python benchmarks/bench_training.py thinned
.venv/bin/python benchmarks/bench_training.py sweep-points
.venv/bin/python benchmarks/bench_files.py pomdp-file
.venv/bin/python benchmarks/bench_startup.py
if [ $# -ge 1 ]; then
    .venv/bin/python benchmarks/bench_large.py "$1"
else
    echo "bench_large.py: give the folder of classic .POMDP files as this script's argument"
fi
