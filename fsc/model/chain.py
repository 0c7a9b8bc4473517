"""The joint Markov chain of world x memory under a policy.

States of the joint chain are pairs ``(s, n)``; the world splits into closed
parts (for the two-hypothesis task, one per hypothesis), each solved on its
own and batched along a leading axis ``K``.  Inside a part, the joint index
is ``x = s_local * N + n`` with ``X = S_part * N`` states (parts are padded to
the largest with states that have no mass and loop on themselves).

.. math::

    P[(s_2, n_2), (s, n)] = \\sum_c \\pi[n, c] \\, T[s, a(c), s_2] \\,
        O[a(c), s_2, o] \\, [n_2 = \\mathrm{next}(n, c, o)]

(docs/model.md; note the axis order: ``P[x2, x]`` is the probability of
``x -> x2``, so columns sum to 1.)

The nonzeros are stored once per (world, architecture), sorted by part, then
by column ``x``: the slice of part ``k`` is a compressed-sparse-column (CSC)
matrix of ``P`` as it stands, so the sparse engines get scipy matrices without
sorting.  Index arrays are int32 when the chain fits (about 11 M nonzeros and
300 MB for Memento ``m = 10``).
"""

from __future__ import annotations

import collections
import functools
from typing import TYPE_CHECKING

import attrs
import numpy as np
import scipy.sparse as sp

from fsc.errors import InputError
from fsc.model.architecture import MemoryArchitecture, readonly, successor_classes  # successor_classes: exported here as it was
from fsc.model.pomdp import POMDP

if TYPE_CHECKING:  # torch: imported by the few tensor views below, so that the evaluator runs without it
    import torch

__all__ = [
    "AfterChoice", "ChainFrame", "JointChain", "KernelTables", "RecentTables", "check_plays", "chain_frame", "joint_chain", "require_after_choice",
    "successor_classes",
]  # fmt: skip


@attrs.frozen(eq=False)
class ChainFrame:
    """What the joint chain of a world and an architecture holds besides its nonzeros: the parts, the
    reset distribution, the expected reward of each choice (no ``(S, N, C, O)`` table is built).

    The engine for large worlds (:mod:`fsc.engines.large`) runs on this and the world's sparse tables; the
    other engines read the same fields off :class:`JointChain`, which adds the nonzeros.

    Attributes:
        num_parts: ``K``.
        size: ``X``, joint states per part.
        part_states: ``(K, S_part)`` world state of each local state (-1: padding).
        part_weights: ``(K,)`` initial mass of each part (sums to 1).
        step_reward: ``(K, S_part, C)`` expected reward of choice ``c`` in world state s.
        step_metrics: name -> ``(K, S_part, C)`` expected metric of the step.
        initial_world: ``(K, S_part)`` world part of the reset distribution (per part, sums to 1).
        padding: ``(K, X)`` bool, the padding states (a self-loop of probability 1 each).
    """

    architecture: MemoryArchitecture
    num_parts: int
    states_per_part: int
    part_states: np.ndarray
    part_weights: np.ndarray
    step_reward: np.ndarray
    step_metrics: dict
    initial_world: np.ndarray
    padding: np.ndarray

    @property
    def size(self) -> int:
        return self.states_per_part * self.architecture.num_nodes


