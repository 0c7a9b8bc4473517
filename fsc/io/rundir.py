"""Run directories on disk: only new or ours, one owner at a time, readable run files, writable places.

``fsc train --out DIR`` writes only into a directory that is new (missing, or empty) or ours (it holds the
``run.json`` every run writes first, a JSON object with ``arguments``); anything else (a directory of the
user's files, ``/etc`` through a symbolic link, a dangling link) is refused with one line
(:func:`check_run_directory`). Symbolic links are resolved before that decision.

``fsc train --out DIR`` takes an exclusive, non-blocking ``flock`` on the directory ``DIR`` itself (no lock
file is left behind) for as long as it runs: a second ``fsc train`` on the same directory is refused with one line instead of mixing two runs' files.
The lock is released by the kernel when the process ends, however it ends (no stale lock after a kill).

``fsc solve --out DIR`` follows the same rules with its own mark: it writes only into a directory that is new
(missing, or empty) and holds its lock while it runs (:class:`RunLock` with :func:`check_solve_directory`).  A
directory holding a solution (``solution.json``), a training run (``run.json``) or anything else is refused: a
solution is never replaced, better or worse.  All of it is decided, and the directory made and probed for
writing, before the time limit starts.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from fsc.errors import InputError, quoted
from fsc.files import read_limited, remove_stale_temporaries, temporary_target
from fsc.limits import MAX_RECORD_BYTES

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no ownership lock
    fcntl = None

__all__ = ["RUN_FILES", "SOLVE_FILES", "RunLock", "check_run_directory", "check_solve_directory", "make_directory", "probe_writable",
           "read_run_json"]  # fmt: skip

#: The files a run writes in its directory: ``run.json`` first (the mark of a run directory), the others after.
#: Their temporaries, left by a kill during a write, are removed by the next run (:class:`RunLock`).
RUN_FILES = ("run.json", "initial_policy.npz", "checkpoint.npz", "checkpoint.previous.npz", "checkpoint.json", "trajectory.npz",
             "trajectory.csv", "policy.npz", "result.json")  # fmt: skip


#: The files ``fsc solve`` writes in its directory: ``policy.npz``, then ``solution.json`` (written last: the mark of a solution).
SOLVE_FILES = ("policy.npz", "solution.json")


def _only_our_temporaries(directory: Path, files: tuple[str, ...] = RUN_FILES) -> bool:
    """Whether ``directory`` holds nothing but temporaries of ``files`` (a run killed before its first file was
    in place)."""
    return all(temporary_target(entry.name) in files for entry in os.scandir(directory))


def check_owned_directory(out: str | os.PathLike, what: str, refusal: Callable[[Path], str | None], *, name_link: bool = True) -> Path:
    """``out`` with its symbolic links resolved, when it is new or ours to write into; else ``ValueError``.

    New: missing (its parents are made later). Ours: an existing directory for which ``refusal(directory)`` is
    ``None``; otherwise it returns what is wrong, said after ``what`` and the path. Refused too: a file, a
    dangling symbolic link, an empty or blank text (the current directory, named by nobody), a path that cannot
    be resolved (a name too long). Links are resolved before deciding, so whatever a link points to is judged; with
    ``name_link`` the message also says where the link leads.
    """
    if isinstance(out, str) and not out.strip():  # "" would be the current directory, named by nobody
        raise InputError(f"{what} must name a directory, got {quoted(out)}")
    path = Path(out)
    try:  # a name too long, a loop of links, a component that is a file: said as the option's
        resolved = Path(os.path.realpath(path))
        exists = resolved.exists()
    except (OSError, ValueError) as error:
        raise InputError(f"{what} {quoted(out)} cannot be used: {getattr(error, 'strerror', None) or error}") from None
    shown = f"{what} {quoted(out)}" + (f" (the link leads to {quoted(resolved)})" if name_link and resolved != path.absolute() else "")
    if os.path.lexists(path) and not path.exists():
        raise InputError(f"{what} {quoted(out)} is a dangling symbolic link; give a new directory")
    if not exists:
        return resolved
    if not resolved.is_dir():
        raise InputError(f"{shown} is not a directory; give a new directory")
    try:
        wrong = refusal(resolved)
    except OSError as error:
        raise InputError(f"{shown} cannot be listed: {error.strerror or error}") from None
    if wrong is not None:
        raise InputError(f"{shown} {wrong}")
    return resolved


def check_run_directory(out: str | os.PathLike, option: str = "--out") -> Path:
    """``out`` resolved, when it is new or ours to write a run into (:func:`check_owned_directory`); else ``ValueError``.

    New: missing, or an empty directory (or one holding only temporaries a killed run left). Ours: a directory
    holding ``run.json`` (read and checked by :func:`read_run_json`). Refused: anything else.
    """

    def refusal(directory: Path) -> str | None:
        if (directory / "run.json").exists():
            read_run_json(directory / "run.json")
            return None
        if _only_our_temporaries(directory):
            return None
        return "already holds files that are not an fsc run (no run.json); give a new or empty directory"

    return check_owned_directory(out, option, refusal)


def check_solve_directory(out: str | os.PathLike, option: str = "--out") -> Path:
    """``out`` resolved, when ``fsc solve`` may write its solution there (:func:`check_owned_directory`); else
    ``ValueError``.

    New: missing, or an empty directory (or one holding only temporaries a killed solve left). Refused: a
    directory holding a solution (``solution.json``: never replaced, a better one no more than a worse one), a
    training run (``run.json``), or anything else.
    """

    def refusal(directory: Path) -> str | None:
        if (directory / "solution.json").exists():
            return "holds a solution already (solution.json), which fsc solve never replaces; give a new directory"
        if (directory / "run.json").exists():
            return "holds an fsc train run (run.json); give a new directory"
        if _only_our_temporaries(directory, SOLVE_FILES):
            return None
        return "already holds files that are not a solution of fsc solve; give a new or empty directory"

    return check_owned_directory(out, option, refusal)


def probe_writable(directory: Path, option: str = "--out") -> None:
    """Create and remove a temporary file in ``directory`` (named as :func:`fsc.files.atomic_write` names its own),
    or raise ``ValueError`` naming ``option``: a read-only file system or a directory without write permission
    is found before the work, not when its result is written."""
    try:
        fd, name = tempfile.mkstemp(dir=directory, prefix=".solution.json.", suffix=".tmp")
        os.close(fd)
        os.unlink(name)
    except OSError as error:
        raise InputError(f"{option} {quoted(directory)} is not writable: {error.strerror or error}") from None


def make_directory(path: Path, option: str = "--out") -> None:
    """Create ``path`` (and parents) or raise ``ValueError`` naming ``option`` and the path."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as error:
        raise InputError(f"{option} {quoted(path)} cannot be created: {error.strerror or error}") from None
    if not path.is_dir():
        raise InputError(f"{option} {quoted(path)} is not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"{option} {quoted(path)} is not writable")


class RunLock:
    """Exclusive ownership of a run directory (a context manager); refuses, never waits.

    Once the lock is held the directory is checked again (``check``: :func:`check_run_directory` for a training
    run, new or ours; :func:`check_solve_directory` for a solve), and the temporaries of ``files`` a killed run
    left in it are removed: no other run can be writing them.  ``command`` names the holder in the refusal.
    """

    def __init__(self, directory: Path, option: str = "--out", *, check: Callable[[Path, str], Path] | None = None,
                 files: tuple[str, ...] = RUN_FILES, command: str = "fsc train") -> None:  # fmt: skip
        self.directory, self.option, self.fd = Path(directory), option, None
        self.check, self.files, self.command = check or check_run_directory, files, command

    def __enter__(self) -> RunLock:
        self.check(self.directory, self.option)
        make_directory(self.directory, self.option)
        if fcntl is None:  # pragma: no cover
            return self
        try:
            fd = os.open(self.directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as error:
            raise InputError(f"{self.option} {quoted(self.directory)} cannot be opened: {error.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise InputError(
                f"{self.option} {quoted(self.directory)} is in use by another {self.command} (it holds the directory's lock); "
                "wait for it or use another directory"
            ) from None
        self.fd = fd
        try:
            self.check(self.directory, self.option)  # what another owner may have put there meanwhile
            remove_stale_temporaries(self.directory, self.files)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing releases the flock
            self.fd = None


def read_run_json(path: Path) -> dict:
    """Read a run's ``run.json``; ``ValueError`` naming the file when it is unreadable or not a run record."""
    try:
        doc = json.loads(read_limited(path, "run file", MAX_RECORD_BYTES))
    except (OSError, UnicodeDecodeError, RecursionError, json.JSONDecodeError) as error:
        raise InputError(f"{quoted(path)} is not a readable run file ({type(error).__name__}: {error}); "
                         "remove the directory or use another one") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("arguments"), dict):
        raise InputError(f"{quoted(path)} is not a run file (expected a JSON object with 'arguments'); "
                         "remove the directory or use another one")
    return doc
