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

import math
import os
import weakref

import attrs
import numpy as np

from fsc.model.architecture import MemoryArchitecture, successor_classes
from fsc.model.pomdp import POMDP

# Nothing here imports scipy or torch at import time (world_sizes imports what it uses): the commands call
# fsc.engines.estimate.check_declared before they import them (fsc.cli.TORCH_AFTER_INPUT).

__all__ = ["Estimate", "Sizes", "available_bytes", "chain_build", "complete_lu", "factor_fits", "gb", "krylov_seconds", "large_fill", "lu_seconds",
           "memory_limits", "state_fill", "world_sizes"]

#: Bytes per stored nonzero of :class:`fsc.model.chain.JointChain` (five int32 index arrays and the weight,
#: then the int64 tables the engines derive from them) and during its construction.
CHAIN_BYTES_PER_NONZERO = 100
#: Bytes per entry of the chain after each choice ``B`` (its pattern, slots, values and CSC copy).
LARGE_BYTES_PER_NONZERO = 48
#: Bytes per entry of the large engine's step ``G``: it, its transpose and the map to ``B``'s entries (CSR, 12 bytes
#: an entry each), and the index arrays they are built from.
STEP_BYTES_PER_NONZERO = 60
#: SuperLU's factors of the joint chain (the ``sparse`` engine) hold about this many times its nonzeros (kept
#: pessimistic; ``auto`` gives that engine small chains only).
JOINT_FILL = 4
#: The large engine's factors (:func:`large_fill`): ``B`` over ``(s, q)`` has the pattern of the graph of the world's
#: states with blocks of classes, and its LU that of the graph's LU with blocks: about :func:`state_fill` ``x Q^2``
#: entries per part, never more than a dense ``Y x Y``, and at least ``LARGE_FILL`` times ``B``'s entries (what a
#: world's declared sizes give before it is read, :mod:`fsc.engines.estimate`).  Measured
#: (``benchmarks/bench_budgets.py fill``) from 1.1 times ``B``'s entries (corridors, hallway) to 15 (Tag) and over
#: 300 (random sparse worlds, whose graph has no small separator); the estimate is within a factor of 5 above and 1.5
#: below there.
LARGE_FILL = 4
#: The states of the graph whose LU :func:`state_fill` measures at once (a dense one of this size: about 0.3 s);
#: a larger part is measured on the first ``FILL_SAMPLE // 2`` and ``FILL_SAMPLE`` states of a breadth-first
#: order, and the fill's growth between the two extrapolated to the whole part.
FILL_SAMPLE = 1000
#: Seconds per nonzero of the joint chain to build it (a pass of numpy per world state), and per entry of
#: ``B`` to lay out its pattern (a sort).
CHAIN_SECONDS_PER_NONZERO = 2e-7
#: Seconds per cell the joint chain's build looks at: for each world state, a dense ``(E, S_part, O)`` table of
#: ``T O`` over every state of its part (``E`` allowed node-choice pairs), ``K S_part^2 E O`` cells in all, so that
#: the build grows with the square of the states even on a sparse world (measured 2e-8 to 5e-8 s a cell on
#: 600-state corridors and ``hallway``, ``benchmarks/bench_evaluate.py files``).
CHAIN_SECONDS_PER_CELL = 3e-8
#: Bytes per cell of the build's table of one world state (the table, its mask, and the indices of its nonzeros).
CHAIN_BYTES_PER_CELL = 24
LARGE_SECONDS_PER_NONZERO = 5e-7
#: Seconds per floating-point operation of a dense LU or of a sparse one (a factor with ``F`` nonzeros over
#: ``Y`` columns takes about ``F^2 / Y`` operations: measured 1.1e-10 to 2.3e-10 s on the large engine's factors of
#: random sparse worlds and Tag, ``benchmarks/bench_budgets.py fill``), and per nonzero of a sparse matrix touched once.
DENSE_SECONDS_PER_FLOP = 1e-9
SPARSE_SECONDS_PER_FLOP = 1.2e-10
SPARSE_SECONDS_PER_NONZERO = 1e-7
#: Products with ``B`` (and solves with its incomplete LU) a GMRES solve of the large engine takes, for the estimate.
KRYLOV_PRODUCTS = 100
#: The large engine takes GMRES over a complete LU that fits only when the LU is estimated this many times slower:
#: GMRES converges fast on worlds that mix fast (random sparse ones, where the LU fills in), slowly where the LU is
#: cheap (Tag with ``ram:8``: the LU in 25 s, GMRES not done in 190 s).
KRYLOV_MARGIN = 10
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
        allowed_pairs: ``E``, the allowed (node, choice) pairs.
        dense_world_bytes: the dense ``T`` and ``O`` the joint chain's build makes of a world stored sparse (0 when
            the world is dense already).
        state_fill: estimated entries of the sparse LU of ``I - T`` on the largest part's states, ``T`` the pattern of
            all actions' transitions (:func:`state_fill`; 0: not measured).
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
    allowed_pairs: int = 0
    dense_world_bytes: int = 0
    state_fill: int = 0

    @property
    def joint_states(self) -> int:
        """``X = S_part N``, joint states per part."""
        return self.states_per_part * self.nodes

    @property
    def placed(self) -> int:
        """``K S_part``, the world states of all parts, padding included."""
        return self.parts * self.states_per_part if self.placed_states is None else self.placed_states

    @property
    def build_cells(self) -> int:
        """``K S_part^2 E O``: the cells the joint chain's build looks at (:data:`CHAIN_SECONDS_PER_CELL`)."""
        return self.placed * self.states_per_part * self.allowed_pairs * self.observations

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
        allowed_pairs=int(np.count_nonzero(arch.allowed)),
        dense_world_bytes=8 * world.num_states * world.num_actions * (world.num_states + world.num_observations) if world.is_sparse else 0,
        state_fill=state_fill(world),
    )


