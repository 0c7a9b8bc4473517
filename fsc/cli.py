"""The ``fsc`` command.

Every subcommand prints a small table, or JSON with ``--json``.  Bad input
prints one line on standard error and exits with status 2, before any
result file is written.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from .arguments import number, positive_int
from .errors import InputError
from .evaluate import CONVENTIONS, evaluate
from .limits import check_necklace_work, closed_form_M_arg, seed_arg, walkers_arg
from .memory import MemoryArchitecture, parse_memory
from .policy import Policy
from .simulate import simulate

__all__ = ["main"]


class UsageError(InputError):
    """Bad command-line input: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, status 2 (argparse prints usage too)
        raise UsageError(message)


# Options shared by the commands that build a controller.


def _add_world_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mu", type=number, default=None, help="the two-hypothesis world: gap between the arms, in (0, 1) (default 0.1)")
    p.add_argument("--pomdp", default=None, metavar="FILE", help="another world: a .POMDP file (its action and observation counts size --memory)")


def _add_reset_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reset", type=number, default=None, help="reset probability r per step (default: 1 - the file's discount, else 1e-3)")
    p.add_argument("--discount", type=number, default=None, help="discount gamma: the same parameter as --reset, r = 1 - gamma")


def _add_controller_options(p: argparse.ArgumentParser, *, policy: bool = True) -> None:
    _add_world_options(p)
    p.add_argument("--memory", default="ram:2", help="ram:M, chain:M, column:M, memento:m, or FILE.py:NAME for an architecture of your own (default ram:2)")
    if policy:
        p.add_argument(
            "--policy",
            default="uniform",
            help="uniform, random, ccp, necklace, an initialisation name (random, linear, columns, near-ccp, cycles, "
            "near-necklace), or a policy file (.npz/.json) (default uniform)",
        )
        p.add_argument("--eps", type=number, default=None, help="CCP exit probability (default: optimal at --reset)")
        p.add_argument("--eps0", type=number, default=None, help="necklace: exit probability of the end necklaces")
        p.add_argument("--eps1", type=number, default=None, help="necklace: exit probability between necklaces")
    p.add_argument("--seed", type=seed_arg, default=0, help="seed of random policies and of sampling (default 0)")
    _add_reset_options(p)
    p.add_argument("--convention", choices=CONVENTIONS, default="native", help="native (default) or paper (docs/model.md)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _world(args, *, allow_zero: bool = True):
    """The world of ``--mu`` or ``--pomdp``; resolves ``args.mu`` and ``args.reset`` (from ``--discount``) on the way."""
    from .evaluate import resolve_reset

    if args.pomdp is not None:
        if args.mu is not None:
            raise UsageError("--mu selects the two-hypothesis world and --pomdp another: give one")
        from .pomdp_file import read_pomdp

        try:
            world = read_pomdp(args.pomdp)
        except OSError as error:
            raise InputError(f"--pomdp: cannot read {args.pomdp!r}: {error.strerror or error}") from None
    else:
        import tasks

        args.mu = 0.1 if args.mu is None else args.mu
        world = tasks.TwoHypothesis(args.mu)
    args.reset = resolve_reset(world, args.reset, args.discount, allow_zero=allow_zero, default=1e-3)
    return world


def _architecture(args, world=None) -> MemoryArchitecture:
    if world is None:
        return parse_memory(args.memory)
    from .pomdp import as_pomdp

    pomdp = as_pomdp(world)
    arch = parse_memory(args.memory, arms=pomdp.num_actions, observations=pomdp.num_observations)
    if arch.num_actions != pomdp.num_actions or arch.num_observations != pomdp.num_observations:
        raise InputError(
            f"--memory {args.memory} has {arch.num_actions} actions and {arch.num_observations} observations, "
            f"the world {pomdp.num_actions} and {pomdp.num_observations}"
        )
    return arch


#: Keys of the command-line records that a world's metric must not take (it is then printed as metric:NAME).
_RECORD_KEYS = {"q", "q_stderr", "gain", "gain_stderr", "value", "value_stderr", "grad_norm", "engine", "residual", "fallback",
                "nodes", "memory", "pomdp", "mu", "reset", "convention", "policy", "seconds", "steps", "episodes", "walkers"}  # fmt: skip


def _metric_key(name: str) -> str:
    return f"metric:{name}" if name in _RECORD_KEYS else name


def _world_record(result) -> dict:
    """``q`` where the world defines it, then ``gain`` and ``value``, then the world's other metrics."""
    record = {"q": float(result.metrics["q"].detach())} if "q" in result.metrics else {}
    record["gain"] = float(result.gain.detach())
    record["value"] = None if result.value is None else float(result.value.detach())
    record |= {_metric_key(name): float(value.detach()) for name, value in result.metrics.items() if name != "q"}
    return record


def build_policy(args, arch: MemoryArchitecture) -> Policy:
    """The policy named by ``--policy`` on ``arch``."""
    name = args.policy
    path = Path(name)
    if path.suffix in (".npz", ".json"):
        if not path.is_file():
            raise InputError(f"policy file {name!r} does not exist")
        policy = Policy.load(path)
        if policy.architecture != arch:
            raise InputError(f"policy file {name!r} is for {policy.architecture!r}, but --memory gives {arch!r}")
        return policy
    if name == "uniform":
        return Policy.uniform(arch)
    import policies

    return policies.named_policy(
        name, arch, mu=args.mu, reset=args.reset, seed=args.seed, published=args.convention == "paper", eps=args.eps, eps0=args.eps0, eps1=args.eps1
    )


def _emit(args, record: dict) -> None:
    if args.json:
        print(json.dumps(record))
        return
    width = max(len(k) for k in record)
    for key, value in record.items():
        text = f"{value:.10g}" if isinstance(value, float) else str(value)
        print(f"{key:<{width}}  {text}")


# Commands.


def cmd_evaluate(args) -> int:
    world = _world(args)
    arch = _architecture(args, world)
    policy = build_policy(args, arch)
    if args.grad:
        policy = policy.requires_grad_()
    start = time.perf_counter()
    result = evaluate(world, policy, reset=args.reset, engine=args.engine, convention=args.convention)
    record = _world_record(result)
    if args.grad:
        result.gain.backward()
        grads = [g for g in (policy.logits.grad, policy.init_logits.grad) if g is not None]
        record["grad_norm"] = math.sqrt(sum(float((g**2).sum()) for g in grads))
    seconds = time.perf_counter() - start
    record.update(
        engine=result.engine,
        residual=result.residual,
        **({"fallback": result.info["fallback"]} if "fallback" in result.info else {}),  # the engine that finally ran
        nodes=arch.num_nodes,
        memory=args.memory,
        **_world_text(args),
        reset=result.reset,
        convention=args.convention,
        policy=args.policy,
        seconds=seconds,
    )
    _emit(args, record)
    return 0


def _world_text(args) -> dict:
    return {"pomdp": args.pomdp} if args.pomdp is not None else {"mu": args.mu}


def cmd_simulate(args) -> int:
    world = _world(args, allow_zero=False)
    arch = _architecture(args, world)
    policy = build_policy(args, arch)
    result = simulate(world, policy, reset=args.reset, steps=args.steps, walkers=args.walkers, seed=args.seed, convention=args.convention)
    record = {**({"q": result.metrics["q"], "q_stderr": result.stderrs["q"]} if "q" in result.metrics else {})}
    record.update(
        gain=result.gain,
        gain_stderr=result.gain_stderr,
        value=result.gain / args.reset,
        value_stderr=result.gain_stderr / args.reset,
    )
    for name, value in result.metrics.items():
        if name != "q":
            record |= {_metric_key(name): value, _metric_key(name) + "_stderr": result.stderrs[name]}
    record |= {
        "steps": result.steps,
        "episodes": result.episodes,
        "nodes": arch.num_nodes,
        "memory": args.memory,
        **_world_text(args),
        "reset": result.reset,
        "convention": args.convention,
        "policy": args.policy,
        "seconds": result.seconds,
    }
    _emit(args, record)
    return 0


#: name -> (run, add_options, help); other modules of the project add theirs.
COMMANDS: dict[str, tuple[Callable, Callable[[argparse.ArgumentParser], None], str]] = {}


def _evaluate_options(p):
    _add_controller_options(p)
    p.add_argument("--engine", default="auto", help="auto (default), dense, power, or another engine of fsc.ENGINES")
    p.add_argument("--grad", action="store_true", help="also compute the gradient of the gain w.r.t. all logits; report grad_norm")


def _simulate_options(p):
    _add_controller_options(p)
    p.add_argument("--steps", type=positive_int, default=1_000_000, help="step budget (default 1e6)")
    p.add_argument("--walkers", type=walkers_arg, default=256, help="independent walkers (default 256)")


def cmd_closed_form(args) -> int:
    from policies import closed_form

    if args.policy == "asymmetric-ccp":
        from policies.asymmetric import cmd_asymmetric_ccp

        _emit(args, cmd_asymmetric_ccp(args))
        return 0
    from policies.asymmetric import to_convention

    eps_opt = closed_form.ccp_eps_opt(args.mu, args.M, args.reset)
    eps = closed_form.ccp_eps_best(args.mu, args.M, args.reset) if args.eps is None else args.eps
    record = {
        "q": to_convention(closed_form.ccp_q(args.mu, args.M, args.reset, eps), args.reset, args.convention),
        "eps": eps,
        "eps_opt": eps_opt,
        "q_limit": closed_form.ccp_q_limit(args.mu, args.M),
        "q_hellman_cover": closed_form.q_hellman_cover(args.mu, args.M),
        "mu": args.mu,
        "M": args.M,
        "reset": args.reset,
    }
    _emit(args, record)
    return 0


def _closed_form_options(p):
    p.add_argument("policy", choices=["ccp", "asymmetric-ccp"], help="ccp (appendix C) or asymmetric-ccp (optimum over two exits and the reset split)")
    p.add_argument("--mu", type=number, default=0.1, help="gap between the arms, in (0, 1) (default 0.1)")
    p.add_argument("--M", type=closed_form_M_arg, required=True, help="memory size")
    p.add_argument("--reset", type=number, default=1e-3, help="reset probability r (default 1e-3)")
    p.add_argument("--eps", type=number, default=None, help="exit probability at the top (default: the optimum, capped at 1)")
    p.add_argument("--convention", choices=CONVENTIONS, default="native", help="the convention of q: native (default) or paper, (1 - r) q + r/2")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def cmd_necklace(args) -> int:
    from policies import closed_form, necklaces

    check_necklace_work(args.m, args.time_budget)
    chain = necklaces.gray_chain(args.m, time_budget=args.time_budget)
    record = {
        "m": args.m,
        "count": necklaces.count_necklaces(args.m),
        "chain": list(chain.chain),
        "chain_length": chain.length,
        "optimal": chain.optimal,
        "q_star": closed_form.necklace_q_star(args.mu, args.m, chain.length),
        "mu": args.mu,
    }
    if not args.json:
        record["chain"] = " ".join(chain.chain)
    _emit(args, record)
    return 0


def _necklace_options(p):
    p.add_argument("--m", type=positive_int, required=True, help="memory length m")
    p.add_argument("--mu", type=number, default=0.1, help="gap between the arms, for q* (default 0.1)")
    p.add_argument("--time-budget", type=number, default=10.0, help="seconds for the longest-chain search (default 10)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def cmd_draw(args) -> int:
    import viz

    out = Path(args.out)
    fmt = args.format or out.suffix.lstrip(".").lower()
    if fmt not in viz.FORMATS:
        raise InputError(f"--format must be one of {viz.FORMATS} (or given by the suffix of --out), got {fmt!r}")
    if out.exists() and out.is_dir():
        raise InputError(f"--out must be a file path, got the directory {args.out!r}")
    world = _world(args)
    arch = _architecture(args, world)
    policy = build_policy(args, arch)
    result = evaluate(world, policy, reset=args.reset, convention=args.convention)
    built = viz.build_memory_graph(arch, policy, threshold=args.threshold, occupancy=result, title=args.title)
    viz.render(built, out, format=fmt)
    record = {
        "out": str(out),
        "format": fmt,
        "nodes": built.num_nodes,
        "edges": built.num_edges,
        "threshold": args.threshold,
        **_world_record(result),
        "memory": args.memory,
        "policy": args.policy,
    }
    _emit(args, record)
    return 0


def _draw_options(p):
    _add_controller_options(p)
    p.add_argument("--format", choices=("svg", "png", "dot"), default=None, help="output format (default: the suffix of --out)")
    p.add_argument("--out", required=True, help="file to write (.svg, .png or .dot)")
    p.add_argument("--threshold", type=number, default=1e-3, help="hide edges of smaller probability (stated in the caption; default 1e-3)")
    p.add_argument("--title", default=None, help="caption title")


def cmd_train(args) -> int:
    from .train import run_training

    options = {k: v for k, v in vars(args).items() if k not in ("command", "json")}
    result = run_training(**options)
    _emit(args, result.summary())  # run_training wrote result.json: the mark of a finished run
    return 0


def _train_options(p):
    from .arguments import add_training_options

    add_training_options(p)
    p.add_argument("--json", action="store_true", help="print the final q, t, steps, seconds as JSON")


def cmd_report(args) -> int:
    from .report import build_report

    build_report(args.out, quiet=args.quiet)
    return 0


def _report_options(p):
    p.add_argument("--out", default="report", help="output directory (default ./report); written whole at the end")
    p.add_argument("--quiet", action="store_true", help="no progress messages")


COMMANDS["evaluate"] = (cmd_evaluate, _evaluate_options, "exact evaluation of a controller")
COMMANDS["simulate"] = (cmd_simulate, _simulate_options, "Monte Carlo estimate of a controller")
COMMANDS["closed-form"] = (cmd_closed_form, _closed_form_options, "closed forms of the column of confidence policy (appendix C)")
COMMANDS["necklace"] = (cmd_necklace, _necklace_options, "binary necklaces, the longest Gray chain and Theorem 4.3's q*")
COMMANDS["draw"] = (cmd_draw, _draw_options, "draw the memory transition graph of a policy (graphviz)")
COMMANDS["train"] = (cmd_train, _train_options, "train a controller by gradient flow (or Adam); resumable")
COMMANDS["report"] = (cmd_report, _report_options, "the main job: check, draw, train, and write an HTML report")


def _register_sweep() -> None:
    from . import sweep

    COMMANDS["sweep"] = (sweep.run, sweep.add_options, sweep.HELP)
    from policies import anatomy

    COMMANDS["inspect"] = (anatomy.run, anatomy.add_options, anatomy.HELP)


def _register_pomdp() -> None:
    from . import pomdp_file

    COMMANDS["pomdp"] = (pomdp_file.cmd_pomdp, pomdp_file.add_pomdp_options, pomdp_file.POMDP_HELP)


def make_parser() -> argparse.ArgumentParser:
    _register_sweep()
    _register_pomdp()
    parser = _Parser(prog="fsc", description="Finite-state controllers: evaluate, simulate, draw, train, report.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, (_, add_options, help_text) in COMMANDS.items():
        add_options(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``fsc``; return the exit status."""
    torch.set_default_dtype(torch.float64)
    try:
        parser = make_parser()
        args = parser.parse_args(argv)
        return COMMANDS[args.command][0](args)
    except InputError as error:  # bad input, found where it came in: one line; anything else is a bug and keeps its traceback
        print(f"fsc: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # the machine, not the input (a full disk): one line, and what was written is consistent
        where = f"{error.filename}: " if error.filename else ""
        print(f"fsc: error: {where}{error.strerror or error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fsc: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
