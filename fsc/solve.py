"""Stationary distribution of the joint chain with reset: the engines.

Every engine computes, for each closed part ``k`` of the world,

.. math::

    p = r \\, (I - (1 - r) P)^{-1} p_0

(paper Lemma 2.1 and appendix A: the stationary distribution of the chain
that resets to ``p0`` with probability ``r`` each step), differentiably in
``P`` and ``p0``.  ``P[k, x2, x]`` is the probability of ``x -> x2``.

An engine is a function ``(chain, probs, init_probs, reset) -> Solution``;
:data:`ENGINES` maps the names used by :func:`fsc.evaluate` and the command
line to them.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import torch

from .chain import JointChain

__all__ = ["ENGINES", "ZERO_RESET_ENGINES", "Solution", "choose_engine", "solve_dense", "solve_power"]


@attrs.frozen(eq=False)
class Solution:
    """What an engine returns.

    Attributes:
        distribution: ``p[k, x]``, shape ``(K, X)``, each row summing to 1.
        residual: ``max |p - (1 - r) P p - r p0|`` over parts (a float, after the fact).
        info: engine-specific facts (iterations, ...), JSON-able.
    """

    distribution: torch.Tensor
    residual: float
    info: dict = attrs.field(factory=dict)


def _residual(P: torch.Tensor, p: torch.Tensor, p0: torch.Tensor, reset: float) -> float:
    with torch.no_grad():
        r = p - (1 - reset) * torch.einsum("kyx,kx->ky", P, p) - reset * p0
        return float(r.abs().max())


def solve_dense(chain: JointChain, probs: torch.Tensor, init_probs: torch.Tensor, reset: float) -> Solution:
    """Dense LU: ``torch.linalg.solve`` on ``I - (1 - r) P``, gradient by autograd.

    Cost ``O(K X^3)`` time and ``O(K X^2)`` memory; exact to rounding for the
    chains of a few thousand states this is meant for.
    """
    P = chain.dense(probs)
    p0 = chain.initial(init_probs)
    eye = torch.eye(chain.size, dtype=torch.float64)
    A = eye - (1 - reset) * P
    p = torch.linalg.solve(A, reset * p0.unsqueeze(-1)).squeeze(-1)
    return Solution(distribution=p, residual=_residual(P, p, p0, reset))


def solve_power(
    chain: JointChain,
    probs: torch.Tensor,
    init_probs: torch.Tensor,
    reset: float,
    *,
    tol: float = 1e-14,
    max_squarings: int = 80,
) -> Solution:
    """The paper's power method (appendix B, Algorithm 1).

    Builds ``M = (1 - r) P + r p0 1^T`` (column stochastic) and squares it
    until its columns agree to ``tol``; returns a column.  Kept as the
    reference of the published code and for benchmarks: it costs one dense
    matrix product per squaring, about ``log2(mixing time)`` of them.

    Raises:
        RuntimeError: the columns still differ after ``max_squarings``.
    """
    P = chain.dense(probs)
    p0 = chain.initial(init_probs)
    M = (1 - reset) * P + reset * p0.unsqueeze(-1)
    for squarings in range(max_squarings + 1):
        with torch.no_grad():
            spread = float((M - M[:, :, :1]).abs().max())
        if spread <= tol:
            break
        if squarings == max_squarings:
            raise RuntimeError(f"power method: columns still differ by {spread:.3g} after {max_squarings} squarings")
        M = M @ M
    p = M[:, :, 0]
    return Solution(distribution=p, residual=_residual(P, p, p0, reset), info={"squarings": squarings})


Engine = Callable[[JointChain, torch.Tensor, torch.Tensor, float], Solution]

ENGINES: dict[str, Engine] = {"dense": solve_dense, "power": solve_power}

#: Engines that accept ``reset = 0`` (chains with a single recurrent class).
ZERO_RESET_ENGINES: set[str] = set()


def choose_engine(chain: JointChain, reset: float) -> str:
    """The engine ``auto`` picks for this chain and reset: dense LU for now."""
    return "dense"