def chain_build(sizes: Sizes) -> tuple[int, float]:
    """``(bytes, seconds)`` of building the joint chain (:func:`fsc.model.chain.joint_chain`): its list of nonzeros, the
    dense tables of a world stored sparse, and the table of one world state at a time over every state of its part."""
    cells = sizes.states_per_part * sizes.allowed_pairs * sizes.observations  # one world state's table
    nbytes = CHAIN_BYTES_PER_NONZERO * sizes.chain_nonzeros + sizes.dense_world_bytes + CHAIN_BYTES_PER_CELL * cells
    return nbytes, CHAIN_SECONDS_PER_NONZERO * sizes.chain_nonzeros + CHAIN_SECONDS_PER_CELL * sizes.build_cells


def factor_fits(fill: int) -> bool:
    """Whether a sparse LU whose factors hold ``fill`` entries (12 bytes each) fits in ``MEMORY_SHARE`` of the
    available memory."""
    return 12 * fill <= MEMORY_SHARE * available_bytes()


def large_fill(sizes: Sizes) -> int:
    """Estimated entries of the large engine's complete LU factors, over all parts (:data:`FILL_SAMPLE`)."""
    Y = sizes.states_per_part * sizes.classes
    return max(LARGE_FILL * sizes.large_nonzeros, sizes.parts * min(sizes.state_fill * sizes.classes**2, Y * Y))


def lu_seconds(fill: int, states: int, nonzeros: int) -> float:
    """Seconds of a sparse LU whose factors hold ``fill`` entries over ``states`` columns (about ``fill^2 / states``
    operations) and of touching its ``nonzeros`` once."""
    return SPARSE_SECONDS_PER_FLOP * fill**2 / max(states, 1) + SPARSE_SECONDS_PER_NONZERO * nonzeros


def krylov_seconds(nonzeros: int, states: int) -> float:
    """Seconds of GMRES on an incomplete LU of at most 3 times ``nonzeros`` entries (:data:`KRYLOV_PRODUCTS` products)."""
    return lu_seconds(3 * nonzeros, states, KRYLOV_PRODUCTS * nonzeros)


