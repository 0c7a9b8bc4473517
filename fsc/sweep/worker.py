"""One sweep point, in a worker: its lock, its trainer process, and the watchdog that stops it.

A point's directory has one writer at a time: a ``flock`` on ``OUT/locks/NAME.lock``, held by the worker and
passed to the trainer.  The trainer is the ``fsc train`` command (:mod:`fsc.train.command`) in a process of its
own: forked from a warm worker of the local pool, or a new interpreter (``python -m fsc.train``) on a Dask
cluster.  When the
driver dies, a worker of the local pool starts nothing more and stops its trainers, which checkpoint.
"""

from __future__ import annotations

import io
import json
import math
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fsc.checks import is_real
from fsc.sweep.spec import cap_not_reached

try:  # the per-point lock; absent on Windows
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None



def is_finished(run_dir: Path, stop: Mapping[str, Any]) -> bool:
    """``result.json`` exists, and ``run.json`` (where it says) is ``done`` with these stop conditions (or with
    another ``max_steps`` that the run never reached: it ends in the same place).

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
    result = run.get("result") if isinstance(run.get("result"), dict) else {}
    for key, value in stop.items():
        if key in recorded and recorded[key] != value and not _same_number(recorded[key], value):
            if not cap_not_reached(key, value, steps=result.get("steps", math.inf), stop=result.get("stop")):
                return False
    return True


def _same_number(a: object, b: object) -> bool:
    return is_real(a) and is_real(b) and float(a) == float(b)


#: Trainers running in this (pool worker) process, for the driver watchdog.
_CHILDREN: set[subprocess.Popen | _ForkedTrainer] = set()
#: Set once a local pool worker has imported the trainer and loaded its compiled kernels: it then forks
#: its trainers instead of starting a new interpreter for each.
#: The module whose ``python -m`` is the trainer, ``fsc train`` (:mod:`fsc.train.command`), a layer below this one.
TRAINER = "fsc.train"

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
    wait: bool = True,
) -> dict[str, Any]:
    """Run one point to its end in a subprocess (what a sweep's workers do).

    Args:
        argv: the point's ``fsc train`` options (:meth:`Point.argv`).
        run_dir: the run directory (absolute for a cluster).
        lock_path: the point's lock file (``None``: no lock).
        stop: the point's stop conditions, to tell a finished run (:meth:`Point.stop`).
        command: the trainer command, default ``[sys.executable, "-m", TRAINER]``
            (this worker's Python); ``--out RUN_DIR --quiet --json`` are added.
        wait: when another process holds the point's lock, wait for it (then skip the point if that
            owner finished it, or continue it); ``False``: return ``busy`` at once.

    Returns:
        A JSON-able record: ``status`` (``done``, ``skipped``, ``busy`` or ``failed``),
        ``result`` (the contents of ``result.json``) or ``exit``, ``error`` and
        ``stderr`` (its last lines), and ``seconds`` (wall time in the worker).
    """
    start = time.monotonic()
    run_dir_path = Path(run_dir)
    stop = dict(stop or {})
    if is_finished(run_dir_path, stop):
        return {"status": "skipped", "seconds": time.monotonic() - start}
    try:  # another owner: a second driver, an orphaned trainer
        fd = _lock(lock_path, wait)
    except BlockingIOError:
        return {"status": "busy", "seconds": time.monotonic() - start}
    try:
        if is_finished(run_dir_path, stop):  # finished by that other owner
            return {"status": "skipped", "seconds": time.monotonic() - start}
        process = _start_trainer(argv, run_dir, command, fd)
        if process is None:
            return {"status": "failed", "exit": None, "error": "the sweep driver is gone", "seconds": time.monotonic() - start}
        try:
            stdout, stderr = process.communicate()
        finally:
            _CHILDREN.discard(process)
    finally:
        if fd is not None:
            os.close(fd)
    return _outcome(process.returncode, stderr, run_dir_path, time.monotonic() - start)


def _lock(lock_path: str | None, wait: bool) -> int | None:
    """Take the point's lock: its open descriptor (``None`` without a lock file, or where there are no locks).

    Raises:
        BlockingIOError: another process holds the lock and ``wait`` is False.
    """
    if lock_path is None or fcntl is None:
        return None
    Path(lock_path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise
    return fd


def _start_trainer(argv: Sequence[str], run_dir: str, command: Sequence[str] | None, fd: int | None) -> subprocess.Popen | _ForkedTrainer | None:
    """Start the trainer of a point, passing it the lock ``fd``, and count it among this worker's children;
    ``None`` once the watchdog has seen the driver gone (then nothing starts)."""
    trainer = list(command) if command is not None else [sys.executable, "-m", TRAINER]
    full = [*trainer, *argv, f"--out={run_dir}", "--quiet", "--json"]
    with _START_LOCK:  # nothing starts once the watchdog has seen the driver gone
        if _DRIVER_GONE.is_set():
            return None
        if command is None and _FORK_READY and _threads(argv) == 1:
            process = _ForkedTrainer([*argv, f"--out={run_dir}", "--quiet", "--json"], keep_fd=fd)
        else:
            process = subprocess.Popen(
                full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, pass_fds=() if fd is None else (fd,)
            )
        _CHILDREN.add(process)
    return process


def _outcome(returncode: int, stderr: str, run_dir: Path, seconds: float) -> dict[str, Any]:
    """The record of a trainer that exited with ``returncode`` and wrote ``stderr``: ``done`` with the run's
    ``result.json``, else ``failed`` with the reason and the last lines of ``stderr``."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    if returncode == 0 and (run_dir / "result.json").is_file():
        try:
            result = json.loads((run_dir / "result.json").read_text())
        except (OSError, ValueError) as error:
            return _failure(0, f"cannot read result.json: {error}", lines, seconds)
        return {"status": "done", "result": result, "seconds": seconds}
    if returncode == 0:
        return _failure(0, "fsc train exited with status 0 but wrote no result.json", lines, seconds)
    if returncode < 0:
        error = f"fsc train was killed by signal {signal.Signals(-returncode).name}"
    else:
        error = lines[-1] if lines else f"fsc train exited with status {returncode}"
    return _failure(returncode, error, lines, seconds)


def _threads(argv: Sequence[str]) -> int:
    """The ``--threads`` of a point's options (1 when not given, the trainer's default)."""
    for option in argv:
        if option.startswith("--threads="):
            return int(option.partition("=")[2])
    return 1


class _ForkedTrainer:
    """``fsc train ARGS`` (:func:`fsc.train.command.main`) in a child forked from this pool worker, which has
    imported the trainer already.

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
                from fsc.train.command import main

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
        import fsc.train.command  # noqa: F401 - the trainer and all it imports
        import policies  # noqa: F401 - the initial policies
        import tasks  # noqa: F401 - the two-hypothesis world
        from fsc.model.memory import RAM
        from fsc.model.policy import Policy
        from fsc.model.pomdp import POMDP
        from fsc.objective import Objective
        from fsc.optim import GradientFlow, State

        two = np.full(2, 0.5)
        world = POMDP(  # two states, two actions, two observations: enough to run every kernel of a step
            transition=np.broadcast_to(two, (2, 2, 2)).copy(),
            observation=np.broadcast_to(two, (2, 2, 2)).copy(),
            reward=np.arange(16, dtype=np.float64).reshape(2, 2, 2, 2) / 16,
            initial=two,
        )
        policy = Policy.uniform(RAM(2))
        for engine in ("dense", "choices"):  # each engine's compiled step and multi-step run, as training calls them
            objective = Objective(world=world, architecture=RAM(2), reset=0.5, engine=engine)
            state = State(point=objective(policy.logits, policy.init_logits), slots={"next_dt": 1.0})
            GradientFlow().update(objective, state)
            GradientFlow().run(objective, state, lambda: 0.0, until_t=2.0, max_steps=None, rows=True)
    except Exception as error:  # noqa: BLE001 - the slower path still works
        print(f"fsc: warning: trainers start as new processes (warming this worker failed: {type(error).__name__}: {error})", file=sys.stderr, flush=True)
        return
    _FORK_READY = True


def _failure(code: int, error: str, lines: list[str], seconds: float) -> dict[str, Any]:
    return {"status": "failed", "exit": code, "error": error, "stderr": lines[-20:], "seconds": seconds}


def _ignore_signal(signum, frame) -> None:
    """A Python-level handler (unlike SIG_IGN it is not inherited by the trainers)."""


def init_pool_worker(driver_pid: int) -> None:
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
