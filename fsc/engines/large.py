"""The engine for large worlds: the joint chain solved through the chain after each choice, from the
world's sparse tables, without ever listing the chain's own nonzeros.

The joint chain over ``(s, n)`` factors as ``P = G Pi`` (:class:`fsc.model.chain.AfterChoice` has the
details): ``Pi`` takes ``(s, n)`` to ``(s, q)``, the class ``q`` of the choice made, with probability
``W[n, q] = sum_{c in q} pi[n, c]``; ``G`` takes ``(s, q)`` to ``(s2, nxt[q, o])`` with probability
``T[s, a_q, s2] O[a_q, s2, o]``.  With ``a = 1 - r`` and ``B = I - a Pi G`` over ``Y = S Q`` states,

.. math::

    p = r \\, (p_0 + a \\, G B^{-1} \\Pi p_0), \\qquad
    \\lambda = A^{-T} g = g + a \\, \\Pi^T B^{-T} G^T g, \\qquad
    \\frac{\\partial L}{\\partial \\pi[n, c]} = a \\sum_s p[s, n] \\, (G^T \\lambda)[s, q(n, c)] .

The observation is summed out of ``B``: its entry ``(s2, q2) <- (s, q)`` is
``a T[s, a_q, s2] sum_o O[a_q, s2, o] W[nxt[q, o], q2]``, so ``B`` has ``nnz(T_a) |Q_a| Q`` entries per
action ``a`` (RAM ``M``: ``Q = M A`` classes, one per choice, against ``N = M (1 + A O)`` nodes).  One
sparse LU of ``B`` per part (scipy's SuperLU) serves the value and, transposed, the adjoint.  The
products with ``G`` and ``G^T`` run per (action, observation) block of the world's tables, in
``O(nnz(T) Q + S Q O)``.  :mod:`fsc.engines.cost` says up front what this costs.
"""

from __future__ import annotations

import collections
import functools
import time

import attrs
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from fsc.engines import cost
from fsc.engines.iterative import ConvergenceError
from fsc.engines.sparse import Backend
from fsc.model.architecture import MemoryArchitecture, readonly
from fsc.model.chain import ChainFrame, RecentTables, chain_frame, successor_classes
from fsc.model.pomdp import POMDP

__all__ = ["Block", "LargeChain", "LargeLU", "large_chain"]


@attrs.frozen(eq=False, slots=False)
class Block:
    """One (part, action) block of the world's tables, in the part's local state numbering.

    Attributes:
        part: ``k``.
        classes: ``(Q_a,)`` the classes whose choices play this action.
        transition: ``T[:, a, :]`` among the part's states, CSR ``(S_part, S_part)``.
        observation: ``O[a, s2, :]`` of the part's states, ``(S_part, O)`` (zero rows for padding).
        targets: ``(Q_a, O)`` the node after each class of ``classes`` and observation.
        unique_targets: whether ``targets`` has no repeated node (then scatters are plain assignments).
        rows, cols: the states ``s2 * Q + q2`` and ``s * Q + q`` of each entry of ``B`` the block makes,
            laid out ``(transition entry, class of classes, q2 of mask)``.
        mask: ``(Q_a, Q)`` the classes ``q2`` one can choose after each class of ``classes``.
    """

    part: int
    classes: np.ndarray
    transition: sp.csr_matrix
    observation: np.ndarray
    targets: np.ndarray
    unique_targets: bool
    mask: np.ndarray

    @functools.cached_property
    def every_class_follows(self) -> bool:
        """Whether every class can follow every class of the block (RAM): then ``mask`` selects nothing out."""
        return bool(self.mask.all())


