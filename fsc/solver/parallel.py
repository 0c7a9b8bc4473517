"""The portfolio on many cores: independent restarts of :class:`fsc.solver.Portfolio` in parallel processes, or on
a Dask cluster, the best kept.

A restart is one run of the portfolio (its memory ladder and its rounds, :meth:`Portfolio.solve` with
``workers=None``) with a seed of its own: restart 0 the portfolio's seed, restart ``i`` a seed derived from
``(seed, i)`` (:func:`restart_seed`).  How many:

- ``restarts`` when given;
- else with ``rounds``, one: the portfolio itself, its rounds one after another (each round starts from the
  best so far, which independent processes cannot share); the work depends only on the seed, ``rounds`` and
  ``restarts``, so the result (the best by exact value, ties to the lowest restart) is the same whatever the
  number of workers, given time to spare;
- else one restart per worker (per thread of a Dask cluster), each until the same deadline: with one worker,
  the portfolio itself.

Restart 0 at its upper bound (to 1e-9 of it) is the answer, whatever the others found (at most rounding more);
locally, it then ends the others at once.

Each restart computes with one thread (torch and BLAS), so a restart gives the same bits in any process.  A
local pool starts its processes by ``spawn`` (forking a process whose OpenMP threads have run hangs the
child); they load numba's compiled kernels from its disk cache (:func:`compiled_here` counts what a process
compiled) and their start-up counts inside the budget.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import as_completed

import attrs
import numpy as np

from fsc.engines.estimate import evaluable
from fsc.engines.registry import price
from fsc.errors import InputError, InputTypeError
from fsc.model.memory import RAM
from fsc.model.pomdp import as_pomdp
from fsc.pool import abandon, dask_client, executor, slots
from fsc.solver.methods import PointBased
from fsc.solver.solution import Solution, larger

__all__ = ["check_scheduler", "compiled_here", "graph_only", "one_thread", "restart_seed", "solve_parallel"]


def check_scheduler(scheduler: object, workers: int | None) -> None:
    """A scheduler is an address (a string), and given without ``workers`` (the cluster decides how many).

    Raises:
        InputTypeError: ``scheduler`` is neither None nor a string.
        InputError: both ``scheduler`` and ``workers`` are given.
    """
    if scheduler is not None and not isinstance(scheduler, str):
        raise InputTypeError(f"scheduler must be the address of a Dask scheduler (a string like 'tcp://host:8786'), got {scheduler!r}")
    if scheduler is not None and workers is not None:
        raise InputError(f"give workers or a scheduler, not both (workers={workers!r}, scheduler={scheduler!r})")


def graph_only(solver, world, arch, reset: float) -> bool:
    """Whether ``solver`` solves ``arch`` on ``world`` on the graph-only path (:meth:`fsc.solver.Portfolio.solve`): a
    RAM whose evaluator fits the machine's memory neither with the solver's engine nor with any ``auto`` may pick
    (:func:`fsc.engines.estimate.evaluable`; a named engine that does not fit where another does stays refused, with
    the hint), with a point-based method among the solver's, whose policy graph is valued on its own pairs instead."""
    if type(arch) is not RAM or not any(isinstance(method, PointBased) for method in solver.methods):
        return False
    return not evaluable(as_pomdp(world), arch, reset, solver.engine)


