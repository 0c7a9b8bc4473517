"""``fsc solve``: the best controller a portfolio of methods finds within a time limit (:func:`fsc.solver.solve`)."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from pathlib import Path

HELP = "find a good controller within a time limit: several methods, the best kept, its gap to an upper bound"


#: What each setting of a method means, for ``--help`` (``"method.setting"``: that method's alone).
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
    "beliefs": "the most beliefs sampled",
    "bpi.tries": "the sets of backed-up nodes one escape tries",
    "nodesplit.tries": "the splits tried, best estimated gain first, before it ends",
    "kicks": "the nodes one kick moves at random",
    "polish.patience": "kicks in a row without a better graph before it ends",
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
    from fsc.choices import SOLVER_METHODS
    from fsc.console import number, positive_int
    from fsc.engines.registry import ENGINES
    from fsc.limits import seed_arg, workers_arg
    from fsc.resolve import add_world_options

    add_world_options(p, memory="ram:2", memory_default="ram:2", memory_note="; ram:M is grown through smaller sizes when --methods leaves out pointbased")
    p.add_argument("--max-seconds", type=number, default=60.0, help="the time limit, for everything (default 60)")
    p.add_argument("--seed", type=seed_arg, default=0, help="seed of the random starts and kicks (default 0)")
    p.add_argument("--engine", default="auto", help=f"the evaluator's engine: auto (default) or one of {', '.join(ENGINES)}")
    p.add_argument("--methods", default=None, help=f"comma-separated methods among {', '.join(SOLVER_METHODS)}, run in that order (default all)")
    p.add_argument("--rounds", type=positive_int, default=None, help="at most this many rounds per memory size (default: until the time limit)")
    p.add_argument("--patience", type=positive_int, default=None, help="rounds without progress after which a smaller size of the ladder gives way (default 3)")
    for option, (owner, name, default) in _setting_options().items():
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else str(default).lower() if isinstance(default, bool) else default
        where = "each method's steps on each shaped world" if (owner, name) == ("shaped", "steps") else MEANING.get(f"{owner}.{name}", MEANING[name])
        p.add_argument(option, type=_option_type(default), default=None, metavar="VALUE", help=f"{owner}: {where} (default {shown})")
    p.add_argument("--workers", type=workers_arg, default=None, metavar="N", help="restarts on N processes, the best kept (default: this machine's cores)")
    p.add_argument("--restarts", type=positive_int, default=None, metavar="K",
                   help="independent runs of the whole portfolio, each with its own seed, shared by the workers (default: one per worker; one with --rounds)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS", help="run the restarts on the Dask cluster of this scheduler (tcp://host:8786) instead")
    p.add_argument("--start", default=None, metavar="FILE", help="a policy file to start from (on --memory, or a smaller RAM)")
    p.add_argument("--out", default=None, metavar="DIR", help="write policy.npz and solution.json into DIR")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--quiet", action="store_true", help="no progress lines on standard error")


def cmd_solve(args: argparse.Namespace) -> int:
    from fsc.console import emit, import_torch
    from fsc.errors import InputError
    from fsc.limits import Deadline
    from fsc.model.pomdp import resolve_reset
    from fsc.resolve import resolve_world_and_memory, world_arguments

    if not args.max_seconds > 0:
        raise InputError(f"--max-seconds must be > 0, got {args.max_seconds!r}")
    deadline = Deadline.after(args.max_seconds)  # the limit covers everything from here: reading, set-up, bound, methods
    world, arch = resolve_world_and_memory(args.memory, **world_arguments(args), option="--", memory_option="--memory", graph=_graph_beliefs(args))
    reset = resolve_reset(world.world, args.reset, args.discount, allow_zero=False, default=1e-3)
    out = _out_directory(args.out)  # refused at once, before the world's chain is built
    with deadline.paused():  # start-up, not counted: the libraries' import
        import_torch()  # only now (fsc.cli.TORCH_AFTER_INPUT): a memory nobody can afford is refused without it
        solver = _solver(args)
    start = _start(args.start, world.world)
    with _owning(out):  # made, probed and locked before the time limit starts
        record = _solve_saving(solver, world, arch, reset, start, out, quiet=args.quiet, deadline=deadline)
    emit(args.json, record)
    return 0


def _graph_beliefs(args: argparse.Namespace) -> int | None:
    """The beliefs of the point-based search when it is among ``--methods`` (on a RAM no engine holds, its policy graph
    alone is the answer: :meth:`fsc.solver.Portfolio.solve`), else None."""
    from fsc.choices import SOLVER_METHODS

    if args.methods is not None and "pointbased" not in args.methods.split(","):
        return None
    return SOLVER_METHODS["pointbased"]["beliefs"] if args.pointbased_beliefs is None else args.pointbased_beliefs


def _start(text: str | None, world):
    """The policy of ``--start FILE``: a regular file (a directory, a FIFO, a device is refused as what it is,
    :func:`fsc.files.check_regular_file`) holding a policy for ``world``."""
    from fsc.errors import InputError, quoted
    from fsc.files import check_regular_file
    from fsc.resolve import POLICY_FILE_SUFFIXES, resolve_policy

    if text is None:
        return None
    check_regular_file(text, "--start")
    if Path(text).suffix not in POLICY_FILE_SUFFIXES:
        raise InputError(f"--start {quoted(text)} is not a policy file (.npz or .json)")
    return resolve_policy(text, None, world=world, option="--start")


def _out_directory(text: str | None) -> Path | None:
    """``--out`` resolved, when fsc solve may write there (:func:`fsc.io.rundir.check_solve_directory`: new or
    empty, never a solution, a run or the user's files)."""
    from fsc.io.rundir import check_solve_directory

    return None if text is None else check_solve_directory(text, "--out")


@contextlib.contextmanager
def _owning(out: Path | None):
    """``out`` made, probed for writing and locked for the block (:class:`fsc.io.rundir.RunLock`: a second solve
    or a training run is refused); the directories made for it are removed again if it is left empty."""
    from fsc.io.rundir import SOLVE_FILES, RunLock, check_solve_directory, probe_writable

    if out is None:
        yield
        return
    made = [path for path in (out, *out.parents) if not os.path.lexists(path)]  # deepest first
    with RunLock(out, "--out", check=check_solve_directory, files=SOLVE_FILES, command="fsc solve or train"):
        try:
            probe_writable(out)
            yield
        finally:
            for path in made:  # still ours: the lock is held
                try:
                    path.rmdir()
                except OSError:  # not empty (the solution is there), or gone
                    break


def _solve_saving(solver, world, arch, reset: float, start, out: Path | None, *, quiet: bool, deadline=None) -> dict:
    """Solve and write the solution into ``out``; on an interrupt (Ctrl-C), write the best found so far, marked
    ``interrupted``, and interrupt the command (status 130).  Returns the record printed."""
    import time

    best: dict = {}
    history: list[dict] = []

    def progress(record: dict) -> None:
        best.update(record)
        history.append({key: value for key, value in record.items() if key not in ("policy", "upper_bound")})
        if not quiet:
            line = f"{record['seconds']:8.1f} s  {record['memory']}  best {record['value']:.6g}  bound {record['upper_bound']:.6g}  ({record['method']})"
            print(line, file=sys.stderr, flush=True)

    clock = time.monotonic()
    with _Interrupts() as interrupts:
        try:
            solution = solver.solve(world.world, arch, reset=reset, start=start, progress=progress, deadline=deadline)
            interrupts.held = True  # an interrupt from here on waits for the solution's files
        except BaseException:
            if not interrupts.seen:
                raise
            if out is not None and best:
                _save_interrupted(out, best, history, solver, reset, world.text, time.monotonic() - clock)
            raise KeyboardInterrupt from None
        record = {**solution.summary(), "interrupted": False, **world.text}
        if solution.larger_value is not None and not quiet:
            print(f"fsc solve: a controller worth {solution.larger_value:.6g} was found that needs {solution.larger_memory} "
                  f"(--memory {solution.larger_memory} holds it)", file=sys.stderr, flush=True)  # fmt: skip
        if out is not None:
            _write(out, solution.policy, {**record, "history": solution.history})
            record["out"] = str(out)
    if interrupts.seen:
        raise KeyboardInterrupt
    return record


class _Interrupts:
    """SIGINT while solving: the first raises ``KeyboardInterrupt`` and is noted (:attr:`seen`, whatever exception
    it surfaces as: inside compiled code, a ``SystemError``); later ones are ignored while the best is saved, and
    once :attr:`held` (the solution being written) one is only noted. Only in the main thread, over Python's
    default handler."""

    def __init__(self) -> None:
        self.seen, self.held, self.previous = False, False, None

    def __enter__(self) -> _Interrupts:
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self.previous = signal.signal(signal.SIGINT, self._interrupt)
        return self

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)

    def _interrupt(self, signum, frame) -> None:
        raise_now = not (self.seen or self.held)
        self.seen = True
        if raise_now:
            raise KeyboardInterrupt


