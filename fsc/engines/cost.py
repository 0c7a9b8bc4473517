"""What an evaluation costs: the sizes the engines depend on, their estimates' constants, the machine's memory.

:func:`world_sizes` counts, from the world's sparse tables and the architecture's tables, every size the
engines depend on (states, actions, observations, nodes, choices, the joint chain's nonzeros and those of
the chain after each choice); each engine turns them into memory and time
(:meth:`fsc.engines.engine.Engine.estimate`, an :class:`Estimate`) with the constants here, which are fitted on
``benchmarks/bench_large.py``'s worlds (2-core machine, one thread); the estimates are meant to be right within
a factor of a few, which is what deciding and refusing need (:func:`fsc.engines.registry.choose_engine`,
:mod:`fsc.engines.estimate`).
"""

from __future__ import annotations

import functools
import os

import attrs
import numpy as np

from fsc.model.architecture import MemoryArchitecture, successor_classes
from fsc.model.pomdp import POMDP

# Nothing here imports scipy or torch at import time (world_sizes imports what it uses): the commands call
# fsc.engines.estimate.check_declared before they import them (fsc.cli.TORCH_AFTER_INPUT).

__all__ = ["Estimate", "Sizes", "available_bytes", "factor_fits", "gb", "world_sizes"]

#: Bytes per stored nonzero of :class:`fsc.model.chain.JointChain` (five int32 index arrays and the weight,
#: then the int64 tables the engines derive from them) and during its construction.
CHAIN_BYTES_PER_NONZERO = 100
#: Bytes per entry of the chain after each choice ``B`` (its pattern, slots, values and CSC copy).
LARGE_BYTES_PER_NONZERO = 48
#: Bytes per entry of the large engine's step ``G``: it, its transpose and the map to ``B``'s entries (CSR, 12 bytes
#: an entry each), and the index arrays they are built from.
STEP_BYTES_PER_NONZERO = 60
#: SuperLU's factors hold about this many times the nonzeros of ``B`` (1.2 to 1.8 measured on the benchmark's
#: worlds with COLAMD; kept pessimistic, since it grows with the world's graph).
LARGE_FILL = 4
#: Seconds per nonzero of the joint chain to build it (a pass of numpy per world state), and per entry of
#: ``B`` to lay out its pattern (a sort).
CHAIN_SECONDS_PER_NONZERO = 2e-7
LARGE_SECONDS_PER_NONZERO = 5e-7
#: Seconds per floating-point operation of a dense LU or of a sparse one (a factor with ``F`` nonzeros over
#: ``Y`` columns takes about ``F^2 / Y`` operations), and per nonzero of a sparse matrix touched once.
DENSE_SECONDS_PER_FLOP = 1e-9
SPARSE_SECONDS_PER_FLOP = 3e-10
SPARSE_SECONDS_PER_NONZERO = 1e-7
#: Products with ``B`` (and solves with its incomplete LU) a GMRES solve of the large engine takes, for the estimate.
KRYLOV_PRODUCTS = 100
#: Above this many nonzeros of the joint chain, ``auto`` runs the large-world engine (when the architecture
#: has classes of choices): building the chain's list would take longer than the whole large-world
#: evaluation (benchmarks/bench_large.py).
LARGE_CHAIN_NONZEROS = 2_000_000
#: A joint chain whose fastest engine is estimated over this many seconds goes to the large engine when that one
#: is estimated ten times faster.
SLOW_CHAIN_SECONDS = 0.1
#: The share of the machine's available memory an evaluation may plan to use.
MEMORY_SHARE = 0.8


