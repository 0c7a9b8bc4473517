"""The high-accuracy engine: elimination without subtraction (GTH).

When ``q`` is tiny (good Memento policies: ``q*`` near 2.6e-12 for ``m = 7``),
an LU solve of ``(I - (1 - r) P) p = r p0`` computes the small entries of
``p`` with an *absolute* error of order ``u * cond``, so their relative error
can be anything.  The Grassmann-Taksar-Heyman algorithm (GTH, 1985) computes
a stationary distribution by *state reduction*: eliminating state ``k``
leaves the chain censored on the other states, with rates

.. math::

    R'_{ij} = R_{ij} + R_{ik} R_{kj} / s_k, \\qquad s_k = \\sum_{j \\ne k} R_{kj},

and ``pi_k = sum_i pi_i R_ik / s_k`` on the way back.  Every operation adds,
multiplies or divides non-negative numbers (the diagonal, the one place where
LU subtracts, is never formed: ``s_k`` is a sum of off-diagonal rates), so
every entry of ``pi`` has a small *relative* error, whatever the conditioning
(O'Cinneide, Numer. Math. 65, 1993: of order ``n^3 u`` for ``n`` states, far
less in practice).

Implementation (:func:`gth`): first a sparse phase that eliminates, level by
level, an *independent set* of states of small fill (a censored chain on the
others in one sparse product, still subtraction-free), then a blocked dense
GTH on what is left (panels eliminated with rank-1 updates, the rest of the
matrix updated by one matrix product per panel).

Reset:
    ``r > 0``: the chain with reset is censored from a chain with one extra
    state ``z``: every state goes to ``z`` with probability ``r`` and ``z``
    goes to ``p0``; ``p`` is the stationary distribution of that chain
    restricted to the others and renormalised (a sum of positive terms).
    ``r = 0``: the stationary distribution of ``P`` restricted to its closed
    class reachable from ``p0``; there must be exactly one (a ``ValueError``
    otherwise); transient states get probability 0.

Gradient: the adjoint of :mod:`fsc.engines.sparse` with a sparse LU of ``A``
(``r > 0``), or of the bordered matrix ``[[I - P, p], [1^T, 0]]`` on the
closed class (``r = 0``): it has the usual, normwise accuracy.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as spla

from fsc.engines.sparse import Backend, SparseLU
from fsc.errors import InputError
from fsc.model.chain import JointChain

__all__ = ["Accurate", "gth", "recurrent_class"]


def _offdiagonal(R: sp.spmatrix) -> sp.csr_matrix:
    R = sp.coo_matrix(R)
    keep = (R.row != R.col) & (R.data != 0)
    return sp.csr_matrix((R.data[keep], (R.row[keep], R.col[keep])), shape=R.shape)


def _gth_dense(A: np.ndarray, block: int = 128) -> np.ndarray:
    """Blocked GTH on dense rates ``A[x, y]`` (``x -> y``; the diagonal is ignored); overwrites ``A``.

    States are eliminated from the last to the first, ``block`` at a time:
    inside a panel ``B`` the rows and columns of ``B`` are updated at once
    (rank-1), the rest ``T x T`` by one product ``A[T, B] @ A[B, T]`` per
    panel.  Column ``k`` above the diagonal keeps ``R_ik / s_k`` for the
    back substitution.  Returns the unnormalised ``pi`` (``pi[0] = 1``).
    """
    n = A.shape[0]
    np.fill_diagonal(A, 0.0)
    end = n
    while end > 1:
        lo = max(1, end - block)
        # Panel B = [lo, end), rest T = [0, lo).
        for k in range(end - 1, lo - 1, -1):
            s = A[k, :k].sum()
            if not s > 0:
                raise InputError("the chain is not irreducible: a state has no way out to the states before it")
            A[:k, k] /= s
            col = A[:k, k]
            # Rows of B still there (lo..k-1): every column < k.
            if k > lo:
                A[lo:k, :k] += np.outer(col[lo:k], A[k, :k])
                # Columns of B still there, rows of T.
                A[:lo, lo:k] += np.outer(col[:lo], A[k, lo:k])
                idx = np.arange(lo, k)
                A[idx, idx] = 0.0
        if lo > 0:
            A[:lo, :lo] += A[:lo, lo:end] @ A[lo:end, :lo]
            np.fill_diagonal(A[:lo, :lo], 0.0)
        end = lo
    pi = np.zeros(n)
    pi[0] = 1.0
    for k in range(1, n):
        pi[k] = pi[:k] @ A[:k, k]
    return pi


def _independent_set(R: sp.csr_matrix, cost: np.ndarray, candidate: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One round of Luby's algorithm: candidates cheaper than all their neighbours."""
    n = R.shape[0]
    priority = np.where(candidate, cost + rng.random(n), np.inf)
    S = (R + R.T).tocsr()
    counts = np.diff(S.indptr)
    nbr_min = np.full(n, np.inf)
    rows = counts > 0
    if S.nnz:
        reduced = np.minimum.reduceat(priority[S.indices], S.indptr[:-1][rows])
        nbr_min[rows] = reduced
    return np.flatnonzero(candidate & (priority < nbr_min))


