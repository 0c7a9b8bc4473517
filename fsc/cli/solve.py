"""``fsc solve``: the best controller a portfolio of methods finds within a time limit (:func:`fsc.solver.solve`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HELP = "find a good controller within a time limit: several methods, the best kept, its gap to an upper bound"


def solve_options(p: argparse.ArgumentParser) -> None:
    from fsc.console import number, positive_int
    from fsc.limits import seed_arg
    from fsc.resolve import add_world_options

    add_world_options(p, memory="ram:2", memory_default="ram:2", memory_note="ram:M is grown through smaller sizes; ")
    p.add_argument("--max-seconds", type=number, default=60.0, help="the time limit, for everything (default 60)")
    p.add_argument("--seed", type=seed_arg, default=0, help="seed of the random starts and kicks (default 0)")
    p.add_argument("--methods", default=None, help="comma-separated methods among mirror, ascent, em, greedy (default all)")
    p.add_argument("--rounds", type=positive_int, default=None, help="at most this many rounds per memory size (default: until the time limit)")
    p.add_argument("--start", default=None, metavar="FILE", help="a policy file to start from (on --memory, or a smaller RAM)")
    p.add_argument("--out", default=None, metavar="DIR", help="write policy.npz and solution.json into DIR")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--quiet", action="store_true", help="no progress lines on standard error")


def cmd_solve(args: argparse.Namespace) -> int:
    from fsc.console import emit, import_torch
    from fsc.errors import InputError
    from fsc.model.pomdp import resolve_reset
    from fsc.resolve import resolve_policy, resolve_world_and_memory, world_arguments

    if not args.max_seconds > 0:
        raise InputError(f"--max-seconds must be > 0, got {args.max_seconds!r}")
    world, arch = resolve_world_and_memory(args.memory, **world_arguments(args), option="--", memory_option="--memory")
    reset = resolve_reset(world.world, args.reset, args.discount, allow_zero=False, default=1e-3)
    import_torch()  # only now (fsc.cli.TORCH_AFTER_INPUT): a memory nobody can afford is refused without it
    from fsc.solver import solve

    start = None if args.start is None else resolve_policy(args.start, None, world=world.world, option="--start")
    out = None if args.out is None else Path(args.out)
    if out is not None and out.exists() and not out.is_dir():
        raise InputError(f"--out {args.out!r} exists and is not a directory")

    def progress(record: dict) -> None:
        line = f"{record['seconds']:8.1f} s  {record['memory']}  best {record['value']:.6g}  bound {record['upper_bound']:.6g}  ({record['method']})"
        print(line, file=sys.stderr, flush=True)

    solution = solve(
        world.world, arch, seconds=args.max_seconds, seed=args.seed, reset=reset, methods=args.methods, start=start,
        rounds=args.rounds, progress=None if args.quiet else progress,
    )  # fmt: skip
    record = solution.summary() | {"memory": args.memory, **world.text}
    if out is not None:
        _write(out, solution, record)
        record["out"] = str(out)
    emit(args.json, record)
    return 0


def _write(out: Path, solution, record: dict) -> None:
    """``policy.npz`` (what ``fsc evaluate --policy`` reads) and ``solution.json`` (the record and the history), atomically."""
    from fsc.files import atomic_write

    out.mkdir(parents=True, exist_ok=True)
    solution.policy.save(out / "policy.npz")
    document = {**record, "history": solution.history}
    atomic_write(out / "solution.json", lambda f: f.write((json.dumps(document, indent=1) + "\n").encode()))
