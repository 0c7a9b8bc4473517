"""Training runs on disk: a run directory that survives being killed.

:func:`run_training` trains a controller of the two-hypothesis task with
:func:`fsc.optim.optimize` and keeps everything in one directory ``out``:

``run.json``
    every argument, the optimiser's hyperparameters, the torch thread count,
    the versions of fsc (and its git commit), torch, numpy, numba and Python, the status (``running`` or
    ``done``), why the run stopped and the final numbers.
``trajectory.csv``
    header ``t,step,q,gain,dt,seconds``, one row per accepted step from step 0
    (``dt``: the size of the step that led to the row, 0 on the first;
    floats written with ``repr`` so they read back exactly; ``seconds``: wall
    time since the run started, over every session).
``result.json``
    the final ``q``, ``t``, ``steps``, ``seconds`` (and ``gain``,
    ``evaluations``, ``stop``), written last: the run is finished when it
    exists (it is removed when a run is continued).
``initial_policy.npz``, ``policy.npz``
    the starting and the final policy (:meth:`fsc.Policy.save`).
``checkpoint.npz`` (+ ``checkpoint.json``, a readable copy of its metadata)
    the optimiser state (logits, the gradient there, ``t``, ``step``, the next
    ``dt``, Adam's moments) and the whole trajectory so far, written every
    ``checkpoint_seconds`` of wall time and at the end.  There is no random
    state to keep: training is deterministic once the initial policy exists.
``checkpoint.previous.npz``
    the checkpoint before the latest: a run resumes from it (saying so on one
    line) when the latest is unusable, and starts again when both are.

Every file is written atomically (:func:`fsc.policy.atomic_write`): a reader
never sees half a file.  Started again with the same arguments, a run resumes
from its last checkpoint and rewrites ``trajectory.csv`` from the trajectory
stored in it, so a killed-and-resumed run ends with the same policy and the
same trajectory, bit for bit, as an uninterrupted one (same engine, same
thread count) except the wall-clock ``seconds`` column.  Bit-for-bit
reproducibility needs a fixed number of torch threads: ``threads`` (default 1)
sets it for the duration of the run.  Besides ``quiet``,
``checkpoint_seconds`` and ``threads``, only the stop conditions (``until_t``,
``max_seconds``, ``max_steps``) may change between sessions: stopping never
changes the path, so a run continued to a larger ``until_t`` equals a run
started with it.  An interrupt (SIGINT, Ctrl-C) writes a checkpoint before
the run stops; SIGKILL loses at most ``checkpoint_seconds`` of work.  Nothing
is pickled.

Also a command: ``python -m fsc.train --memory ram:8 --init near-ccp --reset 1e-3
--until-t 1e5 --out runs/x [--json]`` (the ``fsc train`` options).
"""

from __future__ import annotations

import array
import bisect
import functools
import io
import json
import math
import os
import platform
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import torch

from .arguments import MAY_CHANGE
from .checks import real
from .errors import InputError, InputTypeError
from .evaluate import CONVENTIONS, resolve_reset
from .limits import MAX_THREADS
from .memory import MemoryArchitecture, parse_memory
from .optim import OPTIMIZERS, Point, Record, State, StopRule, make_optimizer, optimize
from .policy import Policy, atomic_write
from .pomdp import POMDP, Task, as_pomdp
from .rundir import RunLock, read_run_json

__all__ = ["CSV_HEADER", "TrainingResult", "load_checkpoint", "main", "read_trajectory", "run_training"]

#: The header of ``trajectory.csv`` for the two-hypothesis task (metric ``q``); other worlds put their own
#: metrics between ``step`` and ``gain``.
CSV_HEADER = "t,step,q,gain,dt,seconds"

#: Arguments that may differ when a run is continued (they only say when to stop, or how to show it).
_MAY_CHANGE = MAY_CHANGE  # stop conditions and how the run runs (fsc.arguments)

_FORMAT = "fsc-training-checkpoint/1"

