"""Files written whole or not at all (a reader never sees a half-written file), and read within limits.

Writing: :func:`atomic_write` writes a temporary sibling ``.NAME.<8 random characters>.tmp`` and renames it into place;
:func:`remove_stale_temporaries` removes those a killed writer left behind. :func:`write_gzip_text` writes
gzip-compressed text whose bytes depend on the text alone (no time or file name in the gzip header). JSON is strict
(:func:`strict_json`: a number that is not finite is written ``null``).

Reading: :func:`read_limited` and :class:`NpzArchive` open only regular files (a FIFO, a device, a directory
or a socket is refused naming what it is, before anything blocks), check the size before reading, read at most
the limit, and (``.npz``) check every array's declared shape and type before allocating it.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import shutil
import stat
import tempfile
import time
import zipfile
from pathlib import Path

from fsc.errors import InputError, quoted

__all__ = [
    "GZIP_LEVEL", "UMASK", "NpzArchive", "atomic_write", "check_regular_file", "read_limited", "remove_stale_temporaries", "strict_json", "temporary_target",
    "write_gzip_text", "write_rows", "write_text",
]  # fmt: skip


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


#: The gzip compression level of :func:`write_gzip_text`: fixed, so that the same text gives the same bytes.
GZIP_LEVEL = 9


def write_gzip_text(path: str | os.PathLike, text: str) -> None:
    """``text`` (UTF-8) gzip-compressed in ``path``, atomically (:func:`atomic_write`), with deterministic bytes:
    the header's modification time is 0 and it names no file, and the level is :data:`GZIP_LEVEL`, so writing
    the same text again gives a byte-identical file. ``gzip -dc PATH`` gives the text back."""

    def write(f) -> None:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=GZIP_LEVEL) as compressed:
            compressed.write(text.encode())

    atomic_write(path, write)


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


def strict_json(doc: object, **dumps) -> str:
    """``doc`` as strict JSON (RFC 8259): a float that is not finite (NaN, an overflowed value) becomes ``null``,
    never the ``NaN`` / ``Infinity`` Python writes by default and other readers refuse."""
    return json.dumps(_finite_or_none(doc), allow_nan=False, **dumps)


def _finite_or_none(value: object) -> object:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(item) for item in value]
    return value


# Temporaries a killed writer left behind.

#: The name of a temporary of :func:`atomic_write`: ``.NAME.`` then ``tempfile``'s eight characters, ``.tmp``.
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp")


def temporary_target(name: str) -> str | None:
    """The file a temporary of :func:`atomic_write` called ``name`` was to become, or ``None`` when ``name`` is
    not such a temporary."""
    match = _TEMPORARY.fullmatch(name)
    return None if match is None else match["name"]


def remove_stale_temporaries(directory: str | os.PathLike, names, *, older_than: float = 0.0) -> list[Path]:
    """Remove the temporaries :func:`atomic_write` left in ``directory`` for the files ``names`` (a killed
    writer's ``.NAME.<8 random characters>.tmp``), last modified more than ``older_than`` seconds ago; return them.

    Only regular files whose name has exactly that pattern for one of ``names`` are touched: a user's
    ``notes.tmp`` or ``.policy.npz.tmp`` stays. Call it while owning the directory (its lock held), so that no
    live writer's temporary is taken.
    """
    removed = []
    now = time.time()
    for entry in os.scandir(directory):
        if temporary_target(entry.name) not in names:
            continue
        try:
            if not entry.is_file(follow_symlinks=False) or now - entry.stat(follow_symlinks=False).st_mtime < older_than:
                continue
            os.unlink(entry.path)
        except FileNotFoundError:
            continue
        removed.append(Path(entry.path))
    return removed


# Reading within limits.

_KINDS = (
    (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
)  # fmt: skip


def _not_regular(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file (``None`` for a regular file)."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) else "not a regular file"


def check_regular_file(path: str | os.PathLike, what: str) -> os.stat_result:
    """The status of ``path`` (symlinks followed), or ``ValueError`` saying it is missing or what it is instead
    of a regular file (``what`` names it: ``"policy file"``, ``"--pomdp"``)."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{what} {quoted(path)} does not exist") from None
    except (OSError, ValueError) as error:
        raise InputError(f"{what} {quoted(path)} cannot be read: {getattr(error, 'strerror', None) or error}") from None
    kind = _not_regular(status.st_mode)
    if kind is not None:
        raise InputError(f"{what} {quoted(path)} is {kind}, not a regular file")
    return status


