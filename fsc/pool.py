"""Where parallel work runs: a local pool of processes or a Dask cluster, for the sweeps and the solver alike.

:func:`executor` gives a :class:`concurrent.futures.Executor`: the executor of a Dask client (closed afterwards),
or a local :class:`~concurrent.futures.ProcessPoolExecutor` (shut down afterwards).  Dask is optional
(``pip install 'fsc[cluster]'``); :func:`dask_client` says so in one line when it is missing or the scheduler is
out of reach.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor

from fsc.errors import InputError

__all__ = ["abandon", "cpu_count", "dask_client", "executor", "slots"]


def cpu_count() -> int:
    """CPUs this process may use (its affinity mask where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def dask_client(address: str, option: str = "--scheduler"):
    """A Dask client of the scheduler at ``address`` (``tcp://host:8786``).

    Raises:
        InputError: dask.distributed is not installed, or the scheduler cannot be reached (naming ``option``).
    """
    try:
        from distributed import Client
    except ImportError:
        raise InputError(f"{option} {address!r} needs dask.distributed: pip install 'fsc[cluster]'") from None
    try:
        return Client(address, timeout="20s")
    except (OSError, TimeoutError) as error:
        raise InputError(f"cannot reach the Dask scheduler at {address!r}: {error}") from None


def slots(client) -> int:
    """How many tasks a Dask cluster runs at once: its workers' threads (at least 1)."""
    return max(1, sum(client.nthreads().values()))


@contextlib.contextmanager
def executor(
    client=None, workers: int | None = None, *, initializer: Callable | None = None, initargs: tuple = (), start: str | None = None
) -> Iterator[Executor]:
    """The Dask ``client``'s executor (the client closed afterwards), else a local pool of ``workers`` processes
    (default :func:`cpu_count`) started by ``initializer(*initargs)`` with the start method ``start`` (``"spawn"``,
    ``"forkserver"``; default the platform's), shut down afterwards."""
    if client is not None:
        try:
            yield client.get_executor(pure=False)
        finally:
            client.close()
        return
    context = None if start is None else multiprocessing.get_context(start)
    pool = ProcessPoolExecutor(max_workers=workers or cpu_count(), mp_context=context, initializer=initializer, initargs=initargs)
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def abandon(pool: Executor, grace: float = 1.0) -> None:
    """Give up what ``pool`` still runs: its pending work cancelled and, for a local pool, its processes ended at
    once (:class:`~concurrent.futures.ProcessPoolExecutor` offers no way to stop work that has begun).

    Each process is asked to end (SIGTERM); those still alive ``grace`` seconds later are killed (SIGKILL), since a
    process may have SIGTERM ignored (inherited from a supervisor that ignores it, or set by the work itself).
    """
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        process.terminate()
    clock = time.monotonic()
    for process in processes:
        process.join(max(0.0, grace - (time.monotonic() - clock)))
        if process.is_alive():
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)