@attrs.frozen
class Sizes:
    """Every size the engines' costs depend on.

    Attributes:
        states, actions, observations: the world's ``S``, ``A``, ``O``.
        parts, states_per_part: ``K`` and ``S_part`` of the joint chain.
        nodes, choices, classes: ``N``, ``C`` and ``Q`` (classes of choices with the same next nodes).
        transitions: nonzeros of ``T`` over all actions.
        largest_action_classes: the most classes that play one action (``max_a |Q_a|``).
        chain_nonzeros: nonzeros the joint chain stores, ``sum_a nnz(T_a O_a) E_a`` (``E_a`` allowed
            choices of action ``a`` over all nodes).
        large_nonzeros: entries of the chain after each choice, at most ``sum_a (nnz(T_a) + K S_part) |Q_a| Q``
            (the diagonal is always in the pattern).
        step_nonzeros: entries of the large engine's step ``G`` (and of its transpose, and of the map from the
            policy to ``B``'s entries), at most ``sum_a nnz(T_a O_a) |Q_a|``.
        placed_states: ``K S_part``, the world states the parts lay out (``None``: ``parts * states_per_part``);
            :func:`least_sizes` gives a lower bound of it where the parts are not known.
    """

    states: int
    actions: int
    observations: int
    parts: int
    states_per_part: int
    nodes: int
    choices: int
    classes: int
    transitions: int
    largest_action_classes: int
    chain_nonzeros: int
    large_nonzeros: int
    step_nonzeros: int = 0
    placed_states: int | None = None

    @property
    def joint_states(self) -> int:
        """``X = S_part N``, joint states per part."""
        return self.states_per_part * self.nodes

    @property
    def placed(self) -> int:
        """``K S_part``, the world states of all parts, padding included."""
        return self.parts * self.states_per_part if self.placed_states is None else self.placed_states

    def describe(self) -> str:
        return (
            f"S={self.states}, A={self.actions}, O={self.observations}, N={self.nodes}, C={self.choices}: "
            f"{self.placed * self.nodes:,} joint states"
        )


@attrs.frozen
class Estimate:
    """Peak bytes and seconds of one evaluation with value and gradient (building the tables included)."""

    engine: str
    bytes: int
    seconds: float


def world_sizes(world: POMDP, arch: MemoryArchitecture) -> Sizes:
    """The :class:`Sizes` of ``world`` with ``arch``, from the sparse tables (``O(nnz(T) + S A O + N C O)``)."""
    import scipy.sparse as sp

    observed = np.diff(world.observation_table.indptr).reshape(world.num_actions, -1)  # (A, S): observations each end state can give
    nnz_t = np.array([m.nnz for m in world.sparse_transition], dtype=np.int64)
    nnz_to = np.array([int(observed[a][m.indices].sum()) for a, m in enumerate(world.sparse_transition)], dtype=np.int64)
    allowed_per_action = np.bincount(arch.choice_action[np.nonzero(arch.allowed)[1]], minlength=world.num_actions)
    class_of, nxt = successor_classes(arch)
    Q = len(nxt)
    n, c = np.nonzero(class_of >= 0)
    allowed_q = sp.csr_matrix((np.ones(len(n)), (n, class_of[n, c])), shape=(arch.num_nodes, Q))
    q_action = np.full(Q, -1, dtype=np.int64)
    q_action[class_of[n, c]] = arch.choice_action[c]
    # The classes one can choose after each class (at any of the nodes it leads to), counted sparsely.
    leads = sp.csr_matrix((np.ones(nxt.size), (np.repeat(np.arange(Q), nxt.shape[1]), nxt.reshape(-1))), shape=(Q, arch.num_nodes))
    after = np.diff((leads @ allowed_q).indptr)  # (Q,)
    per_action = np.bincount(q_action, weights=after, minlength=world.num_actions)
    classes_per_action = np.bincount(q_action, minlength=world.num_actions)
    parts = world.parts
    S_part = max(len(p) for p in parts)
    return Sizes(
        states=world.num_states,
        actions=world.num_actions,
        observations=world.num_observations,
        parts=len(parts),
        states_per_part=S_part,
        nodes=arch.num_nodes,
        choices=arch.num_choices,
        classes=Q,
        transitions=int(nnz_t.sum()),
        largest_action_classes=int(classes_per_action.max(initial=0)),
        chain_nonzeros=int((nnz_to * allowed_per_action).sum()),
        large_nonzeros=int(((nnz_t + len(parts) * S_part) * per_action).sum()),
        step_nonzeros=int((nnz_to * classes_per_action).sum()),
    )


def factor_fits(nonzeros: int) -> bool:
    """Whether the complete sparse LU of a matrix with ``nonzeros`` entries (about ``LARGE_FILL`` times as many in
    its factors, 12 bytes each) fits in ``MEMORY_SHARE`` of the available memory."""
    return 12 * LARGE_FILL * nonzeros <= MEMORY_SHARE * available_bytes()


@functools.cache
def available_bytes() -> int:
    """The memory this machine has available now (``MemAvailable`` of ``/proc/meminfo``; the physical memory
    where that cannot be read), read once per process."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 2**34


def gb(n: float) -> str:
    """``n`` bytes in GB, to three digits (the refusals' unit)."""
    return f"{n / 1e9:.3g} GB"
