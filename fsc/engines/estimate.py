"""What an evaluation will cost, said before anything is allocated: the checks that refuse.

:func:`check_sizes` refuses a world and memory whose smallest evaluation does not fit the machine;
:func:`check_declared` refuses, from the sizes a ``.POMDP`` file declares before its body, a world and memory that
no engine can hold (:func:`least_sizes`: lower bounds of every size; :func:`least_bytes`: the lightest engine's
estimate on them); :func:`set_up_seconds` says how long building the tables will take.  The sizes, the constants
and the machine's memory are in :mod:`fsc.engines.cost`; each engine's estimate is its own
(:meth:`fsc.engines.engine.Engine.estimate`); :func:`fsc.engines.registry.choose_engine` refuses an engine that
does not fit.
"""

from __future__ import annotations

import numpy as np

from fsc.engines import cost
from fsc.engines.cost import Estimate, Sizes, gb, world_sizes
from fsc.errors import InputError
from fsc.model.architecture import MemoryArchitecture, successor_classes
from fsc.model.pomdp import POMDP

# Nothing here imports scipy or torch at import time (world_sizes and check_sizes import what they use): the
# commands call check_declared before they import them (fsc.cli.TORCH_AFTER_INPUT).

__all__ = ["GRAPH_PAIR_BYTES", "check_declared", "check_sizes", "evaluable", "graph_bytes", "least_bytes", "least_sizes", "set_up_seconds"]

#: The bytes of a policy graph per pair (node, state) (:func:`graph_bytes`): the values and the fixed point's vectors
#: (five floats), and the sparse operator's entries with their copies while it is built and transposed (at least one
#: entry a pair, 12 bytes each in CSR, held about three times).
GRAPH_PAIR_BYTES = 5 * 8 + 3 * 12


def set_up_seconds(world: POMDP, arch: MemoryArchitecture, reset: float, engine: str) -> float:
    """Seconds to build the tables of the engine ``engine`` (or the one ``auto`` picks) before the first
    evaluation (:meth:`fsc.engines.engine.Engine.set_up_seconds`: the joint chain's list of nonzeros, or the
    pattern of the chain after each choice), decided from the sizes alone."""
    from fsc.engines.registry import choose_engine

    return choose_engine(world, arch, reset, engine, look=False).set_up_seconds(world_sizes(world, arch))


def check_sizes(world: POMDP, arch: MemoryArchitecture) -> None:
    """Refuse, before anything is allocated, a world and memory whose smallest evaluation (the joint
    chain's vectors and the architecture's table of next nodes, ``N x C x O`` integers) does not fit the machine,
    or an architecture that does not play the world's actions and observations."""
    from fsc.model.chain import check_plays

    check_plays(world, arch)
    N, C, O = arch.num_nodes, arch.num_choices, world.num_observations
    X = sum(len(p) for p in world.parts) * N
    need = _joint_bytes(X, N, C, O)
    limit = cost.MEMORY_SHARE * cost.available_bytes()
    if need > limit:
        raise InputError(
            f"memory (--memory) {arch!r} on a world of {world.num_states} states and {O} observations needs at least "
            f"{gb(need)} ({X:,} joint states, {N * C * O:,} next nodes), over the {gb(limit)} this machine has available; "
            "choose a smaller memory"
        )


def _joint_bytes(joint: int, nodes: int, choices: int, observations: int) -> int:
    """The least any evaluation on the joint chain holds: its vectors (``joint`` states) and the table of next nodes."""
    return 8 * 12 * joint + 32 * nodes * choices + 8 * nodes * choices * observations


def evaluable(world: POMDP, arch: MemoryArchitecture, reset: float, engine: str = "auto") -> bool:
    """Whether the evaluator of ``arch`` on ``world`` fits the machine's memory: the joint chain's vectors and next nodes
    (:func:`check_sizes`) and the estimate of ``engine`` or of an engine ``auto`` may pick
    (:func:`fsc.engines.registry.holds`).  False: no engine can hold it (a named engine that does not fit where another
    does is refused with its hint).  What the graph-only paths of ``fsc solve`` and ``fsc evaluate`` ask."""
    from fsc.engines.registry import holds

    X = sum(len(p) for p in world.parts) * arch.num_nodes
    limit = cost.MEMORY_SHARE * cost.available_bytes()
    fits = _joint_bytes(X, arch.num_nodes, arch.num_choices, world.num_observations) <= limit
    return fits and any(holds(world, arch, reset, name) for name in dict.fromkeys((engine, "auto")))


def graph_bytes(states: int, arch: MemoryArchitecture, beliefs: int = 0) -> int | None:
    """What valuing a deterministic controller on ``RAM(M)`` as a policy graph holds (:func:`fsc.solver.graph.from_policy`,
    the graph-only path of :meth:`fsc.solver.Portfolio.solve`), estimated: the policy's tables (``N x C``: logits, the
    probabilities of the controller made from the graph), at most ``M x A`` graph nodes times ``states`` pairs, each
    with :data:`GRAPH_PAIR_BYTES` (its vectors and its share of the sparse operator), and the point-based search that
    makes the graph: ``beliefs`` dense beliefs, as many vectors and their witnesses (0: a controller valued alone, as
    ``fsc evaluate`` does).  None: not a RAM (its graph may have every node of the architecture, as many pairs as the
    joint chain)."""
    from fsc.model.memory import RAM

    if type(arch) is not RAM:
        return None
    return 24 * arch.num_nodes * arch.num_choices + GRAPH_PAIR_BYTES * arch.M * arch.arms * states + 3 * 8 * beliefs * states


