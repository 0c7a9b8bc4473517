"""The training loop of a run on disk: records to trajectory rows, checkpoints on a clock, an interrupt
that waits for the end of a step, a progress bar, and the :class:`TrainingResult` at the end."""

from __future__ import annotations

import bisect
import math
import platform
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from fsc.io.checkpoint import save_checkpoint, write_json
from fsc.io.trajectory import TRAJECTORY, TRAJECTORY_CSV, Trajectory, metric_key, trajectory_row, write_csv, write_trajectory
from fsc.model.policy import Policy, Weights
from fsc.optim import Record, State
from fsc.provenance import source_commit

CONVERGED = 1e-9  # relative change of the gain over a decade of t that ends a run without until_t




def converged(t: Sequence[float], gain: Sequence[float], tolerance: float = CONVERGED) -> bool:
    """Whether a run has converged: from ``t >= 10``, the gain changed by at most
    ``tolerance`` of its size between ``t / 10`` and ``t`` (``t`` increasing)."""
    now = t[-1]
    if now < 10:
        return False
    i = bisect.bisect_right(t, now / 10) - 1
    return i >= 0 and abs(gain[-1] - gain[i]) <= tolerance * max(abs(gain[-1]), 1e-300)


def first_converged(t: Sequence[float], gain: Sequence[float], new_t: Sequence[float], new_gain: Sequence[float],
                    tolerance: float = CONVERGED) -> int | None:  # fmt: skip
    """The index of the first of the rows ``(new_t, new_gain)``, appended one by one after the rows ``(t,
    gain)``, at which :func:`converged` holds, or ``None``: the same numbers, compared the same way, for a
    whole compiled run of steps at once (two binary searches per row instead of a Python call)."""
    old_t, old_gain = np.asarray(t, dtype=np.float64), np.asarray(gain, dtype=np.float64)
    new_t, new_gain = np.asarray(new_t, dtype=np.float64), np.asarray(new_gain, dtype=np.float64)
    edge = new_t / 10
    in_new = np.searchsorted(new_t, edge, side="right")  # rows of the new ones at or before t / 10 (all before the row)
    in_old = np.searchsorted(old_t, edge, side="right")
    reference = np.where(in_new > 0, new_gain[np.maximum(in_new - 1, 0)], old_gain[np.maximum(in_old - 1, 0)] if len(old_t) else np.nan)
    found = (new_t >= 10) & (in_new + in_old > 0) & (np.abs(new_gain - reference) <= tolerance * np.maximum(np.abs(new_gain), 1e-300))
    hits = np.flatnonzero(found)
    return int(hits[0]) if hits.size else None


def versions() -> dict[str, str | None]:
    """The versions a run was made (or last resumed) with; ``commit``: the project's git commit, ``+`` if edited since.
    torch's is its installed version, read without importing it (a run on numpy arrays imports none)."""
    import numba

    from fsc import __version__

    return {
        "fsc": __version__,
        "commit": source_commit(),
        "torch": _installed("torch"),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "python": platform.python_version(),
    }


def _installed(package: str) -> str | None:
    """The version of ``package`` as imported if it is, else as installed (``None``: not installed)."""
    module = sys.modules.get(package)
    if module is not None:
        return module.__version__
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


@attrs.frozen(kw_only=True)
class TrainingResult:
    """The end of a training run (what ``fsc train --json`` prints).

    Attributes:
        metrics: the world's metrics at the final policy (``q`` for the two-hypothesis task).
        q, gain: at the final policy (``q`` NaN in a world without it).
        value: ``gain / reset``, the discounted return (native convention).
        t: algorithm time reached; steps: accepted steps.
        seconds: wall time of the run over all its sessions.
        evaluations: value-and-gradient evaluations (accepted and rejected).
        stop: why it stopped (``until_t``, ``max_seconds``, ``max_steps``, ``stalled``, ``converged``).
        out: the run directory; resumed: this session continued a checkpoint.
        policy: the final policy (also in ``out/policy.npz``); its :class:`fsc.model.policy.Weights` when the
            run was on numpy arrays (``fsc train`` without torch, :mod:`fsc.train.command`).
        history: the trajectory's rows as columns (``t, step``, the metrics, ``gain, dt, seconds, grad_norm,
            evaluations``), as ``trajectory.npz`` and the checkpoint hold them.
    """

    q: float
    gain: float
    value: float
    t: float
    steps: int
    seconds: float
    evaluations: int
    stop: str
    out: str
    resumed: bool
    metrics: dict[str, float] = attrs.field(factory=dict)
    policy: Policy | Weights | None = attrs.field(default=None, eq=False, repr=False)
    history: dict[str, np.ndarray] = attrs.field(factory=dict, eq=False, repr=False)

    def summary(self) -> dict[str, Any]:
        """JSON-able numbers: ``q`` (where the world defines it), ``t``, ``steps``, ``seconds`` first, then ``value``."""
        return {
            **({} if math.isnan(self.q) else {"q": self.q}),
            "t": self.t,
            "steps": self.steps,
            "seconds": self.seconds,
            "value": self.value,
            "gain": self.gain,
            **{metric_key(name): value for name, value in self.metrics.items() if name != "q"},
            "evaluations": self.evaluations,
            "stop": self.stop,
            "out": self.out,
        }


