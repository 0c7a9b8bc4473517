"""Trajectories: the rows of a training run, kept as compact columns and written as ``trajectory.csv``.

The CSV has one row per accepted step: ``t, step``, the world's metrics (``q``
for the two-hypothesis task), ``gain, dt, seconds``; floats are written with
``repr`` so that they read back exactly.  The checkpoint keeps two more
columns, ``grad_norm`` and ``evaluations`` (docs/formats.md).
"""

from __future__ import annotations

import array
import io
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fsc.errors import InputError
from fsc.files import atomic_write
from fsc.optim import Record

__all__ = ["RESERVED", "Trajectory", "csv_header", "metric_key", "read_trajectory", "trajectory_row", "write_csv"]


#: The columns of every trajectory around the world's metrics: ``t, step`` before them, then these (the last
#: two are kept in the checkpoint only), with their dtypes.
_BEFORE = {"t": np.float64, "step": np.int64}
_AFTER = {"gain": np.float64, "dt": np.float64, "seconds": np.float64, "grad_norm": np.float64, "evaluations": np.int64}
COLUMNS = {**_BEFORE, **_AFTER}


#: The names a world's metric cannot have as they are in a record the framework writes: the trajectory's
#: columns, the keys of ``result.json`` and of the commands' records.  Such a metric is written ``metric:NAME``
#: everywhere.  (``q`` is no such name: where a world has it, records put it first, as the metric it is.)
RESERVED = frozenset(COLUMNS) | {
    "value", "stop", "out", "steps", "engine", "residual", "fallback", "nodes", "memory", "pomdp", "mu", "reset",
    "convention", "policy", "episodes", "walkers", "q_stderr", "gain_stderr", "value_stderr",
}  # fmt: skip


def metric_key(name: str) -> str:
    """The key of the world's metric ``name`` in any record: ``metric:NAME`` if it is :data:`RESERVED` (or looks
    like such a key already), else ``name``."""
    return f"metric:{name}" if name in RESERVED or name.startswith("metric:") else name


def csv_header(metrics: Sequence[str]) -> str:
    """The header of ``trajectory.csv`` for a world with these metric columns (:func:`metric_key`), in order:
    ``t,step,METRICS,gain,dt,seconds`` (``t,step,q,gain,dt,seconds`` on the two-hypothesis task)."""
    return ",".join(["t", "step", *metrics, "gain", "dt", "seconds"])


class Trajectory:
    """The rows so far: compact columns (for the checkpoint) and their CSV lines.

    Columns: ``t, step``, one per metric of the world (in the world's order), ``gain, dt, seconds``, and
    ``grad_norm, evaluations`` (checkpoint only).  The metrics are known from the first row (or from the
    checkpoint's columns).
    """

    def __init__(self, columns: dict[str, np.ndarray] | None = None) -> None:
        self.metrics: tuple[str, ...] = ()
        self.columns: dict[str, array.array] = {}
        self.lines: list[str] = []
        if columns is not None:
            self._start(tuple(name for name in columns if name not in COLUMNS))
            for name in self.columns:
                self.columns[name].extend(columns[name].tolist())
            self.lines = [self._line({name: self.columns[name][i] for name in self.columns}) for i in range(len(self))]

    def _start(self, metrics: tuple[str, ...]) -> None:
        self.metrics = metrics
        # A CSV line from t, step, the metrics, gain, dt and seconds.
        self._format = "{!r},{}," + "{!r}," * len(metrics) + "{!r},{!r},{:.6f}\n"
        dtypes = {**_BEFORE, **dict.fromkeys(metrics, np.float64), **_AFTER}
        self.columns = {name: array.array("q" if dtype is np.int64 else "d") for name, dtype in dtypes.items()}

    @property
    def header(self) -> str:
        return csv_header(self.metrics)

    def _line(self, row: dict[str, Any]) -> str:
        return self._format.format(row["t"], row["step"], *(row[name] for name in self.metrics), row["gain"], row["dt"], row["seconds"])

    def __len__(self) -> int:
        return len(self.columns["t"]) if self.columns else 0

    def append(self, row: dict[str, Any]) -> None:
        if not self.columns:
            self._start(tuple(name for name in row if name not in COLUMNS))
        if set(row) != set(self.columns):
            raise AssertionError(f"a trajectory row with the columns {sorted(row)}, not {sorted(self.columns)}")
        for name, column in self.columns.items():
            column.append(row[name])
        self.lines.append(self._line(row))

    def extend(self, steps: dict[str, Any]) -> None:
        """Append the rows of :attr:`fsc.optim.Record.skipped` (columns of the same numbers as
        :func:`trajectory_row` gives for each step's record)."""
        metrics = {metric_key(name): column for name, column in steps["metrics"].items()}
        columns = {"t": steps["t"], "step": steps["step"], **metrics, **{name: steps[name] for name in _AFTER}}
        if not self.columns:
            self._start(tuple(metrics))
        if set(columns) != set(self.columns):
            raise AssertionError(f"trajectory rows with the columns {sorted(columns)}, not {sorted(self.columns)}")
        on_line = ("t", "step", *self.metrics, "gain", "dt", "seconds")
        lines = [self._format.format(*row) for row in zip(*(columns[name] for name in on_line), strict=True)]
        # (An interrupt between two columns leaves some longer: trim() then drops all these rows.)
        for name, column in self.columns.items():
            column.extend(columns[name])
        self.lines.extend(lines)

    def last(self, name: str):
        return self.columns[name][-1] if len(self) else None

    def trim(self) -> None:
        """Drop a row that an interrupt left half-appended: every column (and the CSV lines) as long as the shortest."""
        if not self.columns:
            return
        rows = min(min(len(column) for column in self.columns.values()), len(self.lines))
        for column in self.columns.values():
            del column[rows:]
        del self.lines[rows:]

    def arrays(self) -> dict[str, np.ndarray]:
        # A consistent snapshot: an interrupt between two columns' appends leaves one column a row longer;
        # only whole rows are saved.
        rows = min((len(column) for column in self.columns.values()), default=0)
        return {name: np.array(column[:rows], dtype=np.int64 if column.typecode == "q" else np.float64) for name, column in self.columns.items()}