def least_sizes(states: int, actions: int, observations: int, arch: MemoryArchitecture, *, started: int | None = None) -> Sizes:
    """Lower bounds of every :class:`Sizes` of a world declaring ``states``, ``actions`` and ``observations``
    (``started`` of its states with initial mass, all by default) with ``arch``, before its tables are read.

    Every row of ``T`` (per state and action) and of ``O`` (per action and end state) sums to 1, so it stores at
    least one entry: ``nnz(T_a) >= S`` and ``nnz(T_a O_a) >= S`` for every action.  Every state with initial mass
    is in a part, so ``K S_part >= started``; ``K`` and ``S_part`` are each at least 1.  The classes after a class
    ``q`` are at least those allowed at one node it leads to.  The architecture's own counts are exact.  Each field
    is at most what :func:`world_sizes` gives on any world the file can hold.
    """
    started = states if started is None else started
    class_of, nxt = successor_classes(arch)
    n, c = np.nonzero(class_of >= 0)
    q_action = np.full(len(nxt), -1, dtype=np.int64)
    q_action[class_of[n, c]] = arch.choice_action[c]
    allowed_per_action = np.bincount(arch.choice_action[np.nonzero(arch.allowed)[1]], minlength=actions)
    classes_per_action = np.bincount(q_action, minlength=actions)
    at_node = np.bincount(n, minlength=arch.num_nodes)  # the classes allowed at each node (one per allowed choice)
    after = at_node[nxt].max(axis=1, initial=0)  # (Q,): at least the classes at the busiest node q leads to
    per_action = np.bincount(q_action, weights=after, minlength=actions).astype(np.int64)
    return Sizes(
        states=states,
        actions=actions,
        observations=observations,
        parts=1,
        states_per_part=1,
        nodes=arch.num_nodes,
        choices=arch.num_choices,
        classes=len(nxt),
        transitions=states * actions,
        largest_action_classes=int(classes_per_action.max(initial=0)),
        chain_nonzeros=states * int(allowed_per_action.sum()),
        large_nonzeros=(states + started) * int(per_action.sum()),
        step_nonzeros=states * int(classes_per_action.sum()),
        placed_states=started,
    )


def least_bytes(sizes: Sizes) -> Estimate:
    """The lightest engine's estimate (:meth:`fsc.engines.engine.Engine.estimate`) on ``sizes``.

    On the lower bounds of :func:`least_sizes` it is at most the bytes of any engine on the world itself: each
    engine's estimate grows with every size, except the large engine's, whose factor is taken complete (4 times
    ``B``'s entries) when it fits and incomplete (3 times) when it does not.  There the bound still holds for
    refusing: a lower bound over the limit with a complete factor that fits means either a world whose factor fits
    too (and whose estimate is larger), or one whose ``B`` has more than ``limit / 48`` entries, whose estimate
    (84 bytes an entry at least) is over the limit as well.
    """
    from fsc.engines.registry import ENGINES

    return min((engine.estimate(sizes) for engine in ENGINES.values()), key=lambda e: e.bytes)


def check_declared(
    states: int, actions: int, observations: int, arch: MemoryArchitecture, *, started: int | None = None, graph: int | None = None
) -> None:
    """Refuse, from the sizes a file declares (before its tables are read), a world and memory that
    :func:`check_sizes` or every engine of :func:`fsc.engines.registry.choose_engine` would refuse once they are built.

    It compares with the same limit the lower bounds of :func:`least_sizes`: the joint chain's vectors and the
    table of next nodes of :func:`check_sizes` over at least ``started * N`` joint states, and the lightest
    engine's estimate (:func:`least_bytes`).  Each is at most what the full check computes on any world the file
    can hold, whatever the engine asked for, so nothing refused here would have been accepted after reading.

    ``graph``: a caller that can value a RAM controller as a policy graph instead (``fsc solve``'s graph-only path,
    :meth:`fsc.solver.Portfolio.solve`, the point-based search's beliefs; ``fsc evaluate`` of a policy file, 0) is
    refused only when that path's own need (:func:`graph_bytes`) does not fit either.

    Raises:
        ValueError: one line: the memory (``--memory``, as :func:`check_sizes` names it), the declared sizes, the
            estimate (and the graph's, with ``graph``), the limit, what to change.
    """
    started = states if started is None else started
    N, C = arch.num_nodes, arch.num_choices
    need = _joint_bytes(started * N, N, C, observations)  # check_sizes' own need, at least
    limit = cost.MEMORY_SHARE * cost.available_bytes()
    if need <= limit:
        lightest = least_bytes(least_sizes(states, actions, observations, arch, started=started))
        if lightest.bytes <= limit:
            return
        need, what = lightest.bytes, f"the lightest engine's estimate, {lightest.engine!r}"
    else:
        what = "the joint chain's vectors and next nodes"
    alone = None if graph is None else graph_bytes(states, arch, graph)
    if alone is not None and alone <= limit:
        return
    also = "" if alone is None else f" (its policy graph: {gb(alone)})"  # with the point-based search's beliefs, if any
    raise InputError(
        f"memory (--memory) {arch!r} on the declared S={states:,}, A={actions:,}, O={observations:,} needs at least {gb(need)} "
        f"({what}), over the {gb(limit)} this machine has available{also}; choose a smaller memory or world"
    )