# ---------------------------------------------------------------------------
# Progress bar.


class Progress:
    """A tqdm bar over ``log(1 + t)`` up to ``log(1 + until_t)``; silent when disabled."""

    def __init__(self, until_t: float, *, disable: bool) -> None:
        self.bar = None
        if disable:
            return
        from tqdm.auto import tqdm

        self.scale = 1000 / math.log1p(until_t) if until_t > 0 else 0.0
        self.bar = tqdm(total=1000, file=sys.stderr, mininterval=0.5, bar_format="{l_bar}{bar}| {elapsed}<{remaining}{postfix}", desc="train")

    def update(self, record: Record) -> None:
        if self.bar is None:
            return
        n = min(1000, int(self.scale * math.log1p(record.t)))
        if n > self.bar.n or record.stop is not None:
            self.bar.set_postfix_str(f"t={record.t:.4g} step={record.step} q={record.q:.6g}", refresh=False)
            self.bar.update(max(0, n - self.bar.n))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class Thinning:
    """Which accepted steps become trajectory rows: every one, or with ``rows_per_decade = N`` step 0, the
    first step in each interval ``[10^(k/N), 10^((k+1)/N))`` of ``t``, and the run's final step (the record
    that carries a stop), so that a thinned trajectory ends on the run's final state as ``result.json`` and
    ``policy.npz`` do.  The rule reads ``t`` only; a run resumed after it finished drops that final row
    unless the rule keeps it (the run goes on past it), so a resumed run keeps the rows an uninterrupted one
    keeps.  Its state is the bucket of the last row."""

    def __init__(self, rows_per_decade: int | None, trajectory: Trajectory) -> None:
        self.per_decade = rows_per_decade
        if rows_per_decade is not None and self._ends_off_the_rule(trajectory):
            for column in trajectory.columns.values():  # the previous session's final row: not a row of the rule
                del column[-1]
            trajectory.trim()
        last = trajectory.last("t")
        self.bucket = -math.inf if last is None or rows_per_decade is None else self._bucket(last)

    def _bucket(self, t: float) -> float:
        return math.floor(self.per_decade * math.log10(t)) if t > 0 else -math.inf

    def _ends_off_the_rule(self, trajectory: Trajectory) -> bool:
        """The last row is one the rule does not keep (a final row): not step 0, in the bucket of the row before."""
        if len(trajectory) < 2 or trajectory.last("step") == 0:
            return False
        t = trajectory.columns["t"]
        return self._bucket(t[-1]) <= self._bucket(t[-2])

    def due(self) -> float:
        """With thinning, a time below that of the next row: the flow need not stop before it.  A hair below
        the bucket's edge, so that rounding never makes a row come late."""
        if self.bucket == -math.inf:
            return 0.0
        return 10.0 ** ((self.bucket + 1) / self.per_decade) * (1 - 1e-9)

    def __call__(self, t: float, step: int, stop: str | None = None) -> bool:
        """Whether the step at ``t`` becomes a row; ``stop``: why the run ends there (``None``: it goes on)."""
        if self.per_decade is None:
            return True
        bucket = self._bucket(t)
        if step == 0 or bucket > self.bucket:
            self.bucket = max(bucket, self.bucket)
            return True
        return stop is not None


class DeferredInterrupt:
    """SIGINT during training takes effect between two steps, as a ``KeyboardInterrupt`` there.

    An interrupt that lands inside compiled code (:mod:`fsc.engines.kernels`) would otherwise surface as a
    ``SystemError`` at the call's return; deferred, it always finds a whole step and a checkpoint it
    can write.  Only in the main thread, and only over Python's default handler (a handler of the
    caller's own is left alone).
    """

    def __init__(self) -> None:
        self.pending = False

    def between(self, records):
        if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            yield from records
            return
        previous = signal.signal(signal.SIGINT, self._note)
        try:
            for record in records:
                yield record
                if self.pending:
                    raise KeyboardInterrupt
        finally:
            signal.signal(signal.SIGINT, previous)
        if self.pending:  # arrived after the last record: still an interrupt (a later one raises at once)
            raise KeyboardInterrupt

    def _note(self, signum, frame) -> None:
        self.pending = True


