"""Sweeps: many ``fsc train`` runs, on a laptop or on a cluster (docs/sweeps.md).

A sweep spec (JSON or TOML) names a grid of ``fsc train`` arguments (:data:`ARGUMENTS`); each point is an
ordinary run directory ``OUT/runs/NAME`` trained by ``fsc train`` in a process of its own (forked from a
warm worker of the local pool, or ``python -m fsc.cli train`` on a Dask cluster); a point is finished
when its ``result.json`` exists, and a sweep run again continues the others from their checkpoints.  A point's directory has one writer at a time (a
``flock`` on ``OUT/locks/NAME.lock`` held by the worker and passed to the trainer); when the driver dies,
the local pool starts nothing more and stops its trainers, which checkpoint.  :func:`summarize` writes
``OUT/summary.csv`` and ``OUT/summary.png``.  The page docs/sweeps.md says all of it in full.

Also a command: ``python -m fsc.sweep SPEC --out DIR [--workers N | --scheduler ADDRESS] [--summary]
[--json] [--quiet]`` (the ``fsc sweep`` options).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import itertools
import json
import math
import os
import re
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import attrs

from .arguments import MAY_CHANGE, STOP, SWEEP_TYPES
from .errors import InputError, InputTypeError
from .limits import MAX_WORKERS, workers_arg

try:  # the per-point lock; absent on Windows
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

__all__ = [
    "ARGUMENTS",
    "Point",
    "Sweep",
    "SweepReport",
    "add_options",
    "load_spec",
    "main",
    "run",
    "run_point",
    "run_sweep",
    "summarize",
    "write_summary",
]

#: The ``fsc train`` arguments a spec may set, with their kind, in the order of the summary's columns.
ARGUMENTS: dict[str, str] = SWEEP_TYPES  # fsc train's arguments a spec may set, and their types (fsc.arguments)

#: Most points a spec may expand to (each is a run directory).
MAX_POINTS = 10**6

#: Arguments every point needs (``fsc train`` requires them).
REQUIRED = ("memory", "init", "until_t")

#: Arguments that only say when a run stops: a finished point run with other values is continued.
STOP_ARGUMENTS = STOP

#: Keys of a spec file.
SPEC_KEYS = ("name", "description", "out", "fixed", "grid")

#: Columns of ``summary.csv`` after the arguments.
RESULT_COLUMNS = ("status", "q", "t", "steps", "seconds", "stop", "q_start", "value")

_SET_BY_SWEEP = {"out": "the sweep's --out", "json": "the sweep", "quiet": "the sweep"}


# ---------------------------------------------------------------------------
# The spec.


@attrs.frozen(kw_only=True)
class Point:
    """One point of a sweep: the arguments of one ``fsc train`` run.

    Attributes:
        name: its run directory under ``OUT/runs``, one level per grid key (``memory=ram-8/init=random/seed=0``).
        arguments: ``fsc train`` arguments (keys of :data:`ARGUMENTS`), read-only.
        grid_keys: the keys this point's grid block varies, in the block's order.
    """

    name: str
    arguments: Mapping[str, Any] = attrs.field(eq=False)
    grid_keys: tuple[str, ...]

    def argv(self) -> list[str]:
        """The ``fsc train`` options of this point, without ``--out`` (``--until-t=1000.0`` ...)."""
        return [f"--{key.replace('_', '-')}={_text(value)}" for key, value in _ordered(self.arguments)]

    def stop(self) -> dict[str, Any]:
        """The point's stop conditions (``None`` where unset)."""
        return {key: self.arguments.get(key) for key in STOP_ARGUMENTS}


