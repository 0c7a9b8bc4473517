"""``fsc export``: a run's binary trajectory as CSV.

Runs write ``trajectory.npz`` (:mod:`fsc.io.trajectory`); ``fsc export PATH ...`` writes ``trajectory.csv``
beside each ``trajectory.npz`` it finds: ``PATH`` is a ``trajectory.npz``, a run directory, or any directory
(a sweep's: every run under it).  The CSV is the one ``fsc train --csv`` writes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fsc.console import emit
from fsc.errors import InputError

__all__ = ["cmd_export", "export_options"]


def export_options(p: argparse.ArgumentParser) -> None:
    """Add the ``fsc export`` options to ``p``."""
    p.add_argument("paths", nargs="+", metavar="PATH", help="a trajectory.npz, a run directory, or a directory holding runs (a sweep's)")
    p.add_argument("--json", action="store_true", help="print the files written as JSON")


def _sources(path: Path) -> list[Path]:
    """The ``trajectory.npz`` files ``path`` names: itself, or those under a directory."""
    from fsc.io.trajectory import TRAJECTORY

    if path.is_file():
        if path.name != TRAJECTORY:
            raise InputError(f"{str(path)!r} is not a {TRAJECTORY} (give one, a run directory or a sweep directory)")
        return [path]
    if not path.is_dir():
        raise InputError(f"{str(path)!r} does not exist")
    found = sorted(path.rglob(TRAJECTORY))
    if not found:
        raise InputError(f"{str(path)!r} holds no {TRAJECTORY} (a run made before it has its trajectory.csv already)")
    return found


def cmd_export(args: argparse.Namespace) -> int:
    """Write ``trajectory.csv`` beside every ``trajectory.npz`` of ``args.paths``; every path is checked first."""
    from fsc.io.trajectory import TRAJECTORY_CSV, Trajectory, read_trajectory, write_csv

    sources = [source for path in args.paths for source in _sources(Path(path))]
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
