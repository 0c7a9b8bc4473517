"""Start-up time of the ``fsc`` command: what a user waits for before anything happens.

Prints the seconds of ``fsc --help``, ``fsc pomdp FILE``, ``fsc closed-form ccp``, ``fsc evaluate`` and a
first and a second ``fsc train`` of two steps, beside ``python -c pass`` measured in the same run (so load on
the machine shows in both).  Each command but ``train`` is timed ``--repeats`` times and the best is kept.

The first ``fsc train`` starts with an empty numba cache (``NUMBA_CACHE_DIR`` pointing to a new folder:
what a fresh installation has before ``make install`` warms it), the second with the cache the first
wrote.  ``--repo`` times another checkout (``--repo /work/frozen``, for a before/after comparison).

    python benchmarks/bench_startup.py [--repo PATH] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: A two-state Tiger world in Cassandra's format, written for ``fsc pomdp`` and ``fsc evaluate --pomdp``.
TIGER = """\
discount: 0.95
values: reward
states: tiger-left tiger-right
actions: listen open-left open-right
observations: tiger-left tiger-right
start: uniform
T: listen
identity
T: open-left
uniform
T: open-right
uniform
O: listen
0.85 0.15
0.15 0.85
O: open-left
uniform
O: open-right
uniform
R: listen : * : * : * -1
R: open-left : tiger-left : * : * -100
R: open-left : tiger-right : * : * 10
R: open-right : tiger-left : * : * 10
R: open-right : tiger-right : * : * -100
"""

TARGETS = {"fsc --help": 0.3, "fsc pomdp FILE": 0.6, "fsc closed-form ccp": 0.6}


def seconds(command: list[str], env: dict, repeats: int) -> float:
    """The best wall time of ``repeats`` runs of ``command``, which must succeed."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=ROOT, help="the checkout to time (default: this one)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each command; the best is kept (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "tiger.POMDP").write_text(TIGER)
        env = {**os.environ, "PYTHONPATH": str(args.repo.resolve()), "NUMBA_CACHE_DIR": str(work / "numba-cache"), "OMP_NUM_THREADS": "1"}
        fsc = [sys.executable, "-m", "fsc.cli"]
        train = [*fsc, "train", "--mu", "0.1", "--memory", "ram:2", "--init", "uniform", "--max-steps", "2", "--quiet"]
        rows = [
            ("python -c pass", seconds([sys.executable, "-c", "pass"], env, args.repeats)),
            ("fsc --help", seconds([*fsc, "--help"], env, args.repeats)),
            ("fsc pomdp FILE", seconds([*fsc, "pomdp", str(work / "tiger.POMDP")], env, args.repeats)),
            ("fsc closed-form ccp", seconds([*fsc, "closed-form", "ccp", "--M", "4"], env, args.repeats)),
            ("fsc evaluate", seconds([*fsc, "evaluate", "--pomdp", str(work / "tiger.POMDP"), "--memory", "ram:2"], env, args.repeats)),
            ("fsc train (empty numba cache)", seconds([*train, "--out", str(work / "run1")], env, 1)),
            ("fsc train (cache warm)", seconds([*train, "--out", str(work / "run2")], env, 1)),
        ]
    base = rows[0][1]
    print(f"repository: {args.repo.resolve()}")
    print(f"{'command':32s} {'seconds':>8s} {'minus python':>13s} {'target':>7s}")
    for name, value in rows:
        target = f"{TARGETS[name]:.1f}" if name in TARGETS else ""
        print(f"{name:32s} {value:8.3f} {value - base:13.3f} {target:>7s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