def gth(R: sp.spmatrix, *, dense_size: int = 1500, max_density: float = 0.05, seed: int = 0) -> tuple[np.ndarray, dict]:
    """Stationary distribution of the irreducible chain with rates ``R[x, y]`` (``x -> y``).

    Subtraction-free (module docstring): each entry has a small relative error.

    Args:
        R: non-negative ``(n, n)``; the diagonal is ignored (a self-loop does not change ``pi``).
        dense_size: switch to dense GTH at this many states.
        max_density: ... or when the censored chain is this dense.

    Returns:
        ``pi`` (sums to 1) and facts about the elimination.

    Raises:
        ValueError: the chain is not irreducible.
    """
    start = time.perf_counter()
    R = _offdiagonal(R)
    n = R.shape[0]
    rng = np.random.default_rng(seed)
    ids = np.arange(n)
    levels = []
    while R.shape[0] > dense_size and R.nnz < max_density * R.shape[0] ** 2:
        s = np.asarray(R.sum(axis=1)).ravel()
        if not (s > 0).all():
            raise InputError("the chain is not irreducible: a state has no way out")
        out_deg = np.diff(R.indptr)
        in_deg = np.bincount(R.indices, minlength=R.shape[0])
        cost = out_deg.astype(np.float64) * in_deg
        threshold = max(2 * cost.min(), 16.0)
        chosen = _independent_set(R, cost, cost <= threshold, rng)
        if len(chosen) < max(1, R.shape[0] // 100):
            break
        keep = np.ones(R.shape[0], dtype=bool)
        keep[chosen] = False
        kept = np.flatnonzero(keep)
        Rc = R[kept]
        R_CI = Rc[:, chosen].tocsr()
        R_CC = Rc[:, kept]
        R_IC = R[chosen][:, kept]
        scaled = (R_CI @ sp.diags(1.0 / s[chosen])).tocsc()
        levels.append((ids[chosen], ids[kept], scaled))
        R = _offdiagonal(R_CC + scaled @ R_IC)
        ids = ids[kept]
    dense_states = R.shape[0]
    pi = np.zeros(n)
    pi[ids] = _gth_dense(R.toarray())
    for chosen_ids, kept_ids, scaled in reversed(levels):
        pi[chosen_ids] = scaled.T @ pi[kept_ids]
    total = pi.sum()
    return pi / total, {"gth_levels": len(levels), "gth_dense_states": int(dense_states), "gth_seconds": time.perf_counter() - start}


def recurrent_class(P: sp.spmatrix, p0: np.ndarray) -> np.ndarray:
    """The states of the single closed class of ``P`` reachable from the support of ``p0``.

    Args:
        P: ``P[x2, x]`` (probability of ``x -> x2``).

    Raises:
        ValueError: no or several closed classes are reachable (``r = 0`` is then ill-posed).
    """
    G = sp.csr_matrix(P.T, copy=True)  # G[x, x2]: edge x -> x2
    G.eliminate_zeros()
    ncomp, label = csgraph.connected_components(G, directed=True, connection="strong")
    coo = G.tocoo()
    leaving = label[coo.row] != label[coo.col]
    closed = np.ones(ncomp, dtype=bool)
    closed[label[coo.row[leaving]]] = False
    n = G.shape[0]
    # Reachable from the reset: breadth-first search from a virtual source.
    support = np.flatnonzero(p0 > 0)
    source = sp.csr_matrix((np.ones(len(support)), (np.zeros(len(support), dtype=np.int64), support + 1)), shape=(n + 1, n + 1))
    H = sp.vstack([sp.csr_matrix((1, n + 1)), sp.hstack([sp.csr_matrix((n, 1)), G])]).tocsr() + source
    order = csgraph.breadth_first_order(H, 0, directed=True, return_predecessors=False)
    reachable = np.zeros(ncomp, dtype=bool)
    reachable[label[order[order > 0] - 1]] = True
    classes = np.flatnonzero(closed & reachable)
    if len(classes) != 1:
        sizes = [int((label == c).sum()) for c in classes]
        raise InputError(
            f"reset = 0 needs a single recurrent class reachable from the reset distribution, got {len(classes)} (sizes {sizes[:10]}); use reset > 0"
        )
    return np.flatnonzero(label == classes[0])


class Accurate(Backend):
    """GTH for the values; sparse LU (or the bordered system at ``r = 0``) for the adjoint."""

    def __init__(self, chain: JointChain, values: np.ndarray, p0: np.ndarray, reset: float, *, dense_size: int = 1500):
        self.chain, self.values = chain, values
        self.matrices = chain.matrices(values)
        self.p0, self.reset, self.dense_size = p0, reset, dense_size
        self.info: dict = {}
        self.p: np.ndarray | None = None
        self.classes: list[np.ndarray] = []

    def solve(self) -> np.ndarray:
        K, X = self.p0.shape
        out = np.zeros((K, X))
        facts = []
        r = self.reset
        for k, P in enumerate(self.matrices):
            if r > 0:
                # Rates of the chain with the reset state z = X appended.
                Pt = sp.coo_matrix(P.T)  # Pt[x, x2]
                support = np.flatnonzero(self.p0[k] > 0)
                rows = np.concatenate([Pt.row, np.arange(X), np.full(len(support), X)])
                cols = np.concatenate([Pt.col, np.full(X, X), support])
                data = np.concatenate([(1 - r) * Pt.data, np.full(X, r), self.p0[k, support]])
                R = sp.csr_matrix((data, (rows, cols)), shape=(X + 1, X + 1))
                pi, fact = gth(R, dense_size=self.dense_size)
                out[k] = pi[:X] / pi[:X].sum()
                self.classes.append(np.arange(X))
            else:
                members = recurrent_class(P, self.p0[k])
                R = sp.csr_matrix(P.T)[members][:, members]
                pi, fact = gth(R, dense_size=self.dense_size)
                out[k, members] = pi
                self.classes.append(members)
            facts.append(fact)
        self.info.update(
            gth_dense_states=[f["gth_dense_states"] for f in facts],
            gth_levels=[f["gth_levels"] for f in facts],
            recurrent_states=[len(c) for c in self.classes],
        )
        self.p = out
        return out

    def solve_adjoint(self, g: np.ndarray) -> np.ndarray:
        K, X = g.shape
        out = np.zeros((K, X))
        if self.reset > 0:
            return SparseLU(self.chain, self.values, self.p0, self.reset).solve_adjoint(g)
        for k, P in enumerate(self.matrices):
            c = self.classes[k]
            n = len(c)
            Pc = sp.csc_matrix(P)[c][:, c]
            pc = self.p[k, c]
            B = sp.bmat(
                [[sp.identity(n, format="csc") - Pc, sp.csc_matrix(pc[:, None])], [sp.csc_matrix(np.ones((1, n))), None]],
                format="csc",
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sp.SparseEfficiencyWarning)
                lu = spla.splu(B, permc_spec="COLAMD")
            rhs = np.concatenate([g[k, c], [0.0]])
            out[k, c] = lu.solve(rhs, trans="T")[:n]
        return out

    def residual(self, p: np.ndarray) -> float:
        r = self.reset
        return max(float(np.abs(pk - (1 - r) * (P @ pk) - r * bk).max(initial=0.0)) for P, pk, bk in zip(self.matrices, p, self.p0, strict=True))
