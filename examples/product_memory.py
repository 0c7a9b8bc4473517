"""Compose architectures: Memento(2) with a win counter, against Memento(3) at equal node count.

``fsc.product(a, b)`` runs two memories side by side on the same actions and
observations.  Memento(2) remembers its last two arms and rewards; a win
counter remembers how many wins in a row it has seen (capped at ``K``).  With
``K = 18`` their product has 85 reachable nodes, as many as Memento(3).
Both are trained by gradient flow from the same kind of random start, and
the best and median q over the seeds are printed (and written as CSV).

    python examples/product_memory.py --seeds 5 --until-t 1e5 --out results/composing
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
from pathlib import Path

import torch

import fsc
import tasks
from fsc.files import write_rows


def win_counter(K: int, arms: int = 2) -> fsc.Automaton:
    """Wins in a row, ``0..K``, whatever the arm; a loss resets it to 0."""
    return fsc.Automaton(
        nodes=list(range(K + 1)),
        choices=list(fsc.model.memory.arm_labels(arms)),
        step=lambda n, arm, obs: min(n + 1, K) if obs == 0 else 0,
        action=fsc.model.memory.arm_labels(arms).index,
        actions=arms,
        observations=2,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mu", type=float, default=0.1)
    parser.add_argument("--reset", type=float, default=1e-3)
    parser.add_argument("--K", type=int, default=18)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--until-t", type=float, default=1e5)
    parser.add_argument("--out", default=None, help="folder for product_memory.csv")
    args = parser.parse_args()
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    world = tasks.TwoHypothesis(args.mu)
    memories = {f"Memento(2) x counter({args.K})": fsc.product(fsc.Memento(2), win_counter(args.K)), "Memento(3)": fsc.Memento(3)}
    rows = []
    for name, arch in memories.items():
        for seed in range(args.seeds):
            start = time.perf_counter()
            record = collections.deque(fsc.flow(world, fsc.Policy.random(arch, seed), reset=args.reset, until_t=args.until_t), maxlen=1)[0]
            rows.append({"memory": name, "nodes": arch.num_nodes, "seed": seed, "t": record.t, "q": record.q, "seconds": time.perf_counter() - start})
    print(f"mu = {args.mu}, r = {args.reset}, t = {args.until_t:g}, {args.seeds} random starts each (native convention)")
    print(f"{'memory':<28} {'nodes':>5} {'best q':>9} {'median q':>9} {'seconds':>8}")
    for name, arch in memories.items():
        qs = [row["q"] for row in rows if row["memory"] == name]
        seconds = sum(row["seconds"] for row in rows if row["memory"] == name)
        print(f"{name:<28} {arch.num_nodes:>5} {min(qs):>9.5f} {statistics.median(qs):>9.5f} {seconds:>8.1f}")
    if args.out:
        print(f"wrote {write_rows(Path(args.out) / 'product_memory.csv', rows)}")


if __name__ == "__main__":
    main()