@attrs.frozen(eq=False)
class JointChain(ChainFrame):
    """Index tables of the joint chain (pure structure, no policy): the :class:`ChainFrame` and the nonzeros.

    The arrays are read-only; derived tables (torch indices, CSC pointers)
    are computed once, on first use.

    Attributes:
        rows, cols, parts: COO coordinates of each nonzero of ``P`` (int32 or
            int64), sorted by ``(parts, cols)``.
        node, choice: the ``(n, c)`` whose probability scales each nonzero.
        weight: ``T * O`` of each nonzero (float64).
    """

    rows: np.ndarray
    cols: np.ndarray
    parts: np.ndarray
    node: np.ndarray
    choice: np.ndarray
    weight: np.ndarray

    @property
    def nnz(self) -> int:
        """Number of stored nonzeros of ``P`` over all parts."""
        return len(self.rows)

    # Cached derived tables.

    @functools.cached_property
    def system_pattern(self) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int], ...]:
        """Per part, the CSC pattern of ``A = I - (1 - r) P``: ``(indptr, indices, slot, diag_slot, nnz)``.

        ``slot[e]`` is where nonzero ``e`` of the part goes in ``A.data``,
        ``diag_slot[x]`` where the diagonal entry of ``x`` is; duplicates share
        a slot (the sparse engines fill ``A.data`` from the policy's values).
        """
        X = self.size
        out = []
        for sl in self.part_slices:
            rows = self.rows[sl].astype(np.int64)
            cols = self.cols[sl].astype(np.int64)
            diag = np.arange(X, dtype=np.int64)
            keys = np.concatenate([cols * X + rows, diag * X + diag])
            unique, inverse = np.unique(keys, return_inverse=True)
            index = np.int32 if len(unique) < 2**31 - 1 else np.int64
            indptr = np.zeros(X + 1, dtype=np.int64)
            np.cumsum(np.bincount(unique // X, minlength=X), out=indptr[1:])
            nP = len(rows)
            out.append((indptr.astype(index), (unique % X).astype(index), inverse[:nP].astype(index), inverse[nP:].astype(index), len(unique)))
        return tuple(out)

    @functools.cached_property
    def node_choice(self) -> np.ndarray:
        """``node * C + choice`` of each nonzero (int64): where its factor sits in ``probs.reshape(-1)``."""
        return readonly(self.node.astype(np.int64) * self.architecture.num_choices + self.choice)

    @functools.cached_property
    def flat_rows(self) -> np.ndarray:
        """``part * X + row`` of each nonzero (int64): its entry of a ``(K, X)`` array read flat."""
        return readonly(self.parts.astype(np.int64) * self.size + self.rows)

    @functools.cached_property
    def flat_cols(self) -> np.ndarray:
        """``part * X + col`` of each nonzero (int64)."""
        return readonly(self.parts.astype(np.int64) * self.size + self.cols)

    @functools.cached_property
    def dense_index_t(self) -> np.ndarray:
        """Flat index of each nonzero in the ``(K, X, X)`` array ``P^T`` (``[k, col, row]``)."""
        return readonly(self.flat_cols * self.size + self.rows)

    @functools.cached_property
    def _torch_node_choice(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        import torch

        C = self.architecture.num_choices
        return torch.from_numpy(self.node_choice.copy()), torch.from_numpy(self.weight.copy()), torch.tensor(C)

    @functools.cached_property
    def _torch_tables(self) -> dict[str, torch.Tensor]:
        import torch

        return {"initial_world": torch.from_numpy(self.initial_world.copy()), "padding": torch.from_numpy(self.padding.copy())}

    @functools.cached_property
    def _dense_index(self) -> torch.Tensor:
        import torch

        X = self.size
        return torch.from_numpy((self.parts.astype(np.int64) * X + self.rows) * X + self.cols)

    @functools.cached_property
    def after_choice(self) -> AfterChoice | None:
        """The chain after each choice (:class:`AfterChoice`), or ``None`` when its LU would not be smaller
        than the chain's own, or larger than ``AFTER_CHOICE_MAX_STATES``."""
        return _after_choice(self)

    @functools.cached_property
    def part_slices(self) -> tuple[slice, ...]:
        """The slice of the nonzero arrays that belongs to each part."""
        bounds = np.searchsorted(self.parts, np.arange(self.num_parts + 1))
        return tuple(slice(int(bounds[k]), int(bounds[k + 1])) for k in range(self.num_parts))

    @functools.cached_property
    def csc_indptr(self) -> tuple[np.ndarray, ...]:
        """Per part, the CSC column pointers of ``P`` (int32 or int64, length ``X + 1``)."""
        X = self.size
        out = []
        for sl in self.part_slices:
            counts = np.bincount(self.cols[sl], minlength=X)
            indptr = np.zeros(X + 1, dtype=np.int64)
            np.cumsum(counts, out=indptr[1:])
            out.append(readonly(indptr.astype(self.rows.dtype)))
        return tuple(out)

    # Values.

    def values(self, probs: torch.Tensor) -> torch.Tensor:
        """Nonzero values of ``P`` for ``probs[n, c]`` (differentiable)."""
        flat, weight, _ = self._torch_node_choice
        return probs.reshape(-1)[flat] * weight

    def matrices(self, values: np.ndarray) -> list[sp.csc_matrix]:
        """``P`` of each part as a scipy CSC matrix (``P[x2, x]``), padding self-loops included.

        Duplicate coordinates (two choices leading to one state) are summed.
        """
        X = self.size
        out = []
        for k, sl in enumerate(self.part_slices):
            P = sp.csc_matrix((values[sl], self.rows[sl].copy(), self.csc_indptr[k].copy()), shape=(X, X))
            if self.padding[k].any():
                P = (P + sp.diags(self.padding[k].astype(np.float64), format="csc")).tocsc()
            P.sum_duplicates()
            out.append(P)
        return out

    def dense(self, probs: torch.Tensor) -> torch.Tensor:
        """``P`` as a dense ``(K, X, X)`` tensor (``P[k, x2, x]``)."""
        import torch

        K, X = self.num_parts, self.size
        flat = torch.zeros(K * X * X, dtype=torch.float64)
        flat = flat.index_add(0, self._dense_index, self.values(probs))
        P = flat.reshape(K, X, X)
        if self.padding.any():
            pad = self._torch_tables["padding"]
            P = P + torch.diag_embed(pad.to(torch.float64))
        return P

    def initial(self, init_probs: torch.Tensor) -> torch.Tensor:
        """Reset distribution ``p0[k, x]``, shape ``(K, X)``, each row summing to 1."""
        world = self._torch_tables["initial_world"]
        return (world[:, :, None] * init_probs[None, None, :]).reshape(self.num_parts, self.size)


@attrs.frozen(eq=False)
class AfterChoice:
    """Index tables of the joint chain seen just after each choice: states ``(s, q)``, ``Y = S_part Q`` per part.

    The choices ``(n, c)`` fall into classes ``q``: those of one class take the same choice to the same
    next nodes (``next_node[n, c, :]``); RAM, chain and column have one class per choice (the next node is
    the memory chosen, the arm and the observation, whoever chose), Memento one per choice and history
    without its oldest entry.  The chain's matrix factors as ``P = G Pi`` (plus the padding's self-loops):

    - ``Pi[(s, q), (s, n)] = pi[n, c]`` for the choice ``(n, c)`` of class ``q``: the choice;
    - ``G[(s2, nxt[q, o]), (s, q)] = T[s, a(c_q), s2] O[a(c_q), s2, o]``: the world's step and the next node.

    By the Woodbury identity ``(I - a G Pi)^{-1} = I + a G (I - a Pi G)^{-1} Pi`` (``a = 1 - r``), every
    solve with ``A = I - a P`` is one solve with ``B = I - a Pi G`` and a few products
    (:func:`fsc.engines.kernels.after_choice_solve`).  ``B`` is block triangular: the classes no cycle of
    the chain reaches (Memento's short histories) come first, in an order where every step goes forward, and
    are solved by substitution; only the rest, the ``recurrent`` states, go through an LU, of
    ``Y_R = S_part Q_R`` states instead of ``X = S_part N`` (RAM 8: 16 against 40; Memento 3: 32 against 85).

    Attributes:
        size: ``Y``, states per part.
        num_classes: ``Q``.
        class_of: ``(N, C)`` the class of each choice (-1: not allowed).
        next_node: ``(Q, O)`` the node after each class and observation.
        g_rows, g_cols, g_weight: the nonzeros of ``G``: ``part * X + s2 * N + n2``, ``part * Y + s * Q + q``,
            ``T * O`` (int64, int64, float64).
        recurrent: ``(Y_R,)`` the states ``s * Q + q`` of the LU, increasing (all ``Y`` of them when no class is
            transient, as in RAM).
        b_index_t, b_node_choice, b_weight: the nonzeros of ``Pi G`` among the recurrent states: flat index in
            ``B_R^T`` ``(K, Y_R, Y_R)``, ``n2 * C + c2`` of the policy entry that scales it, ``T * O``.
        b_padding: ``(K, Y_R)`` all False (states no choice reaches have empty columns: ``B`` is 1 there).
        t_src, t_dst, t_node_choice, t_weight: the nonzeros of ``Pi G`` out of the transient states (to
            transient and recurrent ones), as flat indices ``part * Y + s * Q + q``, sorted so that every
            state comes after all the states that lead to it.
        valid: ``(K, S_part)`` the world states of each part that are not padding.
    """

    size: int
    num_classes: int
    class_of: np.ndarray
    next_node: np.ndarray
    g_rows: np.ndarray
    g_cols: np.ndarray
    g_weight: np.ndarray
    recurrent: np.ndarray
    b_index_t: np.ndarray
    b_node_choice: np.ndarray
    b_weight: np.ndarray
    b_padding: np.ndarray
    t_src: np.ndarray
    t_dst: np.ndarray
    t_node_choice: np.ndarray
    t_weight: np.ndarray
    valid: np.ndarray

    @property
    def recurrent_size(self) -> int:
        """``Y_R``, the states per part of the LU."""
        return len(self.recurrent)

    @functools.cached_property
    def choice_is_class(self) -> bool:
        """Whether each choice ``c`` is its own class, allowed at every node (``class_of[n, c] = c``, as in
        RAM): then ``Pi`` is the policy's matrix itself, and the kernels run over it row by row."""
        return bool(np.array_equal(self.class_of, np.broadcast_to(np.arange(self.class_of.shape[1]), self.class_of.shape)))

    @functools.cached_property
    def b_runs(self) -> np.ndarray:
        """The nonzeros of ``Pi G`` cut into runs along which both ``b_index_t`` and ``b_node_choice`` step by one,
        ``(R, 4)``: first nonzero, length, first flat index, first policy entry; ``(0, 4)`` when the runs are shorter
        than :data:`SHORTEST_RUNS` on average.

        Where each choice is its own class (RAM) a run is a row of the policy or more, and
        :func:`fsc.engines.kernels.after_choice_system_into` assembles ``B`` run by run, in vector instructions
        (the same operations in the same order per entry: 3.3x faster on RAM 20); Memento's runs are one
        nonzero long, and there it scatters the nonzeros one by one instead.
        """
        index, node_choice = self.b_index_t, self.b_node_choice
        if len(index) == 0:
            return readonly(np.zeros((0, 4), dtype=np.int64))
        breaks = np.flatnonzero((np.diff(index) != 1) | (np.diff(node_choice) != 1)) + 1
        first = np.concatenate([[0], breaks]).astype(np.int64)
        if len(index) < SHORTEST_RUNS * len(first):
            return readonly(np.zeros((0, 4), dtype=np.int64))
        length = np.diff(np.concatenate([first, [len(index)]]))
        return readonly(np.stack([first, length, index[first], node_choice[first]], axis=1).astype(np.int64))

    @functools.cached_property
    def kernel_tables(self) -> KernelTables:
        """The tables :func:`fsc.engines.kernels.after_choice_solve` reads, by name."""
        return KernelTables(
            self.g_rows, self.g_cols, self.g_weight, self.class_of, self.num_classes,
            self.recurrent, self.t_src, self.t_dst, self.t_node_choice, self.t_weight, self.choice_is_class,
        )  # fmt: skip


#: :attr:`AfterChoice.kernel_tables`: the tables of the chain after each choice that the compiled kernels read
#: (numba reads a namedtuple's fields by name in compiled code, at no cost).  ``num_classes`` is ``Q``.
KernelTables = collections.namedtuple(
    "KernelTables",
    ("g_rows", "g_cols", "g_weight", "class_of", "num_classes", "recurrent", "t_src", "t_dst", "t_node_choice", "t_weight", "choice_is_class"),
)


#: :attr:`AfterChoice.b_runs` are used when they are this many nonzeros long on average (RAM 8: 30, Memento: 1);
#: below, a loop per run costs more than the scatter it replaces.
SHORTEST_RUNS = 4


def require_after_choice(chain: JointChain) -> AfterChoice:
    """``chain.after_choice``, or a ``ValueError`` saying why the architecture has none."""
    tables = chain.after_choice
    if tables is None:
        raise InputError(
            f"engine 'choices' needs an architecture whose choices fall into classes (same choice, same next nodes) "
            f"that leave an LU smaller than the chain's; {chain.architecture!r} has none"
        )
    return tables


#: The most recurrent states per part :class:`AfterChoice` is built for: beyond, its dense LU costs more
#: than the sparse and iterative engines on the whole chain (the ``choices`` engine of fsc.engines.builtin).
AFTER_CHOICE_MAX_STATES = 3000


def _after_choice(chain: JointChain) -> AfterChoice | None:
    arch = chain.architecture
    class_of, nxt = successor_classes(arch)
    Q = len(nxt)
    K, X, S = chain.num_parts, chain.size, chain.states_per_part
    Y = S * Q
    transient = _transient_classes(class_of, nxt)
    YR = S * (Q - len(transient))
    if YR >= X or YR == 0 or YR > AFTER_CHOICE_MAX_STATES:
        return None  # no smaller LU than the chain's own, or one too large to pay
    g_rows, g_cols, g_weight, b_src, b_dst, b_node_choice, b_weight = _after_choice_entries(chain, class_of, Q)
    recurrent = np.flatnonzero(~np.tile(np.isin(np.arange(Q), transient), S))
    position = np.full(Q, Q, dtype=np.int64)  # topological position of each transient class
    position[transient] = np.arange(len(transient))
    local = -np.ones(Y, dtype=np.int64)  # index among the recurrent states
    local[recurrent] = np.arange(len(recurrent))
    from_transient = position[b_src % Y % Q] < Q
    t = np.flatnonzero(from_transient)
    t = t[np.argsort(position[b_src[t] % Y % Q], kind="stable")]
    r = np.flatnonzero(~from_transient)  # recurrent to recurrent (a recurrent state leads nowhere else)
    b_parts = b_src[r] // Y
    return AfterChoice(
        size=Y,
        num_classes=Q,
        class_of=class_of,
        next_node=nxt,
        g_rows=readonly(g_rows),
        g_cols=readonly(g_cols),
        g_weight=readonly(g_weight),
        recurrent=readonly(recurrent),
        b_index_t=readonly((b_parts * YR + local[b_src[r] % Y]) * YR + local[b_dst[r] % Y]),
        b_node_choice=readonly(b_node_choice[r]),
        b_weight=readonly(b_weight[r]),
        b_padding=readonly(np.zeros((K, YR), dtype=bool)),
        t_src=readonly(b_src[t]),
        t_dst=readonly(b_dst[t]),
        t_node_choice=readonly(b_node_choice[t]),
        t_weight=readonly(b_weight[t]),
        valid=readonly(chain.part_states >= 0),
    )


def _transient_classes(class_of: np.ndarray, nxt: np.ndarray) -> np.ndarray:
    """The transient classes: those no cycle reaches, in an order where every step goes forward; found on the
    architecture's graph (q -> the classes of the choices at nxt[q, o]), which has every step the chain has."""
    Q = len(nxt)
    targets = class_of[nxt.reshape(-1)].reshape(Q, -1)
    source = np.repeat(np.arange(Q), targets.shape[1])
    edge = targets.reshape(-1) >= 0
    graph = sp.csr_matrix((np.ones(int(edge.sum())), (source[edge], targets.reshape(-1)[edge])), shape=(Q, Q))
    return _upstream_of_cycles(graph)


def _after_choice_entries(chain: JointChain, class_of: np.ndarray, Q: int) -> tuple[np.ndarray, ...]:
    """The nonzeros of ``G`` (``g_rows``, ``g_cols``, ``g_weight``) and of ``B = Pi G`` (``b_src``, ``b_dst``,
    ``b_node_choice``, ``b_weight``, flat indices ``part * Y + s * Q + q``), read off the chain's own."""
    arch = chain.architecture
    N, C = arch.num_nodes, arch.num_choices
    X, Y = chain.size, chain.states_per_part * Q
    # Nonzero e of P is (s2, nxt[q_e, o]) <- (s, n_e) with weight T O; those of one (part, s, q, s2, o) are
    # equal for every n of the class, so keep its first node.
    first = np.full(Q, N, dtype=np.int64)
    np.minimum.at(first, class_of[class_of >= 0], np.nonzero(class_of >= 0)[0])
    klass = class_of[chain.node, chain.choice]
    keep = chain.node == first[klass]
    parts = chain.parts[keep].astype(np.int64)
    s = chain.cols[keep].astype(np.int64) // N
    g_rows = parts * X + chain.rows[keep].astype(np.int64)
    g_cols = parts * Y + s * Q + klass[keep]
    g_weight = np.ascontiguousarray(chain.weight[keep], dtype=np.float64)
    # B = Pi G: (s2, q2) <- (s, q) with pi[n2, c2] T O, n2 the node G leads to.
    n2 = chain.rows[keep].astype(np.int64) % N
    s2 = chain.rows[keep].astype(np.int64) // N
    e, c2 = np.nonzero(arch.allowed[n2])
    b_dst = parts[e] * Y + s2[e] * Q + class_of[n2[e], c2]
    return g_rows, g_cols, g_weight, g_cols[e], b_dst, n2[e] * C + c2, g_weight[e]


def reached_from(graph: sp.csr_matrix, start: np.ndarray) -> np.ndarray:
    """``(n,)`` bool: the nodes of a directed graph (CSR, an edge per stored entry of a row) that a walk from the nodes
    ``start`` (indices) reaches, ``start`` included."""
    reached = np.zeros(graph.shape[0], dtype=bool)
    reached[start] = True
    frontier = np.asarray(start)
    while frontier.size:
        after = np.unique(graph[frontier].indices)
        frontier = after[~reached[after]]
        reached[frontier] = True
    return reached


def _upstream_of_cycles(graph: sp.csr_matrix) -> np.ndarray:
    """The nodes of a directed graph that no cycle reaches, in an order where every edge between them goes forward."""
    import scipy.sparse.csgraph as csgraph  # here, not at the top: its import costs evaluate, draw and train a tenth of a second

    count, label = csgraph.connected_components(graph, directed=True, connection="strong")
    on_cycle = (np.bincount(label, minlength=count)[label] > 1) | (graph.diagonal() != 0)
    reached = reached_from(graph, np.flatnonzero(on_cycle))  # the cycles and all they lead to
    rest = np.flatnonzero(~reached)
    # Kahn's order on the acyclic rest (edges into it come from it alone: whatever leads out of the reached set stays in it).
    sub = graph[rest][:, rest].tocsr()
    indegree = np.asarray((sub != 0).sum(axis=0)).reshape(-1)
    order, ready = [], list(np.flatnonzero(indegree == 0))
    while ready:
        i = ready.pop(0)
        order.append(i)
        for j in sub.indices[sub.indptr[i] : sub.indptr[i + 1]]:
            indegree[j] -= 1
            if indegree[j] == 0:
                ready.append(j)
    return rest[np.array(order, dtype=np.int64)]


class RecentTables:
    """The tables last built per (world, architecture), most recent last, kept while their weights add up to
    at most ``limit()`` (the latest always): ``recent(world, architecture)`` returns the kept ones or builds them."""

    def __init__(self, build, limit, weight=lambda tables: 1):
        self.build, self.limit, self.weight = build, limit, weight
        self.kept: collections.OrderedDict = collections.OrderedDict()

    def __call__(self, world: POMDP, architecture: MemoryArchitecture):
        key = (world, architecture)
        tables = self.kept.pop(key, None)
        if tables is None:
            tables = self.build(world, architecture)
        self.kept[key] = tables
        total = sum(self.weight(t) for t in self.kept.values())
        while len(self.kept) > 1 and total > self.limit():
            _, dropped = self.kept.popitem(last=False)
            total -= self.weight(dropped)
        return tables


#: The joint chains kept for reuse, most recent last, while their nonzeros add up to at most
#: ``MAX_CACHED_NONZEROS`` (the latest is always kept): a few large chains are not held alive for nothing
#: (Memento 10's alone is 11 M nonzeros, about 300 MB), many small ones are.
MAX_CACHED_NONZEROS = 4_000_000
_cached = RecentTables(lambda world, arch: _build(world, arch), lambda: MAX_CACHED_NONZEROS, lambda chain: chain.nnz)


def joint_chain(world: POMDP, architecture: MemoryArchitecture) -> JointChain:
    """The index tables of the joint chain of ``world`` and ``architecture`` (cached)."""
    check_plays(world, architecture)
    return _cached(world, architecture)


def check_plays(world: POMDP, architecture: MemoryArchitecture) -> None:
    """Raise ``ValueError`` unless ``architecture`` plays the world's actions and reads its observations."""
    if architecture.num_actions != world.num_actions:
        raise InputError(f"{architecture!r} plays {architecture.num_actions} actions but the world has {world.num_actions}")
    if architecture.num_observations != world.num_observations:
        raise InputError(f"{architecture!r} reads {architecture.num_observations} observations but the world has {world.num_observations}")


#: The frames last built (a few: each holds ``S x C`` tables).
chain_frame = RecentTables(lambda world, arch: _frame(world, arch), lambda: 4)


def _frame(world: POMDP, arch: MemoryArchitecture) -> ChainFrame:
    parts = world.parts
    K, S_part = len(parts), max(len(p) for p in parts)
    N, C = arch.num_nodes, arch.num_choices
    part_states = -np.ones((K, S_part), dtype=np.int64)
    for k, members in enumerate(parts):
        part_states[k, : len(members)] = members
    valid = part_states >= 0
    weights = np.array([world.initial[list(p)].sum() for p in parts])
    action = arch.choice_action

    # Expected reward (and metrics) of each choice from each world state:
    # rbar[s, a] = sum_{s2, o} T[s, a, s2] O[a, s2, o] reward[s, a, s2, o].
    def per_step(table: np.ndarray) -> np.ndarray:
        rbar = world.expected_step(table)
        out = np.zeros((K, S_part, C))
        out[valid] = rbar[part_states[valid]][:, action]
        return readonly(out)

    initial_world = np.zeros((K, S_part))
    initial_world[valid] = world.initial[part_states[valid]]
    initial_world /= initial_world.sum(axis=1, keepdims=True)
    return ChainFrame(
        architecture=arch,
        num_parts=K,
        states_per_part=S_part,
        part_states=readonly(part_states),
        part_weights=readonly(weights / weights.sum()),
        step_reward=per_step(world.reward_table),  # as stored: a sparse reward is never made dense
        step_metrics={name: per_step(table) for name, table in world.metrics.items()},
        initial_world=readonly(initial_world),
        padding=readonly(np.repeat(~valid, N, axis=1)),
    )


def _build(world: POMDP, arch: MemoryArchitecture) -> JointChain:
    frame = chain_frame(world, arch)
    K, S_part, part_states = frame.num_parts, frame.states_per_part, frame.part_states
    N = arch.num_nodes
    valid = part_states >= 0
    index = np.int32 if S_part * N < 2**31 - 1 else np.int64

    action = arch.choice_action
    allowed_n, allowed_c = np.nonzero(arch.allowed)  # (E,) pairs, sorted by n
    allowed_n = allowed_n.astype(index)
    allowed_c = allowed_c.astype(index)
    nxt = arch.next_node[allowed_n, allowed_c].astype(index)  # (E, O)
    transition, observation = world.dense_transition, world.dense_observation
    rows, cols, kk, nn, cc, ww = [], [], [], [], [], []
    for k in range(K):
        local = np.flatnonzero(valid[k])
        targets = part_states[k, local]
        for i in local:
            s = part_states[k, i]
            # w[e, j, o] = T[s, a(c_e), s2_j] O[a(c_e), s2_j, o]: arrays laid out (E, J, O) so that,
            # flattened, the nonzeros come sorted by column i * N + n.
            w = transition[s, action][:, targets][allowed_c][:, :, None] * observation[action][:, targets, :][allowed_c]
            keep = w != 0
            e_idx = np.broadcast_to(np.arange(len(allowed_n))[:, None, None], w.shape)[keep]
            j_idx = np.broadcast_to(local[None, :, None].astype(index), w.shape)[keep]
            o_idx = np.broadcast_to(np.arange(w.shape[2])[None, None, :], w.shape)[keep]
            rows.append((j_idx * N + nxt[e_idx, o_idx]).astype(index))
            cols.append((i * N + allowed_n[e_idx]).astype(index))
            kk.append(np.full(len(e_idx), k, dtype=index))
            nn.append(allowed_n[e_idx])
            cc.append(allowed_c[e_idx])
            ww.append(w[keep])

    def cat(chunks, dtype):
        return readonly(np.concatenate(chunks).astype(dtype, copy=False) if chunks else np.zeros(0, dtype=dtype))

    return JointChain(
        architecture=arch,
        num_parts=K,
        states_per_part=S_part,
        part_states=part_states,
        part_weights=frame.part_weights,
        rows=cat(rows, index),
        cols=cat(cols, index),
        parts=cat(kk, index),
        node=cat(nn, index),
        choice=cat(cc, index),
        weight=cat(ww, np.float64),
        step_reward=frame.step_reward,
        step_metrics=frame.step_metrics,
        initial_world=frame.initial_world,
        padding=frame.padding,
    )