#: The columns of every trajectory around the world's metrics: ``t, step`` before them, then these (the last
#: two are kept in the checkpoint only), with their dtypes.
_BEFORE = {"t": np.float64, "step": np.int64}
_AFTER = {"gain": np.float64, "dt": np.float64, "seconds": np.float64, "grad_norm": np.float64, "evaluations": np.int64}
_BASE = {**_BEFORE, **_AFTER}


def metric_column(name: str) -> str:
    """The trajectory column of the world's metric ``name`` (``metric:gain`` if it is called like a column of its own)."""
    return f"metric:{name}" if name in _BASE or name.startswith("metric:") else name


class _Trajectory:
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
            self._start(tuple(name for name in columns if name not in _BASE))
            for name in self.columns:
                self.columns[name].extend(columns[name].tolist())
            self.lines = [self._line({name: self.columns[name][i] for name in self.columns}) for i in range(len(self))]

    def _start(self, metrics: tuple[str, ...]) -> None:
        self.metrics = metrics
        dtypes = {**_BEFORE, **dict.fromkeys(metrics, np.float64), **_AFTER}
        self.columns = {name: array.array("q" if dtype is np.int64 else "d") for name, dtype in dtypes.items()}

    @property
    def header(self) -> str:
        return ",".join(["t", "step", *self.metrics, "gain", "dt", "seconds"])

    def _line(self, row: dict[str, Any]) -> str:
        metrics = "".join(f"{row[name]!r}," for name in self.metrics)
        return f"{row['t']!r},{row['step']},{metrics}{row['gain']!r},{row['dt']!r},{row['seconds']:.6f}\n"

    def __len__(self) -> int:
        return len(self.columns["t"]) if self.columns else 0

    def append(self, row: dict[str, Any]) -> None:
        if not self.columns:
            self._start(tuple(name for name in row if name not in _BASE))
        if set(row) != set(self.columns):
            raise AssertionError(f"a trajectory row with the columns {sorted(row)}, not {sorted(self.columns)}")
        for name, column in self.columns.items():
            column.append(row[name])
        self.lines.append(self._line(row))

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

    def summary(self) -> dict[str, Any]:
        """JSON-able numbers: ``q`` (where the world defines it), ``t``, ``steps``, ``seconds`` first, then ``value``."""
        return {
            **({} if math.isnan(self.q) else {"q": self.q}),
            "t": self.t,
            "steps": self.steps,
            "seconds": self.seconds,
            "value": self.value,
            "gain": self.gain,
            **{_summary_key(name): value for name, value in self.metrics.items() if name != "q"},
            "evaluations": self.evaluations,
            "stop": self.stop,
            "out": self.out,
        }


def _summary_key(name: str) -> str:
    taken = {"q", "t", "steps", "seconds", "value", "gain", "evaluations", "stop", "out"}
    return f"metric:{name}" if name in taken else name


# ---------------------------------------------------------------------------
# Argument checks.


def _memory(memory: object, world: POMDP) -> MemoryArchitecture:
    if isinstance(memory, MemoryArchitecture):
        arch = memory
    elif isinstance(memory, str):
        arch = parse_memory(memory, arms=world.num_actions, observations=world.num_observations)
    else:
        raise InputTypeError(f"memory must be a string like 'ram:8' or a fsc.MemoryArchitecture, got {memory!r}")
    if arch.num_actions != world.num_actions or arch.num_observations != world.num_observations:
        raise InputError(
            f"memory {arch!r} has {arch.num_actions} actions and {arch.num_observations} observations, "
            f"the world {world.num_actions} and {world.num_observations}"
        )
    return arch


CONVERGED = 1e-9  # relative change of the gain over a decade of t that ends a run without until_t


