"""The sweep driver: every unfinished point of a spec, on a local pool or a Dask cluster, failures kept.

A point is finished when its ``result.json`` exists; a sweep run again continues the others from their
checkpoints.  Drivers started on the same spec and directory split its points: a point locked by another
driver is taken last (docs/sweeps.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from pathlib import Path
from typing import Any

import attrs

from fsc.checks import integer
from fsc.errors import InputError, InputTypeError, quoted
from fsc.files import temporary_target, write_text
from fsc.io.rundir import check_owned_directory
from fsc.limits import MAX_WORKERS
from fsc.pool import dask_client
from fsc.pool import executor as pool_executor
from fsc.sweep.spec import Point, Sweep
from fsc.sweep.worker import init_pool_worker, is_finished, run_point


@attrs.frozen(kw_only=True)
class SweepReport:
    """What :func:`run_sweep` did.

    Attributes:
        points: points in the spec; trained: run to their end now;
        skipped: already finished; failed: failed now.
        failures: one record per failed point: ``run``, ``arguments``, ``exit``, ``error``, ``stderr``.
        seconds: wall time of the sweep; out: its directory.
    """

    points: int
    trained: int
    skipped: int
    failed: int
    failures: tuple[dict, ...]
    seconds: float
    out: str

    def summary(self) -> dict[str, Any]:
        """JSON-able numbers (what ``fsc sweep --json`` prints)."""
        counts = attrs.asdict(self, filter=lambda field, _: field.name != "failures")  # points, trained, ..., seconds, out
        return {**counts, "failures": [{"run": f["run"], "arguments": f["arguments"], "error": f["error"]} for f in self.failures]}


#: What a sweep writes into its directory. A directory holding nothing else (and temporaries of these) is a
#: sweep's; a sweep never writes into one holding anything else.
SWEEP_ENTRIES = frozenset({"sweep.json", "runs", "locks", "failures.json", "summary.csv", "summary.png"})


def check_sweep_directory(out: str | os.PathLike) -> Path:
    """``out`` with its symbolic links resolved, when it is new or a sweep's; else ``ValueError``.

    New: missing or empty. A sweep's: a directory holding only :data:`SWEEP_ENTRIES` and temporaries of them
    (:func:`fsc.files.temporary_target`). Anything else (a user's files, a file, a dangling link) is refused
    before anything is written (:func:`fsc.io.rundir.check_owned_directory`).
    """

    def refusal(directory: Path) -> str | None:
        foreign = sorted(n for n in os.listdir(directory) if n not in SWEEP_ENTRIES and temporary_target(n) not in SWEEP_ENTRIES)
        return f"holds files that are not a sweep's ({quoted(foreign[0])} among them); give a new directory, or a sweep's" if foreign else None

    return check_owned_directory(out, "sweep directory", refusal, name_link=False)


def run_sweep(
    sweep: Sweep,
    out: str | os.PathLike,
    *,
    executor: Executor | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    quiet: bool = False,
    command: Sequence[str] | None = None,
) -> SweepReport:
    """Run every unfinished point of ``sweep`` in ``out/runs``; report failures, never stop at one.

    Args:
        sweep: the points (:func:`load_spec`).
        out: the sweep's directory (made absolute, so that a cluster's workers find it).
        executor: run the points here (not shut down afterwards); by default a
            :class:`~concurrent.futures.ProcessPoolExecutor` of ``workers``
            processes, or a Dask cluster's executor when ``scheduler`` is given.
        workers: local pool size (default: the number of CPUs this process may use).
        scheduler: address of a Dask scheduler (``tcp://host:8786``); needs ``dask[distributed]``.
        quiet: no progress bar (there is none either when stderr is not a terminal).
        command: the trainer command (see :func:`run_point`).

    Returns:
        A :class:`SweepReport`.  Failed points are also written to
        ``out/failures.json`` (removed when a sweep has none).
    """
    if not isinstance(sweep, Sweep):
        raise InputTypeError(f"sweep must be a fsc.sweep.Sweep (see load_spec), got {type(sweep).__name__}")
    if sum(x is not None for x in (executor, workers, scheduler)) > 1:
        raise InputError("give at most one of executor, workers and scheduler")
    workers = integer("workers", workers, 1, optional=True)
    if workers is not None and workers > MAX_WORKERS:  # each is a trainer process: more only thrash
        raise InputError(f"--workers must be at most {MAX_WORKERS}, got {workers!r}")
    out = check_sweep_directory(out)
    start = time.monotonic()
    pending = [point for point in sweep.points if not is_finished(out / "runs" / point.name, point.stop())]
    skipped = len(sweep.points) - len(pending)
    client = dask_client(scheduler) if scheduler is not None and pending else None  # before writing anything
    _write_sweep_record(sweep, out)
    records: dict[str, dict] = {}
    if pending:
        with _executor(executor, client, workers) as pool:
            records = _run_points(pool, pending, out, quiet, command, skipped, len(sweep.points))
    failures = _record_failures(sweep, records, out)
    statuses = Counter(record["status"] for record in records.values())
    return SweepReport(
        points=len(sweep.points),
        trained=statuses["done"],
        skipped=skipped + statuses["skipped"],
        failed=len(failures),
        failures=failures,
        seconds=time.monotonic() - start,
        out=str(out),
    )


@contextlib.contextmanager
def _executor(executor: Executor | None, client, workers: int | None) -> Iterator[Executor]:
    """Where the points run: on ``executor``, else on the Dask ``client``'s executor (the client closed
    afterwards), else on a local pool of ``workers`` processes (shut down afterwards): :func:`fsc.pool.executor`."""
    if executor is not None:
        yield executor
    else:
        with pool_executor(client, workers, initializer=init_pool_worker, initargs=(os.getpid(),)) as pool:
            yield pool


def _record_failures(sweep: Sweep, records: dict[str, dict], out: Path) -> tuple[dict, ...]:
    """The failed points' records, in the spec's order, also written to ``out/failures.json`` (removed when
    there are none)."""
    failures = tuple(  # in the spec's order
        {"run": point.name, "arguments": dict(point.arguments), **{k: v for k, v in records[point.name].items() if k != "status"}}
        for point in sweep.points
        if point.name in records and records[point.name]["status"] == "failed"
    )
    if failures:
        write_text(out / "failures.json", json.dumps(list(failures), indent=2) + "\n")
    else:
        (out / "failures.json").unlink(missing_ok=True)
    return failures


def _run_points(executor: Executor, points: list[Point], out: Path, quiet: bool, command, done: int, total: int) -> dict[str, dict]:
    """Run ``points`` on ``executor``: each first without waiting on its lock, so that a point another driver
    holds goes to the back of the queue and this one takes the next; at the back it waits for that owner."""
    from tqdm import tqdm

    def submit(point: Point, wait_for_lock: bool) -> Future:
        run_dir, lock = out / "runs" / point.name, out / "locks" / f"{point.name}.lock"
        return executor.submit(run_point, point.argv(), str(run_dir), str(lock), point.stop(), command, wait_for_lock)

    futures: dict[Future, Point] = {submit(point, False): point for point in points}
    records: dict[str, dict] = {}
    bar = tqdm(total=total, initial=done, unit="point", file=sys.stderr, disable=quiet or not sys.stderr.isatty(), dynamic_ncols=True)
    try:
        running = set(futures)
        while running:
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                point = futures[future]
                try:
                    record = future.result()
                except Exception as error:  # the worker itself failed (a lost Dask worker, a broken pool)
                    record = {"status": "failed", "exit": None, "error": f"{type(error).__name__}: {error}", "stderr": [], "seconds": None}
                if record["status"] == "busy":  # queued behind every point submitted so far
                    later = submit(point, True)
                    futures[later] = point
                    running.add(later)
                    continue
                records[point.name] = record
                failed = sum(r["status"] == "failed" for r in records.values())
                if failed:
                    bar.set_postfix_str(f"{failed} failed", refresh=False)
                bar.update(1)
    except BaseException:
        for future in futures:
            future.cancel()
        raise
    finally:
        bar.close()
    return records


def _write_sweep_record(sweep: Sweep, out: Path) -> None:
    """Make ``out/runs`` and write ``out/sweep.json``: the sweep's name, its spec and its points (run name and arguments)."""
    (out / "runs").mkdir(parents=True, exist_ok=True)
    record = {
        "name": sweep.name,
        "spec": dict(sweep.spec),
        "points": [{"run": point.name, "arguments": dict(point.arguments)} for point in sweep.points],
    }
    write_text(out / "sweep.json", json.dumps(record, indent=2) + "\n")