def _save_interrupted(out: Path, best: dict, history: list[dict], solver, reset: float, world_text: dict, seconds: float) -> None:
    """The best controller found before the interrupt, as it was found (on the memory asked for, or on a smaller
    size of the ladder: ``memory`` says which), with its exact value at the time and the bound."""
    from fsc.model.memory import memory_spec

    policy = best["policy"]
    record = {"value": best["value"], "upper_bound": best["upper_bound"], "gap": best["upper_bound"] - best["value"], "method": best["method"],
              "seconds": seconds, "memory": memory_spec(policy.architecture), "seed": solver.seed, "reset": reset, "evaluations": None,
              "interrupted": True, **world_text}  # fmt: skip
    _write(out, policy, {**record, "history": history})
    print(f"fsc solve: interrupted; the best so far (value {best['value']:.6g}) is in {str(out)!r}", file=sys.stderr, flush=True)


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
                     shaped=configured(Shaped(), **given.get("shaped", {})), restarts=args.restarts, **patience, **spread)  # fmt: skip


def _write(out: Path, policy, document: dict) -> None:
    """``policy.npz`` (what ``fsc evaluate --policy`` reads), then ``solution.json`` (the record and the history; written
    last, the mark of a solution), each atomically; strict JSON: a number that is not finite is ``null``."""
    from fsc.files import strict_json, write_text

    policy.save(out / "policy.npz")
    write_text(out / "solution.json", strict_json(document, indent=1) + "\n")