@attrs.frozen(eq=False)
class LargeChain:
    """The structure of :class:`LargeLU`: per (world, architecture), no policy.

    Attributes:
        frame: parts, reset distribution and expected rewards (:class:`fsc.model.chain.ChainFrame`).
        num_classes: ``Q``.
        class_of: ``(N, C)`` the class of each allowed choice (-1 elsewhere).
        blocks: the (part, action) blocks, by part then action.
        pattern: per part, the CSC pattern of ``B``: ``(indptr, indices, slot, diag_slot, nnz)``; ``slot``
            maps the entries of the part's blocks, in order, to ``B.data``.
        choice_is_class: ``class_of[n, c] = c`` everywhere (RAM): then ``W`` is ``pi`` itself.
        steps: per part, ``G`` as a CSR matrix ``(S_part N, S_part Q)`` and ``G^T`` as another: the world's
            step and observation from ``(s, q)`` to ``(s2, nxt[q, o])``, one product each way.
        value_maps: per part, when every class can follow every class (RAM), a CSR matrix ``L`` with
            ``nnz(B) / Q`` rows and ``N`` columns such that ``(L W).reshape(-1)`` is ``Pi G``'s entries in
            the order of ``B``'s CSC data (one product, nothing placed); else None.
        orderings: per part, the fill-reducing ordering of ``B`` (:class:`_Ordering`), found by the first
            factorisation (COLAMD) and reused by the next ones: the pattern of ``B`` depends on the world
            and the memory only.
        fill: the estimated entries of the complete LU factors of every part's ``B`` (:func:`fsc.engines.cost.large_fill`).
    """

    frame: ChainFrame
    num_classes: int
    class_of: np.ndarray
    blocks: tuple[Block, ...]
    pattern: tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int], ...]
    choice_is_class: bool
    steps: tuple[tuple[sp.csr_matrix, sp.csr_matrix], ...]
    value_maps: tuple[sp.csr_matrix | None, ...]
    fill: int = 0
    orderings: list = attrs.field(factory=list, repr=False)

    @property
    def architecture(self) -> MemoryArchitecture:
        return self.frame.architecture

    @property
    def size(self) -> int:
        """``Y = S_part Q``, the states of each part's ``B``."""
        return self.frame.states_per_part * self.num_classes

    @functools.cached_property
    def unique_slots(self) -> tuple[bool, ...]:
        """Per part, whether each entry of ``B`` comes from one entry of the blocks (no sum needed)."""
        return tuple(bool(np.bincount(slot, minlength=nnz).max(initial=0) <= 1) for _, _, slot, _, nnz in self.pattern)

    @property
    def nnz(self) -> int:
        """Entries of ``B`` over all parts."""
        return int(sum(entry[4] for entry in self.pattern))

    def class_weights(self, probs: np.ndarray) -> np.ndarray:
        """``W[n, q] = sum_{c: class_of[n, c] = q} pi[n, c]``, ``(N, Q)``."""
        if self.choice_is_class:
            return probs
        N = probs.shape[0]
        n, c = np.nonzero(self.class_of >= 0)
        return np.bincount(n * self.num_classes + self.class_of[n, c], weights=probs[n, c], minlength=N * self.num_classes).reshape(N, -1)

    def block_values(self, block: Block, W: np.ndarray) -> np.ndarray:
        """The entries of ``Pi G`` the block makes, in its layout: ``T[s, s2] sum_o O[s2, o] W[targets[i, o], q2]``."""
        V = np.einsum("so,iop->sip", block.observation, W[block.targets])  # (S_part, Q_a, Q)
        t = block.transition
        if block.every_class_follows:  # the mask keeps all: no copy through it
            return (t.data[:, None, None] * V[t.indices]).reshape(-1)
        return (t.data[:, None] * V[t.indices][:, block.mask]).reshape(-1)

    def apply_g(self, z: np.ndarray, out: np.ndarray) -> None:
        """``out += G z`` for ``z`` ``(K, S, Q)``, ``out`` ``(K, S, N)`` (C-contiguous)."""
        flat = out.reshape(len(self.steps), -1)
        for k, (G, _) in enumerate(self.steps):
            flat[k] += G @ np.ascontiguousarray(z[k]).reshape(-1)

    def apply_g_t(self, g: np.ndarray) -> np.ndarray:
        """``G^T g`` for ``g`` ``(K, S, N)``: ``(K, S, Q)``."""
        K, S = g.shape[0], g.shape[1]
        u = np.zeros((K, S * self.num_classes))
        for k, (_, GT) in enumerate(self.steps):
            u[k] = GT @ np.ascontiguousarray(g[k]).reshape(-1)
        return u.reshape(K, S, self.num_classes)

    def entries(self, k: int, W: np.ndarray) -> np.ndarray:
        """``Pi G``'s entries in part ``k``, in the order of ``B``'s data (``value_maps``), a new array."""
        return (self.value_maps[k] @ W).reshape(-1)


