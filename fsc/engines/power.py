"""The paper's power method (appendix B, Algorithm 1): the ``power`` engine, the reference of the published code."""

from __future__ import annotations

import numpy as np
import torch

from fsc.engines.sparse import Backend, stationary_residual
from fsc.model.chain import JointChain

__all__ = ["Power"]


class Power(Backend):
    """The paper's power method (appendix B, Algorithm 1) for ``p``, and the same squaring for the adjoint.

    Forward: ``M = (1 - r) P + r p0 1^T`` (column stochastic) is squared until
    its columns agree to ``tol``; ``p`` is a column.  On slowly mixing chains
    the spread of the columns can stall at a rounding floor above ``tol``
    (3.7e-14 for a near-CCP RAM(8) at ``r = 1e-5``) while further squarings
    double the error of the column sums each time, until they overflow to NaN;
    so the squaring also stops when the spread stops decreasing once below
    ``floor``.  ``info["squarings"]`` and ``info["spread"]`` say where it stopped.

    Adjoint: ``A^{-T} g = sum_t Q^t g = prod_j (I + Q^(2^j)) g`` with
    ``Q = (1 - r) P^T``, squaring ``Q`` until the tail ``(1 - r)^(2^(j+1))``
    (``P^T`` is row stochastic) is below ``tol``: the exact gradient, to
    rounding, at the cost of the same kind of squarings as the forward pass
    (``info["adjoint_squarings"]``).
    """

    def __init__(
        self, chain: JointChain, values: np.ndarray, p0: np.ndarray, reset: float, *, tol: float = 1e-14, max_squarings: int = 80, floor: float = 1e-10
    ):
        self.chain, self.values, self.p0, self.reset = chain, values, p0, reset
        self.tol, self.max_squarings, self.floor = tol, max_squarings, floor
        K, X = chain.num_parts, chain.size
        P_t = np.bincount(chain.dense_index_t, values, minlength=K * X * X).reshape(K, X, X)
        P_t.reshape(K, X * X)[:, :: X + 1] += chain.padding
        self.P_t = P_t  # P^T[k, x, x2]
        self.info = {}

    def solve(self) -> np.ndarray:
        r = self.reset
        # torch for the products: its threads follow torch.set_num_threads, numpy's BLAS threads do not.
        M = torch.from_numpy((1 - r) * self.P_t.transpose(0, 2, 1) + r * self.p0[:, :, None])
        previous = float("inf")
        for squarings in range(self.max_squarings + 1):
            spread = float((M - M[:, :, :1]).abs().max())
            if spread <= self.tol or (spread <= self.floor and spread >= previous):
                break
            if squarings == self.max_squarings or not spread < float("inf"):
                raise RuntimeError(f"power method: columns still differ by {spread:.3g} after {squarings} squarings")
            previous = spread
            M = M @ M
        self.info.update(squarings=squarings, spread=spread)
        return np.ascontiguousarray(M[:, :, 0].numpy())

    def solve_adjoint(self, g: np.ndarray) -> np.ndarray:
        Q = torch.from_numpy((1 - self.reset) * self.P_t)
        lam, tail = torch.from_numpy(g.copy()), 1 - self.reset
        for squarings in range(self.max_squarings + 1):
            lam += (Q @ lam[:, :, None])[:, :, 0]
            tail *= tail  # the norm of Q^(2^(j+1)), the first power left out
            if tail <= self.tol:
                break
            if squarings == self.max_squarings:
                raise RuntimeError(f"power method: the adjoint series still has a tail of {tail:.3g} after {squarings} squarings")
            Q = Q @ Q
        self.info["adjoint_squarings"] = squarings
        return lam.numpy()

    def residual(self, p: np.ndarray) -> float:
        return stationary_residual(self.chain, self.values, p, self.p0, self.reset)