@attrs.frozen(kw_only=True)
class Sweep:
    """A checked sweep spec: its points in order.

    Build one with :func:`load_spec` or :meth:`from_dict`.
    """

    name: str
    description: str
    out: str | None
    points: tuple[Point, ...]
    spec: Mapping[str, Any] = attrs.field(eq=False, repr=False)

    @classmethod
    def from_dict(cls, doc: object, *, name: str = "sweep", source: str = "sweep spec") -> Sweep:
        """Check a spec given as a dict (the parsed file) and expand its grid.

        Args:
            doc: the spec.
            name: the name to use when the spec has none.
            source: how to refer to the spec in error messages (its path).

        Raises:
            TypeError, ValueError: naming the offending key and value.
        """
        if not isinstance(doc, Mapping):
            raise InputTypeError(f"{source}: a sweep spec must be an object with keys {', '.join(SPEC_KEYS)}, got {type(doc).__name__}")
        unknown = [key for key in doc if key not in SPEC_KEYS]
        if unknown:
            raise InputError(f"{source}: unknown key {unknown[0]!r}; a sweep spec has the keys {', '.join(SPEC_KEYS)}")
        for key in ("name", "description", "out"):
            if key in doc and not (isinstance(doc[key], str) and doc[key]):
                raise InputTypeError(f"{source}: {key!r} must be a non-empty string, got {doc[key]!r}")
        if "grid" not in doc:
            raise InputError(f"{source}: missing key 'grid' (an object of lists of fsc train arguments, or a list of such objects)")
        fixed = doc.get("fixed", {})
        if not isinstance(fixed, Mapping):
            raise InputTypeError(f"{source}: 'fixed' must be an object of fsc train arguments, got {fixed!r}")
        fixed = {_argument_key(key, source, "fixed"): _check_value(key, value, source, "fixed") for key, value in fixed.items()}
        if len(fixed) != len(doc.get("fixed", {})):
            raise InputError(f"{source}: 'fixed' gives the same argument twice (with '-' and with '_')")

        grid = doc["grid"]
        blocks = [grid] if isinstance(grid, Mapping) else grid
        if not isinstance(blocks, list):
            raise InputTypeError(f"{source}: 'grid' must be an object of lists, or a list of such objects, got {grid!r}")
        if not blocks:
            raise InputError(f"{source}: 'grid' is empty")
        points: list[Point] = []
        for index, block in enumerate(blocks):
            where = "grid" if isinstance(grid, Mapping) else f"grid[{index}]"
            points.extend(_expand(block, fixed, source, where))

        for point in points:
            missing = [key for key in REQUIRED if key not in point.arguments]
            if missing:
                raise InputError(f"{source}: every point needs {missing[0]!r} (in 'fixed' or in 'grid'); point {point.name!r} has none")
        seen: dict[str, Point] = {}
        for point in points:
            other = seen.setdefault(point.name, point)
            if other is not point:
                raise InputError(
                    f"{source}: two points would share the run directory {point.name!r} "
                    f"({_describe(other.arguments)} and {_describe(point.arguments)}); put the arguments that differ in the grid"
                )
        for point in points:
            parts = point.name.split("/")
            for depth in range(1, len(parts)):
                outer = seen.get("/".join(parts[:depth]))
                if outer is not None:
                    raise InputError(
                        f"{source}: the run directory of {_describe(point.arguments)} ({point.name!r}) would lie inside the one of "
                        f"{_describe(outer.arguments)} ({outer.name!r}); give the grid blocks the same keys, or put another key first"
                    )
        default_name = doc.get("name", name)
        return cls(name=default_name, description=doc.get("description", ""), out=doc.get("out"), points=tuple(points), spec=dict(doc))

    def keys(self) -> list[str]:
        """Every argument set by some point, in the order of :data:`ARGUMENTS`."""
        used = {key for point in self.points for key in point.arguments}
        return [key for key in ARGUMENTS if key in used]

    def varying_keys(self) -> list[str]:
        """The arguments whose value is not the same for every point."""
        return [key for key in self.keys() if len({_text(p.arguments.get(key)) for p in self.points}) > 1]


