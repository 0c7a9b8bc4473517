"""Sparse engines: the adjoint machinery they share and the sparse LU engine.

Every engine solves, per closed part ``k`` of the world,

.. math::

    A p = r \\, p_0, \\qquad A = I - (1 - r) P

(paper Lemma 2.1; ``P[x2, x]`` is the probability of ``x -> x2``).  The
sparse ones do it outside torch, with scipy, and get the gradient from one
extra *adjoint* solve (:meth:`Backend.solve_adjoint`): for a loss ``L(p)`` with
``g = dL/dp``,

.. math::

    A^T \\lambda = g, \\qquad
    \\frac{\\partial L}{\\partial p_0} = r \\lambda, \\qquad
    \\frac{\\partial L}{\\partial P_{ij}} = (1 - r) \\lambda_i p_j ,

so the gradient costs one more solve with the factorisation (or the
preconditioner) of the forward pass.  At ``r = 0`` the same formulas hold
with ``lambda`` from the bordered adjoint system (see :mod:`fsc.engines.accurate`).
"""

from __future__ import annotations

import abc
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from fsc.checks import one_of
from fsc.engines.kernels import after_choice_solve, after_choice_system_t, dense_system_t, lu_parts, lu_solve_parts
from fsc.model.chain import JointChain, require_after_choice

__all__ = ["AfterChoiceLU", "Backend", "DenseLU", "SparseLU", "stationary_residual", "system_matrices"]


def system_matrices(chain: JointChain, values: np.ndarray, reset: float) -> list[sp.csc_matrix]:
    """``A = I - (1 - r) P`` of each part (CSC, canonical: sorted, no duplicates)."""
    a = 1 - reset
    out = []
    for k, (sl, (indptr, indices, slot, diag_slot, nnz)) in enumerate(zip(chain.part_slices, chain.system_pattern, strict=True)):
        data = np.bincount(slot, weights=values[sl], minlength=nnz) * -a
        data[diag_slot] += 1.0
        if chain.padding[k].any():
            data[diag_slot[chain.padding[k]]] -= a
        A = sp.csc_matrix((data, indices, indptr), shape=(chain.size, chain.size), copy=False)
        A.has_canonical_format = True
        out.append(A)
    return out


class Backend(abc.ABC):
    """A linear solver for ``A p = r p0`` per part, and for its adjoint.

    Built from the chain, the nonzero values of ``P`` (numpy, in the chain's
    order), the reset distributions ``p0`` ``(K, X)`` and ``r``.
    :meth:`solve` is called once, then :meth:`solve_adjoint` at most once per
    backward pass.  ``info`` is a JSON-able dict of facts, filled as it goes.
    """

    info: dict

    @abc.abstractmethod
    def solve(self) -> np.ndarray:
        """``p`` of shape ``(K, X)``."""

    @abc.abstractmethod
    def solve_adjoint(self, g: np.ndarray) -> np.ndarray:
        """``lambda`` of shape ``(K, X)`` with ``A^T lambda = g`` per part (``g`` of shape ``(K, X)``)."""

    @abc.abstractmethod
    def residual(self, p: np.ndarray) -> float:
        """``max_k || p_k - (1 - r) P_k p_k - r p0_k ||_inf``."""


class SparseLU(Backend):
    """One SuperLU factorisation of ``A = I - (1 - r) P`` per part, reused for the adjoint.

    ``A`` is a column diagonally dominant M-matrix, so the diagonal is always
    an acceptable pivot: no row interchanges (``diag_pivot_thresh=0``).  The
    column order is ``NATURAL`` by default: on Memento (nodes by history
    length, then code) it fills in less than COLAMD and skips the ordering
    (m = 6: 1.4 M against 1.8 M nonzeros, 0.1 s against 0.19 s), and it is as
    good on RAM, Chain and Column.
    """

    def __init__(self, chain: JointChain, values: np.ndarray, p0: np.ndarray, reset: float, *, permc_spec: str = "NATURAL"):
        one_of("permc_spec", permc_spec, ("NATURAL", "COLAMD", "MMD_ATA", "MMD_AT_PLUS_A"))  # SuperLU's column orderings
        self.p0, self.reset = p0, reset
        start = time.perf_counter()
        self.matrices = system_matrices(chain, values, reset)
        self.factors = [spla.splu(A, permc_spec=permc_spec, diag_pivot_thresh=0.0) for A in self.matrices]
        fill = sum(f.L.nnz + f.U.nnz for f in self.factors)
        self.info = {"fill": int(fill), "factor_seconds": time.perf_counter() - start}

    def solve(self) -> np.ndarray:
        return np.stack([f.solve(self.reset * b) for f, b in zip(self.factors, self.p0, strict=True)])

    def solve_adjoint(self, g: np.ndarray) -> np.ndarray:
        return np.stack([f.solve(np.ascontiguousarray(gk), trans="T") for f, gk in zip(self.factors, g, strict=True)])

    def residual(self, p: np.ndarray) -> float:
        return max(float(np.abs(A @ pk - self.reset * bk).max(initial=0.0)) for A, pk, bk in zip(self.matrices, p, self.p0, strict=True))


