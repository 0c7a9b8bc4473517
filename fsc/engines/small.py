"""Tiny joint chains solved by numpy alone: no compiled kernels to load.

A command that evaluates one controller once (``fsc evaluate`` without ``--grad``, ``fsc draw``) on a world
small enough that the dense engine's estimate (:meth:`fsc.engines.builtin.Dense.estimate`) is a few
milliseconds would otherwise wait longer for numba and its cached kernels to load (a few tenths of a second)
than for the evaluation itself.  :func:`fits` says when a chain is that small; :func:`forward` then runs the
evaluator's forward pass with numpy (the dense ``P`` of each part, LAPACK's solve): the same numbers as the
compiled engines to rounding (``tests/fsc/test_engine_small.py``), with the engine named ``numpy``.

Training and every gradient keep the compiled engines: their bits are those of the shipped results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import numpy as np

from fsc.engines import cost
from fsc.engines.registry import ENGINES

if TYPE_CHECKING:
    from fsc.model.architecture import MemoryArchitecture
    from fsc.model.chain import JointChain
    from fsc.model.pomdp import POMDP

__all__ = ["NAME", "NUMPY_SECONDS", "NumpyPass", "fits", "forward"]

#: The name an evaluation by this path reports as its engine.
NAME = "numpy"

#: A chain goes to numpy when the dense engine's estimate of an evaluation (building the chain and one LU per
#: part, with its gradient) is below this many seconds: numpy's solve of ``X = 240`` states takes about 5 ms,
#: while loading numba and a compiled kernel from its cache takes 0.2-0.8 s (benchmarks/bench_startup.py).
NUMPY_SECONDS = 0.01


def fits(world: POMDP, architecture: MemoryArchitecture, reset: float) -> bool:
    """Whether ``auto`` evaluates this world and memory once with numpy: ``reset > 0`` (a nonsingular
    ``I - (1 - r) P``) and the dense engine's estimate below :data:`NUMPY_SECONDS`."""
    if not reset > 0:
        return False
    return ENGINES["dense"].estimate(cost.world_sizes(world, architecture)).seconds < NUMPY_SECONDS


@attrs.frozen(eq=False)
class NumpyPass:
    """What :func:`forward` finds: ``p``, ``p_hat`` ``(K, X)``, the expectations of the tables, and the residual."""

    p: np.ndarray
    p_hat: np.ndarray
    expected: np.ndarray
    residual: float
    info: dict = attrs.field(factory=dict)


def forward(chain: JointChain, probs: np.ndarray, init_probs: np.ndarray, reset: float, tables: np.ndarray) -> NumpyPass:
    """The evaluator's forward pass (:meth:`fsc.evaluate.Evaluator.forward_probs`) with numpy.

    Per part ``k``: ``p = r (I - (1 - r) P)^{-1} p0``, ``p_hat = p / sum p``, and for each table ``T`` of
    ``tables`` ``(M, K S, C)`` the expectation ``sum_k w_k sum_(s, n) p_hat[k, (s, n)] sum_c probs[n, c] T[k S + s, c]``.
    """
    K, X, S = chain.num_parts, chain.size, chain.states_per_part
    N, C = probs.shape
    values = probs.reshape(-1)[chain.node_choice] * chain.weight
    P = np.zeros((K, X, X))
    np.add.at(P, (chain.parts, chain.rows, chain.cols), values)
    diagonal = np.arange(X)
    P[:, diagonal, diagonal] += chain.padding
    p0 = (chain.initial_world[:, :, None] * init_probs).reshape(K, X)
    p = reset * np.linalg.solve(np.eye(X) - (1 - reset) * P, p0[:, :, None])[:, :, 0]
    p_hat = p / p.sum(axis=1, keepdims=True)
    f = np.einsum("nc,mksc->mksn", probs, tables.reshape(len(tables), K, S, C)).reshape(len(tables), K, X)
    expected = np.einsum("k,kx,mkx->m", chain.part_weights, p_hat, f)
    residual = float(np.abs(p - (1 - reset) * np.einsum("kxy,ky->kx", P, p) - reset * p0).max(initial=0.0))
    return NumpyPass(p=p, p_hat=p_hat, expected=expected, residual=residual)