def load_spec(path: str | os.PathLike) -> Sweep:
    """Read and check a sweep spec from a ``.json`` or ``.toml`` file (see the module's docstring).

    Raises:
        ValueError, TypeError: the file is missing or unreadable, or the spec is bad (naming the key).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InputTypeError(f"spec must be a path to a .json or .toml file, got {path!r}")
    path = Path(path)
    if not path.is_file():
        raise InputError(f"sweep spec {str(path)!r} does not exist")
    text = path.read_text()
    if path.suffix.lower() == ".toml":
        try:
            import tomllib
        except ImportError:  # pragma: no cover - Python 3.10
            raise InputError(f"reading the TOML spec {str(path)!r} needs Python >= 3.11; write it as JSON") from None
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise InputError(f"sweep spec {str(path)!r} is not valid TOML: {error}") from None
    else:
        try:
            doc = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as error:
            raise InputError(f"sweep spec {str(path)!r} is not valid JSON: {error}") from None
    return Sweep.from_dict(doc, name=path.stem, source=str(path))


def _argument_key(key: object, source: str, where: str) -> str:
    if not isinstance(key, str):
        raise InputTypeError(f"{source}: keys of {where!r} must be strings, got {key!r}")
    name = key.replace("-", "_")
    if name in _SET_BY_SWEEP:
        raise InputError(f"{source}: {key!r} in {where!r} is set by {_SET_BY_SWEEP[name]}, not by the spec")
    if name not in ARGUMENTS:
        raise InputError(f"{source}: unknown fsc train argument {key!r} in {where!r}; expected one of {', '.join(ARGUMENTS)}")
    return name


def _check_value(key: str, value: object, source: str, where: str) -> object:
    name = key.replace("-", "_")
    kind = ARGUMENTS[name]
    if kind == "string":
        if not (isinstance(value, str) and value):
            raise InputTypeError(f"{source}: {key!r} in {where!r} must be a non-empty string, got {value!r}")
    elif kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputTypeError(f"{source}: {key!r} in {where!r} must be an integer, got {value!r}")
    else:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputTypeError(f"{source}: {key!r} in {where!r} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise InputError(f"{source}: {key!r} in {where!r} must be a finite number, got {value!r}")
    return value


def _expand(block: object, fixed: dict[str, Any], source: str, where: str) -> list[Point]:
    if not isinstance(block, Mapping):
        raise InputTypeError(f"{source}: {where!r} must be an object of lists of fsc train arguments, got {block!r}")
    if not block:
        raise InputError(f"{source}: {where!r} is empty; give at least one argument with a list of values")
    axes: dict[str, list[Any]] = {}
    for key, values in block.items():
        name = _argument_key(key, source, where)
        if name in axes:
            raise InputError(f"{source}: {where!r} gives {name!r} twice (with '-' and with '_')")
        if name in fixed:
            raise InputError(f"{source}: {key!r} is both in 'fixed' and in {where!r}")
        if not isinstance(values, list):
            raise InputTypeError(f"{source}: {key!r} in {where!r} must be a list of values, got {values!r}")
        if not values:
            raise InputError(f"{source}: {key!r} in {where!r} has no values")
        for value in values:
            _check_value(key, value, source, where)
        texts = [_text(value) for value in values]
        if len(set(texts)) != len(texts):
            raise InputError(f"{source}: {key!r} in {where!r} repeats a value: {values!r}")
        axes[name] = values
    keys = tuple(axes)
    count = math.prod(len(values) for values in axes.values())
    if count > MAX_POINTS:  # counted before anything is expanded
        raise InputError(f"{source}: {where!r} expands to {count:.3g} points, more than the limit of {MAX_POINTS:.0e} (fsc.sweep.MAX_POINTS)")
    points = []
    for combo in itertools.product(*axes.values()):
        varying = dict(zip(keys, combo, strict=True))
        arguments = {**fixed, **varying}
        # A block's single stop condition (a panel's horizon) does not name the directory: the run continued
        # with another horizon is the same run.
        named = {key: value for key, value in varying.items() if not (key in MAY_CHANGE and len(axes[key]) == 1)} or varying
        points.append(Point(name=_dir_name(named), arguments=dict(_ordered(arguments)), grid_keys=keys))
    return points


def _ordered(arguments: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [(key, arguments[key]) for key in ARGUMENTS if key in arguments]


def _text(value: object) -> str:
    """A value as it goes on the command line: floats by ``repr`` (exact), the rest by ``str``."""
    return repr(value) if isinstance(value, float) else str(value)


def _dir_name(varying: Mapping[str, Any]) -> str:
    """``memory=ram-8/init=random/seed=0``: one level per grid key, safe characters only, long levels shortened by a hash."""
    levels = []
    for key, value in varying.items():
        level = f"{key}={re.sub(r'[^A-Za-z0-9.+-]', '-', _text(value))}"
        if len(level) > 100:
            level = f"{level[:80]}-{hashlib.sha1(_text(value).encode()).hexdigest()[:12]}"
        levels.append(level)
    return "/".join(levels)


def _describe(arguments: Mapping[str, Any]) -> str:
    return " ".join(f"{key}={_text(value)}" for key, value in _ordered(arguments))


# ---------------------------------------------------------------------------
# One point, in a worker.


def _is_finished(run_dir: Path, stop: Mapping[str, Any]) -> bool:
    """``result.json`` exists, and ``run.json`` (where it says) is ``done`` with these stop conditions.

    ``fsc train`` writes ``result.json`` when (and only when) a run finished;
    the ``run.json`` checks catch a run that finished once, was started again
    with another ``until_t`` (``status`` back to ``running``) and was
    interrupted, and a point whose spec now asks for another ``until_t``.
    """
    if not (run_dir / "result.json").is_file():
        return False
    try:
        run = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return True
    recorded = run.get("arguments") if isinstance(run, dict) else None
    if not isinstance(recorded, dict):
        return True
    if run.get("status", "done") != "done":
        return False  # a stale result.json of a run continued since (to a larger until_t), then interrupted
    for key, value in stop.items():
        if key in recorded and recorded[key] != value and not _same_number(recorded[key], value):
            return False
    return True


def _same_number(a: object, b: object) -> bool:
    numbers = (int, float)
    return isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool) and float(a) == float(b)


#: Trainers running in this (pool worker) process, for the driver watchdog.
_CHILDREN: set[subprocess.Popen | _ForkedTrainer] = set()
#: Set once a local pool worker has imported the trainer and loaded its compiled kernels: it then forks
#: its trainers instead of starting a new interpreter for each.
_FORK_READY = False
#: Set by the watchdog when the driver is gone; with _START_LOCK, no trainer starts after that (issue 16).
_DRIVER_GONE = threading.Event()
_START_LOCK = threading.Lock()


def run_point(
    argv: Sequence[str],
    run_dir: str,
    lock_path: str | None = None,
    stop: Mapping[str, Any] | None = None,
    command: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Run one point to its end in a subprocess (what a sweep's workers do).

    Args:
        argv: the point's ``fsc train`` options (:meth:`Point.argv`).
        run_dir: the run directory (absolute for a cluster).
        lock_path: the point's lock file (``None``: no lock).
        stop: the point's stop conditions, to tell a finished run (:meth:`Point.stop`).
        command: the trainer command, default ``[sys.executable, "-m", "fsc.cli", "train"]``
            (this worker's Python); ``--out RUN_DIR --quiet --json`` are added.

    Returns:
        A JSON-able record: ``status`` (``done``, ``skipped`` or ``failed``),
        ``result`` (the contents of ``result.json``) or ``exit``, ``error`` and
        ``stderr`` (its last lines), and ``seconds`` (wall time in the worker).
    """
    start = time.monotonic()
    run_dir_path = Path(run_dir)
    stop = dict(stop or {})
    if _is_finished(run_dir_path, stop):
        return {"status": "skipped", "seconds": time.monotonic() - start}
    fd = None
    if lock_path is not None and fcntl is not None:
        Path(lock_path).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)  # waits for another owner (a second driver, an orphaned trainer)
    try:
        if _is_finished(run_dir_path, stop):  # finished by that other owner
            return {"status": "skipped", "seconds": time.monotonic() - start}
        trainer = list(command) if command is not None else [sys.executable, "-m", "fsc.cli", "train"]
        full = [*trainer, *argv, f"--out={run_dir}", "--quiet", "--json"]
        with _START_LOCK:  # nothing starts once the watchdog has seen the driver gone
            if _DRIVER_GONE.is_set():
                return {"status": "failed", "exit": None, "error": "the sweep driver is gone", "seconds": time.monotonic() - start}
            if command is None and _FORK_READY and _threads(argv) == 1:
                process = _ForkedTrainer(["train", *argv, f"--out={run_dir}", "--quiet", "--json"], keep_fd=fd)
            else:
                process = subprocess.Popen(
                    full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, pass_fds=() if fd is None else (fd,)
                )
            _CHILDREN.add(process)
        try:
            stdout, stderr = process.communicate()
        finally:
            _CHILDREN.discard(process)
    finally:
        if fd is not None:
            os.close(fd)
    seconds = time.monotonic() - start
    lines = [line for line in stderr.splitlines() if line.strip()]
    if process.returncode == 0 and (run_dir_path / "result.json").is_file():
        try:
            result = json.loads((run_dir_path / "result.json").read_text())
        except (OSError, ValueError) as error:
            return _failure(0, f"cannot read result.json: {error}", lines, seconds)
        return {"status": "done", "result": result, "seconds": seconds}
    if process.returncode == 0:
        return _failure(0, "fsc train exited with status 0 but wrote no result.json", lines, seconds)
    if process.returncode < 0:
        error = f"fsc train was killed by signal {signal.Signals(-process.returncode).name}"
    else:
        error = lines[-1] if lines else f"fsc train exited with status {process.returncode}"
    return _failure(process.returncode, error, lines, seconds)


