"""What a training run trains on, resolved without torch: the world, the memory and the reset.

``fsc train`` (and ``python -m fsc.train``, what a sweep runs for each point) resolves them before it imports
torch, numba and the engines, so that a file declaring more than the machine can hold is refused in one line
at once (:mod:`fsc.limits`); :func:`fsc.train.run.resolve_inputs` then adds the initial policy and the
optimiser.  Nothing here imports torch.
"""

from __future__ import annotations

import time

import attrs

from fsc.errors import InputError
from fsc.model.architecture import MemoryArchitecture
from fsc.model.pomdp import POMDP, Task, resolve_reset
from fsc.resolve import ResolvedWorld, resolve_world_and_memory, world_arguments
from fsc.train.arguments import TrainingConfig

__all__ = ["Setting", "resolve_setting"]


@attrs.frozen(kw_only=True, eq=False)
class Setting:
    """The world, memory and reset of a configuration.

    Attributes:
        world: the world and how it was named (what ``run.json`` records of it).
        arch: the memory, built (and so checked against the limits) on the world's actions and observations.
        reset: the reset probability ``r``.
        started: ``time.perf_counter()`` when resolving began: the run's time budget counts from there.
    """

    world: ResolvedWorld
    arch: MemoryArchitecture
    reset: float
    started: float


def resolve_setting(config: TrainingConfig, world: POMDP | Task | str | None = None) -> Setting:
    """The world (``config.world``, ``config.mu`` or ``config.pomdp``, or the API's own ``world``: a world or
    a built-in world's name), the memory and the reset ``config`` names (:mod:`fsc.resolve`).

    Raises:
        ValueError, TypeError: a bad argument, naming it; a memory nobody can afford; nothing is written.
    """
    started = time.perf_counter()
    given = world_arguments(config)
    if world is not None:
        if config.world is not None:
            raise InputError(f"give the world once: as world= of run_training or in the configuration, not both (got {config.world!r} in it)")
        given["world"] = world
    named, arch = resolve_world_and_memory(config.memory, **given)
    reset = resolve_reset(named.world, config.reset, config.discount, allow_zero=False, default=1e-3)
    return Setting(world=named, arch=arch, reset=reset, started=started)
