"""Stationary distribution of the joint chain with reset: the engines.

Every engine computes, for each closed part ``k`` of the world,

.. math::

    p = r \\, (I - (1 - r) P)^{-1} p_0

(paper Lemma 2.1 and appendix A: the stationary distribution of the chain
that resets to ``p0`` with probability ``r`` each step), differentiably in
``P`` and ``p0``.  ``P[k, x2, x]`` is the probability of ``x -> x2``.

An engine is a :class:`fsc.engines.sparse.Backend`: a solver for ``p`` and for the
adjoint system that gives the gradient.  :data:`BACKENDS` maps the names used
by :func:`fsc.evaluate`, training and the command line to them
(docs/model.md); :data:`ENGINES` maps the same names to functions
``(chain, probs, init_probs, reset) -> Solution`` that return ``p`` as a
differentiable tensor, for whoever needs the distribution alone:

- ``dense``: LU of the dense ``(K, X, X)`` matrix (LAPACK, or torch for large parts);
- ``choices``: the same, through the smaller chain just after each choice, block triangular
  (RAM, chain, column, Memento; :class:`fsc.engines.sparse.AfterChoiceLU`);
- ``power``: the paper's repeated squaring (appendix B), the reference;
- ``sparse``: SuperLU, one factorisation per part reused by the adjoint (:mod:`fsc.engines.sparse`);
- ``iterative``: FGMRES with a two-level aggregation preconditioner (:mod:`fsc.engines.iterative`);
- ``accurate``: GTH elimination without subtraction, also for ``r = 0`` (:mod:`fsc.engines.accurate`).

:func:`choose_engine` is what ``auto`` runs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from fsc.engines.accurate import Accurate, solve_accurate
from fsc.engines.iterative import ConvergenceError, Iterative, solve_iterative
from fsc.engines.large import LargeLU
from fsc.engines.sparse import AfterChoiceLU, Backend, DenseLU, Solution, SparseLU, solve_sparse, solve_with, stationary_residual
from fsc.model.chain import JointChain

__all__ = [
    "BACKENDS",
    "ENGINES",
    "Power",
    "ZERO_RESET_ENGINES",
    "ConvergenceError",
    "Solution",
    "choose_engine",
    "solve_accurate",
    "solve_after_choice",
    "solve_dense",
    "solve_iterative",
    "solve_power",
    "solve_sparse",
]


def solve_dense(chain: JointChain, probs: torch.Tensor, init_probs: torch.Tensor, reset: float) -> Solution:
    """Dense LU of ``I - (1 - r) P`` per part, reused by the adjoint gradient (:class:`fsc.engines.sparse.DenseLU`).

    Cost ``O(K X^3)`` time and ``O(K X^2)`` memory; exact to rounding for the
    chains of a few thousand states this is meant for.
    """
    return solve_with(DenseLU, chain, probs, init_probs, reset, "dense")


def solve_after_choice(chain: JointChain, probs: torch.Tensor, init_probs: torch.Tensor, reset: float) -> Solution:
    """Dense LU of the chain after each choice (:class:`fsc.engines.sparse.AfterChoiceLU`), reused by the adjoint.

    Raises:
        ValueError: the chain after each choice would need an LU no smaller than the chain's own.
    """
    held = probs.detach().numpy()
    return solve_with(lambda c, v, p0, r: AfterChoiceLU(c, v, p0, r, probs=held), chain, probs, init_probs, reset, "choices")


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


def solve_power(
    chain: JointChain,
    probs: torch.Tensor,
    init_probs: torch.Tensor,
    reset: float,
    *,
    tol: float = 1e-14,
    max_squarings: int = 80,
    floor: float = 1e-10,
) -> Solution:
    """The paper's power method (:class:`Power`): kept as the reference of the published code and for benchmarks.

    It costs one dense matrix product per squaring, about ``log2(mixing time)`` of them.

    Raises:
        RuntimeError: the columns still differ by more than ``floor`` after ``max_squarings``.
    """
    return solve_with(lambda c, v, p0, r: Power(c, v, p0, r, tol=tol, max_squarings=max_squarings, floor=floor), chain, probs, init_probs, reset, "power")


Engine = Callable[[JointChain, torch.Tensor, torch.Tensor, float], Solution]

#: The engines as :class:`fsc.engines.sparse.Backend` classes ``(chain, values, p0, reset) -> Backend``, with
#: their default options: what :func:`fsc.evaluate` and training run.
BACKENDS: dict[str, Callable[..., Backend]] = {
    "dense": DenseLU,
    "choices": AfterChoiceLU,
    "power": Power,
    "sparse": SparseLU,
    "iterative": Iterative,
    "accurate": Accurate,
    "large": LargeLU,
}

ENGINES: dict[str, Engine] = {
    "dense": solve_dense,
    "choices": solve_after_choice,
    "power": solve_power,
    "sparse": solve_sparse,
    "iterative": solve_iterative,
    "accurate": solve_accurate,
}

#: Engines that accept ``reset = 0`` (chains with a single recurrent class).
ZERO_RESET_ENGINES: set[str] = {"accurate"}

#: ``auto`` thresholds, in joint states per part ``X`` (benchmarks/bench_engines.py,
#: value and gradient, one thread, r = 1e-5): dense LU up to DENSE_STATES, or up to
#: DENSE_MAX_STATES when ``P`` is dense (at least DENSE_DENSITY of its entries
#: nonzero: RAM, where dense and sparse LU are within 1.5x of each other, 9-22 ms
#: at M = 64); sparse LU up to SPARSE_STATES (Memento m = 4: 1.3 ms against 4.4 ms
#: dense; m = 5: 17 ms against 280 ms dense); the iterative engine beyond (Memento
#: m = 6: 0.1-0.2 s against 0.6 s for sparse LU, whose fill then grows 12x per m).
DENSE_STATES = 200
DENSE_MAX_STATES = 3000
DENSE_DENSITY = 0.05
SPARSE_STATES = 2000
#: ``choices`` takes a sparse recurrent block up to this many states per part (Memento m = 4: 128 states,
#: 0.23 ms against 1.26 ms for sparse LU; m = 5: 512, 6.2 ms against 12.1 sparse and 10.7 iterative;
#: m = 6: 2048, 234 ms against 26 ms iterative), a dense one (RAM) up to DENSE_MAX_STATES.
CHOICES_SPARSE_STATES = 600


def choose_engine(chain: JointChain, reset: float) -> str:
    """The engine ``auto`` picks for this chain and reset.

    ``accurate`` for ``reset = 0``; ``choices`` when the chain after each choice exists
    (:attr:`fsc.model.chain.JointChain.after_choice`) and its LU is small: at most ``CHOICES_SPARSE_STATES``
    recurrent states per part, or ``DENSE_MAX_STATES`` when its matrix is dense (RAM, chain, column;
    benchmarks/bench_after_choice.py); otherwise by the size ``X`` of a part and
    the density of ``P``: ``dense`` for small or dense chains (RAM up to
    ``M = 600``), ``sparse`` for mid-size sparse ones,
    ``iterative`` beyond (its residual is checked; it falls back
    to ``sparse`` when it does not converge on a chain small enough).
    """
    if reset == 0:
        return "accurate"
    after = chain.after_choice
    if after is not None:
        YR = after.recurrent_size
        if YR <= CHOICES_SPARSE_STATES or (YR <= DENSE_MAX_STATES and len(after.b_index_t) >= DENSE_DENSITY * chain.num_parts * YR * YR):
            return "choices"
    X = chain.size
    density = chain.nnz / (chain.num_parts * X * X)
    if X <= DENSE_STATES or (density >= DENSE_DENSITY and X <= DENSE_MAX_STATES):
        return "dense"
    if X <= SPARSE_STATES:
        return "sparse"
    return "iterative"
