"""Benchmark: value and gradient on large classic worlds, against the floor of the same linear algebra.

For each world (``hallway``, ``hallway2``, ``fourth`` from the folder of classic ``.POMDP`` files) and each
RAM memory (1, 2, 4, 8, 16 by default), one process per case (so that its peak memory is its own) runs:

- ``set-up``: the first ``fsc.evaluate`` with its backward pass (the tables of the engine ``auto`` picks are
  built then), seconds;
- ``value+grad``: a later one (the tables kept), best of ``--repeats``, seconds: ``fsc.evaluate`` and
  ``gain.backward()`` on a policy whose logits require a gradient (built once, its gradient cleared each time);
- ``floor``: scipy alone on the same linear system, in the same process: one sparse LU (``splu`` with COLAMD,
  the ordering the engine finds on its first factorisation and then keeps) of the matrix the engine factors
  and two solves (the value's and the adjoint's), best of
  ``--repeats``; ``ratio`` is value+grad over floor, ``CPU ratio`` the same with the process's CPU seconds
  (which a loaded machine distorts less);
- ``peak MB``: the process's peak resident memory (Python, numpy, torch and scipy alone take about
  ``base MB``);
- the engine's up-front estimate of memory and time (:mod:`fsc.engines.estimate`).

``S*N`` is the size of the joint chain over (world state, memory node), ``chain nnz`` its nonzeros (the
chain the dense, choices and sparse engines list), ``B`` the states and entries of the chain after each
choice that the large-world engine factors instead.  Last, a ``.POMDP`` file of a few bytes declaring more
than the machine can hold is given to ``fsc evaluate``: it must be refused in under a second, in one line.

Usage: ``.venv/bin/python benchmarks/bench_large.py [FOLDER] [--worlds hallway ...] [--memories 1 2 ...]
[--repeats 3] [--plot docs/large-worlds.png]``; FOLDER holds the classic ``.POMDP`` files (hallway, hallway2, fourth).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread, as sweeps run (read when numpy loads OpenBLAS)

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORLDS = ("hallway", "hallway2", "fourth")
MEMORIES = (1, 2, 4, 8, 16)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one_case(path: Path, M: int, repeats: int) -> dict:
    """The figures of one world and memory (run in a process of its own)."""
    import attrs
    import scipy.sparse.linalg as spla
    import torch

    import fsc
    from fsc.engines import estimate as est
    from fsc.evaluate import Evaluator
    from fsc.io.pomdp_file import read_pomdp

    base = _peak_mb()
    world = read_pomdp(path)
    arch = fsc.RAM(M, arms=world.num_actions, observations=world.num_observations)
    sizes = est.world_sizes(world, arch)
    policy = fsc.Policy.random(arch, 0)

    leaf = fsc.Policy(architecture=arch, logits=policy.logits.clone(), init_logits=policy.init_logits.clone()).requires_grad_()

    def value_and_gradient():  # what a step of training asks: the value, then its gradient on the policy's leaves
        leaf.logits.grad = leaf.init_logits.grad = None
        ev = fsc.evaluate(world, leaf)
        ev.gain.backward()
        return ev

    start = time.perf_counter()
    ev = value_and_gradient()
    set_up = time.perf_counter() - start
    seconds, cpu_seconds = _times(value_and_gradient, repeats)
    ev = value_and_gradient()
    row = {
        "world": path.stem, "M": M, "S": world.num_states, "N": arch.num_nodes, "SN": world.num_states * arch.num_nodes,
        "chain_nnz": sizes.chain_nonzeros, "engine": ev.engine, "set_up": set_up, "seconds": seconds, "cpu_seconds": cpu_seconds,
        "value": float(ev.value.detach()), "estimate": attrs.asdict(est.estimate(ev.engine, sizes)), "base_mb": base,
    }  # fmt: skip
    backend = Evaluator.of(world, arch, world_reset(world), "auto", "native").forward(policy.logits.numpy(), policy.init_logits.numpy()).backend
    matrices = getattr(backend, "matrices", None)
    if matrices is not None:
        row["B_states"], row["B_nnz"] = int(sum(B.shape[0] for B in matrices)), int(sum(B.nnz for B in matrices))

        def floor():
            for B in matrices:
                factor = spla.splu(B, permc_spec="COLAMD", diag_pivot_thresh=0.0)
                b = np.ones(B.shape[0])
                factor.solve(b)
                factor.solve(b, trans="T")

        row["floor"], row["cpu_floor"] = _times(floor, repeats)
    row["peak_mb"] = _peak_mb()
    del torch
    return row


def _times(function, repeats: int, seconds: float = 1.0, most: int = 100) -> tuple[float, float]:
    """The best wall-clock and the best CPU seconds (this process's, one thread) of ``repeats`` calls of
    ``function()``, and more (up to ``most``) while they add up to less than ``seconds``.  On a loaded machine
    the CPU seconds keep what the call costs when other processes take the cores away."""
    wall: list[float] = []
    cpu: list[float] = []
    while len(wall) < repeats or (sum(wall) < seconds and len(wall) < most):
        start, start_cpu = time.perf_counter(), time.process_time()
        function()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return min(wall), min(cpu)


def world_reset(world) -> float:
    return 1 - world.discount


HUGE = "discount: 0.9\nvalues: reward\nstates: 3\nactions: 30\nobservations: 12000\nT: * identity\nO: * uniform\n"


def refusal() -> dict:
    """``fsc evaluate --memory ram:1`` on a file of a few bytes declaring 12,000 observations: its status, its
    one line, the seconds of the whole command and those from reading the file to the refusal, in this process."""
    import fsc
    from fsc.io.pomdp_file import read_pomdp

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "huge.POMDP"
        path.write_text(HUGE)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "fsc.cli", "evaluate", "--pomdp", str(path), "--memory", "ram:1", "--policy", "uniform"],
            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        command = time.perf_counter() - start
        start = time.perf_counter()
        try:
            world = read_pomdp(path)
            fsc.evaluate(world, fsc.Policy.uniform(fsc.RAM(1, arms=world.num_actions, observations=world.num_observations)))
            message = "not refused"
        except ValueError as error:
            message = str(error)
        inside = time.perf_counter() - start
    return {"bytes": len(HUGE), "command": command, "inside": inside, "status": done.returncode, "stderr": done.stderr.strip(), "message": message}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "folder", type=Path,
        help="a folder of the classic .POMDP files (hallway, hallway2, fourth)",
    )  # fmt: skip
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS))
    parser.add_argument("--memories", nargs="+", type=int, default=list(MEMORIES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--plot", type=Path, help="write the figure of cost against S*N here (PNG)")
    parser.add_argument("--one", nargs=2, metavar=("FILE", "M"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_case(Path(args.one[0]), int(args.one[1]), args.repeats)))
        return
    rows = []
    header = (
        f"{'world':9} {'M':>3} {'S*N':>9} {'chain nnz':>12} {'B states':>9} {'B nnz':>10} {'engine':>7} {'set-up s':>9} "
        f"{'value+grad s':>13} {'floor s':>8} {'ratio':>6} {'CPU ratio':>9} {'peak MB':>8} {'est. MB':>8}"
    )
    print(header)
    for name in args.worlds:
        for M in args.memories:
            command = [sys.executable, __file__, str(args.folder), "--one", str(args.folder / f"{name}.POMDP"), str(M), "--repeats", str(args.repeats)]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["?"])[-1]
                print(f"{name:9} {M:>3} refused or failed: {last}")
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            rows.append(row)
            ratio = row["seconds"] / row["floor"] if "floor" in row else float("nan")
            cpu_ratio = row["cpu_seconds"] / row["cpu_floor"] if "cpu_floor" in row else float("nan")
            print(
                f"{name:9} {M:>3} {row['SN']:>9,} {row['chain_nnz']:>12,} {row.get('B_states', 0):>9,} {row.get('B_nnz', 0):>10,} {row['engine']:>7} "
                f"{row['set_up']:>9.3f} {row['seconds']:>13.4f} {row.get('floor', float('nan')):>8.4f} {ratio:>6.2f} {cpu_ratio:>9.2f} {row['peak_mb']:>8.0f} "
                f"{row['estimate']['bytes'] / 1e6 + row['base_mb']:>8.0f}",
                flush=True,
            )
    base = min((row["base_mb"] for row in rows), default=0.0)
    print(f"(peak MB includes about {base:.0f} MB of Python, numpy, torch and scipy; est. MB is the estimate plus that)")
    found = refusal()
    print(
        f"a {found['bytes']}-byte file declaring 12,000 observations, fsc evaluate --memory ram:1: status {found['status']} after "
        f"{found['command']:.2f} s (Python's start included; {found['inside']:.3f} s from reading the file to the refusal): {found['stderr']}"
    )
    if args.plot:
        plot(rows, args.plot)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for name, marker in zip(WORLDS, "osd", strict=False):
        mine = [row for row in rows if row["world"] == name]
        if not mine:
            continue
        x = [row["SN"] for row in mine]
        (line,) = left.loglog(x, [row["seconds"] for row in mine], marker=marker, label=f"{name}: value + gradient")
        floor = [row.get("floor", np.nan) for row in mine]
        left.loglog(x, floor, marker=marker, linestyle=":", color=line.get_color(), label=f"{name}: floor (splu + 2 solves)")
        right.loglog(x, [row["peak_mb"] for row in mine], marker=marker, label=name)
    left.set_xlabel("S * N (joint states)")
    left.set_ylabel("seconds")
    left.legend(fontsize=7)
    right.set_xlabel("S * N (joint states)")
    right.set_ylabel("peak memory of the process (MB)")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


if __name__ == "__main__":
    main()