@attrs.frozen(kw_only=True, eq=False)
class Run:
    """A run directory opened for training: where it is, what it starts from or resumes, and what it records.

    Attributes:
        out: the directory; policy: the initial policy (or its numpy weights); reset: ``r`` (the value is ``gain / r``).
        state: the checkpoint's state it resumes (``None``: a new run); trajectory: its rows so far.
        meta: ``run.json``'s content besides versions and status; keep: which steps become rows.
        csv: write ``trajectory.csv`` too, beside ``trajectory.npz``.
    """

    out: Path
    policy: Policy | Weights
    reset: float
    state: State | None
    trajectory: Trajectory
    meta: dict[str, Any]
    keep: Thinning
    csv: bool = False


def train_loop(records: Iterator[Record], run: Run, config) -> TrainingResult:
    """Follow ``records`` to their end in ``run``'s directory: rows, checkpoints on a clock (at least every
    ``config.checkpoint_seconds``), an interrupt that waits for the end of a step, a progress bar (unless
    ``config.quiet``), a stop when converged (without ``config.until_t``), and the final files."""
    run_doc = _start(run)
    progress = Progress(config.until_t or 0.0, disable=config.quiet or not sys.stderr.isatty())
    trajectory, last_step = run.trajectory, run.trajectory.last("step") if len(run.trajectory) else -1
    last_checkpoint, record, whole = time.monotonic(), None, None  # whole: the last record whose steps before it are all rows
    try:
        for record in DeferredInterrupt().between(records):
            if record.skipped is not None:  # asked for only when every row is kept
                trajectory.extend(record.skipped)  # (interrupted between columns, a checkpoint trims them all off)
                last_step = record.skipped["step"][-1]
            whole = record
            if record.step > last_step:
                if run.keep(record.t, record.step, record.stop):
                    trajectory.append(trajectory_row(record))
                last_step = record.step
            progress.update(record)
            if record.stop is None and config.until_t is None and converged(trajectory.columns["t"], trajectory.columns["gain"]):
                record = attrs.evolve(record, stop="converged")
                break
            if record.stop is None and (time.monotonic() - last_checkpoint >= config.checkpoint_seconds or len(trajectory) == 1):
                _save(run, record.state)
                last_checkpoint = time.monotonic()
    except KeyboardInterrupt:
        if whole is not None:
            _save(run, whole.state)
        raise
    finally:
        progress.close()
    return _finish(run, run_doc, record)


def _start(run: Run) -> dict[str, Any]:
    """Mark the run as running (``result.json`` removed until written again); keep its initial policy."""
    run.out.mkdir(parents=True, exist_ok=True)
    (run.out / "result.json").unlink(missing_ok=True)  # not finished until written again
    run_doc = {**run.meta, "versions": versions(), "status": "running"}
    write_json(run.out / "run.json", run_doc)
    if len(run.trajectory):  # resumed: its rows on disk at once, as trajectory.npz (a run made before it had a CSV only)
        write_trajectory(run.out / TRAJECTORY, run.trajectory)
    if not run.csv:  # a CSV of an earlier session (or of a run made before trajectory.npz) would fall behind
        (run.out / TRAJECTORY_CSV).unlink(missing_ok=True)
    if not (run.out / "initial_policy.npz").exists():
        run.policy.save(run.out / "initial_policy.npz")
    return run_doc


def _save(run: Run, state: State) -> None:
    save_checkpoint(run.out, state, run.trajectory, run.meta)
    write_trajectory(run.out / TRAJECTORY, run.trajectory)
    if run.csv:
        write_csv(run.out / TRAJECTORY_CSV, run.trajectory)


def _finish(run: Run, run_doc: dict[str, Any], record: Record) -> TrainingResult:
    """The last checkpoint, the final policy, ``result.json`` (written last: the mark of a finished run)."""
    _save(run, record.state)
    policy = record.policy
    policy.save(run.out / "policy.npz")
    trajectory = run.trajectory
    result = TrainingResult(
        q=float(record.q),
        gain=float(record.gain),
        value=float(record.gain) / run.reset,
        t=float(record.t),
        steps=int(record.step),
        seconds=float(trajectory.last("seconds") if run.keep.per_decade is None else record.state.seconds),
        evaluations=int(record.evaluations),
        stop=str(record.stop),
        out=str(run.out),
        resumed=run.state is not None,
        metrics={name: float(value) for name, value in record.metrics.items()},
        policy=policy,
        history=trajectory.arrays(),
    )
    write_json(run.out / "run.json", {**run_doc, "status": "done", "stop": record.stop, "result": result.summary()})
    write_json(run.out / "result.json", result.summary())
    return result