def _threads(argv: Sequence[str]) -> int:
    """The ``--threads`` of a point's options (1 when not given, the trainer's default)."""
    for option in argv:
        if option.startswith("--threads="):
            return int(option.partition("=")[2])
    return 1


class _ForkedTrainer:
    """``fsc train ARGS`` in a child forked from this pool worker, which has imported the trainer already.

    A new interpreter would import torch, numpy, scipy and numba and load the compiled kernels again for
    every point: about 2 s, more than a short run trains.  Only points that train with one torch thread
    are forked (the default): a fork of a process whose ancestor ran an OpenMP team deadlocks when it
    starts a team of several threads, so the others get a new interpreter.  The child is a process of its own, as a
    subprocess is (its own pid, stdin from /dev/null, stdout and stderr to pipes, SIGINT back to
    Python's default so that it checkpoints, no descriptor of the worker kept but the point's lock), and
    this class offers the part of :class:`subprocess.Popen` that :func:`run_point` and the watchdog use.
    """

    def __init__(self, args: list[str], *, keep_fd: int | None) -> None:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child, measured through its output
            code = 1
            try:
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                keep = -1 if keep_fd is None else keep_fd
                os.closerange(3, max(keep, 3))
                os.closerange(max(keep + 1, 3), _MAX_FD)
                # The worker's sys.stdout and sys.stderr may be anything (a test's capture): use the pipes.
                sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
                sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)
                signal.signal(signal.SIGINT, signal.default_int_handler)
                from .cli import main

                code = main(args)
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        os.close(out_w)
        os.close(err_w)
        self.pid, self.args, self.returncode = pid, args, None
        self._pipes = (out_r, err_r)
        self._lock = threading.Lock()

    def communicate(self) -> tuple[str, str]:
        """Read stdout and stderr to their end, wait for the child; ``(stdout, stderr)``."""
        chunks: dict[int, list[bytes]] = {fd: [] for fd in self._pipes}
        with selectors.DefaultSelector() as selector:
            for fd in self._pipes:
                selector.register(fd, selectors.EVENT_READ)
            while selector.get_map():
                for key, _ in selector.select():
                    data = os.read(key.fd, 65536)
                    if data:
                        chunks[key.fd].append(data)
                    else:
                        selector.unregister(key.fd)
                        os.close(key.fd)
        self.wait()
        return tuple(b"".join(chunks[fd]).decode(errors="replace") for fd in self._pipes)

    def poll(self) -> int | None:
        with self._lock:
            if self.returncode is None:
                try:
                    pid, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:  # reaped elsewhere
                    pid, status = self.pid, 255 << 8
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.0005
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(delay)
            delay = min(2 * delay, 0.05)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        with self._lock:
            if self.returncode is None:
                os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


