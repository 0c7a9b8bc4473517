"""What the commands share: one-line usage errors, the options that name a world, a memory and a
policy, and how a record is printed."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fsc.errors import InputError
from fsc.evaluate import CONVENTIONS
from fsc.limits import seed_arg
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import parse_memory
from fsc.model.policy import Policy
from fsc.train.arguments import number


class UsageError(InputError):
    """Bad command-line input: reported in one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, status 2 (argparse prints usage too)
        raise UsageError(message)


# Options shared by the commands that build a controller.


def add_world_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mu", type=number, default=None, help="the two-hypothesis world: gap between the arms, in (0, 1) (default 0.1)")
    p.add_argument("--pomdp", default=None, metavar="FILE", help="another world: a .POMDP file (its action and observation counts size --memory)")


def add_reset_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reset", type=number, default=None, help="reset probability r per step (default: 1 - the file's discount, else 1e-3)")
    p.add_argument("--discount", type=number, default=None, help="discount gamma: the same parameter as --reset, r = 1 - gamma")


def add_controller_options(p: argparse.ArgumentParser, *, policy: bool = True) -> None:
    add_world_options(p)
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
    add_reset_options(p)
    p.add_argument("--convention", choices=CONVENTIONS, default="native", help="native (default) or paper (docs/model.md)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def world_from(args, *, allow_zero: bool = True):
    """The world of ``--mu`` or ``--pomdp``; resolves ``args.mu`` and ``args.reset`` (from ``--discount``) on the way."""
    from fsc.evaluate import resolve_reset

    if args.pomdp is not None:
        if args.mu is not None:
            raise UsageError("--mu selects the two-hypothesis world and --pomdp another: give one")
        from fsc.io.pomdp_file import read_pomdp

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


def architecture_from(args, world=None) -> MemoryArchitecture:
    if world is None:
        return parse_memory(args.memory)
    from fsc.model.pomdp import as_pomdp

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


def metric_key(name: str) -> str:
    return f"metric:{name}" if name in _RECORD_KEYS else name


def world_record(result) -> dict:
    """``q`` where the world defines it, then ``gain`` and ``value``, then the world's other metrics."""
    record = {"q": float(result.metrics["q"].detach())} if "q" in result.metrics else {}
    record["gain"] = float(result.gain.detach())
    record["value"] = None if result.value is None else float(result.value.detach())
    record |= {metric_key(name): float(value.detach()) for name, value in result.metrics.items() if name != "q"}
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


def emit(args, record: dict) -> None:
    if args.json:
        print(json.dumps(record))
        return
    width = max(len(k) for k in record)
    for key, value in record.items():
        text = f"{value:.10g}" if isinstance(value, float) else str(value)
        print(f"{key:<{width}}  {text}")


def world_text(args) -> dict:
    return {"pomdp": args.pomdp} if args.pomdp is not None else {"mu": args.mu}
