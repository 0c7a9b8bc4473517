"""Turn sweep directories (finished or not) into the small set of files we commit under results/.

    python examples/ship_results.py SPEC SWEEP_DIR [SWEEP_DIR ...] results/NAME [--points 200]

The files and their meaning: :mod:`fsc.report.results`. Nothing is trained here. A point that none of the
sweep directories has finished keeps what results/NAME already held for it, so runs made in several
places or sessions add up. ``fsc report --full`` does the same after running what results/ lacks.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", type=Path)
    parser.add_argument("sweeps", type=Path, nargs="+", help="the sweep directories (each holds runs/), then the shipped folder")
    parser.add_argument("--points", type=int, default=200, help="rows kept per trajectory (default 200)")
    parser.add_argument("--commit", default=None, help="the commit the runs were made with (default: this checkout's HEAD)")
    parser.add_argument("--command", action="append", default=[], help="a command that made the runs (repeatable)")
    parser.add_argument("--wall", type=float, default=None, help="wall time of the whole sweep, seconds, if known")
    args = parser.parse_args()
    if len(args.sweeps) < 2:
        parser.error("give at least one sweep directory and the shipped folder")
    *sweeps, out = args.sweeps

    import matplotlib

    matplotlib.use("Agg")

    from fsc.report.results import ship
    from fsc.sweep import load_spec

    provenance = ship(load_spec(args.spec), sweeps, out, points=args.points, commit=args.commit, commands=args.command, wall=args.wall)
    print(f"{provenance['done']} of {provenance['points']} points done; wrote {out}")


if __name__ == "__main__":
    main()