def _block(part: int, a: int, states: np.ndarray, world: POMDP, classes: np.ndarray, nxt: np.ndarray, allowed_q: np.ndarray, S: int) -> Block:
    valid = states >= 0
    index = -np.ones(world.num_states, dtype=np.int64)
    index[states[valid]] = np.flatnonzero(valid)
    full = world.sparse_transition[a]
    local = full[states[valid]].tocoo()
    # Every state keeps its diagonal entry, zero when it cannot stay: then each column of B has its diagonal
    # in the pattern the blocks lay out (see _pattern).
    rows = np.concatenate([np.flatnonzero(valid)[local.row], np.arange(S)])
    cols = np.concatenate([index[local.col], np.arange(S)])
    data = np.concatenate([local.data, np.zeros(S)])
    transition = sp.coo_matrix((data, (rows, cols)), shape=(S, S)).tocsr()  # duplicates summed: sorted, one per (s, s2)
    transition.sort_indices()
    observation = np.zeros((S, world.num_observations))
    table = world.observation_table  # rows (a, s2): read by rows, never as a dense (A, S, O) array
    which, at = table.gather(a * world.num_states + states[valid])
    observation[np.flatnonzero(valid)[which], table.indices[at]] = table.data[at]
    targets = nxt[classes]
    mask = allowed_q[targets].any(axis=1)  # (Q_a, Q): some node after the class allows q2
    unique = len(np.unique(targets)) == targets.size
    return Block(part, readonly(classes), transition, readonly(observation), readonly(targets), unique, readonly(mask))


def _pattern(blocks: list[Block], S: int, Q: int) -> tuple:
    """The CSC pattern of one part's ``B`` (as :attr:`fsc.model.chain.JointChain.system_pattern`), laid out
    without a sort: the column ``(s, q)`` holds, in order, the rows ``(s2, q2)`` for ``s2`` along row ``s`` of
    ``T_a`` (sorted, the diagonal always there) and ``q2`` along the class's mask."""
    Y = S * Q
    if not all(b.mask[np.arange(len(b.classes)), b.classes].all() for b in blocks):
        return _pattern_by_sort(blocks, S, Q)
    count = np.zeros((S, Q), dtype=np.int64)
    for b in blocks:
        count[:, b.classes] = np.diff(b.transition.indptr)[:, None] * b.mask.sum(axis=1)[None, :]
    indptr = np.zeros(Y + 1, dtype=np.int64)
    np.cumsum(count.reshape(-1), out=indptr[1:])
    nnz = int(indptr[-1])
    index = np.int32 if nnz < 2**31 - 1 else np.int64
    indices = np.empty(nnz, dtype=index)
    diag_slot = np.empty(Y, dtype=np.int64)
    slots = []
    for b in blocks:
        t = b.transition
        s_of_e = np.repeat(np.arange(S), np.diff(t.indptr))
        local_e = np.arange(t.nnz) - t.indptr[s_of_e]
        qi, q2 = np.nonzero(b.mask)  # the mask's entries in the order block_values lays them out
        width = b.mask.sum(axis=1)
        rank = np.cumsum(b.mask, axis=1) - 1  # rank[i, q2]: place of q2 among the class's mask
        start = indptr[:-1].reshape(S, Q)[:, b.classes]  # (S, Q_a)
        slot = start[s_of_e[:, None], qi[None, :]] + local_e[:, None] * width[qi][None, :] + rank[qi, q2][None, :]
        indices[slot] = t.indices[:, None] * Q + q2[None, :]
        slots.append(slot.reshape(-1))
        on_diagonal = np.flatnonzero(t.indices == s_of_e)  # one per state
        i = np.arange(len(b.classes))
        diag_slot[(s_of_e[on_diagonal][:, None] * Q + b.classes[None, :]).reshape(-1)] = (
            start[s_of_e[on_diagonal]] + local_e[on_diagonal][:, None] * width[None, :] + rank[i, b.classes][None, :]
        ).reshape(-1)
    slot = np.concatenate(slots) if slots else np.zeros(0, dtype=np.int64)
    return (readonly(indptr.astype(index)), readonly(indices), readonly(slot), readonly(diag_slot), nnz)