def complete_lu(fill: int, states: int, nonzeros: int, *, timed: bool = True, besides: int = 0) -> bool:
    """Whether the large engine factors ``B`` completely (else GMRES on an incomplete LU): when the factors fit the
    memory with ``besides`` bytes more and (``timed``: the fill was measured, :func:`state_fill`) are estimated under
    :data:`KRYLOV_MARGIN` times GMRES's seconds."""
    fits = 12 * fill + besides <= MEMORY_SHARE * available_bytes()
    return fits and (not timed or lu_seconds(fill, states, nonzeros) <= KRYLOV_MARGIN * krylov_seconds(nonzeros, states))


#: The state-level fill measured per world (:func:`state_fill`).
_STATE_FILLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def state_fill(world: POMDP) -> int:
    """Estimated entries of the LU (SuperLU, COLAMD, diagonal pivots: as the large engine factors) of ``I - T / 2``
    on the states of the world's largest part, ``T`` the sum of every action's transitions: measured where the part
    has at most :data:`FILL_SAMPLE` states, else extrapolated from two samples of the part (once per world)."""
    if world not in _STATE_FILLS:
        import scipy.sparse as sp
        from scipy.sparse.csgraph import reverse_cuthill_mckee

        part = np.asarray(max(world.parts, key=len), dtype=np.int64)
        union = sum(abs(m) for m in world.sparse_transition).tocsr()[part][:, part]
        pattern = (sp.identity(len(part), format="csr") + (union / max(1.0, float(abs(union).max())) * 0.5)).tocsr()
        if len(part) <= FILL_SAMPLE:
            found = _lu_entries(pattern)
        else:
            order = reverse_cuthill_mckee(pattern, symmetric_mode=False)[::-1]  # a breadth-first order from a far state
            small, large = (_lu_entries(pattern[order[:n]][:, order[:n]]) / n for n in (FILL_SAMPLE // 2, FILL_SAMPLE))
            growth = min(1.0, max(0.0, math.log2(large / small)))  # per state, as n^growth: 0 banded, 1 dense
            found = min(int(large * len(part) * (len(part) / FILL_SAMPLE) ** growth), len(part) ** 2)
        _STATE_FILLS[world] = int(found)
    return _STATE_FILLS[world]


def _lu_entries(matrix) -> int:
    from scipy.sparse.linalg import splu

    return int(splu(matrix.tocsc(), permc_spec="COLAMD", diag_pivot_thresh=0.0).nnz)


def available_bytes() -> int:
    """The memory this process may still use: the smallest of :func:`memory_limits`."""
    return min(memory_limits().values())


def memory_limits() -> dict[str, int]:
    """What limits this process's memory now, in bytes, by source:

    - ``free``: the machine's available memory (``MemAvailable`` of ``/proc/meminfo``; the physical memory where
      that cannot be read);
    - ``address space``: ``RLIMIT_AS`` (``ulimit -v``) minus the address space in use (``VmSize``: the libraries
      loaded so far count, torch's 0.9 GB once imported), where there is such a limit;
    - ``container``: the cgroup's limit minus its use (``memory.max`` and ``memory.current`` of cgroup v2,
      ``memory.limit_in_bytes`` and ``memory.usage_in_bytes`` of v1), where there is one.
    """
    found = {"free": _meminfo_available()}
    address = _address_space_left()
    if address is not None:
        found["address space"] = address
    container = _cgroup_left()
    if container is not None:
        found["container"] = container
    return found


def _meminfo_available() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 2**34


def _address_space_left() -> int | None:
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    used = 0
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    used = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return max(0, soft - used)


#: Where a container's memory limit and use are read: cgroup v2, then v1.
CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"))  # fmt: skip


def _cgroup_left() -> int | None:
    for limit_file, usage_file in CGROUP_FILES:
        try:
            with open(limit_file) as f:
                text = f.read().strip()
            if text == "max":
                return None
            limit = int(text)
            with open(usage_file) as f:
                used = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if limit >= 2**60:  # v1 writes "no limit" as a huge number
            return None
        return max(0, limit - used)
    return None


def gb(n: float) -> str:
    """``n`` bytes in GB, to three digits (the refusals' unit)."""
    return f"{n / 1e9:.3g} GB"
