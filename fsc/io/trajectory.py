"""Trajectories: the rows of a training run, kept as compact columns and written as ``trajectory.npz``.

One row per accepted step (or per kept step, with thinning): ``t, step``, the world's metrics (``q`` for
the two-hypothesis task), ``gain, dt, seconds, grad_norm, evaluations``.  ``trajectory.npz`` holds them as
binary columns, written at each checkpoint at the cost of a copy; ``trajectory.csv`` (on request, and what
runs wrote before) holds ``t, step``, the metrics, ``gain, dt, seconds`` with floats written by ``repr``, so
that they read back exactly.  :func:`read_trajectory` reads either (docs/formats.md).
"""

from __future__ import annotations

import array
import io
import os
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fsc.errors import InputError
from fsc.files import NpzArchive, atomic_write
from fsc.limits import MAX_NPZ_BYTES, MAX_NPZ_INFLATED

if TYPE_CHECKING:  # fsc export reads and writes trajectories without torch
    from fsc.optim import Record

__all__ = [
    "FORMAT", "RESERVED", "TRAJECTORY", "TRAJECTORY_CSV", "Trajectory", "csv_header", "metric_key", "read_trajectory", "trajectory_file",
    "trajectory_row", "write_csv", "write_trajectory",
]  # fmt: skip

#: A run directory's trajectory (binary columns), and its CSV (on request; what runs wrote before).
TRAJECTORY = "trajectory.npz"
TRAJECTORY_CSV = "trajectory.csv"
#: The ``format`` entry of ``trajectory.npz``.
FORMAT = "fsc-trajectory/1"


#: The columns of every trajectory around the world's metrics: ``t, step`` before them, then these (the last
#: two are kept in the checkpoint only), with their dtypes.
_BEFORE = {"t": np.float64, "step": np.int64}
_AFTER = {"gain": np.float64, "dt": np.float64, "seconds": np.float64, "grad_norm": np.float64, "evaluations": np.int64}
COLUMNS = {**_BEFORE, **_AFTER}


