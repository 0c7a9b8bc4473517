"""``fsc export``: a run's binary trajectory as CSV.

Runs write ``trajectory.npz`` (:mod:`fsc.io.trajectory`); ``fsc export PATH ...`` writes ``trajectory.csv``
beside each ``trajectory.npz`` it finds: ``PATH`` is a ``trajectory.npz``, a run directory, or any directory
(a sweep's: every run under it).  The CSV is the one ``fsc train --csv`` writes.  Every file is read first: one
bad run (a corrupt ``trajectory.npz``, a directory or a FIFO of that name) is refused in one line, and nothing is written.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from fsc.console import emit
from fsc.errors import InputError

__all__ = ["cmd_export", "export_options"]


def export_options(p: argparse.ArgumentParser) -> None:
    """Add the ``fsc export`` options to ``p``."""
    p.add_argument("paths", nargs="+", metavar="PATH", help="a trajectory.npz, a run directory, or a directory holding runs (a sweep's)")
    p.add_argument("--json", action="store_true", help="print the files written as JSON")


def _sources(path: Path) -> list[Path]:
    """The ``trajectory.npz`` files ``path`` names: itself, or those under a directory (each a regular file)."""
    from fsc.files import check_regular_file
    from fsc.io.trajectory import TRAJECTORY

    if path.is_dir():
        found = sorted(path.rglob(TRAJECTORY))
        if not found:
            raise InputError(f"{str(path)!r} holds no {TRAJECTORY} (a run made before it has its trajectory.csv already)")
    else:
        found = [path]
        if path.name != TRAJECTORY and os.path.lexists(path):
            raise InputError(f"{str(path)!r} is not a {TRAJECTORY} (give one, a run directory or a sweep directory)")
    for source in found:  # missing, a directory or a FIFO named trajectory.npz: said as what it is
        check_regular_file(source, "trajectory")
    return found


def _check(source: Path) -> None:
    """Read ``source`` whole (a corrupt file is refused naming it), and check that its CSV may be written beside it."""
    from fsc.io.trajectory import TRAJECTORY_CSV, Trajectory, read_trajectory

    target = source.with_name(TRAJECTORY_CSV)
    if os.path.lexists(target) and (target.is_symlink() or not target.is_file()):
        raise InputError(f"{str(target)!r} exists and is not a regular file; remove it to export {str(source)!r}")
    try:
        Trajectory(read_trajectory(source))
    except OSError as error:  # vanished or unreadable since it was listed: the input, not the machine
        raise InputError(f"{str(source)!r} cannot be read: {error.strerror or error}") from None


def cmd_export(args: argparse.Namespace) -> int:
    """Write ``trajectory.csv`` beside every ``trajectory.npz`` of ``args.paths``: every path and every file is
    checked (read whole) first, so that one bad run writes nothing at all; then each is read again and written."""
    from fsc.io.trajectory import TRAJECTORY_CSV, Trajectory, read_trajectory, write_csv

    sources = [source for path in args.paths for source in _sources(Path(path))]
    for source in sources:  # one at a time: a sweep's trajectories together may not fit in memory
        _check(source)
    written = []
    for source in sources:
        target = source.with_name(TRAJECTORY_CSV)
        write_csv(target, Trajectory(read_trajectory(source)))
        written.append(str(target))
    if args.json:
        emit(True, {"written": written})
    else:
        print(f"wrote {len(written)} file{'s' * (len(written) != 1)}: {', '.join(written[:3])}{', ...' if len(written) > 3 else ''}")
    return 0