def _pattern_by_sort(blocks: list[Block], S: int, Q: int) -> tuple:
    """:func:`_pattern` for classes that cannot follow themselves (their diagonal is not in the blocks)."""
    Y = S * Q
    keys = []
    for b in blocks:
        t = b.transition
        s = np.repeat(np.arange(S), np.diff(t.indptr))
        qi, q2 = np.nonzero(b.mask)
        rows = t.indices[:, None] * Q + q2[None, :]
        cols = s[:, None] * Q + b.classes[qi][None, :]
        keys.append((cols * Y + rows).reshape(-1))
    diag = np.arange(Y, dtype=np.int64)
    keys = np.concatenate([*keys, diag * Y + diag])
    unique, inverse = np.unique(keys, return_inverse=True)
    indptr = np.zeros(Y + 1, dtype=np.int64)
    np.cumsum(np.bincount(unique // Y, minlength=Y), out=indptr[1:])
    n = len(keys) - Y
    index = np.int32 if len(unique) < 2**31 - 1 else np.int64
    return (readonly(indptr.astype(index)), readonly((unique % Y).astype(index)), readonly(inverse[:n]), readonly(inverse[n:]), len(unique))


def build_large_chain(world: POMDP, arch: MemoryArchitecture) -> LargeChain:
    """The :class:`LargeChain` of a world and an architecture (see :func:`large_chain`, which caches it)."""
    frame = chain_frame(world, arch)
    class_of, nxt = successor_classes(arch)
    Q = len(nxt)
    allowed_q = np.zeros((arch.num_nodes, Q), dtype=bool)
    n, c = np.nonzero(class_of >= 0)
    allowed_q[n, class_of[n, c]] = True
    first_choice = np.full(Q, -1, dtype=np.int64)
    first_choice[class_of[n, c]] = c
    q_action = arch.choice_action[first_choice]
    S = frame.states_per_part
    blocks, pattern = [], []
    for k in range(frame.num_parts):
        part = [
            _block(k, a, frame.part_states[k], world, np.flatnonzero(q_action == a), nxt, allowed_q, S)
            for a in range(world.num_actions)
            if np.any(q_action == a)
        ]
        blocks.extend(part)
        pattern.append(_pattern(part, S, Q))
    choice_is_class = bool(np.array_equal(class_of, np.broadcast_to(np.arange(arch.num_choices), class_of.shape)))
    by_part = [[b for b in blocks if b.part == k] for k in range(frame.num_parts)]
    steps = tuple(_steps(part, S, arch.num_nodes, Q) for part in by_part)
    value_maps = tuple(_value_map(part, pattern[k][0], S, arch.num_nodes, Q) for k, part in enumerate(by_part))
    fill = cost.large_fill(cost.world_sizes(world, arch))
    return LargeChain(frame, Q, class_of, tuple(blocks), tuple(pattern), choice_is_class, steps, value_maps, fill)


def _observed_steps(b: Block) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each transition entry ``e`` of the block (the pattern's explicit zeros included) against each observation
    ``o`` its end state can give: ``(e, o, T[s, s2] O[s2, o])`` over the pairs whose product is not 0, and
    the start state of each entry."""
    t = b.transition
    observed = sp.csr_matrix(b.observation)
    counts = np.diff(observed.indptr)[t.indices]
    which = np.repeat(np.arange(t.nnz), counts)
    at = np.repeat(observed.indptr[t.indices] - (np.cumsum(counts) - counts), counts) + np.arange(len(which))
    weight = t.data[which] * observed.data[at]
    keep = weight != 0
    return which[keep], observed.indices[at][keep], weight[keep], np.repeat(np.arange(t.shape[0]), np.diff(t.indptr))


def _value_map(blocks: list[Block], indptr: np.ndarray, S: int, N: int, Q: int) -> sp.csr_matrix | None:
    """:attr:`LargeChain.value_maps` of one part: row ``indptr[s Q + q] / Q + j`` (the ``j``-th end state ``s2``
    of row ``s`` of ``T_{a_q}``) holds ``T[s, s2] O[s2, o]`` at the node ``nxt[q, o]``."""
    if not all(b.every_class_follows for b in blocks):
        return None  # a column of B holds fewer than Q entries per end state
    rows, cols, values = [], [], []
    for b in blocks:
        e, o, weight, s_of_e = _observed_steps(b)
        local = e - b.transition.indptr[s_of_e[e]]
        start = np.asarray(indptr[:-1], dtype=np.int64).reshape(S, Q)[:, b.classes] // Q  # (S, Q_a): each column's first row
        rows.append((start[s_of_e[e]] + local[:, None]).reshape(-1))
        cols.append(b.targets[:, o].T.reshape(-1))
        values.append(np.repeat(weight, len(b.classes)))
    size = int(indptr[-1]) // Q
    L = sp.csr_matrix((np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))), shape=(size, N))  # duplicates summed
    L.sort_indices()
    return L


def _steps(blocks: list[Block], S: int, N: int, Q: int) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """``G`` of one part, CSR ``(S N, S Q)``: ``G[(s2, nxt[q, o]), (s, q)] += T[s, a_q, s2] O[a_q, s2, o]``, and ``G^T``."""
    rows, cols, values = [], [], []
    for b in blocks:
        e, o, weight, s_of_e = _observed_steps(b)
        rows.append((b.transition.indices[e][:, None] * N + b.targets[:, o].T).reshape(-1))
        cols.append((s_of_e[e][:, None] * Q + b.classes[None, :]).reshape(-1))
        values.append(np.repeat(weight, len(b.classes)))
    cat = (lambda xs, dtype: np.concatenate(xs) if xs else np.zeros(0, dtype=dtype))
    G = sp.csr_matrix((cat(values, np.float64), (cat(rows, np.int64), cat(cols, np.int64))), shape=(S * N, S * Q))  # duplicates summed
    G.sort_indices()
    GT = G.T.tocsr()
    GT.sort_indices()
    return G, GT


#: The large chains last built (two: each holds the pattern of ``B``).
large_chain = RecentTables(lambda world, arch: build_large_chain(world, arch), lambda: 2)


class _Ordering:
    """A fill-reducing ordering of one part's ``B``, kept for the next factorisations: ``B' = B[order][:, order]``
    (a symmetric permutation, so the diagonal stays the pivot), as its CSC pattern and the place of each
    entry of ``B``'s data in ``B'``'s."""

    def __init__(self, order: np.ndarray, indptr: np.ndarray, indices: np.ndarray, Y: int):
        self.order = order
        numbered = sp.csc_matrix((np.arange(len(indices), dtype=np.float64), indices, indptr), shape=(Y, Y))
        permuted = numbered[order][:, order].tocsc()
        permuted.sort_indices()
        self.indptr, self.indices = permuted.indptr.astype(np.int32), permuted.indices.astype(np.int32)
        self.take = permuted.data.astype(np.int64)  # B'.data = B.data[take]
        self.Y = Y

    def factor(self, data: np.ndarray) -> _OrderedLU:
        B = sp.csc_matrix((data[self.take], self.indices, self.indptr), shape=(self.Y, self.Y), copy=False)
        B.has_canonical_format = True
        return _OrderedLU(spla.splu(B, permc_spec="NATURAL", diag_pivot_thresh=0.0), self.order)


class _OrderedLU:
    """The LU of ``B' = B[order][:, order]``, solving with ``B`` (or ``B^T``)."""

    def __init__(self, lu, order: np.ndarray):
        self.lu, self.order, self.nnz = lu, order, lu.nnz

    def solve(self, b: np.ndarray, trans: str = "N") -> np.ndarray:
        x = np.empty(len(b))
        x[self.order] = self.lu.solve(np.ascontiguousarray(b[self.order]), trans=trans)
        return x


class _Krylov:
    """GMRES on ``B`` (or ``B^T``) preconditioned by an incomplete LU of ``B``: the solver of :class:`LargeLU`
    when the complete factor would not fit.  Solves to a relative residual of ``tol`` or raises."""

    def __init__(self, B: sp.csc_matrix, *, tol: float = 1e-14, restart: int = 60, maxiter: int = 50):
        self.B, self.tol, self.restart, self.maxiter = B, tol, restart, maxiter
        self.ilu = spla.spilu(B, drop_tol=1e-6, fill_factor=3.0, permc_spec="COLAMD", diag_pivot_thresh=0.0)
        self.nnz = self.ilu.nnz
        self.iterations = 0

    def solve(self, b: np.ndarray, trans: str = "N") -> np.ndarray:
        B = self.B if trans == "N" else self.B.T.tocsr()
        shape = self.B.shape
        M = spla.LinearOperator(shape, matvec=lambda v: self.ilu.solve(np.ascontiguousarray(v), trans=trans), dtype=np.float64)
        count = [0]

        def note(_):
            count[0] += 1

        x, _ = spla.gmres(B, b, M=M, rtol=self.tol, atol=0.0, restart=self.restart, maxiter=self.maxiter, callback=note, callback_type="pr_norm")
        self.iterations += count[0]
        residual = float(np.abs(B @ x - b).max(initial=0.0))
        if not residual <= 1e3 * self.tol * max(float(np.abs(b).max(initial=0.0)), 1e-300):
            raise ConvergenceError(f"large engine: GMRES left a residual of {residual:.3g} after {count[0]} iterations")
        return x


def b_matrices(chain: LargeChain, W: np.ndarray, reset: float) -> list[sp.csc_matrix]:
    """``B = I - (1 - r) Pi G`` of each part (module docstring), CSC, for the class weights ``W``."""
    a, Y, matrices = 1 - reset, chain.size, []
    blocks = collections.defaultdict(list)
    for b in chain.blocks:
        blocks[b.part].append(b)
    for k, (indptr, indices, slot, diag_slot, nnz) in enumerate(chain.pattern):
        if chain.value_maps[k] is not None:  # one product lays the entries out in B's own order
            data = chain.entries(k, W)
        else:
            values_k = np.concatenate([chain.block_values(b, W) for b in blocks[k]]) if blocks[k] else np.zeros(0)
            if chain.unique_slots[k]:  # each entry of B made once: placed, not summed
                data = np.zeros(nnz)
                data[slot] = values_k
            else:
                data = np.bincount(slot, weights=values_k, minlength=nnz)
        data *= -a
        data[diag_slot] += 1.0
        B = sp.csc_matrix((data, indices, indptr), shape=(Y, Y), copy=False)
        B.has_canonical_format = True
        matrices.append(B)
    return matrices


class LargeLU(Backend):
    """A :class:`fsc.engines.sparse.Backend` on :class:`LargeChain`: one SuperLU of ``B`` per part (module
    docstring), reused for the adjoint; :meth:`transition_gradient` gives ``dL/dpi`` through ``P``.

    ``krylov``: instead of the complete LU, GMRES preconditioned by an incomplete one (:class:`_Krylov`);
    ``None`` (the default) takes it when the complete factors' estimated entries (:attr:`LargeChain.fill`) do not fit
    the memory available or are estimated slower than GMRES (:func:`fsc.engines.cost.complete_lu`).
    """

    def __init__(self, chain: LargeChain, values: object, p0: np.ndarray, reset: float, *, probs: np.ndarray, krylov: bool | None = None):
        start = time.perf_counter()
        parts = max(len(chain.pattern), 1)
        krylov = not cost.complete_lu(chain.fill // parts, chain.size, chain.nnz // parts) if krylov is None else krylov
        self.chain, self.p0, self.reset = chain, p0, reset
        frame = chain.frame
        self.K, self.S, self.N = frame.num_parts, frame.states_per_part, frame.architecture.num_nodes
        self.W = chain.class_weights(np.ascontiguousarray(probs, dtype=np.float64))
        self.matrices = b_matrices(chain, self.W, reset)
        self.factors = [_Krylov(B) if krylov else self._factor(k, B) for k, B in enumerate(self.matrices)]
        fill = sum(f.nnz for f in self.factors)
        seconds = time.perf_counter() - start
        self.info = {"states": int(chain.size), "nonzeros": chain.nnz, "fill": int(fill), "factor_seconds": seconds, "solver": "gmres" if krylov else "lu"}

    def _factor(self, k: int, B: sp.csc_matrix) -> object:
        """The LU of part ``k``'s ``B``: on the ordering the first one found (COLAMD), kept on the chain."""
        orderings = self.chain.orderings
        if len(orderings) > k:
            return orderings[k].factor(B.data)
        lu = spla.splu(B, permc_spec="COLAMD", diag_pivot_thresh=0.0)
        if len(orderings) == k:
            orderings.append(_Ordering(np.argsort(lu.perm_c), B.indptr, B.indices, B.shape[0]))
        return lu

    def _b_solve(self, rhs: np.ndarray, trans: str) -> np.ndarray:
        out = np.empty(rhs.shape)
        for k, f in enumerate(self.factors):
            out[k] = f.solve(np.ascontiguousarray(rhs[k]).reshape(-1), trans=trans).reshape(rhs.shape[1:])
        self._note_iterations()
        return out

    def _note_iterations(self) -> None:
        if self.info["solver"] == "gmres":
            self.info["iterations"] = int(sum(f.iterations for f in self.factors))

    def solve(self) -> np.ndarray:
        K, S, N, r = self.K, self.S, self.N, self.reset
        p0 = self.p0.reshape(K, S, N)
        z = self._b_solve(p0 @ self.W, "N")
        p = p0.copy()
        self.chain.apply_g((1 - r) * z, p)
        return (r * p).reshape(K, S * N)

    def solve_adjoint(self, g: np.ndarray) -> np.ndarray:
        K, S, N, r = self.K, self.S, self.N, self.reset
        g3 = np.ascontiguousarray(g).reshape(K, S, N)
        v = self._b_solve(self.chain.apply_g_t(g3), "T")
        lam = g3 + (1 - r) * (v @ self.W.T)
        padding = self.chain.frame.padding.reshape(K, S, N)
        lam[padding] = g3[padding] / r  # a padding state loops on itself: (1 - (1 - r)) lambda = g
        return lam.reshape(K, S * N)

    def transition_gradient(self, lam: np.ndarray, p: np.ndarray) -> np.ndarray:
        """``dL/dpi[n, c] = a sum_{k, s} p[k, (s, n)] (G^T lambda)[k, (s, q(n, c))]``, ``(N, C)`` (0 where not allowed)."""
        K, S, N = self.K, self.S, self.N
        u = self.chain.apply_g_t(lam.reshape(K, S, N))
        D = p.reshape(K * S, N).T @ u.reshape(K * S, -1)  # (N, Q)
        class_of = self.chain.class_of
        d = np.where(class_of >= 0, D[np.arange(N)[:, None], np.maximum(class_of, 0)], 0.0)
        return (1 - self.reset) * d

    def residual(self, p: np.ndarray) -> float:
        K, S, N, r = self.K, self.S, self.N, self.reset
        p3 = p.reshape(K, S, N)
        Pp = np.zeros(p3.shape)
        self.chain.apply_g(p3 @ self.W, Pp)
        Pp += self.chain.frame.padding.reshape(K, S, N) * p3
        return float(np.abs(p3 - (1 - r) * Pp - r * self.p0.reshape(K, S, N)).max(initial=0.0))