#: The names a world's metric cannot have as they are in a record the framework writes: the trajectory's
#: columns, the keys of ``result.json`` and of the commands' records.  Such a metric is written ``metric:NAME``
#: everywhere.  (``q`` is no such name: where a world has it, records put it first, as the metric it is.)
RESERVED = frozenset(COLUMNS) | {
    "format", "value", "stop", "out", "steps", "engine", "residual", "fallback", "nodes", "memory", "pomdp", "mu", "reset",
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
    """The rows so far, as compact columns: what the checkpoint, ``trajectory.npz`` and (on request)
    ``trajectory.csv`` are written from.

    Columns: ``t, step``, one per metric of the world (in the world's order), ``gain, dt, seconds``, and
    ``grad_norm, evaluations``.  The metrics are known from the first row (or from the checkpoint's columns).
    A row costs eight numbers appended; its CSV line is formatted only when a CSV is written, once.
    """

    def __init__(self, columns: dict[str, np.ndarray] | None = None) -> None:
        self.metrics: tuple[str, ...] = ()
        self.columns: dict[str, array.array] = {}
        self._lines: list[str] = []  # the CSV lines of the first rows, kept once formatted
        if columns is not None:
            self._start(tuple(name for name in columns if name not in COLUMNS))
            for name, column in self.columns.items():
                _extend(column, columns[name])

    def _start(self, metrics: tuple[str, ...]) -> None:
        self.metrics = metrics
        # A CSV line from t, step, the metrics, gain, dt and seconds.
        self._format = "{!r},{}," + "{!r}," * len(metrics) + "{!r},{!r},{:.6f}\n"
        dtypes = {**_BEFORE, **dict.fromkeys(metrics, np.float64), **_AFTER}
        self.columns = {name: array.array("q" if dtype is np.int64 else "d") for name, dtype in dtypes.items()}

    @property
    def header(self) -> str:
        return csv_header(self.metrics)

    def __len__(self) -> int:
        return len(self.columns["t"]) if self.columns else 0

    def append(self, row: dict[str, Any]) -> None:
        if not self.columns:
            self._start(tuple(name for name in row if name not in COLUMNS))
        if set(row) != set(self.columns):
            raise AssertionError(f"a trajectory row with the columns {sorted(row)}, not {sorted(self.columns)}")
        for name, column in self.columns.items():
            column.append(row[name])

    def extend(self, steps: dict[str, Any]) -> None:
        """Append the rows of :attr:`fsc.optim.Record.skipped` (columns of the same numbers as
        :func:`trajectory_row` gives for each step's record)."""
        metrics = {metric_key(name): column for name, column in steps["metrics"].items()}
        columns = {"t": steps["t"], "step": steps["step"], **metrics, **{name: steps[name] for name in _AFTER}}
        if not self.columns:
            self._start(tuple(metrics))
        if set(columns) != set(self.columns):
            raise AssertionError(f"trajectory rows with the columns {sorted(columns)}, not {sorted(self.columns)}")
        # (An interrupt between two columns leaves some longer: trim() then drops all these rows.)
        for name, column in self.columns.items():
            _extend(column, columns[name])

    def last(self, name: str):
        return self.columns[name][-1] if len(self) else None

    def trim(self) -> None:
        """Drop a row that an interrupt left half-appended: every column as long as the shortest."""
        if not self.columns:
            return
        rows = min(len(column) for column in self.columns.values())
        for column in self.columns.values():
            del column[rows:]
        del self._lines[rows:]

    def arrays(self) -> dict[str, np.ndarray]:
        # A consistent snapshot: an interrupt between two columns' appends leaves one column a row longer;
        # only whole rows are saved.
        rows = min((len(column) for column in self.columns.values()), default=0)
        return {name: np.frombuffer(column, dtype=_dtype(column), count=rows).copy() for name, column in self.columns.items()}

    def csv_lines(self) -> list[str]:
        """The CSV lines of the whole rows (:func:`csv_header`'s columns), each formatted once: a run that
        writes its CSV at every checkpoint formats each row once in all."""
        rows = min((len(column) for column in self.columns.values()), default=0)
        del self._lines[rows:]
        if len(self._lines) < rows:
            on_line = ("t", "step", *self.metrics, "gain", "dt", "seconds")
            new = zip(*(self.columns[name][len(self._lines) : rows] for name in on_line), strict=True)
            self._lines.extend(self._format.format(*row) for row in new)
        return self._lines


def _dtype(column: array.array) -> type:
    return np.int64 if column.typecode == "q" else np.float64


def _extend(column: array.array, values: Any) -> None:
    """Append ``values`` (an array or a list of numbers) to ``column`` at the cost of a copy of their bytes."""
    column.frombytes(np.ascontiguousarray(values, dtype=_dtype(column)).tobytes())


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


def write_trajectory(path: Path, trajectory: Trajectory) -> None:
    """``trajectory.npz``: one array per column of :class:`Trajectory` (``step`` and ``evaluations`` int64, the
    others float64), in its order, and ``format`` (:data:`FORMAT`); written atomically."""
    arrays = {**trajectory.arrays(), "format": np.array(FORMAT)}
    atomic_write(path, lambda f: np.savez(f, **arrays))


def write_csv(path: Path, trajectory: Trajectory) -> None:
    """``trajectory.csv``: :func:`csv_header`, then a line per row (floats with ``repr``: they read back
    exactly; ``seconds`` to the microsecond); written atomically."""

    def write(f: io.BufferedWriter) -> None:
        f.write((trajectory.header + "\n").encode())
        f.write("".join(trajectory.csv_lines()).encode())

    atomic_write(path, write)


def trajectory_file(run: str | os.PathLike) -> Path | None:
    """The trajectory of the run directory ``run``: its ``trajectory.npz``, else its ``trajectory.csv`` (runs
    made before the binary file, and the CSV export), else ``None``."""
    for name in (TRAJECTORY, TRAJECTORY_CSV):
        if (Path(run) / name).is_file():
            return Path(run) / name
    return None


def read_trajectory(path: str | os.PathLike, columns: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Columns of a trajectory as arrays, by name: a ``trajectory.npz``, a ``trajectory.csv`` or a run directory
    (its :func:`trajectory_file`).

    The columns start ``t, step``; ``step`` (and ``evaluations``) are int64, every other column float64 (the
    metrics of the world, ``gain``, ``dt``, ``seconds``; a ``.npz`` has ``grad_norm`` and ``evaluations``
    too).  ``columns``: read only these (a long run holds millions of rows; a column costs 8 bytes a row,
    nothing more is held).  A CSV's rows must have the header's number of fields (with ``columns``, only a
    short row is caught); a ``.npz``'s columns must have one length.

    Raises:
        FileNotFoundError: no such file, or a run directory without a trajectory.
        ValueError: not a trajectory, or no such column (naming the file).
    """
    path = Path(path)
    if path.is_dir():
        found = trajectory_file(path)
        if found is None:
            raise FileNotFoundError(f"{str(path)!r} holds no trajectory ({TRAJECTORY} or {TRAJECTORY_CSV})")
        path = found
    if columns is not None and len(set(columns)) != len(columns):
        raise InputError(f"columns must not repeat a name, got {list(columns)!r}")
    if path.suffix == ".npz":
        return _read_npz(path, columns)
    return _read_csv(path, columns)


def _wanted(path: Path, names: list[str], columns: Sequence[str] | None) -> list[str]:
    """The columns to read among the file's ``names``, or an error naming a missing one."""
    wanted = names if columns is None else list(columns)
    missing = [name for name in wanted if name not in names]
    if missing:
        raise InputError(f"{str(path)!r} has no column {missing[0]!r} (it has {', '.join(names)})")
    return wanted


def _read_npz(path: Path, columns: Sequence[str] | None) -> dict[str, np.ndarray]:
    try:
        with NpzArchive(path, "trajectory", max_bytes=MAX_NPZ_BYTES, max_inflated=MAX_NPZ_INFLATED) as data:
            if "format" not in data.files:
                raise InputError(f"{str(path)!r} is not a trajectory (no 'format' entry)")
            data.check_shape("format", (), kinds="U", max_nbytes=4096)
            if str(data["format"]) != FORMAT:
                raise InputError(f"{str(path)!r} is not a trajectory of this version (format {str(data['format'])!r}, expected {FORMAT!r})")
            names = [name for name in data.files if name != "format"]
            if names[:2] != ["t", "step"]:
                raise InputError(f"{str(path)!r} is not a trajectory (columns {names!r}, expected 't', 'step', ...)")
            missing = [name for name in COLUMNS if name not in names]
            if missing:
                raise InputError(f"{str(path)!r} is not a trajectory (no column {missing[0]!r}; it has {', '.join(names)})")
            shapes = {name: data.header(name) for name in names}
            lengths = {len(shape) == 1 and shape[0] for shape, _ in shapes.values()}
            if len(lengths) != 1 or lengths == {False} or any(dtype.kind not in "fiu" for _, dtype in shapes.values()):
                raise InputError(f"{str(path)!r} is not a trajectory (its columns are not number columns of one length)")
            wanted = _wanted(path, names, columns)
            return {name: np.asarray(data[name], dtype=COLUMNS.get(name, np.float64)) for name in wanted}
    except (OSError, EOFError, KeyError, zipfile.BadZipFile) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise InputError(f"{str(path)!r} is not a trajectory ({type(error).__name__}: {error})") from None


def _read_csv(path: Path, columns: Sequence[str] | None) -> dict[str, np.ndarray]:
    with open(path) as f:
        header = f.readline().strip()
        names = header.split(",")
        if names[:2] != ["t", "step"] or len(set(names)) != len(names):
            raise InputError(f"{str(path)!r} is not a trajectory (header {header!r}, expected 't,step,...')")
        wanted = _wanted(path, names, columns)
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
