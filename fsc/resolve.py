"""From what a user names to the objects it means: a world, a memory, a policy; and the options that name them.

One resolver for the command line and the API alike.  ``fsc evaluate --pomdp tiger.POMDP --memory ram:2
--policy ccp`` and ``run_training(pomdp=..., memory="ram:2", init="ccp")`` go through the same three
functions, accept the same names and give the same errors (naming the argument as the caller calls it:
``option="--pomdp"`` on the command line).  They return values and change nothing they are given.

The options that name a world and a memory (:data:`WORLD_OPTIONS`, :data:`MEMORY`) are declared here, once:
the commands on a world add them with :func:`add_world_options`, and ``fsc train`` (with its sweep spec keys
and :class:`fsc.train.arguments.TrainingConfig` fields) reads the same declarations in its table of arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

import tasks
from fsc.checks import one_of
from fsc.console import number
from fsc.engines.estimate import check_declared
from fsc.errors import InputError, InputTypeError
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import MEMORY_FILE_SECONDS, parse_memory
from fsc.model.pomdp import POMDP, Task, as_pomdp

if TYPE_CHECKING:
    from fsc.io.pomdp_file import Declared  # the reader: imported where a file is read
    from fsc.model.policy import Policy, Weights  # imported by resolve_policy

__all__ = [
    "MEMORY", "POLICY_FILE_SUFFIXES", "TWO_HYPOTHESIS", "WORLD_OPTIONS", "Option", "ResolvedWorld", "add_world_options", "is_policy_file",
    "resolve_memory", "resolve_policy", "resolve_world", "resolve_world_and_memory", "world_arguments",
]  # fmt: skip

#: A ``policy`` (or ``init``) ending so names a policy file (docs/formats.md), anything else a policy's name.
POLICY_FILE_SUFFIXES = (".npz", ".json")

#: The two-hypothesis world's gap when none is given.
DEFAULT_MU = 0.1

#: The name of the default world in :data:`tasks.WORLDS`, the only one ``mu`` goes with.
TWO_HYPOTHESIS = "two-hypothesis"


# The options that name a world and a memory, declared once.


@attrs.frozen
class Option:
    """An option of the commands on a world: the keyword ``name`` (``--name`` on the command line).

    Attributes:
        name: the keyword (the API's argument, the sweep spec's key, ``args.name``).
        type: ``number`` or ``string``: what the command line parses and a sweep spec must give.
        help: the command-line help, without the default where commands differ in it.
        metavar: the command line's name for the value.
    """

    name: str
    type: str
    help: str
    metavar: str | None = None

    @property
    def option(self) -> str:
        return "--" + self.name

    def add_to(self, parser: argparse.ArgumentParser, *, default: object = None, help: str | None = None) -> None:
        """Declare the option in ``parser`` (``help``: instead of :attr:`help`)."""
        parse = number if self.type == "number" else str
        parser.add_argument(self.option, type=parse, default=default, metavar=self.metavar, help=self.help if help is None else help)


WORLD = Option("world", "string", f"a built-in world: {', '.join(tasks.WORLDS)} (default {TWO_HYPOTHESIS}, with --mu)", metavar="NAME")
MU = Option("mu", "number", f"the {TWO_HYPOTHESIS} world's gap between the arms, in (0, 1) (default {DEFAULT_MU})")
POMDP_FILE = Option("pomdp", "string", "another world: a .POMDP file (its action and observation counts size --memory)", metavar="FILE")
RESET = Option("reset", "number", "reset probability r per step (default: 1 - the world's discount, else 1e-3)")
DISCOUNT = Option("discount", "number", "discount gamma: the same parameter as --reset, r = 1 - gamma")
MEMORY = Option(
    "memory", "string", "ram:M, chain:M, column:M, memento:m, or FILE.py:NAME for an architecture of your own (FILE.py is imported as a "
    f"module, for at most {MEMORY_FILE_SECONDS:g} s: what it runs as a script goes under if __name__ == '__main__')",
)  # fmt: skip

#: The options that name the world and its reset, in the order of ``--help``.
WORLD_OPTIONS: tuple[Option, ...] = (WORLD, MU, POMDP_FILE, RESET, DISCOUNT)


def add_world_options(parser: argparse.ArgumentParser, *, memory: str | None = None, memory_default: str | None = None, memory_note: str = "") -> None:
    """Declare :data:`WORLD_OPTIONS` in ``parser``, and ``--memory`` when ``memory`` (the help's words on its
    default) is given, with the default ``memory_default`` and ``memory_note`` after the rest of its help."""
    for declared in WORLD_OPTIONS:
        declared.add_to(parser)
    if memory is not None:
        MEMORY.add_to(parser, default=memory_default, help=f"{MEMORY.help}{memory_note} (default: {memory})")


def world_arguments(source: object) -> dict[str, object]:
    """``world``, ``mu`` and ``pomdp`` of ``source`` (parsed options, a training configuration), as :func:`resolve_world` takes them."""
    return {name: getattr(source, name) for name in ("world", "mu", "pomdp")}


@attrs.frozen(kw_only=True, eq=False)
class ResolvedWorld:
    """A world and how it was named.

    Attributes:
        world: the ``fsc.POMDP`` or task (``tasks.TwoHypothesis``: has ``mu``).
        record: what a run records of it: ``{"mu": mu}``, ``{"world": NAME}`` (another built-in world),
            ``{"pomdp": sha256 of the file}``, or ``{"world": sha256 of its .POMDP text}``; a run resumed with
            another world is refused on it.
        mu: the two-hypothesis world's gap (``None`` for another world): the explicit policies read it.
        path: the ``.POMDP`` file it was read from, if any.
        name: the built-in world's name in :data:`tasks.WORLDS`, if it is one.
    """

    world: POMDP | Task
    record: dict[str, Any]
    mu: float | None = None
    path: str | None = None
    name: str | None = None

    @property
    def text(self) -> dict[str, Any]:
        """How a command's output names the world: ``{"pomdp": path}``, ``{"mu": mu}`` (the two-hypothesis
        world) or ``{"world": NAME}`` (another built-in world)."""
        if self.path is not None:
            return {"pomdp": self.path}
        if self.mu is not None:
            return {"mu": self.mu}
        return {"world": self.name} if self.name is not None else {}


def resolve_world(
    *, mu: object = None, pomdp: object = None, world: object = None, option: str = "", check: Callable[[Declared], None] | None = None
) -> ResolvedWorld:
    """The world of the ``.POMDP`` file ``pomdp``, or ``world`` itself (a POMDP, or an object whose ``.pomdp``
    is one), or the built-in world that ``world`` names (:data:`tasks.WORLDS`; by default the two-hypothesis
    world, of gap ``mu``, 0.1 by default).

    ``option``: the prefix of the argument names in messages (``"--"`` on the command line).  ``check``: called
    with a file's declared sizes before its tables are read (:func:`fsc.io.pomdp_file.read_pomdp`).

    Raises:
        ValueError, TypeError: an unknown name; more than one world given (``mu`` goes with the
            two-hypothesis world only); an unreadable or malformed file.
    """
    if isinstance(world, str):
        one_of(f"{option}world", world, tasks.WORLDS)
    _check_one_world(mu, pomdp, world, option)
    if world is not None and not isinstance(world, str):
        from fsc.io.pomdp_file import format_pomdp

        as_pomdp(world)  # a POMDP, or an object whose .pomdp is one
        return ResolvedWorld(world=world, record={"world": hashlib.sha256(format_pomdp(world).encode()).hexdigest()})
    if pomdp is not None:
        return _read_world(pomdp, option, check)
    if world is not None and world != TWO_HYPOTHESIS:
        return ResolvedWorld(world=tasks.WORLDS[world](), record={"world": world}, name=world)
    built = tasks.WORLDS[TWO_HYPOTHESIS](DEFAULT_MU if mu is None else mu)
    return ResolvedWorld(world=built, record={"mu": float(built.mu)}, mu=float(built.mu), name=TWO_HYPOTHESIS)


def _check_one_world(mu: object, pomdp: object, world: object, option: str) -> None:
    """Raise unless at most one world is given (``mu`` beside the two-hypothesis world's name is one)."""
    given = [f"{option}{name}" for name, value in (("world", world), ("mu", mu), ("pomdp", pomdp)) if value is not None]
    if len(given) < 2 or (given == [f"{option}world", f"{option}mu"] and world == TWO_HYPOTHESIS):
        return
    if given == [f"{option}world", f"{option}mu"] and isinstance(world, str):
        raise InputError(f"{option}mu is the {TWO_HYPOTHESIS} world's gap: it goes with {option}world {TWO_HYPOTHESIS}, not {option}world {world}")
    names = f"{option}world, {option}mu (the {TWO_HYPOTHESIS} world) and {option}pomdp (a .POMDP file)"
    raise InputError(f"give one world: one of {names}, got {' and '.join(given)}")


def _read_world(pomdp: object, option: str, check: Callable[[Declared], None] | None) -> ResolvedWorld:
    """The world of the ``.POMDP`` file ``pomdp``, recorded by the sha256 of its bytes."""
    if not isinstance(pomdp, (str, os.PathLike)):
        raise InputTypeError(f"{option}pomdp must be a path to a .POMDP file, got {pomdp!r}")
    from fsc.io.pomdp_file import read_pomdp

    try:
        read = read_pomdp(pomdp, check=check)
        digest = hashlib.sha256(Path(pomdp).read_bytes()).hexdigest()
    except OSError as error:
        raise InputError(f"{option}pomdp: cannot read {str(pomdp)!r}: {error.strerror or error}") from None
    return ResolvedWorld(world=read, record={"pomdp": digest}, path=str(pomdp))


def resolve_memory(memory: object, world: POMDP | Task, *, option: str = "memory") -> MemoryArchitecture:
    """The architecture ``memory`` names (``ram:M``, ``chain:M``, ``column:M``, ``memento:m``, ``FILE.py:NAME``,
    sized to the world's actions and observations) or is, checked against the world.

    Raises:
        ValueError, TypeError: an unknown text; an architecture of other action or observation counts.
    """
    pomdp = as_pomdp(world)
    arch = _build_memory(memory, pomdp.num_actions, pomdp.num_observations, option)
    _check_fits(arch, pomdp, f"{option} {memory if isinstance(memory, str) else repr(arch)}")
    return arch


def _build_memory(memory: object, actions: int, observations: int, option: str) -> MemoryArchitecture:
    if isinstance(memory, MemoryArchitecture):
        return memory
    if isinstance(memory, str):
        return parse_memory(memory, arms=actions, observations=observations)
    raise InputTypeError(f"{option} must be a string like 'ram:8' or a fsc.MemoryArchitecture, got {memory!r}")


def resolve_world_and_memory(
    memory: object, *, mu: object = None, pomdp: object = None, world: object = None, option: str = "", memory_option: str = "memory",
    graph: int | None = None,
) -> tuple[ResolvedWorld, MemoryArchitecture]:  # fmt: skip
    """:func:`resolve_world` and :func:`resolve_memory`, for a world that is evaluated on the joint chain.

    A ``.POMDP`` file's memory is built from the actions and observations its preamble declares, and a world and
    memory that no engine could hold is refused there, before the file's tables are read
    (:func:`fsc.engines.estimate.check_declared`, from lower bounds of what the engines' full estimate needs once
    the world is built: it refuses nothing that estimate would accept).  The memory is built once.  ``graph``: a caller
    that values a controller on ``RAM(M)`` as a policy graph when no engine holds it (``fsc solve``: the point-based
    search's beliefs; ``fsc evaluate`` of a policy file: 0) is refused only when that graph does not fit either
    (:func:`fsc.engines.estimate.graph_bytes`).

    Raises:
        ValueError, TypeError: as :func:`resolve_world` and :func:`resolve_memory`; a world and memory too large.
    """
    built: list[MemoryArchitecture] = []

    def check(declared: Declared) -> None:
        arch = _build_memory(memory, declared.actions, declared.observations, memory_option)
        if arch.num_actions == declared.actions and arch.num_observations == declared.observations:  # else refused below, as ever
            check_declared(declared.states, declared.actions, declared.observations, arch, started=declared.started, graph=graph)
        built.append(arch)

    named = resolve_world(mu=mu, pomdp=pomdp, world=world, option=option, check=check)
    return named, resolve_memory(built[0] if built else memory, named.world, option=memory_option)


def _check_fits(arch: MemoryArchitecture, pomdp: POMDP, what: str) -> None:
    """Raise unless ``arch`` has the world's action and observation counts (``what`` names it)."""
    if arch.num_actions != pomdp.num_actions or arch.num_observations != pomdp.num_observations:
        raise InputError(
            f"{what} has {arch.num_actions} actions and {arch.num_observations} observations, "
            f"the world {pomdp.num_actions} and {pomdp.num_observations}"
        )


def is_policy_file(name: object) -> bool:
    """Whether ``name`` names a policy file (by its suffix) rather than a policy."""
    return isinstance(name, (str, os.PathLike)) and Path(name).suffix in POLICY_FILE_SUFFIXES


def resolve_policy(
    policy: object,
    arch: MemoryArchitecture | None,
    *,
    world: POMDP | Task | None = None,
    mu: float | None = None,
    reset: float = 1e-3,
    seed: int = 0,
    convention: str = "native",
    eps: float | None = None,
    eps0: float | None = None,
    eps1: float | None = None,
    option: str = "policy",
    arrays: bool = False,
) -> Policy | Weights:
    """The policy ``policy`` is or names, on ``arch``.

    ``policy``: a :class:`fsc.Policy`; a policy file (``.npz``/``.json``, docs/formats.md); or a name of
    :func:`policies.named_policy`: ``uniform``, ``ccp``, ``star``, ``necklace`` or an initialisation
    (``random``, ``linear``, ``columns``, ``near-ccp``, ``near-star``, ``cycles``, ``near-necklace``).
    ``arch`` ``None`` takes a file's own architecture (checked against ``world`` when given); a name needs
    one.  ``convention="paper"`` takes the published code's start where it differs
    (:func:`policies.initial_policy`).  ``arrays``: ``uniform`` or a file as :class:`fsc.model.policy.Weights`,
    without torch (a command that computes no gradient); other names as a policy still.

    Raises:
        ValueError, TypeError: an unknown name; a missing or unreadable file; a policy for another
            architecture, or (``arch`` ``None``) for another world.
    """
    from fsc.model.policy import Policy, Weights, read_policy_file

    if isinstance(policy, Policy):
        built, source = policy, f"the {option}"
    elif is_policy_file(policy):
        built, source = read_policy_file(Path(policy)), f"policy file {str(policy)!r}"  # missing, a FIFO, a directory: said as what it is
        built = built if arrays else Policy(architecture=built.architecture, logits=built.logits, init_logits=built.init_logits)
    elif isinstance(policy, str) and policy:
        if arch is None:
            raise InputError(f"{option} {policy!r} names a policy: give the memory it is built on")
        if arrays and policy == "uniform":
            return Weights(arch, np.zeros((arch.num_nodes, arch.num_choices)), np.zeros(arch.num_nodes))
        import policies  # the explicit policies and the initialisations

        if policy not in policies.POLICY_NAMES:
            raise InputError(f"{option} must be one of {', '.join(policies.POLICY_NAMES)} or a policy file (.npz/.json), got {policy!r}")
        return policies.named_policy(
            policy, arch, mu=DEFAULT_MU if mu is None else mu, reset=reset, seed=seed, published=convention == "paper",
            eps=eps, eps0=eps0, eps1=eps1,
        )  # fmt: skip
    else:
        raise InputTypeError(f"{option} must be a policy name, a policy file (.npz/.json) or a fsc.Policy, got {policy!r}")
    if arch is not None and built.architecture != arch:
        raise InputError(f"{source} is for {built.architecture!r}, not for memory {arch!r}")
    if arch is None and world is not None:
        _check_fits(built.architecture, as_pomdp(world), f"{source} is for {built.architecture!r}, which")
    return built
