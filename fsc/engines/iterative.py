"""The iterative engine: restarted flexible GMRES with a two-level preconditioner.

For chains too large to factorise (Memento past ``m = 7``: the shift-register
graph makes a sparse LU fill in), ``A p = r p0`` with ``A = I - (1 - r) P``
is solved by Krylov iterations, and so is the adjoint ``A^T lambda = g`` of
the backward pass (see :mod:`fsc.engines.sparse`).

Preconditioner (:class:`TwoLevel`): a few Richardson steps (``z <- v + (1 -
r) P z``, i.e. steps of the chain) around a coarse-grid correction on
*aggregates* of memory nodes, :func:`observation_aggregates`: nodes that
differ only in the observations they remember (Memento: the histories with
the same word of arms; RAM: ``(i, arm, o)`` over ``o``).  The slow dynamics
of a near-deterministic policy (moving along the words of arms, necklace to
necklace) lives on the aggregates, while the observations are renewed every
step; the coarse chain

.. math::

    P_c = R P W, \\qquad A_c = I - (1 - r) P_c

(``R`` sums over an aggregate, ``W`` spreads by weights ``w`` within it) is a
Markov chain with reset of a few thousand states, factorised by SuperLU.  The
weights come from a few steps of the chain and are refreshed from the
current iterate at every restart (as in iterative aggregation /
disaggregation); the adjoint uses the converged ``p``, and the transposed
two-level operator.

The engine checks its answer: the forward solve stops when
``||A p - r p0||_1 <= tol * r + f`` (so ``||p - p*||_1 <= tol + f / r``, as
``||A^{-1}||_1 = 1 / r``), the adjoint when ``||A^T lambda - g||_inf <= tol
||g||_inf + f``, where ``f = 32 u (||b|| + 2 ||x||)`` is what rounding alone
leaves in a computed residual (``u`` the unit roundoff; at ``r = 1e-5`` it
bounds the error of ``p`` by about 1e-10).  When that is not reached within ``maxiter`` iterations it falls
back to the sparse LU engine for chains of at most ``fallback_states`` states
per part and says so (a warning, and ``info["fallback"]``), and raises
otherwise.  It never returns an unconverged answer.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as spla

from fsc.checks import integer, positive
from fsc.engines.sparse import Backend, SparseLU, system_matrices
from fsc.model.architecture import MemoryArchitecture
from fsc.model.chain import JointChain

__all__ = ["ConvergenceError", "Iterative", "TwoLevel", "fgmres", "observation_aggregates"]


_FLOOR = 32 * np.finfo(np.float64).eps


class ConvergenceError(RuntimeError):
    """An iterative solve did not reach its tolerance."""


@functools.lru_cache(maxsize=16)
def observation_aggregates(architecture: MemoryArchitecture) -> np.ndarray:
    """Label the memory nodes by what they remember *apart from observations*.

    The coarsest partition in which, for every node ``n`` and allowed choice
    ``c``, all the nodes ``next_node[n', c, o]`` (over ``o`` and over the
    nodes ``n'`` in the class of ``n``) share a class.  Computed by merging
    to a fixed point (one round per remembered observation).  Memento: the
    histories with one word of arms (``2^0 + ... + 2^m`` classes for two
    arms); RAM, Chain, Column: ``(i, arm)`` and the blank nodes.

    Returns:
        ``labels[n]`` in ``0..G-1`` (int64, read-only), numbered in order of first node.
    """
    N, C = architecture.num_nodes, architecture.num_choices
    n_idx, c_idx = np.nonzero(architecture.allowed)
    nxt = architecture.next_node[n_idx, c_idx]  # (E, O)
    labels = np.arange(N, dtype=np.int64)
    count = N
    while True:
        keys, key_id = np.unique(labels[n_idx] * C + c_idx, return_inverse=True)
        # Bipartite graph: class nodes 0..N-1, key nodes N..N+len(keys)-1.
        src = np.repeat(N + key_id, nxt.shape[1])
        dst = labels[nxt.reshape(-1)]
        size = N + len(keys)
        graph = sp.coo_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(size, size))
        _, comp = csgraph.connected_components(graph, directed=False)
        merged = comp[labels]
        _, labels = np.unique(merged, return_inverse=True)
        new_count = int(labels.max()) + 1
        if new_count == count:
            break
        count = new_count
    # Renumber in order of first appearance (stable, readable).
    _, first = np.unique(labels, return_index=True)
    order = np.argsort(np.argsort(first))
    labels = order[labels].astype(np.int64)
    labels.setflags(write=False)
    return labels


class TwoLevel:
    """Two-level preconditioner for ``A = I - (1 - r) P`` (module docstring).

    ``apply(v)`` approximates ``A^{-1} v``: ``pre`` Richardson steps
    ``z <- z + (v - A z)`` (one step of the chain each), the coarse correction
    ``W A_c^{-1} R`` with ``A_c = R A W``, then ``post`` Richardson steps.
    ``apply_transposed`` is its exact transpose (for ``A^T``).

    Args:
        A: ``A`` of one part, CSR ``(X, X)``; AT: its transpose, CSR.
        aggregate: ``(X,)`` aggregate of each state, ``0..G-1``.
        weights: ``(X,)`` non-negative weights within aggregates (an
            approximate ``p``); an aggregate with no weight is spread evenly.
    """

    def __init__(self, A, AT, aggregate: np.ndarray, num_aggregates: int, weights: np.ndarray, *, pre: int = 1, post: int = 1):
        X = A.shape[0]
        G = num_aggregates
        self.A, self.AT, self.pre, self.post = A, AT, pre, post
        w = np.maximum(np.nan_to_num(weights), 0.0)
        sums = np.bincount(aggregate, weights=w, minlength=G)
        w = np.where(sums[aggregate] > 0, w, 1.0)
        sums = np.bincount(aggregate, weights=w, minlength=G)
        cols = np.arange(X)
        self.R = sp.csr_matrix((np.ones(X), (aggregate, cols)), shape=(G, X))
        self.RT = self.R.T.tocsr()
        self.W = sp.csr_matrix((w / sums[aggregate], (cols, aggregate)), shape=(X, G))
        self.WT = self.W.T.tocsr()
        Ac = (self.R @ (A @ self.W)).tocsc()
        self.coarse = spla.splu(Ac, permc_spec="NATURAL", diag_pivot_thresh=0.0)
        self.num_aggregates = G

    @staticmethod
    def _smooth(A, v, z, steps):
        for _ in range(steps):
            z = z + (v - A @ z)
        return z

    def apply(self, v: np.ndarray) -> np.ndarray:
        z = self._smooth(self.A, v, np.zeros_like(v), self.pre)
        z = z + self.W @ self.coarse.solve(self.R @ (v - self.A @ z))
        return self._smooth(self.A, v, z, self.post)

    def apply_transposed(self, v: np.ndarray) -> np.ndarray:
        z = self._smooth(self.AT, v, np.zeros_like(v), self.post)
        z = z + self.RT @ self.coarse.solve(self.WT @ (v - self.AT @ z), trans="T")
        return self._smooth(self.AT, v, z, self.pre)


def fgmres(matvec, precond, b: np.ndarray, x: np.ndarray, target: float, restart: int) -> tuple[np.ndarray, int]:
    """One cycle of flexible GMRES (right preconditioned), classical Gram-Schmidt twice.

    Stops when the Arnoldi residual estimate (2-norm) is below ``target`` or
    after ``restart`` iterations.  Returns the new ``x`` and the number of
    iterations.  The caller checks the true residual.
    """
    n = b.shape[0]
    r = b - matvec(x)
    beta = float(np.linalg.norm(r))
    if beta == 0.0:
        return x, 0
    V = np.empty((restart + 1, n))
    Z = np.empty((restart, n))
    H = np.zeros((restart + 1, restart))
    cs, sn = np.zeros(restart), np.zeros(restart)
    g = np.zeros(restart + 1)
    g[0] = beta
    V[0] = r / beta
    j = 0
    for j in range(restart):
        Z[j] = precond(V[j])
        w = matvec(Z[j])
        h = V[: j + 1] @ w
        w -= V[: j + 1].T @ h
        h2 = V[: j + 1] @ w
        w -= V[: j + 1].T @ h2
        h += h2
        hn = float(np.linalg.norm(w))
        H[: j + 1, j] = h
        H[j + 1, j] = hn
        if hn > 0:
            V[j + 1] = w / hn
        for i in range(j):  # previous Givens rotations
            t = cs[i] * H[i, j] + sn[i] * H[i + 1, j]
            H[i + 1, j] = -sn[i] * H[i, j] + cs[i] * H[i + 1, j]
            H[i, j] = t
        d = math.hypot(H[j, j], H[j + 1, j])
        cs[j], sn[j] = (1.0, 0.0) if d == 0 else (H[j, j] / d, H[j + 1, j] / d)
        H[j, j] = d
        H[j + 1, j] = 0.0
        g[j + 1] = -sn[j] * g[j]
        g[j] = cs[j] * g[j]
        if abs(g[j + 1]) <= target or hn == 0:
            break
    k = j + 1
    y = np.zeros(k)
    for i in range(k - 1, -1, -1):
        y[i] = (g[i] - H[i, i + 1 : k] @ y[i + 1 : k]) / H[i, i] if H[i, i] != 0 else 0.0
    return x + Z[:k].T @ y, k


class Iterative(Backend):
    """FGMRES + :class:`TwoLevel` per part, with checked residuals (module docstring)."""

    def __init__(
        self,
        chain: JointChain,
        values: np.ndarray,
        p0: np.ndarray,
        reset: float,
        *,
        tol: float = 1e-12,
        restart: int = 30,
        maxiter: int = 600,
        pre: int = 1,
        post: int = 1,
        fallback_states: int = 25_000,
    ):
        tol = positive("tol", tol, 1.0)
        restart, maxiter = integer("restart", restart, 1), integer("maxiter", maxiter, 1)
        pre, post = integer("pre", pre, 0), integer("post", post, 0)
        self.chain, self.values, self.p0, self.reset = chain, values, p0, reset
        self.tol, self.restart, self.maxiter, self.pre, self.post = tol, restart, maxiter, pre, post
        self.fallback_states = fallback_states
        matrices = system_matrices(chain, values, reset)
        self.A = [M.tocsr() for M in matrices]
        self.AT = [M.T.tocsr() for M in matrices]  # CSC of A reinterpreted
        labels = observation_aggregates(chain.architecture)
        G_nodes = int(labels.max()) + 1
        S = chain.states_per_part
        self.aggregate = (np.arange(S)[:, None] * G_nodes + labels[None, :]).reshape(-1)
        self.num_aggregates = S * G_nodes
        self.info: dict = {"coarse_states": self.num_aggregates, "forward_iterations": [], "adjoint_iterations": [], "rebuilds": 0}
        self.p: np.ndarray | None = None
        self.fallback: SparseLU | None = None

    # Helpers.

    def _warm_weights(self, k: int) -> np.ndarray:
        """A few steps of the chain with reset from the uniform distribution."""
        X = self.p0.shape[1]
        v = np.full(X, 1.0 / X) + self.p0[k]
        b = self.reset * self.p0[k]
        for _ in range(8):
            v = v + (b - self.A[k] @ v)
        return v

    def _two_level(self, k: int, weights: np.ndarray) -> TwoLevel:
        return TwoLevel(self.A[k], self.AT[k], self.aggregate, self.num_aggregates, weights, pre=self.pre, post=self.post)

    def _run(self, k: int, b: np.ndarray, transposed: bool, weights: np.ndarray, norm: float) -> tuple[np.ndarray | None, int, float]:
        """Solve ``A x = b`` (or ``A^T x = b``); return ``(x or None, iterations, relative residual)``."""
        M = self.AT[k] if transposed else self.A[k]
        matvec = M.__matmul__
        scale = float(np.linalg.norm(b, norm))
        if scale == 0:
            return np.zeros_like(b), 0, 0.0
        x = np.zeros_like(b)
        prec = self._two_level(k, weights)
        apply = prec.apply_transposed if transposed else prec.apply
        iterations, cycles = 0, 0
        while True:
            res = b - matvec(x)
            err = float(np.linalg.norm(res, norm))
            # What rounding alone leaves in a computed residual (||A|| <= 2 in both norms).
            floor = _FLOOR * (scale + 2 * float(np.linalg.norm(x, norm)))
            if err <= self.tol * scale + floor:
                return x, iterations, err / scale
            if iterations >= self.maxiter:
                return None, iterations, err / scale
            if cycles and not transposed:
                # Refresh the aggregation weights from the current iterate.
                prec = self._two_level(k, x)
                apply = prec.apply
                self.info["rebuilds"] += 1
            target = (self.tol * scale + floor) * float(np.linalg.norm(res)) / err
            x, its = fgmres(matvec, apply, b, x, 0.5 * target, min(self.restart, self.maxiter - iterations))
            iterations += its
            cycles += 1

    def _fall_back(self, what: str, k: int, iterations: int, rel: float) -> SparseLU:
        X = self.p0.shape[1]
        message = f"iterative engine: the {what} solve of part {k} reached a relative residual of {rel:.3g} (tolerance {self.tol:.3g})"
        message += f" after {iterations} iterations"
        if X > self.fallback_states:
            raise ConvergenceError(f"{message}; the chain ({X} states per part) is too large for the sparse LU fallback (limit {self.fallback_states})")
        warnings.warn(f"{message}; falling back to the sparse LU engine", RuntimeWarning, stacklevel=4)
        self.info["fallback"] = "sparse"
        self.info["fallback_reason"] = message
        if self.fallback is None:
            self.fallback = SparseLU(self.chain, self.values, self.p0, self.reset)
        return self.fallback

    def residual(self, p: np.ndarray) -> float:
        return max(float(np.abs(A @ pk - self.reset * bk).max(initial=0.0)) for A, pk, bk in zip(self.A, p, self.p0, strict=True))

    # Backend.

    def solve(self) -> np.ndarray:
        out = np.empty_like(self.p0)
        residuals = []
        for k in range(self.p0.shape[0]):
            b = self.reset * self.p0[k]
            x, its, rel = self._run(k, b, False, self._warm_weights(k), 1)
            self.info["forward_iterations"].append(its)
            if x is None:
                x = self._fall_back("forward", k, its, rel).factors[k].solve(b)
                rel = float(np.abs(b - self.A[k] @ x).sum() / np.abs(b).sum())
            out[k] = x
            residuals.append(rel)
        self.info["forward_relative_residual"] = max(residuals)
        self.p = out
        return out

    def solve_adjoint(self, g: np.ndarray) -> np.ndarray:
        out = np.empty_like(g)
        residuals = []
        for k in range(g.shape[0]):
            gk = np.ascontiguousarray(g[k])
            p = self.p[k]
            # A^T 1 = r 1: take out the component of g along the slowest mode, c = (p . g) / r.
            c = float(p @ gk) / self.reset
            rhs = gk - self.reset * c
            x, its, rel = self._run(k, rhs, True, p, np.inf)
            self.info["adjoint_iterations"].append(its)
            if x is None:
                x = self._fall_back("adjoint", k, its, rel).factors[k].solve(rhs, trans="T")
            out[k] = x + c
            residuals.append(rel)
        self.info["adjoint_relative_residual"] = max(residuals)
        return out
