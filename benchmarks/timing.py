"""What the micro-benchmarks share: the best time per call, and their ``--calls`` / ``--repeats`` options."""

from __future__ import annotations

import argparse
import time


def best(function, calls: int, repeats: int) -> float:
    """Seconds per call of ``function()``: the best of ``repeats`` blocks of ``calls`` calls, after one warm-up call."""
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            function()
        times.append((time.perf_counter() - start) / calls)
    return min(times)


def timing_arguments(description: str, calls: int) -> argparse.Namespace:
    """Parse ``--calls`` (default ``calls``) and ``--repeats`` (default 5)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--calls", type=int, default=calls)
    parser.add_argument("--repeats", type=int, default=5)
    return parser.parse_args()