class DenseLU(Backend):
    """One LAPACK LU (``dgetrf``) of the dense ``A = I - (1 - r) P`` per part, reused for the adjoint (``dgetrs``).

    ``A`` is assembled transposed (``A^T[x, x2]``) in C order, so that each part read as a Fortran array
    is ``A`` itself: no copy before the factorisation.
    """

    def __init__(self, chain: JointChain, values: np.ndarray, p0: np.ndarray, reset: float):
        self.chain, self.values, self.p0, self.reset = chain, values, p0, reset
        K, X = chain.num_parts, chain.size
        self.info = {}
        # The LU in place, through the LAPACK binding of the compiled training step (one path for both).
        self.lu = dense_system_t(chain.dense_index_t, values, 1 - reset, chain.padding, K, X)
        self.pivots, ok = lu_parts(self.lu)
        if not ok:
            raise np.linalg.LinAlgError("I - (1 - r) P is singular")

    def solve(self) -> np.ndarray:
        return self._solve(self.reset * self.p0, 0)

    def solve_adjoint(self, g: np.ndarray) -> np.ndarray:
        return self._solve(g, 1)

    def _solve(self, b: np.ndarray, trans: int) -> np.ndarray:
        x = np.array(b, dtype=np.float64, order="C")  # solved in place
        lu_solve_parts(self.lu, self.pivots, x, trans)
        return x

    def residual(self, p: np.ndarray) -> float:
        return stationary_residual(self.chain, self.values, p, self.p0, self.reset)


class AfterChoiceLU(DenseLU):
    """The dense LU of the chain just after each choice (:class:`fsc.model.chain.AfterChoice`), for
    architectures whose next node depends only on the choice and the observation (RAM, chain, column).

    ``A = I - (1 - r) P`` with ``P = G Pi`` is solved through ``B = I - (1 - r) Pi G``, of ``Y = S C``
    states per part instead of ``X = S N`` (RAM: ``2 M`` instead of ``5 M``, so about 15 times fewer
    operations in its LU), by :func:`fsc.engines.kernels.after_choice_solve`: the same ``p`` and adjoint
    as ``dense``, to rounding.
    """

    def __init__(self, chain: JointChain, values: np.ndarray, p0: np.ndarray, reset: float, *, probs: np.ndarray):
        self.tables = tables = require_after_choice(chain)
        self.chain, self.values, self.p0, self.reset = chain, values, p0, reset
        self.probs = np.ascontiguousarray(probs, dtype=np.float64)
        self.info = {}
        self.lu = after_choice_system_t(tables.b_index_t, tables.b_node_choice, tables.b_weight, self.probs, 1 - reset, tables.b_padding)
        self.pivots, ok = lu_parts(self.lu)
        if not ok:
            raise np.linalg.LinAlgError("I - (1 - r) Pi G is singular")

    def _solve(self, b: np.ndarray, trans: int) -> np.ndarray:
        t, chain = self.tables, self.chain
        return after_choice_solve(
            self.lu, self.pivots, np.ascontiguousarray(b, dtype=np.float64), trans, self.probs, t.kernel_tables,
            chain.padding, t.valid, 1 - self.reset, chain.states_per_part, chain.architecture.num_nodes,
        )  # fmt: skip


def stationary_residual(chain: JointChain, values: np.ndarray, p: np.ndarray, p0: np.ndarray, reset: float) -> float:
    """``max_k || p_k - (1 - r) P_k p_k - r p0_k ||_inf`` from the nonzeros of ``P``, in ``O(nnz)``."""
    K, X = p.shape
    Pp = np.bincount(chain.flat_rows, values * p.reshape(-1)[chain.flat_cols], minlength=K * X).reshape(K, X) + chain.padding * p
    return float(np.abs(p - (1 - reset) * Pp - reset * p0).max(initial=0.0))
