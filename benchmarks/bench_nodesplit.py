"""Node splitting (``nodesplit``): what it adds to the portfolio's controllers, beside ``greedy`` and ``bpi``.

Per file of FOLDER: ``fsc.solve(world, "ram:M", seconds=S, seed=0, workers=1, methods=<every method but nodesplit>)``
(``fsc solve --workers 1 --methods pointbased,mirror,adam,em,greedy,bpi``), then from its controller each of
``nodesplit`` (``steps`` 200), ``greedy`` and ``bpi`` alone with its defaults for at most ``--polish`` seconds
(``method.solve(objective, policy, Budget.of(method.steps, seconds), default_rng(0))``), printed as a markdown row:
the start's value, each method's value and the CPU seconds it took.  Run it niced, one file at a time on a shared
machine:

    nice python benchmarks/bench_nodesplit.py FOLDER tiger-grid.POMDP hallway.POMDP hallway2.POMDP --seconds 60 --polish 15
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from timing import ROOT  # noqa: F401  (one LAPACK thread; the checkout on the path)

# isort: split
import numpy as np

import fsc
from fsc.objective import Objective
from fsc.solver import BPI, METHODS, Budget, Greedy, NodeSplit


def polish(world, policy, seconds: float) -> list[tuple[float, float]]:
    """Each method alone from ``policy``: (value, CPU seconds)."""
    objective = Objective(world=world, architecture=policy.architecture, reset=1 - world.discount, target="return")
    found = []
    for method in (NodeSplit(steps=200), Greedy(), BPI()):
        clock = time.process_time()
        out = method.solve(objective, policy, Budget.of(method.steps, seconds), np.random.default_rng(0))
        found.append((objective.value_of(out), time.process_time() - clock))
    return found


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    p.add_argument("files", nargs="+")
    p.add_argument("--memory", type=int, default=8, help="ram:M (default 8)")
    p.add_argument("--seconds", type=float, default=60.0, help="the portfolio's budget (default 60)")
    p.add_argument("--polish", type=float, default=15.0, help="each method's budget from its controller (default 15)")
    args = p.parse_args()
    others = [name for name in METHODS if name != "nodesplit"]
    print("| file | portfolio without nodesplit | nodesplit | greedy | bpi |\n|---|---|---|---|---|")
    for name in args.files:
        world = fsc.read_pomdp(args.folder / name)
        solution = fsc.solve(world, f"ram:{args.memory}", seconds=args.seconds, seed=0, workers=1, methods=others)
        cells = " | ".join(f"{value:.5g} ({cpu:.1f} s)" for value, cpu in polish(world, solution.policy, args.polish))
        print(f"| {name} | {solution.value:.5g} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
