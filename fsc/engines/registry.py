"""The registry of engines: ``engine=`` names, and what ``auto`` picks among them.

:data:`ENGINES` maps each name to its :class:`fsc.engines.engine.Engine`; :func:`register_engine` adds one
(an engine is one class and one such call), :func:`unregister_engine` takes it out again.
:func:`choose_engine` is the one place that decides which engine runs: the one asked for, or for ``auto``
the cheapest by the engines' own estimates, after refusing what does not fit the machine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fsc.engines import cost
from fsc.engines.builtin import BUILTIN
from fsc.engines.engine import Engine
from fsc.errors import InputError, InputTypeError

if TYPE_CHECKING:
    from fsc.model.architecture import MemoryArchitecture
    from fsc.model.pomdp import POMDP

__all__ = ["ENGINES", "Engine", "check_engine", "choose_engine", "holds", "price", "register_engine", "registry_version", "unregister_engine"]

#: Every engine by name, in the order they were registered.
ENGINES: dict[str, Engine] = {}
#: How many times the registry changed: what a cache of engine choices keys on (``fsc.evaluate.Evaluator.of``).
_CHANGES = [0]


def registry_version() -> int:
    """A number that changes whenever an engine is registered or unregistered."""
    return _CHANGES[0]


def register_engine(engine: Engine) -> Engine:
    """Add ``engine`` under its :attr:`~fsc.engines.engine.Engine.name` (a new name) and return it.

    Raises:
        TypeError: not an :class:`~fsc.engines.engine.Engine`.
        ValueError: its name is ``auto`` or already registered.
    """
    if not isinstance(engine, Engine):
        raise InputTypeError(f"engine must be a fsc.engines.engine.Engine, got {type(engine).__name__}")
    name = engine.name
    if not isinstance(name, str) or not name or name == "auto" or name in ENGINES:
        raise InputError(f"engine name must be a new name other than 'auto', got {name!r} (registered: {sorted(ENGINES)})")
    ENGINES[name] = engine
    _CHANGES[0] += 1
    return engine


def unregister_engine(name: str) -> Engine:
    """Take the engine ``name`` out of the registry and return it."""
    if name not in ENGINES:
        raise InputError(f"engine must be one of {sorted(ENGINES)}, got {name!r}")
    _CHANGES[0] += 1
    return ENGINES.pop(name)


for _engine in BUILTIN:
    register_engine(_engine)


def check_engine(name: object) -> str:
    """``name`` if it is ``auto`` or a registered engine's.

    Raises:
        ValueError: anything else, in one line listing the registry.
    """
    if not isinstance(name, str) or (name != "auto" and name not in ENGINES):
        raise InputError(f"engine must be 'auto' or one of {sorted(ENGINES)}, got {name!r}")
    return name


def choose_engine(world: POMDP, architecture: MemoryArchitecture, reset: float, name: str = "auto", *, look: bool = True) -> Engine:
    """The engine that runs: ``name`` itself, or for ``auto`` the cheapest by the engines' own estimates.

    ``auto`` considers the engines with :attr:`~fsc.engines.engine.Engine.auto` that accept ``reset``.  First, from the
    world's sizes alone (:func:`fsc.engines.cost.world_sizes`): an engine that does not work on the joint chain
    (``large``) runs when it fits and it :meth:`~fsc.engines.engine.Engine.takes_over`, or when none of the joint
    chain's engines fits.  Else the joint chain is built (:func:`fsc.model.chain.joint_chain`, cached) and the
    engine of lowest :meth:`~fsc.engines.engine.Engine.auto_cost` on it runs.  ``look=False``: decide from the sizes
    alone (for the set-up's estimate), taking the first of the joint chain's engines where ``auto`` would look
    at the chain (they all build the same one).

    Raises:
        ValueError: an unknown ``name`` (:func:`check_engine`); the engine's estimated peak memory is over ``MEMORY_SHARE`` of the available memory (one line:
            the option, the estimate, the limit, and the lightest other engine that fits).
    """
    check_engine(name)
    sizes = cost.world_sizes(world, architecture)
    limit = cost.MEMORY_SHARE * cost.available_bytes()
    candidates = [engine for engine in ENGINES.values() if reset > 0 or engine.zero_reset]
    estimates = {engine.name: engine.estimate(sizes) for engine in candidates}
    if name != "auto":
        engine = ENGINES[name]
    else:
        runs = [engine for engine in candidates if engine.auto]
        joint = [engine for engine in runs if engine.joint]
        apart = [engine for engine in runs if not engine.joint and estimates[engine.name].bytes <= limit]
        chain_fits = any(estimates[engine.name].bytes <= limit for engine in joint)
        engine = next((e for e in apart if not chain_fits or e.takes_over(sizes, estimates, limit)), None)
        if engine is None and not chain_fits:  # nothing fits: refused below, with the lightest estimate
            engine = min([e for e in runs if not e.joint] or runs, key=lambda e: estimates[e.name].bytes)
        elif engine is None:
            if not look:
                return joint[0]
            chain = joint[0].operator(world, architecture)
            costs = {e.name: e.auto_cost(chain, reset) for e in joint}
            ranked = [e for e in joint if costs[e.name] is not None]
            if not ranked:
                raise InputError(f"engine 'auto' found no engine for this chain among {sorted(ENGINES)}; name one (--engine)")
            return min(ranked, key=lambda e: costs[e.name])
    need = estimates[engine.name] if engine.name in estimates else engine.estimate(sizes)
    if need.bytes > limit:
        fitting = sorted((e for e in candidates if e is not engine and estimates[e.name].bytes <= limit), key=lambda e: estimates[e.name].bytes)
        hint = f"--engine {fitting[0].name} fits" if fitting else "choose a smaller --memory"
        raise InputError(
            f"engine {engine.name!r} (--engine) with memory {architecture!r} (--memory) on {sizes.describe()} needs about "
            f"{cost.gb(need.bytes)} (estimate), over the {cost.gb(limit)} this machine has available; {hint}"
        )
    return engine


def price(world: POMDP, architecture: MemoryArchitecture, reset: float, name: str = "auto") -> cost.Estimate:
    """What one evaluation with its set-up costs (the chain or the engine's tables built, one value and gradient), from
    the sizes alone: the estimate of the engine ``name``, or for ``auto`` the lowest of the engines it may pick that
    fit.  What a time limit prices a set-up that cannot be cut at (:meth:`fsc.solver.Portfolio.solve`): it errs
    low, so that a set-up is skipped only when no engine can fit.

    Raises:
        ValueError: as :func:`choose_engine`: an unknown ``name``, an engine that does not fit the memory left.
    """
    choose_engine(world, architecture, reset, name, look=False)  # a world and memory that fit no engine: refused, as the set-up would
    sizes = cost.world_sizes(world, architecture)
    if name != "auto":
        return ENGINES[name].estimate(sizes)
    estimates = [engine.estimate(sizes) for engine in ENGINES.values() if engine.auto and (reset > 0 or engine.zero_reset)]
    limit = cost.MEMORY_SHARE * cost.available_bytes()
    return min([e for e in estimates if e.bytes <= limit] or estimates, key=lambda e: e.seconds)


def holds(world: POMDP, architecture: MemoryArchitecture, reset: float, name: str = "auto") -> bool:
    """Whether an engine can hold the evaluation of ``architecture`` on ``world`` in the machine's memory: the estimate of
    the engine ``name``, or for ``auto`` of one of the engines it may pick, within ``MEMORY_SHARE`` of the available
    memory.  False: :func:`choose_engine` and :func:`price` refuse it (a ``ValueError`` about memory).

    Raises:
        ValueError: an unknown ``name`` (:func:`check_engine`).
    """
    check_engine(name)
    sizes = cost.world_sizes(world, architecture)
    limit = cost.MEMORY_SHARE * cost.available_bytes()
    if name != "auto":
        return ENGINES[name].estimate(sizes).bytes <= limit
    return any(engine.estimate(sizes).bytes <= limit for engine in ENGINES.values() if engine.auto and (reset > 0 or engine.zero_reset))
