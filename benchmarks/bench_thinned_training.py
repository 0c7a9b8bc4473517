"""Benchmark: fsc train with thinned rows (--rows-per-decade, the steps between rows in one compiled call)
against the same run keeping every row, in one process.

Keeping every row, the compiled call also records each step's numbers, and Python formats a CSV line per
step (before, each step was a Point, a State and a Record, about as costly as the step at RAM 8).

A third run keeps every row without ``until_t`` (``converged`` column), as ``fsc train`` runs by default: it
may stop as converged at any row, so it checks each row of each compiled call (before commit 3d6edba it took
a record, and a Python loop, per step); here it stops on ``max_steps``, at the step the other two reached.

For each case (paper convention, mu = 0.1, the published random start of seed 0, one torch thread), the
three runs alternate ``--repeats`` times; prints the accepted steps, microseconds per step of each (best of
the repeats), the ratio of the first two, and whether all ended on the same t, q and steps to the last bit
(they take the same steps; only the rows written differ).

Usage: ``.venv/bin/python benchmarks/bench_thinned_training.py [--repeats 3]``
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fsc.train import run_training  # noqa: E402

# (memory, reset, until_t): the panels' sizes, and Figure 2's smallest memory at a small reset
CASES = [("ram:8", 1e-3, 3e6), ("memento:3", 1e-3, 1e6), ("ram:20", 1e-3, 3e5), ("ram:5", 2.0**-20, 1e7)]


def train(out: Path, memory: str, reset: float, until_t: float | None, rows_per_decade: int | None, max_steps: int | None = None):
    shutil.rmtree(out, ignore_errors=True)
    began = time.perf_counter()
    result = run_training(mu=0.1, memory=memory, init="random", seed=0, reset=reset, until_t=until_t, convention="paper",
                          rows_per_decade=rows_per_decade, max_steps=max_steps, out=out, quiet=True)  # fmt: skip
    return result, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{'memory':<10} {'reset':>9} {'until_t':>8} {'steps':>8} {'every row us/step':>18} {'thinned us/step':>16} {'speed-up':>9} "
          f"{'converged us/step':>18} {'same end':>9}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        train(Path(tmp) / "warm", "ram:2", 1e-3, 10.0, 10)  # compile (or load the cache) and warm up
        for memory, reset, until_t in CASES:
            every, thinned, open_ended = [], [], []
            for _ in range(args.repeats):
                every.append(train(Path(tmp) / "every", memory, reset, until_t, None))
                thinned.append(train(Path(tmp) / "thin", memory, reset, until_t, 100))
                open_ended.append(train(Path(tmp) / "open", memory, reset, None, None, every[0][0].steps))
            (a, _), (b, _), (c, _) = every[0], thinned[0], open_ended[0]
            same = (a.t, a.q, a.steps, a.evaluations) == (b.t, b.q, b.steps, b.evaluations) == (c.t, c.q, c.steps, c.evaluations)
            best_every, best_thin, best_open = (min(s for _, s in runs) for runs in (every, thinned, open_ended))
            print(f"{memory:<10} {reset:>9.3g} {until_t:>8.0e} {a.steps:>8} {best_every / a.steps * 1e6:>18.1f} "
                  f"{best_thin / b.steps * 1e6:>16.1f} {best_every / best_thin:>9.2f} {best_open / c.steps * 1e6:>18.1f} {same!s:>9}")  # fmt: skip


if __name__ == "__main__":
    main()
