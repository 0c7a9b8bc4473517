"""The commands that run for long and write directories: ``train``, ``sweep``, ``report``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fsc.console import UsageError
from fsc.errors import InputError
from fsc.limits import workers_arg
from fsc.sweep.driver import run_sweep
from fsc.sweep.spec import describe_arguments, load_spec
from fsc.sweep.summary import format_table, median_rows, write_summary


def cmd_report(args) -> int:
    from fsc.report import build_report

    if not args.full and (args.sweeps is not None or args.workers is not None):
        raise UsageError("--sweeps and --workers go with --full")
    build_report(args.out, quiet=args.quiet, full=args.full, sweeps=args.sweeps or "sweeps", workers=args.workers)
    return 0


def report_options(p):
    p.add_argument("--out", default="report", help="output directory (default ./report); written whole at the end")
    p.add_argument("--quiet", action="store_true", help="no progress messages")
    p.add_argument(
        "--full", action="store_true",
        help="first run what results/ lacks of the full-size Figures 4 and 2 (hours; resumable) and ship it into results/",
    )
    p.add_argument("--sweeps", default=None, metavar="DIR", help="with --full: where the sweeps run (default ./sweeps)")
    p.add_argument("--workers", type=workers_arg, default=None, metavar="N", help="with --full: processes (default: the number of CPUs)")


def sweep_options(p: argparse.ArgumentParser) -> None:
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


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run ``fsc sweep``: 0 when every point is finished, 1 when some point failed (listed on stderr)."""
    sweep = load_spec(args.spec)
    out = args.out if args.out is not None else sweep.out
    if out is None:
        raise InputError(f"no output directory: give --out DIR, or an 'out' key in {args.spec!r}")
    if args.out is None:  # a spec writes under the cwd only
        sweep.check_out(args.spec)
    if args.summary:
        if args.workers is not None or args.scheduler is not None:
            raise InputError("--summary trains nothing: drop --workers / --scheduler")
        if not Path(out).is_dir():
            raise InputError(f"{out!r} holds no sweep (run `fsc sweep {args.spec} --out {out}` first)")
        rows = write_summary(sweep, out)
        if args.json:
            print(json.dumps({"rows": rows, "medians": median_rows(sweep, rows), "csv": str(Path(out) / "summary.csv")}))
            return 0
        columns = [*sweep.varying_keys(), "status", "q", "t", "steps", "seconds"]
        print(format_table(rows, columns))
        medians = median_rows(sweep, rows)
        if any(key == "seed" for key in sweep.varying_keys()):
            print()
            print("median over seeds")
            print(format_table(medians, list(medians[0]) if medians else []))
        print(f"\nwrote {Path(out) / 'summary.csv'} and {Path(out) / 'summary.png'}", file=sys.stderr)
        return 0

    report = run_sweep(sweep, out, workers=args.workers, scheduler=args.scheduler, quiet=args.quiet)
    for failure in report.failures:
        print(f"fsc sweep: failed: {describe_arguments(failure['arguments'])}: {failure['error']}", file=sys.stderr)
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