def _world(mu: object, pomdp: object, world: object = None) -> tuple[POMDP | Task, dict[str, Any]]:
    """The world of a run, and what ``run.json`` records of it: the two-hypothesis world of ``mu``, the
    ``.POMDP`` file ``pomdp`` (its sha256), or ``world`` itself, a POMDP or an object whose ``.pomdp`` is one
    (the sha256 of its ``.POMDP`` text, :func:`fsc.pomdp_file.format_pomdp`)."""
    import hashlib

    given = [name for name, value in (("mu", mu), ("pomdp", pomdp), ("world", world)) if value is not None]
    if len(given) > 1:
        raise InputError(f"give one of mu (the two-hypothesis world), pomdp (a .POMDP file) and world, got {' and '.join(given)}")
    if world is not None:
        from .pomdp_file import format_pomdp

        as_pomdp(world)  # a POMDP, or an object whose .pomdp is one
        return world, {"world": hashlib.sha256(format_pomdp(world).encode()).hexdigest()}
    if pomdp is None:
        import tasks  # the two-hypothesis world

        mu = 0.1 if mu is None else mu
        return tasks.TwoHypothesis(mu), {"mu": float(mu)}
    if not isinstance(pomdp, (str, os.PathLike)):
        raise InputTypeError(f"pomdp must be a path to a .POMDP file, got {pomdp!r}")
    from .pomdp_file import read_pomdp

    try:
        return read_pomdp(pomdp), {"pomdp": hashlib.sha256(Path(pomdp).read_bytes()).hexdigest()}
    except OSError as error:
        raise InputError(f"pomdp: cannot read {str(pomdp)!r}: {error.strerror or error}") from None


def converged(t: Sequence[float], gain: Sequence[float], tolerance: float = CONVERGED) -> bool:
    """Whether a run has converged: from ``t >= 10``, the gain changed by at most
    ``tolerance`` of its size between ``t / 10`` and ``t`` (``t`` increasing)."""
    now = t[-1]
    if now < 10:
        return False
    i = bisect.bisect_right(t, now / 10) - 1
    return i >= 0 and abs(gain[-1] - gain[i]) <= tolerance * max(abs(gain[-1]), 1e-300)


def _memory_text(arch: MemoryArchitecture) -> str | dict:
    for kind, size in (("RAM", "M"), ("Chain", "M"), ("Column", "M"), ("Memento", "m")):
        spec = arch.to_dict()
        if spec["kind"] == kind and spec.get("arms") == 2 and spec.get("observations") == 2:
            return f"{kind.lower()}:{spec[size]}"
    return arch.to_dict()


def _initial_policy(init: str, arch: MemoryArchitecture, *, mu: float, reset: float, seed: int, convention: str) -> Policy:
    if init.endswith((".npz", ".json")):
        policy = Policy.load(init)
    else:
        import policies  # the initialisations live in the `policies` package

        # The paper convention is the published code's set-up, start included.
        policy = policies.initial_policy(init, arch, mu=mu, reset=reset, seed=seed, published=convention == "paper")
    return policy


# ---------------------------------------------------------------------------
# Files.