_MAX_FD = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 4096


def _warm_trainer() -> None:
    """Import the trainer and load its compiled kernels in this worker, then fork trainers from it.

    A failure leaves the worker starting each trainer as a new interpreter, and says so in one line.
    """
    global _FORK_READY
    if not hasattr(os, "fork"):
        return
    try:
        import numpy as np
        import torch

        # One torch thread in this worker and in the children it forks: a process forked from one that ran
        # an OpenMP team (the driver may have) deadlocks when it starts a team of several threads.
        torch.set_num_threads(1)
        from . import cli  # noqa: F401 - the command line and all it imports
        from .memory import RAM
        from .optim import GradientFlow, Objective, State
        from .policy import Policy
        from .pomdp import POMDP

        two = np.full(2, 0.5)
        world = POMDP(  # two states, two actions, two observations: enough to run every kernel of a step
            transition=np.broadcast_to(two, (2, 2, 2)).copy(),
            observation=np.broadcast_to(two, (2, 2, 2)).copy(),
            reward=np.arange(16, dtype=np.float64).reshape(2, 2, 2, 2) / 16,
            initial=two,
        )
        objective = Objective(world=world, architecture=RAM(2), reset=0.5, engine="dense")
        policy = Policy.uniform(RAM(2))
        point = objective(policy.logits, policy.init_logits)
        GradientFlow().advance(objective, State(point=point, slots={"next_dt": 1.0}), lambda: 0.0)
    except Exception as error:  # noqa: BLE001 - the slower path still works
        print(f"fsc: warning: trainers start as new processes (warming this worker failed: {type(error).__name__}: {error})", file=sys.stderr, flush=True)
        return
    _FORK_READY = True


def _failure(code: int, error: str, lines: list[str], seconds: float) -> dict[str, Any]:
    return {"status": "failed", "exit": code, "error": error, "stderr": lines[-20:], "seconds": seconds}


def _ignore_signal(signum, frame) -> None:
    """A Python-level handler (unlike SIG_IGN it is not inherited by the trainers)."""


def _init_pool_worker(driver_pid: int) -> None:
    """Initializer of the local pool's workers: leave Ctrl-C to the trainers; die with the driver."""
    signal.signal(signal.SIGINT, _ignore_signal)
    parent = os.getppid()
    _warm_trainer()
    threading.Thread(target=_watch_driver, args=(driver_pid, parent), name="fsc-sweep-watchdog", daemon=True).start()


def _watch_driver(driver_pid: int, parent: int, interval: float = 0.25, grace: float = 60.0) -> None:
    while os.getppid() == parent and _alive(driver_pid):
        time.sleep(interval)
    # The driver is gone: start nothing more, let the trainers checkpoint (SIGINT), then leave.
    with _START_LOCK:
        _DRIVER_GONE.set()
        children = list(_CHILDREN)
    for process in children:
        try:
            process.send_signal(signal.SIGINT)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    for process in children:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed driver not yet reaped by its parent is a zombie
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


