"""What the commands on one controller share: the options that name a world, a memory and a policy, and the
world's numbers in a record (one-line errors and printing: :mod:`fsc.console`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import attrs

from fsc.checks import CONVENTIONS
from fsc.console import import_torch, number
from fsc.io.trajectory import metric_key
from fsc.limits import check_dense_world, seed_arg
from fsc.model.architecture import MemoryArchitecture
from fsc.model.policy import Weights
from fsc.model.pomdp import POMDP, Task, resolve_reset
from fsc.resolve import add_world_options, is_policy_file, resolve_memory, resolve_policy, resolve_world, resolve_world_and_memory, world_arguments
from policies import POLICY_NAMES

if TYPE_CHECKING:  # torch: imported once the world and the memory are built (fsc.cli.TORCH_AFTER_INPUT)
    from fsc.model.policy import Policy

# Options shared by the commands on one controller, and what they resolve to.

#: The memory of a policy given by name without ``--memory``.
DEFAULT_MEMORY = "ram:2"


def add_controller_options(p: argparse.ArgumentParser) -> None:
    """The world options and ``--memory`` (:func:`fsc.resolve.add_world_options`), ``--policy`` and its
    parameters, ``--seed``, ``--convention``, ``--json``."""
    add_world_options(p, memory=f"the architecture of a --policy file, else {DEFAULT_MEMORY}")
    p.add_argument(
        "--policy",
        default="uniform",
        help=f"a policy name ({', '.join(POLICY_NAMES)}: the names of fsc train --init) or a policy file (.npz/.json) (default uniform)",
    )
    p.add_argument("--eps", type=number, default=None, help="CCP exit probability (default: optimal at --reset)")
    p.add_argument("--eps0", type=number, default=None, help="necklace: exit probability of the end necklaces")
    p.add_argument("--eps1", type=number, default=None, help="necklace: exit probability between necklaces")
    p.add_argument("--seed", type=seed_arg, default=0, help="seed of random policies and of sampling (default 0)")
    p.add_argument("--convention", choices=CONVENTIONS, default="native", help="native (default) or paper (docs/model.md)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


@attrs.frozen(kw_only=True, eq=False)
class Controller:
    """What the options of :func:`add_controller_options` name, resolved by :mod:`fsc.resolve`.

    Attributes:
        world: the world (a ``fsc.POMDP`` or a task).
        reset: the reset probability ``r`` (``--reset``, ``--discount``, the file's discount, or 1e-3).
        policy: the policy (its arrays with ``resolve_controller(arrays=True)``); its architecture is the memory.
        text: how a command's output names memory and world: ``{"memory": ..., "pomdp": FILE}``,
            ``{"memory": ..., "mu": mu}`` or ``{"memory": ..., "world": NAME}``.
    """

    world: POMDP | Task
    reset: float
    policy: Policy | Weights
    text: dict

    @property
    def arch(self) -> MemoryArchitecture:
        return self.policy.architecture


def resolve_controller(args: argparse.Namespace, *, allow_zero: bool = True, joint_chain: bool = True, arrays: bool = False,
                       graph: bool = False) -> Controller:  # fmt: skip
    """The world, reset, memory and policy that ``args`` name; ``args`` is left as it is.

    ``--memory`` left out: a policy file's own architecture, a policy name's :data:`DEFAULT_MEMORY`; given
    with a policy file, the two must agree.  ``allow_zero``: whether ``r = 0`` is accepted.  ``joint_chain``: whether
    the command evaluates on the joint chain (``simulate`` does not), whose engines' least need is then checked
    from a file's declared sizes (:func:`fsc.resolve.resolve_world_and_memory`).

    The world, the reset and the memory come first, without torch (where a size nobody can afford is
    refused, :mod:`fsc.limits`); then torch is imported (:func:`fsc.console.import_torch`) and the policy built.
    ``arrays``: the policy as :class:`fsc.model.policy.Weights` (numpy), built without torch when it is
    ``uniform`` or a file (a command that computes no gradient).  ``graph``: a command that values a deterministic
    policy on ``RAM(M)`` as a policy graph when no engine holds it (``evaluate``): refused from the declared sizes only
    when that graph does not fit either.
    """
    memory = DEFAULT_MEMORY if args.memory is None and not is_policy_file(args.policy) else args.memory
    if memory is None or not joint_chain:  # a policy file's own memory (read with torch), or no joint chain to hold
        # without a joint chain (simulate), the world's dense tables: refused from a file's declared sizes
        check = None if joint_chain else (lambda declared: check_dense_world(declared.states, declared.actions, declared.observations, what="simulate"))
        world = resolve_world(**world_arguments(args), option="--", check=check)
        arch = None if memory is None else resolve_memory(memory, world.world, option="--memory")
    else:  # a world and memory no engine can hold: refused from the file's declared sizes, before its tables
        world, arch = resolve_world_and_memory(memory, **world_arguments(args), option="--", memory_option="--memory", graph=0 if graph else None)
    reset = resolve_reset(world.world, args.reset, args.discount, allow_zero=allow_zero, default=1e-3)
    numpy = arrays and (args.policy == "uniform" or is_policy_file(args.policy))
    if not numpy:
        import_torch()
    policy = resolve_policy(
        args.policy, arch, world=world.world, mu=world.mu, reset=reset, seed=args.seed, convention=args.convention,
        eps=args.eps, eps0=args.eps0, eps1=args.eps1, option="--policy", arrays=numpy,
    )  # fmt: skip
    if arrays and not numpy:  # a named policy built with torch, handed on as its arrays
        policy = Weights(policy.architecture, policy.logits.detach().numpy(), policy.init_logits.detach().numpy())
    text = {"memory": repr(policy.architecture) if memory is None else memory, **world.text}
    return Controller(world=world.world, reset=reset, policy=policy, text=text)


def world_record(result) -> dict:
    """``q`` where the world defines it, then ``gain`` and ``value``, then the world's other metrics."""
    record = {"q": float(result.metrics["q"])} if "q" in result.metrics else {}  # float: of a number or a 0-d tensor
    record["gain"] = float(result.gain)
    record["value"] = None if result.value is None else float(result.value)
    record |= {metric_key(name): float(value) for name, value in result.metrics.items() if name != "q"}
    return record