def trajectory_row(record: Record) -> dict[str, Any]:
    return {
        "t": float(record.t),
        "step": int(record.step),
        **{metric_key(name): float(value) for name, value in record.metrics.items()},
        "gain": float(record.gain),
        "dt": float(record.dt),
        "seconds": float(record.seconds),
        "grad_norm": float(record.grad_norm),
        "evaluations": int(record.evaluations),
    }


def write_csv(path: Path, trajectory: Trajectory) -> None:
    def write(f: io.BufferedWriter) -> None:
        f.write((trajectory.header + "\n").encode())
        f.write("".join(trajectory.lines).encode())

    atomic_write(path, write)


def read_trajectory(path: str | os.PathLike, columns: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Columns of a ``trajectory.csv`` (a path or a run directory) as arrays, named by its header.

    The header starts ``t,step``; ``step`` is int64, every other column float64
    (the metrics of the world, ``gain``, ``dt``, ``seconds``).  ``columns``: read
    only these (a long run's file holds millions of rows; a column costs 8 bytes
    a row, nothing more is held).  Every row must have the header's number of
    fields; with ``columns``, only a short row is caught.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "trajectory.csv"
    with open(path) as f:
        header = f.readline().strip()
        names = header.split(",")
        if names[:2] != ["t", "step"] or len(set(names)) != len(names):
            raise InputError(f"{str(path)!r} is not a trajectory (header {header!r}, expected 't,step,...')")
        wanted = names if columns is None else list(columns)
        missing = [name for name in wanted if name not in names]
        if missing:
            raise InputError(f"{str(path)!r} has no column {missing[0]!r} (it has {', '.join(names)})")
        if len(set(wanted)) != len(wanted):
            raise InputError(f"columns must not repeat a name, got {list(wanted)!r}")
        read = wanted if columns is None or names[-1] in wanted else [*wanted, names[-1]]  # a short row fails on the last field
        dtype = np.dtype([(name, np.int64 if name == "step" else np.float64) for name in read])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # an empty trajectory: no rows, not a warning
            try:
                # Without usecols, loadtxt also refuses a row with more fields than the header.
                usecols = None if columns is None else [names.index(name) for name in read]
                rows = np.loadtxt(f, delimiter=",", comments=None, dtype=dtype, usecols=usecols, ndmin=1)
            except ValueError as error:
                raise InputError(f"{str(path)!r} is not a trajectory ({error})") from None
    return {name: np.ascontiguousarray(rows[name]) for name in wanted}