# ---------------------------------------------------------------------------
# The driver.


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
        return {
            "points": self.points,
            "trained": self.trained,
            "skipped": self.skipped,
            "failed": self.failed,
            "seconds": self.seconds,
            "out": self.out,
            "failures": [{"run": f["run"], "arguments": f["arguments"], "error": f["error"]} for f in self.failures],
        }


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
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InputError(f"workers must be an integer >= 1, got {workers!r}")
    if workers is not None and workers > MAX_WORKERS:  # each is a trainer process: more only thrash
        raise InputError(f"--workers must be at most {MAX_WORKERS}, got {workers!r}")
    out = Path(out).resolve()
    if out.exists() and not out.is_dir():
        raise InputError(f"out must be a directory, got the file {str(out)!r}")
    start = time.monotonic()
    pending = [point for point in sweep.points if not _is_finished(out / "runs" / point.name, point.stop())]
    skipped = len(sweep.points) - len(pending)
    client = _dask_client(scheduler) if scheduler is not None and pending else None  # before writing anything
    (out / "runs").mkdir(parents=True, exist_ok=True)
    _write_text(out / "sweep.json", json.dumps(_sweep_record(sweep), indent=2) + "\n")

    records: dict[str, dict] = {}
    if pending:
        if executor is not None:
            records = _run_points(executor, pending, out, quiet, command, skipped, len(sweep.points))
        elif client is not None:
            try:
                records = _run_points(client.get_executor(pure=False), pending, out, quiet, command, skipped, len(sweep.points))
            finally:
                client.close()
        else:
            pool = ProcessPoolExecutor(max_workers=workers or _cpu_count(), initializer=_init_pool_worker, initargs=(os.getpid(),))
            try:
                records = _run_points(pool, pending, out, quiet, command, skipped, len(sweep.points))
            finally:
                pool.shutdown(wait=True, cancel_futures=True)

    failures = tuple(  # in the spec's order
        {"run": point.name, "arguments": dict(point.arguments), **{k: v for k, v in records[point.name].items() if k != "status"}}
        for point in sweep.points
        if point.name in records and records[point.name]["status"] == "failed"
    )
    if failures:
        _write_text(out / "failures.json", json.dumps(list(failures), indent=2) + "\n")
    else:
        (out / "failures.json").unlink(missing_ok=True)
    trained = sum(record["status"] == "done" for record in records.values())
    skipped += sum(record["status"] == "skipped" for record in records.values())
    return SweepReport(
        points=len(sweep.points),
        trained=trained,
        skipped=skipped,
        failed=len(failures),
        failures=failures,
        seconds=time.monotonic() - start,
        out=str(out),
    )


def _run_points(executor: Executor, points: list[Point], out: Path, quiet: bool, command, done: int, total: int) -> dict[str, dict]:
    from tqdm import tqdm

    futures: dict[Future, Point] = {}
    for point in points:
        run_dir = out / "runs" / point.name
        lock = out / "locks" / f"{point.name}.lock"
        futures[executor.submit(run_point, point.argv(), str(run_dir), str(lock), point.stop(), command)] = point
    records: dict[str, dict] = {}
    bar = tqdm(total=total, initial=done, unit="point", file=sys.stderr, disable=quiet or not sys.stderr.isatty(), dynamic_ncols=True)
    try:
        for future in as_completed(futures):
            point = futures[future]
            try:
                record = future.result()
            except Exception as error:  # the worker itself failed (a lost Dask worker, a broken pool)
                record = {"status": "failed", "exit": None, "error": f"{type(error).__name__}: {error}", "stderr": [], "seconds": None}
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


