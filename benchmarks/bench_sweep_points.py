"""Benchmark: a panel of seeds in one sweep, trainers forked from a warm worker against new interpreters.

The issue's case: 10 seeds of the published random start (mu = 0.1, r = 1e-3, paper convention) to
t = 1e6, on RAM M = 8 and on Memento m = 3, in one sweep with one worker.  Run twice in this process:

- ``one by one``: each point trained by ``python -m fsc.cli train`` in a new interpreter (the sweep's
  ``command`` option), which imports torch, numpy, scipy and numba and loads the compiled kernels again;
- ``forked``: the default local pool, whose worker imports and warms the trainer once and forks a
  child per point.

Prints the wall time of each, their ratio, the summed training time the runs report (``seconds`` in
their results), and whether the two sweeps' trajectories agree to the last bit (all columns but the
wall-clock ``seconds``).

Usage: ``.venv/bin/python benchmarks/bench_sweep_points.py [--seeds 10] [--until-t 1e6]``
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fsc.sweep import Sweep, run_sweep  # noqa: E402


def trajectories(out: Path, sweep: Sweep) -> list[list[dict[str, str]]]:
    runs = []
    for point in sweep.points:
        with open(out / "runs" / point.name / "trajectory.csv", newline="") as f:
            runs.append([{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(f)])
    return runs


def trained_seconds(out: Path, sweep: Sweep) -> float:
    import json

    return sum(json.loads((out / "runs" / point.name / "result.json").read_text())["seconds"] for point in sweep.points)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--until-t", type=float, default=1e6)
    args = parser.parse_args()
    print(f"{'memory':<10} {'seeds':>5} {'until_t':>8} {'one by one s':>13} {'forked s':>9} {'speed-up':>9} {'training s':>11} {'identical':>9}")
    for memory in ("ram:8", "memento:3"):
        sweep = Sweep.from_dict(
            {
                "fixed": {"mu": 0.1, "reset": 1e-3, "memory": memory, "init": "random", "until_t": args.until_t, "convention": "paper", "threads": 1},
                "grid": {"seed": list(range(args.seeds))},
            }
        )
        with tempfile.TemporaryDirectory() as root:
            start = time.perf_counter()
            report = run_sweep(sweep, Path(root) / "one", workers=1, quiet=True, command=[sys.executable, "-m", "fsc.cli", "train"])
            one_by_one = time.perf_counter() - start
            assert report.failed == 0, report.failures
            start = time.perf_counter()
            report = run_sweep(sweep, Path(root) / "forked", workers=1, quiet=True)
            forked = time.perf_counter() - start
            assert report.failed == 0, report.failures
            identical = trajectories(Path(root) / "one", sweep) == trajectories(Path(root) / "forked", sweep)
            training = trained_seconds(Path(root) / "forked", sweep)
        print(
            f"{memory:<10} {args.seeds:>5} {args.until_t:>8.0e} {one_by_one:>13.2f} {forked:>9.2f} {one_by_one / forked:>9.2f} "
            f"{training:>11.2f} {identical!s:>9}"
        )


if __name__ == "__main__":
    main()
