"""From what a user names to the objects it means: a world, a memory, a policy.

One resolver for the command line and the API alike.  ``fsc evaluate --pomdp tiger.POMDP --memory ram:2
--policy ccp`` and ``run_training(pomdp=..., memory="ram:2", init="ccp")`` go through the same three
functions, accept the same names and give the same errors (naming the argument as the caller calls it:
``option="--pomdp"`` on the command line).  They return values and change nothing they are given.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from fsc.engines.estimate import check_declared
from fsc.errors import InputError, InputTypeError
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import parse_memory
from fsc.model.pomdp import POMDP, Task, as_pomdp

if TYPE_CHECKING:
    from fsc.io.pomdp_file import Declared  # the reader: imported where a file is read
    from fsc.model.policy import Policy  # torch: imported by resolve_policy, so that a world and a memory are resolved (and refused) without it

__all__ = ["POLICY_FILE_SUFFIXES", "ResolvedWorld", "is_policy_file", "resolve_memory", "resolve_policy", "resolve_world", "resolve_world_and_memory"]

#: A ``policy`` (or ``init``) ending so names a policy file (docs/formats.md), anything else a policy's name.
POLICY_FILE_SUFFIXES = (".npz", ".json")

#: The two-hypothesis world's gap when none is given.
DEFAULT_MU = 0.1


@attrs.frozen(kw_only=True, eq=False)
class ResolvedWorld:
    """A world and how it was named.

    Attributes:
        world: the ``fsc.POMDP`` or task (``tasks.TwoHypothesis``: has ``mu``).
        record: what a run records of it: ``{"mu": mu}``, ``{"pomdp": sha256 of the file}``, or ``{"world":
            sha256 of its .POMDP text}``; a run resumed with another world is refused on it.
        mu: the two-hypothesis world's gap (``None`` for another world): the explicit policies read it.
        path: the ``.POMDP`` file it was read from, if any.
    """

    world: POMDP | Task
    record: dict[str, Any]
    mu: float | None = None
    path: str | None = None

    @property
    def text(self) -> dict[str, Any]:
        """How a command's output names the world: ``{"pomdp": path}`` or ``{"mu": mu}``."""
        if self.path is not None:
            return {"pomdp": self.path}
        return {"mu": self.mu} if self.mu is not None else {}


def resolve_world(
    *, mu: object = None, pomdp: object = None, world: object = None, option: str = "", check: Callable[[Declared], None] | None = None
) -> ResolvedWorld:
    """The world of ``mu`` (the two-hypothesis world; the default, ``mu = 0.1``), of the ``.POMDP`` file
    ``pomdp``, or ``world`` itself (a POMDP, or an object whose ``.pomdp`` is one).

    ``option``: the prefix of the argument names in messages (``"--"`` on the command line).  ``check``: called
    with a file's declared sizes before its tables are read (:func:`fsc.io.pomdp_file.read_pomdp`).

    Raises:
        ValueError, TypeError: more than one given; an unreadable or malformed file.
    """
    names = {"mu": mu, "pomdp": pomdp, "world": world}
    given = [f"{option}{name}" for name, value in names.items() if value is not None]
    if len(given) > 1:
        raise InputError(f"give one of {option}mu (the two-hypothesis world) and {option}pomdp (a .POMDP file)"
                         f"{'' if option else ' and world'}, got {' and '.join(given)}")  # fmt: skip
    if world is not None:
        from fsc.io.pomdp_file import format_pomdp

        as_pomdp(world)  # a POMDP, or an object whose .pomdp is one
        return ResolvedWorld(world=world, record={"world": hashlib.sha256(format_pomdp(world).encode()).hexdigest()})
    if pomdp is not None:
        if not isinstance(pomdp, (str, os.PathLike)):
            raise InputTypeError(f"{option}pomdp must be a path to a .POMDP file, got {pomdp!r}")
        from fsc.io.pomdp_file import read_pomdp

        try:
            read = read_pomdp(pomdp, check=check)
            digest = hashlib.sha256(Path(pomdp).read_bytes()).hexdigest()
        except OSError as error:
            raise InputError(f"{option}pomdp: cannot read {str(pomdp)!r}: {error.strerror or error}") from None
        return ResolvedWorld(world=read, record={"pomdp": digest}, path=str(pomdp))
    import tasks  # the two-hypothesis world

    mu = DEFAULT_MU if mu is None else mu
    built = tasks.TwoHypothesis(mu)
    return ResolvedWorld(world=built, record={"mu": float(built.mu)}, mu=float(built.mu))


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
    memory: object, *, mu: object = None, pomdp: object = None, world: object = None, option: str = "", memory_option: str = "memory"
) -> tuple[ResolvedWorld, MemoryArchitecture]:
    """:func:`resolve_world` and :func:`resolve_memory`, for a world that is evaluated on the joint chain.

    A ``.POMDP`` file's memory is built from the actions and observations its preamble declares, and a world and
    memory that no engine could hold is refused there, before the file's tables are read
    (:func:`fsc.engines.estimate.check_declared`, from lower bounds of what the engines' full estimate needs once
    the world is built: it refuses nothing that estimate would accept).  The memory is built once.

    Raises:
        ValueError, TypeError: as :func:`resolve_world` and :func:`resolve_memory`; a world and memory too large.
    """
    built: list[MemoryArchitecture] = []

    def check(declared: Declared) -> None:
        arch = _build_memory(memory, declared.actions, declared.observations, memory_option)
        if arch.num_actions == declared.actions and arch.num_observations == declared.observations:  # else refused below, as ever
            check_declared(declared.states, declared.actions, declared.observations, arch, started=declared.started)
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
) -> Policy:
    """The policy ``policy`` is or names, on ``arch``.

    ``policy``: a :class:`fsc.Policy`; a policy file (``.npz``/``.json``, docs/formats.md); or a name of
    :func:`policies.named_policy`: ``uniform``, ``ccp``, ``star``, ``necklace`` or an initialisation
    (``random``, ``linear``, ``columns``, ``near-ccp``, ``near-star``, ``cycles``, ``near-necklace``).
    ``arch`` ``None`` takes a file's own architecture (checked against ``world`` when given); a name needs
    one.  ``convention="paper"`` takes the published code's start where it differs
    (:func:`policies.initial_policy`).

    Raises:
        ValueError, TypeError: an unknown name; a missing or unreadable file; a policy for another
            architecture, or (``arch`` ``None``) for another world.
    """
    from fsc.model.policy import Policy

    if isinstance(policy, Policy):
        built, source = policy, f"the {option}"
    elif is_policy_file(policy):
        built, source = Policy.load(Path(policy)), f"policy file {str(policy)!r}"  # missing, a FIFO, a directory: said as what it is
    elif isinstance(policy, str) and policy:
        if arch is None:
            raise InputError(f"{option} {policy!r} names a policy: give the memory it is built on")
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
