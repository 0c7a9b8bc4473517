"""Compiled loops of :class:`fsc.evaluate.Evaluator` (numba).

Training evaluates small chains hundreds of thousands of times (RAM M = 8:
two parts of 40 states), where the cost of a value and gradient written with
numpy is the number of numpy calls (about 40, a microsecond each), not the
arithmetic.  Each function here fuses a run of them into one loop nest; the
linear solves stay with the engines (LAPACK, SuperLU, ...).  The maths is
that of the evaluator's docstring; compiled once per machine (``cache=True``
keeps the machine code beside the module).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["adjoint_seed", "dense_system_t", "expectations", "policy_gradient", "policy_probs"]


@njit(cache=True)
def policy_probs(w_pi, allowed, w_0, reset_mask):  # pragma: no cover - compiled
    """Softmax of each row of ``w_pi`` over its allowed choices, and of ``w_0`` over the reset nodes."""
    N, C = w_pi.shape
    probs = np.zeros((N, C))
    for n in range(N):
        top = -np.inf
        for c in range(C):
            if allowed[n, c] and w_pi[n, c] > top:
                top = w_pi[n, c]
        total = 0.0
        for c in range(C):
            if allowed[n, c]:
                e = np.exp(w_pi[n, c] - top)
                probs[n, c] = e
                total += e
        for c in range(C):
            probs[n, c] /= total
    init = np.zeros(N)
    top = -np.inf
    for n in range(N):
        if reset_mask[n] and w_0[n] > top:
            top = w_0[n]
    total = 0.0
    for n in range(N):
        if reset_mask[n]:
            e = np.exp(w_0[n] - top)
            init[n] = e
            total += e
    for n in range(N):
        init[n] /= total
    return probs, init


@njit(cache=True)
def dense_system_t(index_t, values, a, padding, K, X):  # pragma: no cover - compiled
    """``A^T = I - a (P + diag(padding))^T`` of each part, ``(K, X, X)``, from the nonzeros of ``P``."""
    flat = np.zeros(K * X * X)
    for e in range(values.shape[0]):
        flat[index_t[e]] -= a * values[e]
    A_t = flat.reshape((K, X, X))
    for k in range(K):
        for x in range(X):
            A_t[k, x, x] += (1.0 - a) if padding[k, x] else 1.0
    return A_t


@njit(cache=True)
def expectations(p, part_weights, probs, tables, S, N):  # pragma: no cover - compiled
    """``p_hat = p / sum p`` per part, the sums, and ``sum_k w_k sum_x p_hat[k, x] f_m[k, x]`` per table ``m``.

    ``tables[m]`` is a per-step table ``(K * S, C)``; ``f_m[k, s N + n] = sum_c probs[n, c] tables[m, k S + s, c]``.
    """
    K, X = p.shape
    C = probs.shape[1]
    p_hat = np.empty((K, X))
    total = np.empty(K)
    for k in range(K):
        t = 0.0
        for x in range(X):
            t += p[k, x]
        total[k] = t
        for x in range(X):
            p_hat[k, x] = p[k, x] / t
    out = np.zeros(tables.shape[0])
    for m in range(tables.shape[0]):
        acc = 0.0
        for k in range(K):
            part = 0.0
            for s in range(S):
                for n in range(N):
                    f = 0.0
                    for c in range(C):
                        f += probs[n, c] * tables[m, k * S + s, c]
                    part += p_hat[k, s * N + n] * f
            acc += part_weights[k] * part
        out[m] = acc
    return p_hat, total, out


@njit(cache=True)
def adjoint_seed(p_hat, total, part_weights, probs, table, seed, S, N):  # pragma: no cover - compiled
    """The right-hand side of ``A^T lambda = dL/dp`` for ``L = sum_k w_k f_k . p_hat_k + seed . p_hat``.

    ``f_k`` is read from ``table`` ``(K * S, C)``; ``seed`` is ``(K, X)``, or ``(0, 0)`` for none.
    """
    K, X = p_hat.shape
    C = probs.shape[1]
    g = np.empty((K, X))
    for k in range(K):
        for s in range(S):
            for n in range(N):
                f = 0.0
                for c in range(C):
                    f += probs[n, c] * table[k * S + s, c]
                g[k, s * N + n] = part_weights[k] * f
        if seed.shape[0]:
            for x in range(X):
                g[k, x] += seed[k, x]
        dot = 0.0
        for x in range(X):
            dot += g[k, x] * p_hat[k, x]
        for x in range(X):
            g[k, x] = (g[k, x] - dot) / total[k]
    return g


@njit(cache=True)
def policy_gradient(
    lam, p, p_hat, part_weights, probs, init_probs, table, flat_rows, flat_cols, node_choice, scaled_weight, reset, initial_world, S, N, scale, on_probs
):  # pragma: no cover - compiled
    """``dL/dw_pi`` and ``dL/dw_0`` (or ``dL/dpi``, ``dL/dpi_0`` with ``on_probs``) from the adjoint ``lambda``.

    ``dL/dP_e = (1 - r) lambda[row_e] p[col_e]`` for each nonzero ``e`` (``scaled_weight = (1 - r) * weight``),
    plus the direct dependence of ``f`` on ``pi``; ``dL/dp0 = r lambda``; then through the softmaxes.
    """
    K, X = p.shape
    C = probs.shape[1]
    lam_flat, p_flat = lam.reshape(-1), p.reshape(-1)
    d_flat = np.zeros(N * C)
    for e in range(node_choice.shape[0]):
        d_flat[node_choice[e]] += lam_flat[flat_rows[e]] * p_flat[flat_cols[e]] * scaled_weight[e]
    d_probs = d_flat.reshape((N, C))
    for k in range(K):
        for s in range(S):
            for n in range(N):
                mass = part_weights[k] * p_hat[k, s * N + n]
                for c in range(C):
                    d_probs[n, c] += mass * table[k * S + s, c]
    d_init = np.zeros(N)
    for k in range(K):
        for s in range(S):
            for n in range(N):
                d_init[n] += lam[k, s * N + n] * initial_world[k, s]
    for n in range(N):
        d_init[n] *= reset
    if on_probs:
        return scale * d_probs, scale * d_init
    grad = np.empty((N, C))
    for n in range(N):
        dot = 0.0
        for c in range(C):
            dot += probs[n, c] * d_probs[n, c]
        for c in range(C):
            grad[n, c] = scale * (probs[n, c] * (d_probs[n, c] - dot))
    dot = 0.0
    for n in range(N):
        dot += init_probs[n] * d_init[n]
    grad_init = np.empty(N)
    for n in range(N):
        grad_init[n] = scale * (init_probs[n] * (d_init[n] - dot))
    return grad, grad_init
