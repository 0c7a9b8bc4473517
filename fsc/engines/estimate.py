"""What an evaluation will cost, said before anything is allocated.

:func:`world_sizes` counts, from the world's sparse tables and the architecture's tables, every size the
engines depend on (states, actions, observations, nodes, choices, the joint chain's nonzeros and those of
the chain after each choice); :func:`estimate` turns them into memory and time for each engine;
:func:`plan_engine` refuses an engine that does not fit the machine (one line naming the option, the
estimate and the limit) and, for ``auto``, picks the large-world engine when the joint chain's own list of
nonzeros would be large.  The constants are fitted on ``benchmarks/bench_large.py``'s worlds (2-core
machine, one thread); the estimates are meant to be right within a factor of a few, which is what deciding
and refusing need.
"""

from __future__ import annotations

import functools
import os

import attrs
import numpy as np
import scipy.sparse as sp

from fsc.errors import InputError
from fsc.model.architecture import MemoryArchitecture
from fsc.model.chain import check_plays, successor_classes
from fsc.model.pomdp import POMDP

__all__ = ["Estimate", "Sizes", "available_bytes", "check_sizes", "estimate", "factor_fits", "plan_engine", "set_up_seconds", "world_sizes"]

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

    @property
    def joint_states(self) -> int:
        """``X = S_part N``, joint states per part."""
        return self.states_per_part * self.nodes

    def describe(self) -> str:
        return (
            f"S={self.states}, A={self.actions}, O={self.observations}, N={self.nodes}, C={self.choices}: "
            f"{self.parts * self.joint_states:,} joint states"
        )


@attrs.frozen
class Estimate:
    """Peak bytes and seconds of one evaluation with value and gradient (building the tables included)."""

    engine: str
    bytes: int
    seconds: float


def world_sizes(world: POMDP, arch: MemoryArchitecture) -> Sizes:
    """The :class:`Sizes` of ``world`` with ``arch``, from the sparse tables (``O(nnz(T) + S A O + N C O)``)."""
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


def estimate(engine: str, sizes: Sizes) -> Estimate:
    """Peak bytes and seconds of one evaluation with its gradient on ``engine``, from ``sizes`` alone."""
    K, X, N, C = sizes.parts, sizes.joint_states, sizes.nodes, sizes.choices
    vectors = 8 * (12 * K * X + 4 * N * C)  # p, lambda, seeds and the policy's tables
    chain_bytes = CHAIN_BYTES_PER_NONZERO * sizes.chain_nonzeros
    chain_seconds = CHAIN_SECONDS_PER_NONZERO * sizes.chain_nonzeros
    if engine == "large":
        Y = K * sizes.states_per_part * sizes.classes
        nnz = sizes.large_nonzeros
        fill = LARGE_FILL * nnz
        # Per block, the dense (S_part, Q_a, Q) table of sum_o O W and the (Q_a, Q) masks of the classes that follow.
        vectors += 8 * sizes.states_per_part * sizes.largest_action_classes * sizes.classes
        vectors += (9 + sizes.observations) * K * sizes.actions * sizes.largest_action_classes * sizes.classes
        # G, G^T and the map from the policy to B's entries, CSR (12 bytes an entry), and their construction
        vectors += STEP_BYTES_PER_NONZERO * sizes.step_nonzeros
        seconds = SPARSE_SECONDS_PER_FLOP * fill**2 / max(Y, 1) + SPARSE_SECONDS_PER_NONZERO * (nnz + K * X * C)
        if not factor_fits(nnz):  # GMRES on an incomplete LU of at most 3 times the entries (LargeLU)
            fill, seconds = 3 * nnz, SPARSE_SECONDS_PER_NONZERO * (KRYLOV_PRODUCTS * nnz + K * X * C)
        return Estimate(engine, vectors + LARGE_BYTES_PER_NONZERO * nnz + 12 * fill, seconds)
    if engine in ("dense", "accurate", "power"):
        copies = 3 if engine == "power" else 1
        flops = (2 / 3) * K * X**3 * (6 if engine == "power" else 1)
        return Estimate(engine, vectors + chain_bytes + copies * 8 * K * X * X, chain_seconds + DENSE_SECONDS_PER_FLOP * flops)
    if engine == "choices":
        Y = sizes.states_per_part * sizes.classes
        return Estimate(engine, vectors + chain_bytes + 8 * K * Y * Y, chain_seconds + DENSE_SECONDS_PER_FLOP * (2 / 3) * K * Y**3)
    # sparse and iterative: the chain's list, a CSC copy, and the factor or the preconditioner
    factor = 12 * LARGE_FILL * sizes.chain_nonzeros if engine == "sparse" else 24 * sizes.chain_nonzeros
    return Estimate(engine, vectors + chain_bytes + factor, chain_seconds + SPARSE_SECONDS_PER_NONZERO * LARGE_FILL * sizes.chain_nonzeros)


