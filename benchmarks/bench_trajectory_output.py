"""Benchmark: what writing the trajectory costs a training run that keeps every row, in one process.

Three writers on the same runs (paper convention, mu = 0.1, the published random start of seed 0, one
thread, a checkpoint every ``--checkpoint-seconds``):

- ``old``: the writer before trajectory.npz, reproduced here: each row formatted as a CSV line when it is
  appended, ``trajectory.csv`` rewritten whole at each checkpoint;
- ``csv``: today's ``--csv``: ``trajectory.npz`` and ``trajectory.csv``, each row formatted once, at a checkpoint;
- ``npz``: today's default: ``trajectory.npz`` only, the rows appended as bytes.

The writers alternate ``--repeats`` times; prints the steps, microseconds per step of each (best of the
repeats), the share of the old run's time the new default saves, and whether every run ended on the same
t, q and steps to the last bit and wrote the same rows (all columns but the wall times).

Usage: ``python benchmarks/bench_trajectory_output.py [--repeats 3] [--checkpoint-seconds 60]``
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fsc.train.loop as loop  # noqa: E402
import fsc.train.run as run  # noqa: E402
from fsc.io.trajectory import COLUMNS, Trajectory, metric_key, write_csv  # noqa: E402
from fsc.train import read_trajectory, run_training  # noqa: E402

# (memory, reset, until_t): Figure 4's panels and Figure 2's smallest memory at a small reset
CASES = [("ram:8", 1e-3, 3e6), ("memento:3", 1e-3, 1e6), ("ram:20", 1e-3, 3e5), ("ram:5", 2.0**-20, 1e7)]


class EagerCsv(Trajectory):
    """The writer before trajectory.npz: a CSV line formatted per row as it is appended (``array.extend`` of
    the compiled run's columns), kept for the next rewrite of the whole file."""

    def __init__(self, columns=None) -> None:
        super().__init__(columns)
        self.lines = self.csv_lines()

    def append(self, row) -> None:
        super().append(row)
        self.lines.append(self._format.format(row["t"], row["step"], *(row[name] for name in self.metrics), row["gain"], row["dt"], row["seconds"]))

    def extend(self, steps) -> None:
        metrics = {metric_key(name): column for name, column in steps["metrics"].items()}
        columns = {"t": steps["t"], "step": steps["step"], **metrics, **{name: steps[name] for name in COLUMNS if name not in ("t", "step")}}
        if not self.columns:
            self._start(tuple(metrics))
        on_line = ("t", "step", *self.metrics, "gain", "dt", "seconds")
        self.lines.extend(self._format.format(*row) for row in zip(*(columns[name] for name in on_line), strict=True))
        for name, column in self.columns.items():
            column.extend(columns[name])

    def csv_lines(self) -> list[str]:
        return getattr(self, "lines", None) or super().csv_lines()


@contextlib.contextmanager
def old_writer():
    """The run directory written as before: rows formatted as they come, only ``trajectory.csv``."""
    saved = run.Trajectory, loop.write_trajectory
    run.Trajectory, loop.write_trajectory = EagerCsv, lambda path, trajectory: write_csv(path.with_name("trajectory.csv"), trajectory)
    try:
        yield
    finally:
        run.Trajectory, loop.write_trajectory = saved


def train(out: Path, memory: str, reset: float, until_t: float, writer: str, checkpoint_seconds: float):
    shutil.rmtree(out, ignore_errors=True)
    with old_writer() if writer == "old" else contextlib.nullcontext():
        began = time.perf_counter()
        result = run_training(mu=0.1, memory=memory, init="random", seed=0, reset=reset, until_t=until_t, convention="paper", out=out,
                              quiet=True, csv=writer == "csv", checkpoint_seconds=checkpoint_seconds)  # fmt: skip
        seconds = time.perf_counter() - began
    rows = read_trajectory(out)
    return result, seconds, {name: rows[name] for name in ("t", "step", "q", "gain", "dt")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--checkpoint-seconds", type=float, default=60.0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    writers = ("old", "csv", "npz")
    print(f"{'memory':<10} {'reset':>9} {'until_t':>8} {'steps':>8} " + " ".join(f"{w + ' us/step':>13}" for w in writers)
          + f" {'saved':>7} {'same':>5}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        train(Path(tmp) / "warm", "ram:2", 1e-3, 10.0, "npz", args.checkpoint_seconds)  # compile (or load the cache) and warm up
        for memory, reset, until_t in CASES:
            runs = {writer: [] for writer in writers}
            for _ in range(args.repeats):
                for writer in writers:
                    runs[writer].append(train(Path(tmp) / writer, memory, reset, until_t, writer, args.checkpoint_seconds))
            ends = {(r.t, r.q, r.steps) for done in runs.values() for r, _, _ in done}
            first = runs["npz"][0][2]
            same = len(ends) == 1 and all(np.array_equal(rows[k], first[k]) for done in runs.values() for _, _, rows in done for k in first)
            steps = runs["npz"][0][0].steps
            best = {writer: min(s for _, s, _ in done) for writer, done in runs.items()}
            print(f"{memory:<10} {reset:>9.3g} {until_t:>8.0e} {steps:>8} " + " ".join(f"{best[w] / steps * 1e6:>13.1f}" for w in writers)
                  + f" {1 - best['npz'] / best['old']:>7.1%} {same!s:>5}")  # fmt: skip


if __name__ == "__main__":
    main()
