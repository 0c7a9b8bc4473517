"""Run directories on disk: one owner at a time, readable run files, writable places.

``fsc train --out DIR`` takes an exclusive, non-blocking ``flock`` on the directory ``DIR`` itself (no lock
file is left behind) for as long as it runs: a second ``fsc train`` on the same directory is refused with one line instead of mixing two runs' files.
The lock is released by the kernel when the process ends, however it ends (no stale lock after a kill).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from fsc.errors import InputError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no ownership lock
    fcntl = None

__all__ = ["RunLock", "make_directory", "read_run_json"]


def make_directory(path: Path, option: str = "--out") -> None:
    """Create ``path`` (and parents) or raise ``ValueError`` naming ``option`` and the path."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as error:
        raise InputError(f"{option} {str(path)!r} cannot be created: {error.strerror or error}") from None
    if not path.is_dir():
        raise InputError(f"{option} {str(path)!r} is not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"{option} {str(path)!r} is not writable")


class RunLock:
    """Exclusive ownership of a run directory (a context manager); refuses, never waits."""

    def __init__(self, directory: Path, option: str = "--out") -> None:
        self.directory, self.option, self.fd = Path(directory), option, None

    def __enter__(self) -> RunLock:
        make_directory(self.directory, self.option)
        if fcntl is None:  # pragma: no cover
            return self
        try:
            fd = os.open(self.directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as error:
            raise InputError(f"{self.option} {str(self.directory)!r} cannot be opened: {error.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise InputError(
                f"{self.option} {str(self.directory)!r} is in use by another fsc train (it holds the directory's lock); "
                "wait for it or use another directory"
            ) from None
        self.fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing releases the flock
            self.fd = None


def read_run_json(path: Path) -> dict:
    """Read a run's ``run.json``; ``ValueError`` naming the file when it is unreadable or not a run record."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, RecursionError, json.JSONDecodeError) as error:
        raise InputError(f"{str(path)!r} is not a readable run file ({type(error).__name__}: {error}); "
                         "remove the directory or use another one") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("arguments", {}), dict):
        raise InputError(f"{str(path)!r} is not a run file (expected a JSON object with 'arguments'); "
                         "remove the directory or use another one")
    return doc