def _cpu_count() -> int:
    """CPUs this process may use (its affinity mask where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def _dask_client(address: str):
    try:
        from distributed import Client
    except ImportError:
        raise InputError(f"--scheduler {address!r} needs dask.distributed: pip install 'fsc[cluster]'") from None
    try:
        return Client(address, timeout="20s")
    except (OSError, TimeoutError) as error:
        raise InputError(f"cannot reach the Dask scheduler at {address!r}: {error}") from None


def _sweep_record(sweep: Sweep) -> dict[str, Any]:
    return {
        "name": sweep.name,
        "spec": dict(sweep.spec),
        "points": [{"run": point.name, "arguments": dict(point.arguments)} for point in sweep.points],
    }


def _write_text(path: Path, text: str) -> None:
    from .policy import atomic_write

    atomic_write(path, lambda f: f.write(text.encode()))


# ---------------------------------------------------------------------------
# Aggregation.


def summarize(sweep: Sweep, out: str | os.PathLike) -> list[dict[str, Any]]:
    """One row per point, in the spec's order: ``run``, its arguments, and :data:`RESULT_COLUMNS`.

    ``status`` is ``done`` (``result.json`` exists), ``failed`` (listed in
    ``failures.json`` by the last sweep) or ``pending``; the numbers are
    ``None`` unless done.  ``q_start`` is the first ``q`` of ``trajectory.csv``.
    """
    out = Path(out)
    failed = set()
    if (out / "failures.json").is_file():
        try:
            failed = {f["run"] for f in json.loads((out / "failures.json").read_text())}
        except (OSError, ValueError, KeyError, TypeError):
            failed = set()
    keys = sweep.keys()
    rows = []
    for point in sweep.points:
        run_dir = out / "runs" / point.name
        row: dict[str, Any] = {"run": point.name, **{key: point.arguments.get(key) for key in keys}}
        row.update(dict.fromkeys(RESULT_COLUMNS))
        result = None
        if (run_dir / "result.json").is_file():
            try:
                result = json.loads((run_dir / "result.json").read_text())
            except (OSError, ValueError):
                result = None
        if isinstance(result, dict):
            row["status"] = "done"
            for key in ("q", "t", "steps", "seconds", "stop", "value"):
                row[key] = result.get(key)
            trajectory = _read_trajectory(run_dir / "trajectory.csv")
            if trajectory is not None and len(trajectory[1]) and math.isfinite(trajectory[1][0]):
                row["q_start"] = float(trajectory[1][0])
        else:
            row["status"] = "failed" if point.name in failed else "pending"
        rows.append(row)
    return rows


def write_summary(sweep: Sweep, out: str | os.PathLike) -> list[dict[str, Any]]:
    """:func:`summarize`, written to ``out/summary.csv`` and drawn in ``out/summary.png``; returns the rows."""
    out = Path(out)
    rows = summarize(sweep, out)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    columns = list(rows[0]) if rows else ["run", *RESULT_COLUMNS]
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row[c] is None else _text(row[c]) for c in columns])
    _write_text(out / "summary.csv", buffer.getvalue())
    _plot_summary(sweep, out, out / "summary.png")
    return rows


def _read_trajectory(path: Path) -> tuple[list[float], list[float]] | None:
    """``(t, q)`` of a ``trajectory.csv``, or ``None`` when there is none (or the world has no ``q``)."""
    from .train import read_trajectory

    try:
        columns = read_trajectory(path)
    except (OSError, ValueError):
        return None
    return (columns["t"].tolist(), columns["q"].tolist()) if "q" in columns else None


def _plot_summary(sweep: Sweep, out: Path, path: Path) -> None:
    """The paper's Figure 4 for a sweep: q(t) per seed (faint), median over seeds (bold), log-log.

    One panel per ``memory`` (when it varies), one colour per value of the
    other arguments that vary inside the panel (but ``seed``), and a dashed
    line for the closed form where there is one (:func:`_references`).
    Drawn by :func:`viz.q_curves`.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    import viz

    panel_keys = [key for key in sweep.varying_keys() if key == "memory"]
    panels: dict[str, list[Point]] = {}
    for point in sweep.points:
        panel = ", ".join(f"{k}={_text(point.arguments.get(k))}" for k in panel_keys) or sweep.name
        panels.setdefault(panel, []).append(point)
    count = len(panels)
    columns = min(count, 2)
    rows = math.ceil(count / columns)
    figure = Figure(figsize=(6.0 * columns, 4.2 * rows), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for ax, (panel, points) in zip(axes, panels.items(), strict=False):
        colour_keys = [key for key in sweep.keys() if key not in ("seed", *panel_keys) and len({_text(p.arguments.get(key)) for p in points}) > 1]
        curves: dict[str, list[tuple[list[float], list[float]]]] = {}
        for point in points:
            run_dir = out / "runs" / point.name
            trajectory = _read_trajectory(run_dir / "trajectory.csv") if (run_dir / "result.json").is_file() else None
            if trajectory is not None and trajectory[0] and all(map(math.isfinite, trajectory[1])):  # a world without q has no curve
                trajectory = _clip(*trajectory, float(point.arguments["until_t"]))
                label = ", ".join(f"{k}={_text(point.arguments.get(k))}" for k in colour_keys) or "all"
                curves.setdefault(label, []).append(trajectory)
        viz.q_curves(curves, ax, reference=_references(points), title=panel)
        if not curves:
            text = "no q: see value in summary.csv" if any("pomdp" in p.arguments for p in points) else "no finished point yet"
            ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    for ax in axes[count:]:
        ax.set_visible(False)
    viz.save_figure(figure, path, dpi=110)


def _clip(t: list[float], q: list[float], until_t: float) -> tuple[list[float], list[float]]:
    """The curve up to ``until_t`` exactly (log-log interpolation of the last step), when it got there.

    Runs stop at the first step past ``until_t``, each a bit further; cut at
    ``until_t``, the seeds of a group end together and their median has no
    spurious last jump.
    """
    if until_t <= 0 or t[-1] <= until_t or len(t) < 2:
        return t, q
    k = next(i for i, value in enumerate(t) if value >= until_t)
    if k == 0 or min(t[k - 1], q[k - 1], q[k]) <= 0:
        return t[: k + 1], q[: k + 1]
    t0, q0, t1, q1 = t[k - 1], q[k - 1], t[k], q[k]
    w = math.log(until_t / t0) / math.log(t1 / t0)
    return [*t[:k], until_t], [*q[:k], math.exp((1 - w) * math.log(q0) + w * math.log(q1))]


def _references(points: Sequence[Point]) -> dict[str, float]:
    """Reference lines for a panel whose points share ``memory``, ``mu``, ``reset`` and ``convention``.

    Decided by :func:`policies.reference.reference_lines`, in the points'
    convention (default ``native``, as ``fsc train``): RAM and Column the
    symmetric and asymmetric CCP at ``r``; Memento the necklace policy
    optimised at ``r`` and Theorem 4.3's ``q*``.  None when the values differ
    or there is no known family.
    """
    defaults = (("memory", None), ("mu", 0.1), ("reset", 1e-3), ("convention", "native"))
    shared = {key: {_text(p.arguments.get(key, default)) for p in points} for key, default in defaults}
    if any(len(values) != 1 for values in shared.values()):
        return {}
    first = points[0].arguments
    mu, reset = float(first.get("mu", 0.1)), float(first.get("reset", 1e-3))
    from policies.reference import reference_lines

    try:
        return reference_lines(str(first["memory"]), mu, reset, str(first.get("convention", "native")))
    except (ValueError, TypeError):  # a size or value the closed forms do not take: no line
        return {}


def _median_rows(sweep: Sweep, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Final q over seeds, per group of the other varying arguments: seeds done, median, min, max."""
    import statistics

    keys = [key for key in sweep.varying_keys() if key != "seed"]
    groups: dict[tuple, list[float]] = {}
    for row in rows:
        group = groups.setdefault(tuple(_text(row[k]) for k in keys), [])
        if row["status"] == "done" and isinstance(row["q"], (int, float)):
            group.append(float(row["q"]))
    table = []
    for group, qs in groups.items():
        record: dict[str, Any] = dict(zip(keys, group, strict=True))
        record.update(
            seeds=len(qs),
            q_median=statistics.median(qs) if qs else None,
            q_min=min(qs) if qs else None,
            q_max=max(qs) if qs else None,
        )
        table.append(record)
    return table


def _format_table(records: list[dict[str, Any]], columns: list[str]) -> str:
    def cell(value: object, column: str) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.3f}" if column == "seconds" else f"{value:.6g}" if column in ("t", "until_t") else f"{value:.10g}"
        return str(value)

    cells = [[cell(r.get(c), c) for c in columns] for r in records]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Command line: `fsc sweep` (registered by fsc.cli) and `python -m fsc.sweep`.

HELP = "run a sweep of fsc train points (local pool or Dask cluster); --summary collects it"


def add_options(p: argparse.ArgumentParser) -> None:
    """Add the ``fsc sweep`` options to ``p``."""
    p.add_argument("spec", help="sweep spec, a .json or .toml file (e.g. examples/sweeps/fig4-small.json)")
    p.add_argument("--out", default=None, metavar="DIR", help="sweep directory (default: the spec's 'out'); points go to DIR/runs/NAME")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=workers_arg, default=None, metavar="N", help="local process pool size (default: the number of CPUs)")
    where.add_argument("--scheduler", default=None, metavar="ADDRESS", help="run on the Dask cluster of this scheduler (tcp://host:8786)")
    p.add_argument(
        "--summary", action="store_true", help="train nothing: collect the finished points into DIR/summary.csv and DIR/summary.png, print the table"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    """Run ``fsc sweep``: 0 when every point is finished, 1 when some point failed (listed on stderr)."""
    sweep = load_spec(args.spec)
    out = args.out if args.out is not None else sweep.out
    if out is None:
        raise InputError(f"no output directory: give --out DIR, or an 'out' key in {args.spec!r}")
    if args.out is None and (Path(out).is_absolute() or ".." in Path(out).parts):  # a spec writes under the cwd only
        raise InputError(f"the 'out' of {args.spec!r} ({out!r}) must be a relative path under the current directory "
                         "without '..'; give --out DIR to write elsewhere")
    if args.summary:
        if args.workers is not None or args.scheduler is not None:
            raise InputError("--summary trains nothing: drop --workers / --scheduler")
        if not Path(out).is_dir():
            raise InputError(f"{out!r} holds no sweep (run `fsc sweep {args.spec} --out {out}` first)")
        rows = write_summary(sweep, out)
        if args.json:
            print(json.dumps({"rows": rows, "medians": _median_rows(sweep, rows), "csv": str(Path(out) / "summary.csv")}))
            return 0
        columns = [*sweep.varying_keys(), "status", "q", "t", "steps", "seconds"]
        print(_format_table(rows, columns))
        medians = _median_rows(sweep, rows)
        if any(key == "seed" for key in sweep.varying_keys()):
            print()
            print("median over seeds")
            print(_format_table(medians, list(medians[0]) if medians else []))
        print(f"\nwrote {Path(out) / 'summary.csv'} and {Path(out) / 'summary.png'}", file=sys.stderr)
        return 0

    report = run_sweep(sweep, out, workers=args.workers, scheduler=args.scheduler, quiet=args.quiet)
    for failure in report.failures:
        print(f"fsc sweep: failed: {_describe(failure['arguments'])}: {failure['error']}", file=sys.stderr)
    if report.failures:
        print(f"fsc sweep: {report.failed} of {report.points} points failed; see {Path(report.out) / 'failures.json'}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.summary()))
    else:
        record = {k: v for k, v in report.summary().items() if k != "failures"}
        width = max(len(k) for k in record)
        for key, value in record.items():
            print(f"{key:<{width}}  {f'{value:.3f}' if isinstance(value, float) else value}")
    return 1 if report.failures else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m fsc.sweep ...``: the same as ``fsc sweep ...``."""
    from fsc import cli, sweep  # this module by its name, also under `python -m` (workers unpickle fsc.sweep.run_point)

    cli.COMMANDS.setdefault("sweep", (sweep.run, sweep.add_options, sweep.HELP))
    return cli.main(["sweep", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
