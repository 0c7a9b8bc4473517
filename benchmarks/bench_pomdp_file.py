"""Benchmark of the .POMDP reader and writer (issue 11).

Builds a sparse world with 1,000 states, 10 actions and 10 observations
(3 successor states per state and action, 3 possible observations per end
state and action, a reward per state and action with a bonus on one
successor), writes it with ``fsc.write_pomdp`` and times
``fsc.read_pomdp`` (tokenise, parse, check every row, build the validated
POMDP).  Target: reading and validating in under 2 s.  Times are the minimum
over ``--repeats`` runs (the machine is shared).  Also checks that the read
world is bit-identical to the written one.

    python benchmarks/bench_pomdp_file.py [--states 1000] [--actions 10] [--observations 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import attrs
import numpy as np

import fsc


def sparse_world(S: int, A: int, O: int, seed: int = 0) -> fsc.POMDP:
    rng = np.random.default_rng(seed)
    k = min(3, S)
    transition = np.zeros((S, A, S))
    succ = np.stack([rng.choice(S, size=k, replace=False) for _ in range(S * A)]).reshape(S, A, k)
    p = rng.dirichlet(np.ones(k), size=(S, A))
    np.put_along_axis(transition, succ, p, axis=2)
    m = min(3, O)
    observation = np.zeros((A, S, O))
    seen = np.stack([rng.choice(O, size=m, replace=False) for _ in range(A * S)]).reshape(A, S, m)
    np.put_along_axis(observation, seen, rng.dirichlet(np.ones(m), size=(A, S)), axis=2)
    reward = np.broadcast_to(rng.normal(size=(S, A))[:, :, None, None], (S, A, S, O)).copy()
    reward[np.arange(S)[:, None], np.arange(A)[None, :], succ[:, :, 0], :] += 10.0
    return fsc.POMDP(
        transition=transition,
        observation=observation,
        reward=reward,
        initial=np.full(S, 1.0 / S),
        state_labels=tuple(f"cell-{i}" for i in range(S)),
        discount=0.95,
    )


def best_of(repeats: int, fn):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=1000)
    parser.add_argument("--actions", type=int, default=10)
    parser.add_argument("--observations", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    S, A, O = args.states, args.actions, args.observations
    world = sparse_world(S, A, O)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.pomdp"
        write_s, _ = best_of(args.repeats, lambda: fsc.write_pomdp(world, path))
        text = path.read_text()
        read_s, back = best_of(args.repeats, lambda: fsc.read_pomdp(path))
        construct_s, _ = best_of(
            args.repeats,
            lambda: attrs.evolve(back),  # POMDP(...) on the tables the reader made (sparse for a world this size)
        )
    same = all(getattr(world, k).tobytes() == getattr(back, k).tobytes() for k in ("transition", "observation", "reward", "initial"))
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"world: {S} states, {A} actions, {O} observations; dense reward table {S * A * S * O * 8 / 1024**2:.0f} MiB")
    print(f"file: {len(text) / 1024**2:.2f} MiB, {text.count(chr(10))} lines")
    print(f"write_pomdp:                 {write_s:7.3f} s")
    print(f"read_pomdp (read+validate):  {read_s:7.3f} s   target < 2 s: {'met' if read_s < 2 else 'NOT met'}")
    print(f"  of which POMDP(...) alone: {construct_s:7.3f} s   (validation of the tables)")
    print(f"read back bit-identical: {same}")
    print(f"peak RSS of this process: {rss_mib:.0f} MiB")


if __name__ == "__main__":
    main()
