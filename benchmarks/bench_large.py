"""Large worlds: value and gradient on the classic worlds, against the engine's own factorisation.

For each world (``hallway``, ``hallway2``, ``fourth`` from the folder of classic ``.POMDP`` files) and each
RAM memory (1, 2, 4, 8, 16 by default), one process per case (so that its peak memory is its own) runs:

- ``set-up``: the first ``fsc.evaluate`` with its backward pass (the tables of the engine ``auto`` picks are
  built then), seconds;
- ``value+grad``: a later one (the tables kept), best of ``--repeats``, seconds: ``fsc.evaluate`` and
  ``gain.backward()`` on a policy whose logits require a gradient (built once, its gradient cleared each time),
  and the same in the process's CPU seconds (which a loaded machine distorts less);
- ``LU``: the engine's own factorisation in that call (``Evaluation.info["factor_seconds"]`` of the ``large``
  engine, best of the repeats), the part no implementation around the sparse LU can go below; ``ratio`` is
  value+grad over it;
- ``B states``, ``B nnz``, ``fill``: the chain after each choice that the large-world engine factors, its
  nonzeros and those of its factors (``Evaluation.info``);
- ``peak MB``: the process's peak resident memory (Python, numpy, torch and scipy alone take about ``base MB``).

Last, a ``.POMDP`` file of a few bytes declaring more than the machine can hold is given to ``fsc evaluate`` as
a user runs it (``python -m fsc.cli``): it must be refused in under a second, Python's start included, in one
line, before torch is imported; so must a file declaring 10 million states and 3 actions (``T: * identity``),
which the reader would take but no engine can hold with ``ram:1``, refused from its declared sizes before its
body is read; ``--refusal-only`` times those alone.

Usage: ``.venv/bin/python benchmarks/bench_large.py [FOLDER] [--worlds hallway ...] [--memories 1 2 ...]
[--repeats 3] [--plot docs/large-worlds.png] [--refusal-only]``; FOLDER holds the classic ``.POMDP`` files
(hallway, hallway2, fourth).
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

from timing import ROOT  # one LAPACK thread, as sweeps run; the checkout on the path

WORLDS = ("hallway", "hallway2", "fourth")
MEMORIES = (1, 2, 4, 8, 16)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one_case(path: Path, M: int, repeats: int) -> dict:
    """The figures of one world and memory (run in a process of its own)."""
    import scipy.sparse.linalg  # noqa: F401 - what the evaluation imports, counted in the base
    import torch  # noqa: F401

    import fsc

    base = _peak_mb()
    world = fsc.read_pomdp(path)
    arch = fsc.RAM(M, arms=world.num_actions, observations=world.num_observations)
    leaf = fsc.Policy.random(arch, 0).requires_grad_()
    factor_seconds = []

    def value_and_gradient():  # what a step of training asks: the value, then its gradient on the policy's leaves
        leaf.logits.grad = leaf.init_logits.grad = None
        ev = fsc.evaluate(world, leaf)
        ev.gain.backward()
        factor_seconds.append(ev.info.get("factor_seconds", float("nan")))
        return ev

    start = time.perf_counter()
    value_and_gradient()
    set_up = time.perf_counter() - start
    seconds, cpu_seconds = _times(value_and_gradient, repeats)
    ev = value_and_gradient()
    info = dict(ev.info)
    return {
        "world": path.stem, "M": M, "S": world.num_states, "N": arch.num_nodes, "SN": world.num_states * arch.num_nodes, "engine": ev.engine,
        "set_up": set_up, "seconds": seconds, "cpu_seconds": cpu_seconds, "lu": min(factor_seconds[1:]), "value": float(ev.value.detach()),
        "B_states": info.get("states", 0), "B_nnz": info.get("nonzeros", 0), "fill": info.get("fill", 0), "base_mb": base, "peak_mb": _peak_mb(),
    }  # fmt: skip


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


HUGE = "discount: 0.9\nvalues: reward\nstates: 3\nactions: 30\nobservations: 12000\nT: * identity\nO: * uniform\n"
#: What the engines cannot hold with ram:1 (at least 25.8 GB), though the reader takes its preamble.
DECLARED = "discount: 0.9\nvalues: reward\nstates: 10000000\nactions: 3\nobservations: 2\nT: * identity\nO: * uniform\nR: * : * : * : * 1\n"
REFUSED = {"12,000 observations": HUGE, "10 million states and 3 actions": DECLARED}


def refusal(repeats: int = 3, text: str = HUGE) -> dict:
    """``fsc evaluate --memory ram:1`` on a file of a few bytes (``text``: declaring 12,000 observations), as the command runs
    it: its status and its one line; ``command``, the best wall time of ``repeats`` runs of ``python -m fsc.cli``,
    Python's start included; ``main``, the best time from importing ``fsc.cli`` to the refusal, measured inside a
    process that runs ``fsc.cli.main`` as the ``fsc`` script does (Python's start excluded), and which heavy
    packages that process imported; ``python``, the best wall time of ``python -c pass``, the floor."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "huge.POMDP"
        path.write_text(text)
        argv = ["evaluate", "--pomdp", str(path), "--memory", "ram:1", "--policy", "uniform"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        driver = (
            "import time\nstart = time.perf_counter()\nimport json, sys\nfrom fsc.cli import main\n"
            f"status = main({argv!r})\nseconds = time.perf_counter() - start\n"
            "print(json.dumps([status, seconds, [m for m in ('torch', 'numba', 'scipy') if m in sys.modules]]))"
        )
        command, python, inside = [], [], []
        for _ in range(repeats):
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "fsc.cli", *argv], capture_output=True, text=True, cwd=ROOT, env=env)
            command.append(time.perf_counter() - start)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True, cwd=ROOT, env=env)
            python.append(time.perf_counter() - start)
            timed = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, check=True, cwd=ROOT, env=env)
            status, seconds, heavy = json.loads(timed.stdout.strip().splitlines()[-1])
            if status != done.returncode:
                raise SystemExit(f"fsc.cli.main gave status {status}, python -m fsc.cli {done.returncode}")
            inside.append(seconds)
    return {
        "bytes": len(text), "command": min(command), "main": min(inside), "python": min(python), "status": done.returncode,
        "stderr": done.stderr.strip(), "heavy": heavy,
    }  # fmt: skip


