"""``fsc solve``: the best controller a portfolio of methods finds within a time limit (:func:`fsc.solver.solve`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HELP = "find a good controller within a time limit: several methods, the best kept, its gap to an upper bound"


#: What each setting of a method means, for ``--help``.
MEANING = {
    "rate": "the first step size eta",
    "steps": "the most steps in one round",
    "lr": "the learning rate",
    "beta1": "the decay of the first moment",
    "beta2": "the decay of the second moment",
    "eps": "the epsilon of the denominator",
    "relative_eps": "true: eps times the gradient's largest entry",
    "patience": "steps without progress before a kick",
    "tries": "switches tried before a kick",
    "weights": "the weights of the negative rewards, in turn, before the true world",
}


def _setting_options() -> dict[str, tuple[str, str, object]]:
    """option -> (owner, setting, default): one option per setting of each method (:data:`fsc.choices.SOLVER_METHODS`,
    ``--mirror-rate``, ``--adam-patience``, ...) and of the continuation (``--shaped-weights``, ``--shaped-steps``)."""
    from fsc.choices import SHAPED, SOLVER_METHODS

    owners = {**SOLVER_METHODS, "shaped": SHAPED}
    return {f"--{owner}-{name.replace('_', '-')}": (owner, name, default) for owner, found in owners.items() for name, default in found.items()}


def _option_type(default: object):
    """The command-line type of a setting, from its default: a yes-or-no, a count, a list of numbers or a number."""
    from fsc.console import count, number, numbers, truth

    if isinstance(default, bool):
        return truth
    if isinstance(default, int):
        return count
    return numbers if isinstance(default, tuple) else number


def solve_options(p: argparse.ArgumentParser) -> None:
    from fsc.console import number, positive_int
    from fsc.engines.registry import ENGINES
    from fsc.limits import seed_arg, workers_arg
    from fsc.resolve import add_world_options

    add_world_options(p, memory="ram:2", memory_default="ram:2", memory_note="; ram:M is grown through smaller sizes")
    p.add_argument("--max-seconds", type=number, default=60.0, help="the time limit, for everything (default 60)")
    p.add_argument("--seed", type=seed_arg, default=0, help="seed of the random starts and kicks (default 0)")
    p.add_argument("--engine", default="auto", help=f"the evaluator's engine: auto (default) or one of {', '.join(ENGINES)}")
    p.add_argument("--methods", default=None, help="comma-separated methods among mirror, adam, em, greedy, run in that order (default all)")
    p.add_argument("--rounds", type=positive_int, default=None, help="at most this many rounds per memory size (default: until the time limit)")
    p.add_argument("--patience", type=positive_int, default=None, help="rounds without progress after which a smaller size of the ladder gives way (default 3)")
    for option, (owner, name, default) in _setting_options().items():
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else str(default).lower() if isinstance(default, bool) else default
        where = "each method's steps on each shaped world" if (owner, name) == ("shaped", "steps") else MEANING[name]
        p.add_argument(option, type=_option_type(default), default=None, metavar="VALUE", help=f"{owner}: {where} (default {shown})")
    p.add_argument("--workers", type=workers_arg, default=None, metavar="N", help="restarts on N processes, the best kept (default: this machine's cores)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS", help="run the restarts on the Dask cluster of this scheduler (tcp://host:8786) instead")
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
    solver = _solver(args)

    start = None if args.start is None else resolve_policy(args.start, None, world=world.world, option="--start")
    out = None if args.out is None else Path(args.out)
    if out is not None and out.exists() and not out.is_dir():
        raise InputError(f"--out {args.out!r} exists and is not a directory")

    def progress(record: dict) -> None:
        line = f"{record['seconds']:8.1f} s  {record['memory']}  best {record['value']:.6g}  bound {record['upper_bound']:.6g}  ({record['method']})"
        print(line, file=sys.stderr, flush=True)

    solution = solver.solve(world.world, arch, reset=reset, start=start, progress=None if args.quiet else progress)
    record = solution.summary() | {"memory": args.memory, **world.text}
    if out is not None:
        _write(out, solution, record)
        record["out"] = str(out)
    emit(args.json, record)
    return 0


def _solver(args: argparse.Namespace):
    """The :class:`fsc.solver.Portfolio` the options give: ``--methods`` in order, each with the settings given
    (``--mirror-rate``, ...), the others at their defaults.

    Raises:
        InputError: an unknown method, a setting of a method not run, or a bad value (the classes' checks).
    """
    from fsc.errors import InputError, InputTypeError
    from fsc.limits import MAX_WORKERS
    from fsc.pool import cpu_count
    from fsc.solver import METHODS, Portfolio, Shaped, configured

    names = tuple(args.methods.split(",")) if args.methods is not None else tuple(METHODS)
    unknown = [name for name in names if name not in METHODS]
    if not names or unknown:
        raise InputError(f"--methods must be among {', '.join(METHODS)}, got {args.methods!r}")
    given: dict[str, dict[str, object]] = {}
    for option, (owner, name, _) in _setting_options().items():
        value = getattr(args, option[2:].replace("-", "_"))
        if value is not None:
            if owner not in (*names, "shaped"):
                raise InputError(f"{option} is given but {owner} is not among --methods ({','.join(names)})")
            try:  # each setting checked alone, so that the error names its option
                configured(Shaped() if owner == "shaped" else METHODS[owner], **{name: value})
            except (InputError, InputTypeError) as error:
                raise InputError(f"{option}: {error}") from None
            given.setdefault(owner, {})[name] = value
    methods = tuple(configured(METHODS[name], **given.get(name, {})) for name in names)
    patience = {} if args.patience is None else {"patience": args.patience}
    if args.scheduler is not None and args.workers is not None:
        raise InputError("give --workers or --scheduler, not both")
    spread = {"scheduler": args.scheduler} if args.scheduler is not None else {"workers": args.workers or min(cpu_count(), MAX_WORKERS)}
    return Portfolio(seconds=args.max_seconds, seed=args.seed, rounds=args.rounds, engine=args.engine, methods=methods,
                     shaped=configured(Shaped(), **given.get("shaped", {})), **patience, **spread)  # fmt: skip


def _write(out: Path, solution, record: dict) -> None:
    """``policy.npz`` (what ``fsc evaluate --policy`` reads) and ``solution.json`` (the record and the history), atomically."""
    from fsc.files import atomic_write

    out.mkdir(parents=True, exist_ok=True)
    solution.policy.save(out / "policy.npz")
    document = {**record, "history": solution.history}
    atomic_write(out / "solution.json", lambda f: f.write((json.dumps(document, indent=1) + "\n").encode()))