def _versions() -> dict[str, str | None]:
    """The versions a run was made (or last resumed) with; ``commit``: the project's git commit, ``+`` if edited since."""
    import numba

    from . import __version__

    return {
        "fsc": __version__,
        "commit": _source_commit(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "numba": numba.__version__,
        "python": platform.python_version(),
    }


@functools.cache
def _source_commit() -> str | None:
    """``git rev-parse HEAD`` of the checkout this package runs from (None outside one, or without git)."""
    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():  # an installed copy, not a checkout (which another repository may contain)
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=5, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+" if dirty.stdout.strip() else "")


def _write_json(path: Path, doc: dict) -> None:
    atomic_write(path, lambda f: f.write((json.dumps(doc, indent=2, allow_nan=True) + "\n").encode()))


def _row(record: Record) -> dict[str, Any]:
    return {
        "t": float(record.t),
        "step": int(record.step),
        **{metric_column(name): float(value) for name, value in record.metrics.items()},
        "gain": float(record.gain),
        "dt": float(record.dt),
        "seconds": float(record.seconds),
        "grad_norm": float(record.grad_norm),
        "evaluations": int(record.evaluations),
    }


def _write_csv(path: Path, trajectory: _Trajectory) -> None:
    def write(f: io.BufferedWriter) -> None:
        f.write((trajectory.header + "\n").encode())
        f.write("".join(trajectory.lines).encode())

    atomic_write(path, write)


def read_trajectory(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Columns of a ``trajectory.csv`` (a path or a run directory) as arrays, named by its header.

    The header starts ``t,step``; ``step`` is int64, every other column float64
    (the metrics of the world, ``gain``, ``dt``, ``seconds``).
    """
    path = Path(path)
    if path.is_dir():
        path = path / "trajectory.csv"
    with open(path) as f:
        header = f.readline().strip()
        names = header.split(",")
        if names[:2] != ["t", "step"] or len(set(names)) != len(names):
            raise InputError(f"{str(path)!r} is not a trajectory (header {header!r}, expected 't,step,...')")
        rows = [line.rstrip("\n").split(",") for line in f if line.strip()]
    if any(len(row) != len(names) for row in rows):
        raise InputError(f"{str(path)!r} is not a trajectory (a row without {len(names)} fields)")
    return {name: np.array([r[i] for r in rows], dtype=np.int64 if name == "step" else np.float64) for i, name in enumerate(names)}


#: The latest checkpoint of a run directory, and the one before it (the fallback when the latest is unusable).
CHECKPOINT = "checkpoint.npz"
PREVIOUS_CHECKPOINT = "checkpoint.previous.npz"


def _resume(out: Path, arguments: dict[str, Any]) -> tuple[State | None, _Trajectory]:
    """The state and trajectory of the latest usable checkpoint of ``out``.

    The latest checkpoint, else the previous one, else none (the run starts
    again from its initial policy); a fallback or a restart is said on one
    line of stderr.  Training with one thread is deterministic, so every
    choice ends in the same result.
    """
    problems = []
    for path in (out / CHECKPOINT, out / PREVIOUS_CHECKPOINT):
        if not path.exists():
            continue
        try:
            state, columns, saved = load_checkpoint(path)
        except ValueError as error:  # every detected corruption
            problems.append(str(error))
            continue
        _check_same_run(out, saved["arguments"], arguments)
        if problems:
            print(f"fsc: warning: {problems[0]}; resuming from the previous checkpoint (step {state.step})", file=sys.stderr, flush=True)
        return state, _Trajectory(columns)
    if problems:
        print(f"fsc: warning: {'; '.join(problems)}; restarting the run from the start", file=sys.stderr, flush=True)
    return None, _Trajectory()


def _save_checkpoint(out: Path, state: State, trajectory: _Trajectory, meta: dict[str, Any]) -> None:
    trajectory.trim()  # whole rows only, whenever the checkpoint is written
    point = state.point
    arrays: dict[str, np.ndarray] = {
        "logits": point.logits.numpy(),
        "init_logits": point.init_logits.numpy(),
        "grad_logits": point.grad_logits.numpy(),
        "grad_init": point.grad_init.numpy(),
        "gain": np.float64(point.gain),
        "metric_names": np.array(list(point.metrics), dtype=str),
        "metric_values": np.array(list(point.metrics.values()), dtype=np.float64),
        "t": np.float64(state.t),
        "step": np.int64(state.step),
        "dt": np.float64(state.dt),
        "evaluations": np.int64(state.evaluations),
        "rejections": np.int64(state.rejections),
        "seconds": np.float64(state.seconds),
    }
    for name, value in state.slots.items():
        arrays[f"slot_{name}"] = value.numpy() if isinstance(value, torch.Tensor) else np.float64(value)
    for name, column in trajectory.arrays().items():
        arrays[f"trajectory_{name}"] = column
    meta = {**meta, "format": _FORMAT, "step": state.step, "t": state.t, "rows": len(trajectory), "slots": sorted(state.slots)}
    arrays["meta"] = np.array(json.dumps(meta))
    atomic_write(out / CHECKPOINT, lambda f: np.savez(f, **arrays), previous=out / PREVIOUS_CHECKPOINT)
    _write_json(out / "checkpoint.json", meta)


def load_checkpoint(path: str | os.PathLike) -> tuple[State, dict[str, np.ndarray], dict[str, Any]]:
    """Read ``checkpoint.npz`` (a path or a run directory).

    Returns:
        ``(state, trajectory, meta)``: the optimiser state, the trajectory so
        far as columns (``t, step, q, gain, dt, seconds, grad_norm,
        evaluations``), and the metadata (arguments, optimiser).
    """
    path = Path(path)
    if path.is_dir():
        path = path / "checkpoint.npz"
    try:
        state, columns, meta = _load_checkpoint(path)
    except (OSError, EOFError, KeyError, IndexError, OverflowError, RecursionError, TypeError, AttributeError,
            zipfile.BadZipFile, json.JSONDecodeError) as error:
        raise InputError(f"{str(path)!r} is not a usable checkpoint ({type(error).__name__}: {error})") from None
    except ValueError as error:
        if isinstance(error, InputError) and str(path) in str(error):
            raise
        raise InputError(f"{str(path)!r} is not a usable checkpoint ({error})") from None
    lengths = {len(column) for column in columns.values()}
    if len(lengths) != 1 or (lengths and min(lengths) < 1) or not isinstance(meta.get("arguments"), dict):
        raise InputError(f"{str(path)!r} is not a usable checkpoint (trajectory columns of unequal lengths or no arguments)")
    return state, columns, meta


def _load_checkpoint(path: Path) -> tuple[State, dict[str, np.ndarray], dict[str, Any]]:
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
        if meta.get("format") != _FORMAT:
            raise InputError(f"{str(path)!r} is not a training checkpoint of this version (format {meta.get('format')!r})")
        tensor = lambda name: torch.from_numpy(np.array(data[name], dtype=np.float64))
        point = Point(
            logits=tensor("logits"),
            init_logits=tensor("init_logits"),
            gain=float(data["gain"]),
            metrics={str(k): float(v) for k, v in zip(data["metric_names"], data["metric_values"], strict=True)},
            grad_logits=tensor("grad_logits"),
            grad_init=tensor("grad_init"),
        )
        slots: dict[str, Any] = {}
        for name in meta["slots"]:
            value = data[f"slot_{name}"]
            slots[name] = float(value) if value.ndim == 0 else torch.from_numpy(np.array(value, dtype=np.float64))
        state = State(
            point=point,
            t=float(data["t"]),
            step=int(data["step"]),
            dt=float(data["dt"]),
            evaluations=int(data["evaluations"]),
            rejections=int(data["rejections"]),
            seconds=float(data["seconds"]),
            slots=slots,
        )
        names = [key[len("trajectory_") :] for key in data.files if key.startswith("trajectory_")]
        missing = set(_BASE) - set(names)
        if missing:
            raise InputError(f"{str(path)!r} is not a usable checkpoint (no trajectory column {sorted(missing)[0]!r})")
        columns = {name: np.array(data[f"trajectory_{name}"], dtype=_BASE.get(name, np.float64)) for name in names}
    lengths = {len(column) for column in columns.values()}
    if len(lengths) != 1 or (len(columns["step"]) and (np.any(np.diff(columns["step"]) <= 0) or columns["step"][-1] > state.step)):
        raise InputError(f"{str(path)!r} is inconsistent (trajectory columns of lengths {sorted(lengths)}); start the run again in another --out")
    return state, columns, meta


# ---------------------------------------------------------------------------
# Progress bar.


class _Progress:
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


# ---------------------------------------------------------------------------
# The run.


def run_training(
    *,
    mu: float | None = None,
    pomdp: str | os.PathLike | None = None,
    world: POMDP | Task | None = None,
    memory: str | MemoryArchitecture,
    init: str,
    seed: int = 0,
    reset: float | None = None,
    discount: float | None = None,
    until_t: float | None = None,
    out: str | os.PathLike,
    max_dgrad: float | None = None,
    max_seconds: float | None = None,
    convention: str = "native",
    optimizer: str = "flow",
    lr: float | None = None,
    engine: str = "auto",
    target: str = "gain",
    max_steps: int | None = None,
    rows_per_decade: int | None = None,
    quiet: bool = False,
    checkpoint_seconds: float = 60.0,
    threads: int | None = 1,
    policy: Policy | None = None,
) -> TrainingResult:
    """Train a controller in the run directory ``out`` (resuming it if it holds one).

    The arguments are those of ``fsc train``: ``--mu | --pomdp, --memory
    --init --seed --reset | --discount [--until-t] --out [--max-dgrad]
    [--max-seconds] [--convention] [--optimizer] [--lr] [--engine] [--quiet]``.

    Args:
        mu: the two-hypothesis world's gap, in (0, 1) (default 0.1).
        pomdp: instead, a ``.POMDP`` file; ``run.json`` records the sha256 of
            its content, so a run resumed with another file is refused.
        world: instead, the world itself (the API only): a ``fsc.POMDP`` or
            any object whose ``.pomdp`` is one (``tasks.Tiger()``, a task of
            yours); ``run.json`` records the sha256 of its ``.POMDP`` text.
        memory: ``ram:M``, ``chain:M``, ``column:M``, ``memento:m`` (sized to
            the world's actions and observations) or an architecture.
        init: an initialisation name of :func:`policies.initial_policy`, or a
            policy file (``.npz``/``.json``); with ``policy`` given, only
            recorded in ``run.json``.
        seed: seed of the initialisation.
        reset: reset probability ``r`` in (0, 1]; or ``discount``, ``r = 1 -
            discount``; given neither, the file's discount, else 1e-3.
        until_t: stop at the first accepted step with ``t >= until_t``.  None:
            stop when converged, i.e. when the gain has changed by at most
            ``CONVERGED`` (1e-9) of its size over the last decade of t
            (``t / 10`` to ``t``, from ``t >= 10``), or at another limit.
        out: the run directory.
        max_dgrad: flow only (default 1e-4).
        max_seconds: also stop after this much wall time (over all sessions).
        convention: ``native`` or ``paper`` (docs/model.md).
        optimizer: ``flow`` (gradient flow), ``adam`` or ``ascent``.
        lr: Adam / ascent only (defaults 1e-2 / 1).
        engine: ``auto``, ``adjoint`` or an engine of :func:`fsc.evaluate`
            (see :class:`fsc.optim.Objective`).
        target: climb the ``gain`` per step (default, docs/model.md) or the
            discounted ``return`` ``gain / r`` (paper eq. (4)).
        max_steps: also stop after this many accepted steps.
        quiet: no progress bar (there is none either when stderr is not a terminal).
        checkpoint_seconds: wall time between checkpoints.
        threads: torch threads during the run (restored afterwards); ``None``
            leaves torch's setting alone (and bit-for-bit resumes then need the
            same setting in every session).
        policy: the initial policy, already built (its architecture must be ``memory``).

    Returns:
        The :class:`TrainingResult`.

    Raises:
        ValueError, TypeError: a bad argument (naming it), or ``out`` holding a
            run with other arguments.  Raised before anything is written.
    """
    world, world_record = _world(mu, pomdp, world)
    arch = _memory(memory, as_pomdp(world))
    if not isinstance(init, str) or not init:
        raise InputTypeError(f"init must be an initialisation name or a policy file, got {init!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputTypeError(f"seed must be an int, got {seed!r}")
    if not 0 <= seed <= 2**63 - 1:
        raise InputError(f"seed must be in [0, 2**63 - 1], got {seed!r}")
    reset = resolve_reset(world, reset, discount, allow_zero=False, default=1e-3)
    if until_t is not None:
        until_t = real("until_t", until_t, nan=True)
        if not (math.isfinite(until_t) and until_t >= 0):
            raise InputError(f"until_t must be a finite number >= 0, got {until_t!r}")
    if convention not in CONVENTIONS:
        raise InputError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    if not isinstance(optimizer, str) or optimizer not in OPTIMIZERS:
        raise InputError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {optimizer!r}")
    if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1):
        raise InputError(f"max_steps must be an int >= 1 or None, got {max_steps!r}")
    if rows_per_decade is not None and (isinstance(rows_per_decade, bool) or not isinstance(rows_per_decade, int) or rows_per_decade < 1):
        raise InputError(f"rows_per_decade must be an int >= 1 or None, got {rows_per_decade!r}")
    rule = StopRule(until_t=until_t, max_steps=max_steps, max_seconds=max_seconds)
    opt = make_optimizer(optimizer, lr=lr, max_dgrad=max_dgrad)
    checkpoint_seconds = real("checkpoint_seconds", checkpoint_seconds, nan=True)
    if not checkpoint_seconds >= 0:
        raise InputError(f"checkpoint_seconds must be >= 0, got {checkpoint_seconds!r}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= MAX_THREADS):
        raise InputError(f"threads must be an int in [1, {MAX_THREADS}] or None, got {threads!r}")
    if not isinstance(out, (str, os.PathLike)):
        raise InputTypeError(f"out must be a directory path, got {out!r}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"out must be a directory, got the file {str(out)!r}")
    if policy is None:
        policy = _initial_policy(init, arch, mu=world_record.get("mu", 0.1), reset=reset, seed=seed, convention=convention)
    if not isinstance(policy, Policy):
        raise InputTypeError(f"policy must be a fsc.Policy, got {type(policy).__name__}")
    if policy.architecture != arch:
        raise InputError(f"the initial policy is for {policy.architecture!r}, not for memory {arch!r}")

    arguments = {
        **world_record,
        "memory": _memory_text(arch),
        "init": init,
        "seed": seed,
        "reset": reset,
        "until_t": until_t,
        "max_dgrad": max_dgrad,
        "max_seconds": max_seconds,
        "max_steps": max_steps,
        "rows_per_decade": rows_per_decade,
        "convention": convention,
        "optimizer": optimizer,
        "lr": lr,
        "engine": engine,
        "target": target,
        "out": str(out),
        "quiet": bool(quiet),
        "checkpoint_seconds": checkpoint_seconds,
        "threads": threads,
    }
    meta = {"arguments": arguments, "optimizer": opt.to_dict(), **({"pomdp_path": str(pomdp)} if pomdp is not None else {})}

    # An existing run must be this one.
    state, trajectory = None, _Trajectory()
    if (out / "run.json").exists():
        previous = read_run_json(out / "run.json")
        _check_same_run(out, previous.get("arguments", {}), arguments)
        if (out / "initial_policy.npz").exists() and not _same_policy(Policy.load(out / "initial_policy.npz"), policy):
            raise InputError(f"{str(out)!r} holds a run that started from another initial policy; use another out directory")
        state, trajectory = _resume(out, arguments)

    # Checks every remaining argument (engine, ...) before anything is written; runs nothing yet.
    records = optimize(world, policy, reset=reset, optimizer=opt, convention=convention, engine=engine, target=target, state=state, **attrs.asdict(rule))
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        with RunLock(out):  # one owner; then check again what another owner may have written meanwhile
            if (out / "run.json").exists():
                _check_same_run(out, read_run_json(out / "run.json").get("arguments", {}), arguments)
            if (out / "initial_policy.npz").exists() and not _same_policy(Policy.load(out / "initial_policy.npz"), policy):
                raise InputError(f"{str(out)!r} holds a run that started from another initial policy; use another out directory")
            keep = _Thinning(rows_per_decade, trajectory)
            return _train(records, arch, policy, rule, out, state is not None, trajectory, meta, quiet, checkpoint_seconds, reset, keep)
    finally:
        if threads is not None:
            torch.set_num_threads(previous_threads)


def _check_same_run(out: Path, saved: dict, arguments: dict) -> None:
    differ = sorted(k for k in set(saved) | set(arguments) if k not in _MAY_CHANGE and k != "out" and saved.get(k) != arguments.get(k))
    if differ:
        details = ", ".join(f"{k}: {_short(saved.get(k))} there, {_short(arguments.get(k))} now" for k in differ)
        raise InputError(f"{str(out)!r} holds a run with other arguments ({details}); use another out directory")


def _short(value: object) -> str:
    """``repr`` of an argument, or a digest of it when long (an automaton's tables)."""
    text = repr(value)
    if len(text) <= 120:
        return text
    import hashlib

    return f"<{len(text)} characters, sha256 {hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]}>"


def _same_policy(a: Policy, b: Policy) -> bool:
    return (
        a.architecture == b.architecture
        and np.array_equal(a.logits.detach().numpy(), b.logits.detach().numpy())
        and np.array_equal(a.init_logits.detach().numpy(), b.init_logits.detach().numpy())
    )


class _Thinning:
    """Which accepted steps become trajectory rows: every one, or with ``rows_per_decade = N`` step 0 and
    the first step in each interval ``[10^(k/N), 10^((k+1)/N))`` of ``t``.  The rule reads ``t`` only, so
    a resumed run keeps the rows an uninterrupted one keeps; its state is the bucket of the last row."""

    def __init__(self, rows_per_decade: int | None, trajectory: _Trajectory) -> None:
        self.per_decade = rows_per_decade
        last = trajectory.last("t")
        self.bucket = -math.inf if last is None or rows_per_decade is None else self._bucket(last)

    def _bucket(self, t: float) -> float:
        return math.floor(self.per_decade * math.log10(t)) if t > 0 else -math.inf

    def __call__(self, t: float, step: int) -> bool:
        if self.per_decade is None:
            return True
        bucket = self._bucket(t)
        if step == 0 or bucket > self.bucket:
            self.bucket = max(bucket, self.bucket)
            return True
        return False


class _DeferredInterrupt:
    """SIGINT during training takes effect between two steps, as a ``KeyboardInterrupt`` there.

    An interrupt that lands inside compiled code (:mod:`fsc.kernels`) would otherwise surface as a
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


def _train(records, arch, policy, rule, out, resumed, trajectory, meta, quiet, checkpoint_seconds, reset, keep) -> TrainingResult:
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").unlink(missing_ok=True)  # not finished until written again
    run_doc = {**meta, "versions": _versions(), "status": "running"}
    _write_json(out / "run.json", run_doc)
    if not (out / "initial_policy.npz").exists():
        policy.save(out / "initial_policy.npz")

    last_step = trajectory.last("step") if len(trajectory) else -1
    progress = _Progress(rule.until_t or 0.0, disable=quiet or not sys.stderr.isatty())
    last_checkpoint = time.monotonic()
    record = None
    interrupted = _DeferredInterrupt()
    try:
        for record in interrupted.between(records):
            if record.step > last_step:
                if keep(record.t, record.step):
                    trajectory.append(_row(record))
                last_step = record.step
            progress.update(record)
            if record.stop is None and rule.until_t is None and converged(trajectory.columns["t"], trajectory.columns["gain"]):
                record = attrs.evolve(record, stop="converged")
                break
            if record.stop is None and (time.monotonic() - last_checkpoint >= checkpoint_seconds or len(trajectory) == 1):
                _save_checkpoint(out, record.state, trajectory, meta)
                _write_csv(out / "trajectory.csv", trajectory)
                last_checkpoint = time.monotonic()
    except KeyboardInterrupt:
        if record is not None:
            _save_checkpoint(out, record.state, trajectory, meta)
            _write_csv(out / "trajectory.csv", trajectory)
        raise
    finally:
        progress.close()

    final = record.state
    _save_checkpoint(out, final, trajectory, meta)
    _write_csv(out / "trajectory.csv", trajectory)
    final.point.policy(arch).save(out / "policy.npz")
    result = TrainingResult(
        q=float(record.q),
        gain=float(record.gain),
        value=float(record.gain) / reset,
        t=float(record.t),
        steps=int(record.step),
        seconds=float(trajectory.last("seconds") if keep.per_decade is None else record.state.seconds),
        evaluations=int(record.evaluations),
        stop=str(record.stop),
        out=str(out),
        resumed=resumed,
        metrics={name: float(value) for name, value in record.metrics.items()},
    )
    _write_json(out / "run.json", {**run_doc, "status": "done", "stop": record.stop, "result": result.summary()})
    _write_json(out / "result.json", result.summary())
    return result


# ---------------------------------------------------------------------------
# Command line: python -m fsc.train (the options of `fsc train`).


def main(argv: list[str] | None = None) -> int:
    """``python -m fsc.train ARGS`` is ``fsc train ARGS`` (one parser, in :mod:`fsc.cli`)."""
    from .cli import main as cli_main

    return cli_main(["train", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
