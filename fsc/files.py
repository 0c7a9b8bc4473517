"""Files written whole or not at all: a reader never sees a half-written file."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["UMASK", "atomic_write", "write_rows", "write_text"]


def _read_umask() -> int:
    mask = os.umask(0o022)  # the only portable way to read it is to set it
    os.umask(mask)
    return mask


#: Read once, at import: setting the umask, even briefly, races with other threads.
UMASK = _read_umask()


def atomic_write(path: str | os.PathLike, write, *, previous: str | os.PathLike | None = None) -> None:
    """Call ``write(file_object)`` on a temporary file, then rename it to ``path``.

    A reader never sees a half-written file; on error nothing is left behind.
    The file gets the permissions of an ordinary ``open(path, "w")`` (``0o666``
    less the umask), not the private ``0o600`` of a temporary file.  With
    ``previous``, the file that ``path`` held is kept under that name; ``path``
    itself exists at every moment (the old file is linked to ``previous``
    before the new one replaces it), so a kill between the two steps leaves
    the latest file in place, not a gap.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~UMASK)
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if previous is not None and path.exists():
            _keep_as(path, Path(previous))
        os.replace(tmp, path)
    except OSError as error:  # a full disk, a vanished directory: say which file could not be written
        Path(tmp).unlink(missing_ok=True)
        if error.filename is None:
            raise OSError(error.errno, error.strerror, str(path)) from None
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _keep_as(path: Path, previous: Path) -> None:
    """Make ``previous`` a copy of ``path`` (a hard link where the file system allows), atomically."""
    fd, link = tempfile.mkstemp(dir=previous.parent, prefix=f".{previous.name}.", suffix=".tmp")
    os.close(fd)
    try:
        os.unlink(link)
        try:
            os.link(path, link)
        except OSError:  # no hard links here: copy instead
            shutil.copyfile(path, link)
        os.replace(link, previous)
    except BaseException:
        Path(link).unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    """``text`` (UTF-8) in ``path``, atomically (:func:`atomic_write`)."""
    atomic_write(path, lambda f: f.write(text.encode()))


def write_rows(path: str | os.PathLike, rows: list[dict], fields: list[str] | None = None) -> Path:
    """``rows`` as a CSV file with a header (``fields``, default the keys of the first row; other keys are
    left out), atomically, its folder made if need be; returns the path."""
    import csv
    import io

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=fields or list(rows[0]), extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    write_text(path, text.getvalue())
    return path
