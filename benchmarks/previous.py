"""The compiled flow as it was before the training path's workspace (commit 5d71196), beside today's in one process.

:func:`load` reads ``fsc/engines/kernels.py`` of :data:`PREVIOUS` from git and compiles it as a module of its own
(without numba's disk cache, which would mix it up with today's module), so that a benchmark times the two
flows in the same process, alternating, on the same constants: the ``previous`` columns of
``bench_overhead.py`` and ``bench_reproduction_cost.py``.  It needs the repository's git history.
"""

from __future__ import annotations

import math
import subprocess
import time
import types
from pathlib import Path

import numpy as np
from numba import njit

from fsc.engines import kernels

#: The last commit before the workspace of the choices engine's training path (dcb0c53).
PREVIOUS = "5d71196"
#: How many entries of :meth:`fsc.evaluate.Evaluator.fused_constants` the previous kernels read (``b_runs`` came after).
PREVIOUS_CONSTANTS = 25
ROOT = Path(__file__).resolve().parents[1]


def load(commit: str = PREVIOUS) -> types.ModuleType:
    """``fsc.engines.kernels`` at ``commit``, compiled afresh (a few tens of seconds on first use)."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:fsc/engines/kernels.py"], check=True, capture_output=True, text=True).stdout
    module = types.ModuleType(f"kernels_{commit}")
    module.__file__ = f"<{commit}:fsc/engines/kernels.py>"
    exec(compile(source.replace("cache=True", "cache=False"), module.__file__, "exec"), module.__dict__)  # noqa: S102 - our own file at a commit
    return module


def time_flows(objective, point, flows: dict[str, tuple], steps: int, repeats: int) -> dict[str, tuple[float, int]]:
    """Seconds per evaluation of each ``flow_run`` in ``flows`` (name -> (function, constants)), the same ``steps``
    accepted steps from ``point`` (dt = 1, the default settings), the flows alternating in each of ``repeats`` rounds;
    the best round of each, and its evaluations.  Raises if two flows end on different bits."""
    start = (point.logits.numpy(), point.init_logits.numpy(), point.grad_logits.numpy(), point.grad_init.numpy(), point.gain, 1.0, 1e-4, 1e-30)
    factor, rows = objective._evaluator.factor, np.zeros((0, 0))
    best = {name: (math.inf, 0) for name in flows}
    ends = {}
    for _ in range(repeats + 1):  # the first round compiles and warms up
        for name, (flow_run, constants) in flows.items():
            began = time.perf_counter()
            end = flow_run(*start, factor, constants, 0.0, 0, math.inf, 2**62, steps, rows)
            seconds = (time.perf_counter() - began) / end[10]
            ends[name] = end
            if seconds < best[name][0]:
                best[name] = (seconds, int(end[10]))
    first = next(iter(ends.values()))
    for name, end in ends.items():
        if not all(np.array_equal(a, b) for a, b in zip(first, end, strict=True)):
            raise AssertionError(f"{name} took another path than {next(iter(ends))}")
    return best


@njit(cache=True)
def _floor_loop(B, calls):  # pragma: no cover - compiled
    K, X = B.shape[0], B.shape[1]
    for _ in range(calls):
        work = B.copy()
        piv, _ = kernels.lu_parts(work)
        b = np.ones((K, X))
        kernels.lu_solve_parts(work, piv, b, 0)
        kernels.lu_solve_parts(work, piv, b, 1)


def compiled_floor(B: np.ndarray, calls: int = 300, repeats: int = 10) -> float:
    """Seconds per ``dgetrf`` and two ``dgetrs`` of each part of ``B`` (``(K, X, X)``, C order), from compiled code."""
    _floor_loop(B, 1)
    best = math.inf
    for _ in range(repeats):
        began = time.perf_counter()
        _floor_loop(B, calls)
        best = min(best, (time.perf_counter() - began) / calls)
    return best