def factor_fits(nonzeros: int) -> bool:
    """Whether the complete sparse LU of a matrix with ``nonzeros`` entries (about ``LARGE_FILL`` times as many in
    its factors, 12 bytes each) fits in ``MEMORY_SHARE`` of the available memory."""
    return 12 * LARGE_FILL * nonzeros <= MEMORY_SHARE * available_bytes()


def set_up_seconds(world: POMDP, arch: MemoryArchitecture, reset: float, engine: str) -> float:
    """Seconds to build the tables of the engine ``engine`` (or the one ``auto`` picks) before the first
    evaluation: the joint chain's list of nonzeros, or the pattern of the chain after each choice."""
    sizes = world_sizes(world, arch)
    if plan_engine(world, arch, reset, engine) == "large":
        return LARGE_SECONDS_PER_NONZERO * sizes.large_nonzeros
    return CHAIN_SECONDS_PER_NONZERO * sizes.chain_nonzeros


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


def _gb(n: float) -> str:
    return f"{n / 1e9:.3g} GB"


def check_sizes(world: POMDP, arch: MemoryArchitecture) -> None:
    """Refuse, before anything is allocated, a world and memory whose smallest evaluation (the joint
    chain's vectors and the architecture's table of next nodes, ``N x C x O`` integers) does not fit the machine,
    or an architecture that does not play the world's actions and observations."""
    check_plays(world, arch)
    N, C, O = arch.num_nodes, arch.num_choices, world.num_observations
    X = sum(len(p) for p in world.parts) * N
    need = 8 * 12 * X + 32 * N * C + 8 * N * C * O
    limit = MEMORY_SHARE * available_bytes()
    if need > limit:
        raise InputError(
            f"memory (--memory) {arch!r} on a world of {world.num_states} states and {O} observations needs at least "
            f"{_gb(need)} ({X:,} joint states, {N * C * O:,} next nodes), over the {_gb(limit)} this machine has available; "
            "choose a smaller memory"
        )


def _much_faster(sizes: Sizes, limit: float) -> bool:
    """Whether the large engine is estimated at under a tenth of the joint chain's fastest engine that fits, one
    that would take over ``SLOW_CHAIN_SECONDS`` (``machine`` with ``ram:1``: a long horizon whose chain the
    iterative engine solves in many seconds, the large engine in milliseconds)."""
    chain = [estimate(name, sizes) for name in ("choices", "sparse")]
    seconds = min((e.seconds for e in chain if e.bytes <= limit), default=float("inf"))
    return seconds > SLOW_CHAIN_SECONDS and 10 * estimate("large", sizes).seconds < seconds


def plan_engine(world: POMDP, arch: MemoryArchitecture, reset: float, engine: str) -> str:
    """The engine to run: ``engine`` itself, or for ``auto`` ``large`` when it fits and the joint chain would
    hold more than ``LARGE_CHAIN_NONZEROS`` nonzeros (or its engines would not fit); else ``auto``, which
    :func:`fsc.engines.solve.choose_engine` resolves on the chain.

    Raises:
        ValueError: the engine's estimated peak memory is over ``MEMORY_SHARE`` of the available memory
            (one line: the option, the estimate and the limit).
    """
    sizes = world_sizes(world, arch)
    limit = MEMORY_SHARE * available_bytes()
    if engine == "auto":
        if reset == 0:
            engine = "accurate"
        else:
            large_fits = estimate("large", sizes).bytes <= limit
            chain_fits = estimate("iterative", sizes).bytes <= limit  # the lightest engine on the joint chain
            wants_large = sizes.chain_nonzeros > LARGE_CHAIN_NONZEROS or estimate("choices", sizes).bytes > limit or _much_faster(sizes, limit)
            if large_fits and (wants_large or not chain_fits):
                engine = "large"
            elif chain_fits:
                return "auto"  # the joint chain's engines (fsc.engines.solve.choose_engine)
            else:
                engine = "large"  # nothing fits: refused below, with the large engine's estimate
    cost = estimate(engine, sizes)
    if cost.bytes > limit:
        better = [name for name in ("large", "sparse", "iterative") if name != engine and reset > 0 and estimate(name, sizes).bytes <= limit]
        hint = f"--engine {better[0]} fits" if better else "choose a smaller --memory"
        raise InputError(
            f"engine {engine!r} (--engine) with memory {arch!r} (--memory) on {sizes.describe()} needs about "
            f"{_gb(cost.bytes)} (estimate), over the {_gb(limit)} this machine has available; {hint}"
        )
    return engine