def restart_seed(seed: int, index: int) -> int:
    """The seed of restart ``index``: ``seed`` itself for restart 0, else 63 bits drawn from ``(seed, index)``."""
    if index == 0:
        return seed
    return int(np.random.SeedSequence([seed, index]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def compiled_here() -> int:
    """How many kernel signatures this process compiled rather than loaded from numba's disk cache."""
    from numba.core.registry import CPUDispatcher

    found = {id(v): v for name, module in list(sys.modules.items()) if name.startswith("fsc.") for v in vars(module).values() if isinstance(v, CPUDispatcher)}
    return sum(sum(kernel.stats.cache_misses.values()) for kernel in found.values())


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch and the BLAS libraries on one thread, restored afterwards."""
    import torch
    from threadpoolctl import threadpool_limits

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1):
            yield
    finally:
        torch.set_num_threads(threads)


def _restart(solver, index: int, world, arch, reset: float, start, deadline: float, progress: Callable | None = None) -> dict | None:
    """Restart ``index`` of ``solver`` until ``deadline`` (``time.time()``): its solution and what it compiled; None
    when no time is left (restart 0 always runs: it returns at least its start)."""
    seconds = deadline - time.time()
    if seconds <= 0 and index > 0:
        return None
    one = attrs.evolve(solver, seed=restart_seed(solver.seed, index), seconds=max(seconds, 1e-3), workers=None, scheduler=None, restarts=None)
    solution = one.solve(world, arch, reset=reset, start=start, progress=progress)  # in this process: on one thread
    return {"index": index, "solution": solution, "compiled": compiled_here()}


class _Best:
    """The best restart so far (a higher exact value, ties to the lower restart), reported as it changes."""

    def __init__(self, arch, progress: Callable[[dict], None] | None):
        self.arch, self.progress, self.clock = arch, progress, time.monotonic()
        self.outcome: dict | None = None
        self.outcomes: list[dict] = []
        self.reported = -math.inf

    def keep(self, outcome: dict | None) -> None:
        if outcome is None:
            return
        self.outcomes.append(outcome)
        if self.outcome is not None and not _better(outcome, self.outcome):
            return
        self.outcome = outcome
        solution = outcome["solution"]
        self.report({"memory": repr(self.arch), "value": solution.value, "method": solution.method,
                     "upper_bound": solution.upper_bound, "restart": outcome["index"]})  # fmt: skip

    def report(self, record: dict) -> None:
        """Pass a new best to ``progress``: a value above every value reported so far (a restart run here reports
        its own as they come)."""
        if self.progress is not None and record["value"] > self.reported:
            self.reported = record["value"]
            self.progress({**record, "seconds": time.monotonic() - self.clock})

    def relay(self, index: int) -> Callable[[dict], None]:
        return lambda record: self.report({**record, "restart": index})


def solve_parallel(solver, world, arch, *, reset: float, start, progress: Callable[[dict], None] | None = None, deadline=None) -> Solution:
    """The best of ``solver``'s restarts (module docstring) on ``solver.workers`` processes or ``solver.scheduler``'s cluster.

    Locally, this process runs restart 0 and ``workers - 1`` processes the others; once done, it takes the
    restarts no process has begun.

    Raises:
        InputError: the Dask scheduler cannot be reached (or dask is not installed).
    """
    clock = time.monotonic()
    deadline = time.time() + (solver.seconds if deadline is None else deadline.remaining())  # a wall-clock time: processes share it
    client = None if solver.scheduler is None else dask_client(solver.scheduler, option="scheduler")
    count = _count(solver, client)
    best = _Best(arch, progress)
    if client is None and (solver.workers in (None, 1) or count == 1):
        for index in range(count):
            best.keep(_restart(solver, index, world, arch, reset, start, deadline, best.relay(index)))
            if index == 0 and _at_bound(best.outcome):
                break
    else:
        if not graph_only(solver, world, arch, reset):  # a memory no engine holds, without a graph-only path: refused here, before any process starts
            price(as_pomdp(world), arch, reset, solver.engine)
        _on_pool(solver, client, count, best, (world, arch, reset, start, deadline))
    zero = next((outcome for outcome in best.outcomes if outcome["index"] == 0), None)
    chosen = zero if _at_bound(zero) else best.outcome  # restart 0 at its bound is the answer wherever it ran
    return _merged(chosen, best.outcomes, solver.seed, time.monotonic() - clock)


def _count(solver, client) -> int:
    """How many restarts (module docstring)."""
    if solver.restarts is not None:
        return solver.restarts
    if solver.rounds is not None:
        return 1
    return slots(client) if client is not None else solver.workers or 1


def _on_pool(solver, client, count: int, best: _Best, task: tuple) -> None:
    """Restarts ``0 .. count - 1`` on the cluster of ``client``, or on a local pool and this process, into ``best``.

    A restart still running a little after the deadline (5% of the budget and half a second) is abandoned:
    its process has not even started in time on a loaded machine.
    """
    deadline = task[-1]
    first = 0 if client is not None else 1  # a local pool leaves restart 0 to this process
    with executor(client, None if client is not None else min(solver.workers, count) - 1, start="spawn") as pool:
        try:
            futures = {pool.submit(_restart, solver, index, *task): index for index in range(first, count)}
            if client is None:
                best.keep(_restart(solver, 0, *task, best.relay(0)))
                if _at_bound(best.outcome):  # nothing can beat it: the others end now, not at their deadline
                    abandon(pool)
                    return
                for future in sorted(futures, key=futures.get):  # what no process has begun, run here
                    if future.cancel():
                        index = futures.pop(future)
                        best.keep(_restart(solver, index, *task, best.relay(index)))
            for future in as_completed(futures, timeout=max(0.0, deadline + 0.05 * solver.seconds + 0.5 - time.time())):
                best.keep(future.result())
        except TimeoutError:
            abandon(pool)
        except BaseException:  # an interrupt (Ctrl-C) or an error: the other processes end now, not at their deadline
            abandon(pool)
            raise


def _at_bound(outcome: dict | None) -> bool:
    """Whether a restart's solution reaches its upper bound (to 1e-9 of it): no restart can do better."""
    if outcome is None:
        return False
    solution = outcome["solution"]
    return solution.upper_bound - solution.value <= 1e-9 * abs(solution.upper_bound)


def _better(outcome: dict, than: dict) -> bool:
    """Whether ``outcome`` beats ``than``: a higher exact value, or the same value from a lower restart."""
    a, b = outcome["solution"].value, than["solution"].value
    return a > b or (a == b and outcome["index"] < than["index"])


def _merged(best: dict, outcomes: list[dict], seed: int, seconds: float) -> Solution:
    """The best restart's solution, with the lowest upper bound of all, their evaluations summed, its history
    marked with its restart, and the best larger controller of any restart worth more than it."""
    solution = best["solution"]
    found = [(o["solution"].larger_value, o["solution"].larger_memory) for o in outcomes if o["solution"].larger_value is not None]
    return attrs.evolve(
        solution, seed=seed, seconds=seconds, upper_bound=min(o["solution"].upper_bound for o in outcomes),
        evaluations=sum(o["solution"].evaluations for o in outcomes),
        history=[{**record, "restart": best["index"]} for record in solution.history], **larger(found, solution.value),
    )  # fmt: skip
