"""Benchmark: a panel of seeds in one sweep, trainers forked from a warm worker against new interpreters.

The issue's case: 10 seeds of the published random start (mu = 0.1, r = 1e-3, paper convention) to
t = 1e6, on RAM M = 8 and on Memento m = 3, in one sweep with one worker, both ways in this process:

- ``one by one``: each point trained by ``python -m fsc.train`` in a new interpreter (the sweep's
  ``command`` option), which imports torch, numpy, scipy and numba and loads the compiled kernels again;
- ``forked``: the default local pool, whose worker imports and warms the trainer once and forks a
  child per point.

The two alternate for ``--rounds`` rounds (default 3), so that a slow spell of the machine (another
tenant, its clock) lands on both.  Prints each round's wall times and ratio, then the best time of each
side over the rounds and their ratio (the code's speed, as ``timeit`` reports it), the summed training
time the forked runs report (``seconds`` in their results) in their best round, and whether every sweep's
trajectories agree to the last bit (all columns but the wall-clock ``seconds``).

Usage: ``.venv/bin/python benchmarks/bench_sweep_points.py [--seeds 10] [--until-t 1e6] [--rounds 3] [--memory ram:8 memento:3]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fsc.sweep import Sweep, run_sweep  # noqa: E402
from fsc.train import read_trajectory  # noqa: E402


def trajectories(out: Path, sweep: Sweep) -> list[dict[str, list]]:
    """Each point's trajectory but its wall times, as lists (compared whole)."""
    return [{name: column.tolist() for name, column in read_trajectory(out / "runs" / point.name).items() if name != "seconds"}
            for point in sweep.points]  # fmt: skip


def trained_seconds(out: Path, sweep: Sweep) -> float:
    import json

    return sum(json.loads((out / "runs" / point.name / "result.json").read_text())["seconds"] for point in sweep.points)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--until-t", type=float, default=1e6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory", nargs="+", default=["ram:8", "memento:3"])
    args = parser.parse_args()
    header = f"{'memory':<10} {'round':>5} {'one by one s':>13} {'forked s':>9} {'speed-up':>9} {'training s':>11} {'identical':>9}"
    print(f"{args.seeds} seeds to t = {args.until_t:g}, one worker\n{header}")
    for memory in args.memory:
        sweep = Sweep.from_dict(
            {
                "fixed": {"mu": 0.1, "reset": 1e-3, "memory": memory, "init": "random", "until_t": args.until_t, "convention": "paper", "threads": 1},
                "grid": {"seed": list(range(args.seeds))},
            }
        )
        rounds = []
        with tempfile.TemporaryDirectory() as root:
            reference = None
            for n in range(args.rounds):
                seconds, identical = {}, True
                for side, command in (("one", [sys.executable, "-m", "fsc.train"]), ("forked", None)):
                    out = Path(root) / f"{side}-{n}"
                    start = time.perf_counter()
                    report = run_sweep(sweep, out, workers=1, quiet=True, command=command)
                    seconds[side] = time.perf_counter() - start
                    assert report.failed == 0, report.failures
                    runs = trajectories(out, sweep)
                    reference = runs if reference is None else reference
                    identical = identical and runs == reference
                training = trained_seconds(out, sweep)  # the forked side's
                rounds.append((seconds["one"], seconds["forked"], training, identical))
                ratio = seconds["one"] / seconds["forked"]
                print(f"{memory:<10} {n + 1:>5} {seconds['one']:>13.2f} {seconds['forked']:>9.2f} {ratio:>9.2f} {training:>11.2f} {identical!s:>9}")
        one, forked = min(r[0] for r in rounds), min(r[1] for r in rounds)
        training = min(rounds, key=lambda r: r[1])[2]
        print(f"{memory:<10} {'best':>5} {one:>13.2f} {forked:>9.2f} {one / forked:>9.2f} {training:>11.2f} {all(r[3] for r in rounds)!s:>9}")


if __name__ == "__main__":
    main()
