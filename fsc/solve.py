"""Stationary distribution of the joint chain with reset: the engines.

Every engine computes, for each closed part ``k`` of the world,

.. math::

    p = r \\, (I - (1 - r) P)^{-1} p_0

(paper Lemma 2.1 and appendix A: the stationary distribution of the chain
that resets to ``p0`` with probability ``r`` each step), differentiably in
``P`` and ``p0``.  ``P[k, x2, x]`` is the probability of ``x -> x2``.

An engine is a function ``(chain, probs, init_probs, reset) -> Solution``;
:data:`ENGINES` maps the names used by :func:`fsc.evaluate` and the command
line to them (docs/model.md):

- ``dense``: LU of the dense ``(K, X, X)`` matrix by torch, gradient by autograd;
- ``power``: the paper's repeated squaring (appendix B), the reference;
- ``sparse``: SuperLU, one factorisation per part reused by the adjoint (:mod:`fsc.sparse`);
- ``iterative``: FGMRES with a two-level aggregation preconditioner (:mod:`fsc.iterative`);
- ``accurate``: GTH elimination without subtraction, also for ``r = 0`` (:mod:`fsc.accurate`).

:func:`choose_engine` is what ``auto`` runs.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .accurate import solve_accurate
from .chain import JointChain
from .iterative import ConvergenceError, solve_iterative
from .sparse import DenseLU, Solution, solve_sparse, solve_with

__all__ = [
    "ENGINES",
    "ZERO_RESET_ENGINES",
    "ConvergenceError",
    "Solution",
    "choose_engine",
    "solve_accurate",
    "solve_dense",
    "solve_iterative",
    "solve_power",
    "solve_sparse",
]


def _residual(P: torch.Tensor, p: torch.Tensor, p0: torch.Tensor, reset: float) -> float:
    with torch.no_grad():
        r = p - (1 - reset) * torch.einsum("kyx,kx->ky", P, p) - reset * p0
        return float(r.abs().max())


def solve_dense(chain: JointChain, probs: torch.Tensor, init_probs: torch.Tensor, reset: float) -> Solution:
    """Dense LU (LAPACK) of ``I - (1 - r) P`` per part, reused by the adjoint gradient.

    Cost ``O(K X^3)`` time and ``O(K X^2)`` memory; exact to rounding for the
    chains of a few thousand states this is meant for.  The backward pass
    solves ``A^T lambda = dL/dp`` with the same factors (:class:`fsc.sparse.DenseLU`),
    as training does, instead of differentiating through the solver.
    """
    return solve_with(DenseLU, chain, probs, init_probs, reset, "dense")


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
    """The paper's power method (appendix B, Algorithm 1).

    Builds ``M = (1 - r) P + r p0 1^T`` (column stochastic) and squares it
    until its columns agree to ``tol``; returns a column.  Kept as the
    reference of the published code and for benchmarks: it costs one dense
    matrix product per squaring, about ``log2(mixing time)`` of them.

    On slowly mixing chains the spread of the columns can stall at a
    rounding floor above ``tol`` (3.7e-14 for a near-CCP RAM(8) at
    ``r = 1e-5``) while further squarings double the error of the column
    sums each time, until they overflow to NaN.  So the squaring also stops
    when the spread stops decreasing once below ``floor``;
    ``info["spread"]`` says where it stopped.

    Raises:
        RuntimeError: the columns still differ by more than ``floor`` after ``max_squarings``.
    """
    P = chain.dense(probs)
    p0 = chain.initial(init_probs)
    M = (1 - reset) * P + reset * p0.unsqueeze(-1)
    previous = float("inf")
    for squarings in range(max_squarings + 1):
        with torch.no_grad():
            spread = float((M - M[:, :, :1]).abs().max())
        if spread <= tol or (spread <= floor and spread >= previous):
            break
        if squarings == max_squarings or not spread < float("inf"):
            raise RuntimeError(f"power method: columns still differ by {spread:.3g} after {squarings} squarings")
        previous = spread
        M = M @ M
    p = M[:, :, 0]
    return Solution(distribution=p, residual=_residual(P, p, p0, reset), info={"squarings": squarings, "spread": spread})


Engine = Callable[[JointChain, torch.Tensor, torch.Tensor, float], Solution]

ENGINES: dict[str, Engine] = {
    "dense": solve_dense,
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


def choose_engine(chain: JointChain, reset: float) -> str:
    """The engine ``auto`` picks for this chain and reset.

    ``accurate`` for ``reset = 0``; otherwise by the size ``X`` of a part and
    the density of ``P``: ``dense`` for small or dense chains (RAM up to
    ``M = 600``), ``sparse`` for mid-size sparse ones (Memento ``m = 4, 5``),
    ``iterative`` beyond (its residual is checked; it falls back
    to ``sparse`` when it does not converge on a chain small enough).
    """
    if reset == 0:
        return "accurate"
    X = chain.size
    density = chain.nnz / (chain.num_parts * X * X)
    if X <= DENSE_STATES or (density >= DENSE_DENSITY and X <= DENSE_MAX_STATES):
        return "dense"
    if X <= SPARSE_STATES:
        return "sparse"
    return "iterative"