def print_refusal(repeats: int) -> None:
    for what, text in REFUSED.items():
        _print_refusal(what, refusal(repeats, text), repeats)


def _print_refusal(what: str, found: dict, repeats: int) -> None:
    print(
        f"a {found['bytes']}-byte file declaring {what}, fsc evaluate --memory ram:1: status {found['status']} after "
        f"{found['command']:.2f} s (best of {repeats}, Python's start included; {found['main']:.3f} s from importing fsc.cli to the "
        f"refusal; python -c pass {found['python']:.3f} s; imported: {', '.join(found['heavy']) or 'no torch, numba or scipy'}): "
        f"{found['stderr']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "folder", type=Path, nargs="?",
        help="a folder of the classic .POMDP files (hallway, hallway2, fourth); not needed with --refusal-only",
    )  # fmt: skip
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS))
    parser.add_argument("--memories", nargs="+", type=int, default=list(MEMORIES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--plot", type=Path, help="write the figure of cost against S*N here (PNG)")
    parser.add_argument("--refusal-only", action="store_true", help="time the refusal of the last line alone")
    parser.add_argument("--one", nargs=2, metavar=("FILE", "M"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_case(Path(args.one[0]), int(args.one[1]), args.repeats)))
        return
    if args.refusal_only:
        print_refusal(args.repeats)
        return
    if args.folder is None:
        parser.error("give the folder of the classic .POMDP files (or --refusal-only)")
    rows = []
    header = (
        f"{'world':9} {'M':>3} {'S*N':>9} {'B states':>9} {'B nnz':>10} {'fill':>10} {'engine':>7} {'set-up s':>9} "
        f"{'value+grad s':>13} {'CPU s':>8} {'LU s':>8} {'ratio':>6} {'peak MB':>8}"
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
            print(
                f"{name:9} {M:>3} {row['SN']:>9,} {row['B_states']:>9,} {row['B_nnz']:>10,} {row['fill']:>10,} {row['engine']:>7} {row['set_up']:>9.3f} "
                f"{row['seconds']:>13.4f} {row['cpu_seconds']:>8.4f} {row['lu']:>8.4f} {row['seconds'] / row['lu']:>6.2f} {row['peak_mb']:>8.0f}",
                flush=True,
            )
    base = min((row["base_mb"] for row in rows), default=0.0)
    print(f"(peak MB includes about {base:.0f} MB of Python, numpy, torch and scipy)")
    print_refusal(args.repeats)
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
        left.loglog(x, [row["lu"] for row in mine], marker=marker, linestyle=":", color=line.get_color(), label=f"{name}: the engine's LU")
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
