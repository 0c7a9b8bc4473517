"""The time constants of fsc/limits.py, measured here: the cost of one memory state of ``fsc closed-form`` and of
one word of the necklace graph (``fsc necklace``), against the constants the limits are computed from.

    python benchmarks/bench_limits.py [--M 200000] [--m 16 17 18]

docs/runs-on-disk.md states these constants; a machine much faster or slower shifts them by that factor.
"""

from __future__ import annotations

import argparse
import time

from fsc.limits import NECKLACE_SECONDS_PER_WORD, SECONDS_PER_CLOSED_FORM_STATE
from policies import closed_form
from policies.necklaces.gray import _graph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--M", type=int, default=200_000, help="memory size of the closed form timed (default 2e5)")
    parser.add_argument("--m", type=int, nargs="+", default=[16, 17, 18], help="necklace lengths whose graph is built (default 16 17 18)")
    args = parser.parse_args()
    eps = closed_form.ccp_eps_best(0.1, args.M, 1e-4)
    start = time.perf_counter()
    closed_form.ccp_q(0.1, args.M, 1e-4, eps)
    per_state = (time.perf_counter() - start) / args.M
    print(f"closed-form: {per_state * 1e6:.2f} us per memory state at M = {args.M} (fsc.limits: {SECONDS_PER_CLOSED_FORM_STATE * 1e6:.1f} us)")
    for m in args.m:
        start = time.perf_counter()
        _graph(m)
        seconds = time.perf_counter() - start
        print(f"necklace graph m = {m}: {seconds:.2f} s, {seconds / 2**m * 1e6:.1f} us per word (fsc.limits: {NECKLACE_SECONDS_PER_WORD * 1e6:.0f} us)")


if __name__ == "__main__":
    main()