def _open_regular(path: str | os.PathLike, what: str, limit: int):
    """``path`` opened for reading, once it is known to be a regular file of at most ``limit`` bytes.

    The file is checked before it is opened (opening a FIFO would block), opened without blocking, and checked
    again on the open descriptor (it may have been replaced in between).
    """
    check_regular_file(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise InputError(f"{what} {quoted(path)} cannot be opened: {error.strerror or error}") from None
    status = os.fstat(fd)
    kind = _not_regular(status.st_mode)
    if kind is not None or status.st_size > limit:
        os.close(fd)
        if kind is not None:
            raise InputError(f"{what} {quoted(path)} is {kind}, not a regular file")
        raise InputError(f"{what} {quoted(path)} is {status.st_size:,} bytes, over the limit of {limit:,} bytes")
    return os.fdopen(fd, "rb")


def read_limited(path: str | os.PathLike, what: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, refused (``ValueError`` naming ``what`` and the path) when it is
    something else or longer than ``limit`` bytes; never more than ``limit + 1`` bytes are read (a file that
    grows, or says size 0 as ``/proc`` files do)."""
    with _open_regular(path, what, limit) as f:
        size = os.fstat(f.fileno()).st_size
        parts = [f.read(size + 1)]  # the size it says, and one more byte to see whether it says all
        total = len(parts[0])
        while total > size and total <= limit:  # it grew, or says size 0 as /proc files do: read on, in chunks
            part = f.read(min(2**20, limit + 1 - total))
            if not part:
                break
            parts.append(part)
            total += len(part)
    data = parts[0] if len(parts) == 1 else b"".join(parts)
    if len(data) > limit:
        raise InputError(f"{what} {quoted(path)} is more than {limit:,} bytes, over the limit")
    return data


class NpzArchive:
    """A ``.npz`` file read within limits (a context manager): ``archive[key]`` is the array ``key``.

    Before anything is inflated the file must be a regular file of at most ``max_bytes`` bytes whose members
    together declare at most ``max_inflated`` bytes; before an array is allocated its header is read and its
    declared size must fit the member (a 1 KB member cannot declare 80 GB), its type hold no Python objects
    (nothing is unpickled), and, with :meth:`check_shape`, its shape be the one the caller expects.
    """

    def __init__(self, path: str | os.PathLike, what: str, *, max_bytes: int, max_inflated: int) -> None:
        self.path, self.what = Path(path), what
        self.file = _open_regular(path, what, max_bytes)
        try:
            self.zip = zipfile.ZipFile(self.file)
            self.members = {info.filename[:-4]: info for info in self.zip.infolist() if info.filename.endswith(".npy")}
        except BaseException:
            self.file.close()
            raise
        declared = sum(info.file_size for info in self.zip.infolist())
        if declared > max_inflated:
            self.close()
            raise InputError(f"{what} {quoted(path)} declares {declared:,} bytes once inflated, over the limit of {max_inflated:,} bytes")
        self.files = list(self.members)

    def __enter__(self) -> NpzArchive:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.zip.close()
        self.file.close()

    def header(self, key: str):
        """``(shape, dtype)`` of the array ``key``, read from its header alone."""
        import numpy as np

        info = self.members.get(key)
        if info is None:
            raise KeyError(f"{key} is not a file in the archive")
        with self.zip.open(info) as f:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(f)
        if dtype.hasobject:
            raise InputError(f"{self.what} {quoted(self.path)}: {key!r} holds Python objects (this would need pickle, which fsc never reads)")
        if math.prod(shape) * dtype.itemsize > info.file_size:
            raise InputError(f"{self.what} {quoted(self.path)}: {key!r} declares shape {shape} of {dtype}, more than its {info.file_size:,} bytes hold")
        return shape, dtype

    def check_shape(self, key: str, shape: tuple[int, ...], kinds: str = "fiu", *, max_nbytes: int | None = None) -> None:
        """Raise unless ``key`` declares ``shape``, a type of one of ``kinds`` (``numpy.dtype.kind``: real
        numbers by default, ``"U"`` for text) and at most ``max_nbytes`` bytes."""
        declared, dtype = self.header(key)
        if tuple(declared) != tuple(shape):
            raise InputError(f"{self.what} {quoted(self.path)}: {key!r} has shape {tuple(declared)}, expected {tuple(shape)}")
        if dtype.kind not in kinds:
            expected = "text" if kinds == "U" else "real numbers"
            raise InputError(f"{self.what} {quoted(self.path)}: {key!r} holds {dtype} values, expected {expected}")
        if max_nbytes is not None and math.prod(declared) * dtype.itemsize > max_nbytes:
            size = math.prod(declared) * dtype.itemsize
            raise InputError(f"{self.what} {quoted(self.path)}: {key!r} declares {size:,} bytes, over the limit of {max_nbytes:,}")

    def __getitem__(self, key: str):
        import numpy as np

        self.header(key)
        with self.zip.open(self.members[key]) as f:
            return np.lib.format.read_array(f, allow_pickle=False)
