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

import collections
import ctypes
import math
import time
from decimal import Decimal, localcontext

import llvmlite.binding as llvm
import numpy as np
from numba import njit, types
from numba.extending import get_cython_function_address, overload

from fsc.model.chain import KernelTables

__all__ = [
    "Fused",
    "as_fused",
    "as_tables",
    "plain",
    "adjoint_seed",
    "after_choice_solve",
    "after_choice_system_t",
    "after_choice_transition_gradient",
    "dense_system_t",
    "exp_nonpositive",
    "expectations",
    "flow_run",
    "flow_step",
    "flow_stop",
    "flow_verdict",
    "fused_backward",
    "fused_forward",
    "fused_forward_gradient",
    "fused_value_gradient_distribution",
    "fused_value_gradient",
    "gradient_norm",
    "lu_parts",
    "lu_solve_parts",
    "monotonic",
    "policy_gradient_from",
    "policy_probs",
    "transition_gradient",
]


#: The tables of the compiled evaluation (:meth:`fsc.evaluate.Evaluator.fused_constants`), read by name in compiled
#: code.  The dense engine's ``after_choice`` is False and its last seven fields are empty; ``t`` is
#: :attr:`fsc.model.chain.AfterChoice.kernel_tables`; ``a = 1 - reset``; ``scale`` is the loss's weight of the gain
#: read out (the convention's factor times the seed); ``scaled_weight = a * weight``.  They cross from Python as
#: the plain tuple of :func:`plain` (numba's dispatcher types a plain tuple in C, a namedtuple in Python: 1.7 us
#: more a call on RAM 8), and each kernel called from Python names them again (:func:`as_fused`), at no cost.
Fused = collections.namedtuple(
    "Fused",
    (
        "allowed", "reset_mask", "node_choice", "weight", "initial_world", "dense_index_t", "padding", "part_weights", "tables",
        "step_reward", "flat_rows", "flat_cols", "scaled_weight", "reset", "a", "S", "N", "scale",
        "after_choice", "t", "b_index_t", "b_node_choice", "b_weight", "b_padding", "valid", "b_runs",
    ),
)  # fmt: skip


#: Where ``t`` sits among the fields of :data:`Fused` (the conversions below spell it out, as numba slices a
#: tuple only by literal bounds).
_T = 19
assert Fused._fields.index("t") == _T


def plain(c: Fused) -> tuple:
    """``c`` as the plain tuple, its ``t`` a plain tuple too, that the kernels take fastest from Python."""
    return (*c[:_T], tuple(c.t), *c[_T + 1 :])


def as_tables(t):
    """``t`` (:attr:`fsc.model.chain.AfterChoice.kernel_tables`, named or plain) as a :class:`~fsc.model.chain.KernelTables`."""
    return t if isinstance(t, KernelTables) else KernelTables(*t)


def as_fused(c):
    """``c`` (a :data:`Fused`, or its :func:`plain` tuple) as a :data:`Fused`."""
    return c if isinstance(c, Fused) else Fused(*c[:_T], as_tables(c[_T]), *c[_T + 1 :])


@overload(as_tables, inline="always")
def _as_tables_compiled(t):  # pragma: no cover - compiled
    if isinstance(t, types.BaseNamedTuple):
        return lambda t: t
    return lambda t: KernelTables(*t)


@overload(as_fused, inline="always")
def _as_fused_compiled(c):  # pragma: no cover - compiled
    if isinstance(c, types.BaseNamedTuple):
        return lambda c: c
    return lambda c: Fused(*c[:19], as_tables(c[19]), *c[20:])


def _exp_constants() -> tuple[np.ndarray, np.ndarray, float, float, float]:
    """``2^(j/32)`` for j = 0..31 as high and low parts, ``32 / ln 2``, and ``ln 2 / 32`` in two parts, the high
    one with 20 trailing zero bits so that ``k * high`` is exact for every ``|k| < 2^20``."""
    with localcontext() as context:
        context.prec = 60
        ln2 = Decimal(2).ln()
        powers = [Decimal(2) ** (Decimal(j) / 32) for j in range(32)]
        high = np.array([float(power) for power in powers])
        low = np.array([float(power - Decimal(float(power))) for power in powers])
        bits = np.array([float(ln2 / 32)]).view(np.int64) & ~np.int64((1 << 20) - 1)
        step_high = float(bits.view(np.float64)[0])
        return high, low, float(32 / ln2), step_high, float(ln2 / 32 - Decimal(step_high))


_POW2_HIGH, _POW2_LOW, _STEPS_PER_UNIT, _STEP_HIGH, _STEP_LOW = _exp_constants()


@njit(cache=True, inline="always")
def exp_nonpositive(x):  # pragma: no cover - compiled
    """``exp(x)`` for ``x <= 0`` (a softmax's arguments), inlined where it is called.

    libm's ``exp`` is a call per value that the compiler cannot vectorise: 6 ns a value, two thirds of RAM
    20's softmax.  Here ``x = (32 m + j) ln2/32 + r`` with ``|r| <= ln2/64``, so ``exp(x) = 2^m 2^(j/32) e^r``:
    ``e^r - 1`` by its Taylor polynomial to ``r^6`` (the next term is 0.03 ulp), ``2^(j/32)`` from a table in
    two parts, and ``2^m`` built from its bits.  Within 0.54 ulp (libm: 0.50, and equal to it on 99.5% of
    arguments); below 2^-1022 the result is rounded twice, within 0.75 ulp.  ``-inf`` and ``x < -746`` give 0,
    NaN gives NaN.  In a loop that stores each value without a branch it takes 1.7 ns.
    """
    if x != x:
        return x
    y = max(x, -746.0)
    k = math.floor(y * _STEPS_PER_UNIT + 0.5)
    r = (y - k * _STEP_HIGH) - k * _STEP_LOW
    p = r + r * r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0)))))
    steps = np.int64(k)
    j = steps & 31
    high = _POW2_HIGH[j]
    mantissa = high + (_POW2_LOW[j] + high * p)
    scale = np.int64(((steps >> 5) + 1023 + 60) << 52).view(np.float64)  # 2^(m + 60): normal for m >= -1083
    return (mantissa * scale) * 8.673617379884035e-19  # * 2^-60: exact, unless the result is subnormal


@njit(cache=True)
def policy_probs(w_pi, allowed, w_0, reset_mask):  # pragma: no cover - compiled
    """Softmax of each row of ``w_pi`` over its allowed choices, and of ``w_0`` over the reset nodes."""
    N, C = w_pi.shape
    probs, init = np.empty((N, C)), np.empty(N)
    policy_probs_into(w_pi, allowed, w_0, reset_mask, probs, init)
    return probs, init


@njit(cache=True, inline="always")
def policy_probs_into(w_pi, allowed, w_0, reset_mask, probs, init):  # pragma: no cover - compiled
    """:func:`policy_probs` written into ``probs`` ``(N, C)`` and ``init`` ``(N,)`` (every entry)."""
    N, C = w_pi.shape
    for n in range(N):
        top = -np.inf
        for c in range(C):
            if allowed[n, c] and w_pi[n, c] > top:
                top = w_pi[n, c]
        for c in range(C):  # without a branch or a sum, so that the compiler vectorises it
            e = exp_nonpositive(w_pi[n, c] - top)
            probs[n, c] = e if allowed[n, c] else 0.0
        total = 0.0
        for c in range(C):
            total += probs[n, c]
        for c in range(C):
            probs[n, c] /= total
    top = -np.inf
    for n in range(N):
        if reset_mask[n] and w_0[n] > top:
            top = w_0[n]
    for n in range(N):
        e = exp_nonpositive(w_0[n] - top)
        init[n] = e if reset_mask[n] else 0.0
    total = 0.0
    for n in range(N):
        total += init[n]
    for n in range(N):
        init[n] /= total


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
    p_hat, total, f0 = np.empty((K, X)), np.empty(K), np.empty((K, X))
    out = expectations_into(p, part_weights, probs, tables, S, N, p_hat, total, f0)
    return p_hat, total, out


@njit(cache=True, inline="always")
def expectations_into(p, part_weights, probs, tables, S, N, p_hat, total, f0):  # pragma: no cover - compiled
    """:func:`expectations` written into ``p_hat`` ``(K, X)`` and ``total`` ``(K,)``, returning ``out``; ``f0`` ``(K, X)``
    receives the first table's ``f_0[k, s N + n]``, which :func:`choices_gradient` reuses where
    :func:`adjoint_seed` would compute it again."""
    K, X = p.shape
    C = probs.shape[1]
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
                    if m == 0:
                        f0[k, s * N + n] = f
                    part += p_hat[k, s * N + n] * f
            acc += part_weights[k] * part
        out[m] = acc
    return out


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
    center_seed(g, p_hat, total)
    return g


@njit(cache=True, inline="always")
def center_seed(g, p_hat, total):  # pragma: no cover - compiled
    """``g[k] <- (g[k] - g[k] . p_hat[k]) / total[k]``: the last step of :func:`adjoint_seed`, through the normalisation."""
    K, X = g.shape
    for k in range(K):
        dot = 0.0
        for x in range(X):
            dot += g[k, x] * p_hat[k, x]
        for x in range(X):
            g[k, x] = (g[k, x] - dot) / total[k]


@njit(cache=True)
def transition_gradient(lam, p, flat_rows, flat_cols, node_choice, scaled_weight, N, C):  # pragma: no cover - compiled
    """``dL/dpi`` through ``P``: ``dL/dP_e = (1 - r) lambda[row_e] p[col_e]`` for each nonzero ``e``
    (``scaled_weight = (1 - r) * weight``), gathered on the ``(n, c)`` that scales it; ``(N, C)``."""
    lam_flat, p_flat = lam.reshape(-1), p.reshape(-1)
    d_flat = np.zeros(N * C)
    for e in range(node_choice.shape[0]):
        d_flat[node_choice[e]] += lam_flat[flat_rows[e]] * p_flat[flat_cols[e]] * scaled_weight[e]
    return d_flat.reshape((N, C))


@njit(cache=True)
def after_choice_transition_gradient(lam, p, t, valid, a, S, N):  # pragma: no cover - compiled
    """:func:`transition_gradient` for ``P = G Pi`` (:class:`fsc.model.chain.AfterChoice`; ``t`` is its
    :attr:`~fsc.model.chain.AfterChoice.kernel_tables`):
    ``dL/dpi[n, c] = a sum_{k, s} p[k, (s, n)] (G^T lambda)[k, (s, q(n, c))]``, in ``O(K S N C)``."""
    t = as_tables(t)
    K, C = lam.shape[0], t.class_of.shape[1]
    h, d_probs = np.empty((K, S * t.num_classes)), np.empty((N, C))
    after_choice_transition_gradient_into(lam, p, t, valid, a, S, N, h, d_probs)
    return d_probs


@njit(cache=True, inline="always")
def after_choice_transition_gradient_into(lam, p, t, valid, a, S, N, h, d_probs):  # pragma: no cover - compiled
    """:func:`after_choice_transition_gradient` written into ``d_probs`` ``(N, C)``, with ``h`` ``(K, S Q)`` to work in."""
    g_rows, g_cols, g_weight, class_of, Q, choice_is_class = t.g_rows, t.g_cols, t.g_weight, t.class_of, t.num_classes, t.choice_is_class
    K = lam.shape[0]
    C = class_of.shape[1]
    lam_flat = lam.reshape(-1)
    h[:] = 0.0
    h_flat = h.reshape(-1)
    for e in range(g_rows.shape[0]):
        h_flat[g_cols[e]] += g_weight[e] * lam_flat[g_rows[e]]
    d_probs[:] = 0.0
    for k in range(K):
        for s in range(S):
            if valid[k, s]:
                for n in range(N):
                    v = a * p[k, s * N + n]
                    row = d_probs[n]
                    if choice_is_class:  # the same sums, along contiguous rows
                        h_part = h[k, s * Q : s * Q + C]
                        for c in range(C):
                            row[c] += v * h_part[c]
                        continue
                    for c in range(C):
                        q = class_of[n, c]
                        if q >= 0:
                            row[c] += v * h[k, s * Q + q]


@njit(cache=True, inline="always")
def policy_gradient_from(d_probs, lam, p_hat, part_weights, probs, init_probs, table, reset, initial_world, S, N, scale, on_probs):  # pragma: no cover
    """The gradient from ``d_probs``, the part through ``P`` (added to in place): plus the direct dependence
    of ``f`` on ``pi``; ``dL/dp0 = r lambda``; then through the softmaxes (unless ``on_probs``)."""
    K = lam.shape[0]
    C = probs.shape[1]
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


@njit(cache=True)
def gradient_norm(grad, grad_init):  # pragma: no cover - compiled
    """``sqrt(sum grad^2 + sum grad_init^2)``, summed in order."""
    total = 0.0
    for x in grad.reshape(-1):
        total += x * x
    rest = 0.0
    for x in grad_init:
        rest += x * x
    return np.sqrt(total + rest)


# ---------------------------------------------------------------------------
# One whole step of the gradient flow on the dense engine, LAPACK included.
#
# The dense engine factors each part with LAPACK's dgetrf and solves with dgetrs, through scipy.
# The same two routines of the same library, called here from compiled code (the addresses scipy
# exports for Cython, registered under our own symbol names so that the machine code stays cacheable),
# give the same numbers to the last bit; what goes is the Python between them.

_I32 = types.CPointer(types.int32)
_I64 = types.CPointer(types.int64)
_F64 = types.CPointer(types.float64)
_dgetrf = types.ExternalFunction("fsc_dgetrf", types.void(_I32, _I32, _F64, _I32, _I32, _I32))
_dgetrs = types.ExternalFunction("fsc_dgetrs", types.void(types.CPointer(types.uint8), _I32, _I32, _F64, _I32, _I32, _F64, _I32, _I32))
for _name in ("dgetrf", "dgetrs"):
    llvm.add_symbol(f"fsc_{_name}", get_cython_function_address("scipy.linalg.cython_lapack", _name))
# The C library's clock, for the wall time of each step that :func:`flow_run` records.
_clock_gettime = types.ExternalFunction("fsc_clock_gettime", types.int32(types.int32, _I64))
llvm.add_symbol("fsc_clock_gettime", ctypes.cast(ctypes.CDLL(None).clock_gettime, ctypes.c_void_p).value)
#: The clock :func:`monotonic` reads (``time.CLOCK_MONOTONIC``).
CLOCK_MONOTONIC = time.CLOCK_MONOTONIC

#: The columns of the rows :func:`flow_run` records; the tables' expectations follow from ``ROW_EXPECTED``.
ROW_T, ROW_STEP, ROW_DT, ROW_GRAD_NORM, ROW_EVALUATIONS, ROW_CLOCK, ROW_EXPECTED = range(7)

#: What :func:`flow_step` reports besides the new point.
STEP_ACCEPTED, STEP_STALLED, STEP_NOT_FINITE, STEP_SINGULAR = 0, 1, 2, 3


@njit(cache=True)
def monotonic():  # pragma: no cover - compiled
    """``time.clock_gettime(time.CLOCK_MONOTONIC)`` from compiled code, in seconds."""
    spec = np.zeros(2, np.int64)
    _clock_gettime(CLOCK_MONOTONIC, spec.ctypes)
    return spec[0] + 1e-9 * spec[1]


@njit(cache=True)
def lu_solve_parts(A_t, piv, b, trans):  # pragma: no cover - compiled
    """``b[k] <- A_k^{-1} b[k]`` (``trans = 0``) or ``A_k^{-T} b[k]`` (1) with the factors left by :func:`lu_parts`."""
    if not (A_t.flags.c_contiguous and piv.flags.c_contiguous and b.flags.c_contiguous):
        raise ValueError("LAPACK reads these arrays in place: they must be C-contiguous")
    lu_solve_parts_into(A_t, piv, b, trans, np.empty(3, np.int32), np.empty(1, np.uint8))


@njit(cache=True, inline="always")
def lu_solve_parts_into(A_t, piv, b, trans, ints, code):  # pragma: no cover - compiled
    """:func:`lu_solve_parts` on C-contiguous arrays, with LAPACK's arguments in ``ints`` ``(3,)`` int32 and ``code`` ``(1,)`` uint8."""
    K, X = b.shape
    ints[0], ints[1], ints[2] = X, 1, 0
    code[0] = 78 if trans == 0 else 84  # 'N' or 'T'
    for k in range(K):
        _getrs(code, ints, A_t[k], piv[k], b[k])


@njit(cache=True)
def _getrs(code, ints, a, piv, b):  # pragma: no cover - compiled
    _dgetrs(code.ctypes, ints[0:].ctypes, ints[1:].ctypes, a.ctypes, ints[0:].ctypes, piv.ctypes, b.ctypes, ints[0:].ctypes, ints[2:].ctypes)


@njit(cache=True)
def lu_parts(A_t):  # pragma: no cover - compiled
    """LU of each part in place (``A_t[k]`` in C order is ``A_k`` in Fortran order); ``(pivots, ok)``."""
    if not A_t.flags.c_contiguous:
        raise ValueError("LAPACK reads these arrays in place: they must be C-contiguous")
    K, X = A_t.shape[0], A_t.shape[1]
    piv = np.empty((K, X), np.int32)
    return piv, lu_parts_into(A_t, piv, np.empty(2, np.int32))


@njit(cache=True, inline="always")
def lu_parts_into(A_t, piv, ints):  # pragma: no cover - compiled
    """:func:`lu_parts` on a C-contiguous ``A_t``, the pivots into ``piv`` ``(K, X)`` int32, ``ints`` ``(2,)`` int32 to work in: ``ok``."""
    K, X = A_t.shape[0], A_t.shape[1]
    ints[0], ints[1] = X, 0
    for k in range(K):
        _dgetrf(ints[0:].ctypes, ints[0:].ctypes, A_t[k].ctypes, ints[0:].ctypes, piv[k].ctypes, ints[1:].ctypes)
        if ints[1] != 0:
            return False
    return True


@njit(cache=True)
def after_choice_solve(lu, piv, b, trans, probs, t, padding, valid, a, S, N):  # pragma: no cover - compiled
    """``A^{-1} b`` (``trans = 0``) or ``A^{-T} b`` (1) for ``A = I - a P`` of each part, through the chain after
    each choice (:class:`fsc.model.chain.AfterChoice`; ``t`` is its :attr:`~fsc.model.chain.AfterChoice.kernel_tables`),
    whose recurrent block of ``B = I - a Pi G`` :func:`lu_parts` has factored.

    With ``D`` the diagonal of ``A`` outside ``G Pi`` (1, and ``r = 1 - a`` on padding states, where ``G``
    has no rows and ``Pi`` no columns), the Woodbury identity gives
    ``A^{-1} b = D^{-1} b + a G B^{-1} Pi D^{-1} b`` and ``A^{-T} g = D^{-1} g + a Pi^T B^{-T} G^T D^{-1} g``.
    """
    t = as_tables(t)
    K, X = b.shape
    YR = t.recurrent.shape[0]
    x = np.empty((K, X))
    x[:] = b
    z, zr = np.empty((K, S * t.num_classes)), np.empty((K, YR))
    after_choice_solve_into(lu, piv, x, trans, probs, t, padding, valid, a, S, N, z, zr, np.empty(3, np.int32), np.empty(1, np.uint8))
    return x


@njit(cache=True, inline="always")
def after_choice_solve_into(lu, piv, x, trans, probs, t, padding, valid, a, S, N, z, zr, ints, code):  # pragma: no cover - compiled
    """:func:`after_choice_solve` in place: ``x`` ``(K, X)`` holds ``b`` and receives the solution; ``z`` ``(K, S Q)`` and
    ``zr`` ``(K, Y_R)`` to work in, ``ints`` and ``code`` as :func:`lu_solve_parts_into` takes them (all C-contiguous)."""
    g_rows, g_cols, g_weight, class_of, Q, choice_is_class = t.g_rows, t.g_cols, t.g_weight, t.class_of, t.num_classes, t.choice_is_class
    K, X = x.shape
    C = probs.shape[1]
    for k in range(K):
        for i in range(X):
            if padding[k, i]:
                x[k, i] = x[k, i] / (1.0 - a)
    x_flat = x.reshape(-1)
    z[:] = 0.0
    z_flat = z.reshape(-1)
    if trans == 0:
        for k in range(K):
            for s in range(S):
                if valid[k, s]:
                    z_part = z[k, s * Q : (s + 1) * Q]
                    for n in range(N):
                        v = x[k, s * N + n]
                        if choice_is_class:  # the same sums, along contiguous rows
                            row = probs[n]
                            for c in range(C):
                                z_part[c] += row[c] * v
                            continue
                        for c in range(C):
                            q = class_of[n, c]
                            if q >= 0:
                                z_part[q] += probs[n, c] * v
        _b_solve(lu, piv, z, zr, 0, probs, t, a, ints, code)
        for e in range(g_rows.shape[0]):
            x_flat[g_rows[e]] += a * g_weight[e] * z_flat[g_cols[e]]
        return
    for e in range(g_rows.shape[0]):
        z_flat[g_cols[e]] += g_weight[e] * x_flat[g_rows[e]]
    _b_solve(lu, piv, z, zr, 1, probs, t, a, ints, code)
    for k in range(K):
        for s in range(S):
            if valid[k, s]:
                z_part = z[k, s * Q : (s + 1) * Q]
                for n in range(N):
                    acc = 0.0
                    if choice_is_class:
                        row = probs[n]
                        for c in range(C):
                            acc += row[c] * z_part[c]
                    else:
                        for c in range(C):
                            q = class_of[n, c]
                            if q >= 0:
                                acc += probs[n, c] * z_part[q]
                    x[k, s * N + n] += a * acc


@njit(cache=True, inline="always")
def _b_solve(lu, piv, z, zr, trans, probs, t, a, ints, code):  # pragma: no cover - compiled
    """``z <- B^{-1} z`` (``trans = 0``) or ``B^{-T} z`` (1), ``B = I - a M`` block triangular: the transient
    states by substitution along ``t``'s edges (each state after those that lead to it), the recurrent ones
    with their LU.  ``B y = z`` is ``y = z + a M y``: the transient part first, whose steps add to the
    recurrent right-hand side; ``B^T w = z`` the recurrent part first, then back along the edges."""
    recurrent, t_src, t_dst, t_node_choice, t_weight = t.recurrent, t.t_src, t.t_dst, t.t_node_choice, t.t_weight
    K, Y = z.shape
    YR = recurrent.shape[0]
    probs_flat = probs.reshape(-1)
    z_flat = z.reshape(-1)
    E = t_src.shape[0]
    if trans == 0:
        for e in range(E):
            z_flat[t_dst[e]] += a * (probs_flat[t_node_choice[e]] * t_weight[e]) * z_flat[t_src[e]]
    if YR == Y:  # no transient state (RAM, chain, column)
        lu_solve_parts_into(lu, piv, z, trans, ints, code)
    else:
        for k in range(K):
            for i in range(YR):
                zr[k, i] = z[k, recurrent[i]]
        lu_solve_parts_into(lu, piv, zr, trans, ints, code)
        for k in range(K):
            for i in range(YR):
                z[k, recurrent[i]] = zr[k, i]
    if trans == 1:
        for e in range(E - 1, -1, -1):
            z_flat[t_src[e]] += a * (probs_flat[t_node_choice[e]] * t_weight[e]) * z_flat[t_dst[e]]


@njit(cache=True)
def after_choice_system_t(b_index_t, b_node_choice, b_weight, probs, a, b_padding):  # pragma: no cover - compiled
    """``B_R^T = I - a (Pi G)^T`` among the recurrent states of each part, ``(K, Y_R, Y_R)`` (:class:`fsc.model.chain.AfterChoice`)."""
    probs_flat = probs.reshape(-1)
    values = np.empty(b_node_choice.shape[0])
    for e in range(b_node_choice.shape[0]):
        values[e] = probs_flat[b_node_choice[e]] * b_weight[e]
    K, Y = b_padding.shape
    return dense_system_t(b_index_t, values, a, b_padding, K, Y)


@njit(cache=True, inline="always")
def after_choice_system_into(b_runs, b_index_t, b_node_choice, b_weight, probs, a, b_padding, out, values):  # pragma: no cover - compiled
    """:func:`after_choice_system_t` written into ``out`` ``(K, Y_R, Y_R)``, the same operations in the same order on
    each entry: ``0``, minus ``a (pi w)`` for each of its nonzeros in their order, plus the diagonal.  With
    :attr:`~fsc.model.chain.AfterChoice.b_runs` (RAM) run by run, where the compiler vectorises; without
    (``(0, 4)``), nonzero by nonzero through ``values`` ``(E,)``, as :func:`dense_system_t` does."""
    flat = out.reshape(-1)
    for i in range(flat.shape[0]):
        flat[i] = 0.0
    probs_flat = probs.reshape(-1)
    if b_runs.shape[0]:
        for r in range(b_runs.shape[0]):
            e0, length, i0, n0 = b_runs[r, 0], b_runs[r, 1], b_runs[r, 2], b_runs[r, 3]
            entries, policy, weights = flat[i0 : i0 + length], probs_flat[n0 : n0 + length], b_weight[e0 : e0 + length]
            for i in range(length):  # distinct entries: the nonzeros of a run touch each one once
                entries[i] -= a * (policy[i] * weights[i])
    else:
        for e in range(b_node_choice.shape[0]):
            values[e] = probs_flat[b_node_choice[e]] * b_weight[e]
        for e in range(b_node_choice.shape[0]):
            flat[b_index_t[e]] -= a * values[e]
    K, Y = b_padding.shape
    for k in range(K):
        for x in range(Y):
            out[k, x, x] += (1.0 - a) if b_padding[k, x] else 1.0


# The training path (flow_run, flow_step, fused_value_gradient) on the choices engine: one value and gradient in
# the arrays of a workspace allocated once per call of flow_run, the same operations in the same order as
# fused_forward then fused_backward.  Its helpers are inlined (inline="always", at numba's level): a call between
# compiled functions that passes the constants' tuples costs reference counting on each of their arrays, which
# was 1.5 to 2 us per evaluation at RAM 2 to RAM 8 (a fifth to a half of it).


@njit(cache=True)
def training_workspace(c):  # pragma: no cover - compiled
    """The arrays :func:`value_gradient_into` works in, for the constants ``c`` of the choices engine: allocated
    once per :func:`flow_run` call rather than once per evaluation.  ``(probs, init_probs, B, pivots, values,
    p, z, zr, p_hat, total, f0, lam, h, d_probs, ints, code)``; on the dense engine (unused) all empty."""
    c = as_fused(c)
    allowed, padding, S, N, t, b_padding = c.allowed, c.padding, c.S, c.N, c.t, c.b_padding
    K, X = padding.shape
    C = allowed.shape[1]
    if not c.after_choice:
        K = X = C = N = S = 0
    YR, Y, E = b_padding.shape[1], S * t.num_classes, c.b_node_choice.shape[0]
    return (
        np.empty((N, C)), np.empty(N), np.empty((K, YR, YR)), np.empty((K, YR), np.int32), np.empty(E),
        np.empty((K, X)), np.empty((K, Y)), np.empty((K, YR)), np.empty((K, X)), np.empty(K), np.empty((K, X)),
        np.empty((K, X)), np.empty((K, Y)), np.empty((N, C)), np.empty(3, np.int32), np.empty(1, np.uint8),
    )  # fmt: skip


@njit(cache=True, inline="always")
def choices_forward(w_pi, w_0, c, work):  # pragma: no cover - compiled
    """:func:`fused_forward` on the choices engine, into ``work`` (:func:`training_workspace`): ``(expected, ok)``.
    Fills the probabilities, the LU and pivots of ``B``, ``p``, ``p_hat``, ``total`` and ``f0`` (the gain's table
    read out per state, which the adjoint's right-hand side reuses)."""
    allowed, reset_mask, initial_world, padding, part_weights, tables = c.allowed, c.reset_mask, c.initial_world, c.padding, c.part_weights, c.tables
    reset, a, S, N, t = c.reset, c.a, c.S, c.N, c.t
    b_index_t, b_node_choice, b_weight, b_padding, valid, b_runs = c.b_index_t, c.b_node_choice, c.b_weight, c.b_padding, c.valid, c.b_runs
    probs, init_probs, B, piv, values, p, z, zr = work[0], work[1], work[2], work[3], work[4], work[5], work[6], work[7]
    p_hat, total, f0, ints, code = work[8], work[9], work[10], work[14], work[15]
    policy_probs_into(w_pi, allowed, w_0, reset_mask, probs, init_probs)
    after_choice_system_into(b_runs, b_index_t, b_node_choice, b_weight, probs, a, b_padding, B, values)
    if not lu_parts_into(B, piv, ints):
        return np.zeros(0), False
    K = padding.shape[0]
    for k in range(K):
        for s in range(S):
            for n in range(N):
                p[k, s * N + n] = reset * (initial_world[k, s] * init_probs[n])
    after_choice_solve_into(B, piv, p, 0, probs, t, padding, valid, a, S, N, z, zr, ints, code)
    return expectations_into(p, part_weights, probs, tables, S, N, p_hat, total, f0), True


@njit(cache=True, inline="always")
def choices_gradient(c, work):  # pragma: no cover - compiled
    """The gradient of :func:`fused_value_gradient` after :func:`choices_forward` filled ``work``: :func:`fused_backward`
    with the gain's table, no seed and ``c``'s scale, the same operations, save that the adjoint's right-hand side
    reads ``f0`` (``tables[0]`` is ``step_reward``: the same products summed in the same order) instead of
    computing it again; ``(grad, grad_init)``."""
    initial_world, padding, part_weights, step_reward = c.initial_world, c.padding, c.part_weights, c.step_reward
    reset, a, S, N, scale, t, valid = c.reset, c.a, c.S, c.N, c.scale, c.t, c.valid
    probs, init_probs, B, piv, p, z, zr, p_hat, total, f0 = work[0], work[1], work[2], work[3], work[5], work[6], work[7], work[8], work[9], work[10]
    lam, h, d_probs, ints, code = work[11], work[12], work[13], work[14], work[15]
    K, X = lam.shape
    for k in range(K):
        for x in range(X):
            lam[k, x] = part_weights[k] * f0[k, x]
    center_seed(lam, p_hat, total)
    after_choice_solve_into(B, piv, lam, 1, probs, t, padding, valid, a, S, N, z, zr, ints, code)
    after_choice_transition_gradient_into(lam, p, t, valid, a, S, N, h, d_probs)
    return policy_gradient_from(d_probs, lam, p_hat, part_weights, probs, init_probs, step_reward, reset, initial_world, S, N, scale, False)


@njit(cache=True)
def fused_value_gradient(w_pi, w_0, c):  # pragma: no cover - compiled
    """Value and gradient of the gain on the dense or choices engine, in one call: ``(expected, grad, grad_init, ok)``.

    The same operations in the same order as :meth:`fsc.evaluate.Evaluator.forward` then
    :meth:`~fsc.evaluate.Evaluator.backward` with ``gain`` (or ``value``) alone: :func:`fused_forward`
    then :func:`fused_backward`.  ``c`` is the :data:`Fused` of :meth:`fsc.evaluate.Evaluator.fused_constants`;
    its ``after_choice`` flag picks the chain after each choice (:func:`after_choice_solve`) over the whole chain.
    """
    c = as_fused(c)
    return value_gradient_into(w_pi, w_0, c, training_workspace(c))


@njit(cache=True, inline="always")
def value_gradient_into(w_pi, w_0, c, work):  # pragma: no cover - compiled
    """:func:`fused_value_gradient` with the arrays of :func:`training_workspace` (the choices engine works in them;
    the dense one allocates its own)."""
    if c.after_choice:
        expected, ok = choices_forward(w_pi, w_0, c, work)
        if not ok:
            return expected, work[0], work[1], False
        grad, grad_init = choices_gradient(c, work)
        return expected, grad, grad_init, True
    probs, init_probs, A_t, piv, p, p_hat, total, expected, ok = fused_forward(w_pi, w_0, c)
    if not ok:
        return expected, probs, init_probs, False
    grad, grad_init = fused_backward(c, probs, init_probs, A_t, piv, p, p_hat, total, c.step_reward, np.zeros((0, 0)), c.scale, False)
    return expected, grad, grad_init, True


@njit(cache=True)
def fused_forward_gradient(w_pi, w_0, c):  # pragma: no cover - compiled
    """:func:`fused_forward` and the gradient of :func:`fused_value_gradient` in one call, for a caller that keeps
    both: the forward pass's nine results, then ``grad`` and ``grad_init`` (empty when not ``ok``)."""
    c = as_fused(c)
    probs, init_probs, A_t, piv, p, p_hat, total, expected, ok = fused_forward(w_pi, w_0, c)
    if not ok:
        return probs, init_probs, A_t, piv, p, p_hat, total, expected, ok, np.zeros((0, 0)), np.zeros(0)
    grad, grad_init = fused_backward(c, probs, init_probs, A_t, piv, p, p_hat, total, c.step_reward, np.zeros((0, 0)), c.scale, False)
    return probs, init_probs, A_t, piv, p, p_hat, total, expected, ok, grad, grad_init


@njit(cache=True)
def fused_forward(w_pi, w_0, c):  # pragma: no cover - compiled
    """The forward pass of :func:`fused_value_gradient`: ``(probs, init_probs, A_t, piv, p, p_hat, total, expected, ok)``,
    ``A_t`` and ``piv`` the LU factors that :func:`fused_backward` reuses for the transposed solve."""
    c = as_fused(c)
    allowed, reset_mask, node_choice, weight, initial_world = c.allowed, c.reset_mask, c.node_choice, c.weight, c.initial_world
    dense_index_t, padding, part_weights, tables, reset, a, S, N = c.dense_index_t, c.padding, c.part_weights, c.tables, c.reset, c.a, c.S, c.N
    K, X = padding.shape
    if c.after_choice:  # the training path's own forward pass, in arrays of its own
        work = training_workspace(c)
        expected, ok = choices_forward(w_pi, w_0, c, work)
        probs, init_probs, B, piv, p, p_hat, total = work[0], work[1], work[2], work[3], work[5], work[8], work[9]
        if not ok:
            return probs, init_probs, B, piv, p, p, np.zeros(K), np.zeros(0), False
        return probs, init_probs, B, piv, p, p_hat, total, expected, True
    probs, init_probs = policy_probs(w_pi, allowed, w_0, reset_mask)
    probs_flat = probs.reshape(-1)
    values = np.empty(node_choice.shape[0])
    for e in range(node_choice.shape[0]):
        values[e] = probs_flat[node_choice[e]] * weight[e]
    A_t = dense_system_t(dense_index_t, values, a, padding, K, X)
    piv, ok = lu_parts(A_t)
    p = np.empty((K, X))
    if not ok:
        return probs, init_probs, A_t, piv, p, p, np.zeros(K), np.zeros(0), False
    for k in range(K):
        for s in range(S):
            for n in range(N):
                p[k, s * N + n] = reset * (initial_world[k, s] * init_probs[n])
    lu_solve_parts(A_t, piv, p, 0)
    p_hat, total, expected = expectations(p, part_weights, probs, tables, S, N)
    return probs, init_probs, A_t, piv, p, p_hat, total, expected, True


@njit(cache=True)
def fused_backward(c, probs, init_probs, A_t, piv, p, p_hat, total, table, seed, scale, on_probs):  # pragma: no cover - compiled
    """The adjoint pass of :func:`fused_value_gradient` on the factors of :func:`fused_forward`: ``(dL/dw_pi, dL/dw_0)``
    for ``L = scale * (table . p_hat) + seed . p_hat`` (``seed`` of shape ``(0, 0)``: none), as
    :meth:`fsc.evaluate.Evaluator.backward` computes it (``on_probs``: with respect to the probabilities)."""
    c = as_fused(c)
    node_choice, initial_world, padding, part_weights = c.node_choice, c.initial_world, c.padding, c.part_weights
    flat_rows, flat_cols, scaled_weight, reset, a, S, N, t, valid = c.flat_rows, c.flat_cols, c.scaled_weight, c.reset, c.a, c.S, c.N, c.t, c.valid
    lam = adjoint_seed(p_hat, total, part_weights, probs, table, seed, S, N)
    C = probs.shape[1]
    if c.after_choice:
        lam = after_choice_solve(A_t, piv, lam, 1, probs, t, padding, valid, a, S, N)
        d_probs = after_choice_transition_gradient(lam, p, t, valid, a, S, N)
    else:
        lu_solve_parts(A_t, piv, lam, 1)
        d_probs = transition_gradient(lam, p, flat_rows, flat_cols, node_choice, scaled_weight, N, C)
    return policy_gradient_from(d_probs, lam, p_hat, part_weights, probs, init_probs, table, reset, initial_world, S, N, scale, on_probs)


# ---------------------------------------------------------------------------
# The adaptive step of the gradient flow (docs/model.md), written once: the compiled steps below and the
# Python steps of fsc.optim.GradientFlow (engines without a compiled evaluation) both call these two.

#: ``dt`` is divided by this after a rejected try.
FLOW_SHRINK = 10.0
#: ``dt`` is multiplied by this after an accepted step that moved the gradient by less than half of ``max_dgrad``.
FLOW_GROW = 1.1

#: :func:`flow_stop`'s answers, in the order it checks them.
FLOW_GOES_ON, FLOW_UNTIL_T, FLOW_MAX_STEPS, FLOW_STALLED = 0, 1, 2, 3


@njit(cache=True)
def flow_verdict(new_gain, gain, dgrad, dt, max_dgrad):  # pragma: no cover - compiled
    """The published code's rule for a tentative Euler step of size ``dt``: ``(accepted, next_dt)``.

    Rejected when the gain falls (or is NaN: ``not new_gain >= gain``) or when the gradient moved by
    ``dgrad = dpi + dp0 >= max_dgrad``; then ``next_dt`` is the next try, ``dt / FLOW_SHRINK``.  Accepted
    otherwise; then ``next_dt`` is the first try of the next step: ``dt * FLOW_GROW`` if ``dgrad < max_dgrad / 2``,
    else ``dt``.
    """
    if not (new_gain >= gain) or dgrad >= max_dgrad:
        return False, dt / FLOW_SHRINK
    return True, dt * FLOW_GROW if dgrad < max_dgrad / 2 else dt


#: The relative spacing of float64 (``2**-52``): a gradient entry ``x`` is resolved to about ``x * 2**-52``, so a
#: ``max_dgrad`` at or below ``2**-52`` times the largest entry asks for changes smaller than the last bit.
GRADIENT_RESOLUTION = 2.0**-52


@njit(cache=True)
def flow_cannot_move(new_gain, gain, dgrad, max_dgrad, w_pi, w_0, g, g0, next_dt):  # pragma: no cover - compiled
    """Whether the step rule cannot move the point: a try refused by :func:`flow_verdict` for the change of the
    gradient alone (the gain did not fall), where either

    - ``max_dgrad`` is at or below the float64 resolution of the gradient, :data:`GRADIENT_RESOLUTION` times its
      largest entry: the rule then accepts only steps that leave the gradient unchanged to the last bit, which
      move the point by rounding alone; or
    - the next, smaller try ``w + next_dt g`` rounds to ``w`` in every weight: every try from there leaves the
      point where it is or moves it and is refused again.

    The flow then stops as stalled instead of making steps that move ``t`` alone.  With the default
    ``max_dgrad = 1e-4`` the first case needs a gradient entry above 4.5e11, the second a change of the
    gradient of 1e-4 across a few units in the last place of the weights.
    """
    if not (new_gain >= gain) or dgrad < max_dgrad:
        return False
    top = 0.0
    for x in g.reshape(-1):
        top = max(top, abs(x))
    for x in g0:
        top = max(top, abs(x))
    if max_dgrad <= GRADIENT_RESOLUTION * top:
        return True
    for n in range(w_pi.shape[0]):
        for j in range(w_pi.shape[1]):
            if w_pi[n, j] + next_dt * g[n, j] != w_pi[n, j]:
                return False
    for n in range(w_0.shape[0]):
        if w_0[n] + next_dt * g0[n] != w_0[n]:
            return False
    return True


@njit(cache=True)
def flow_stop(t, dt, step, until_t, max_steps):  # pragma: no cover - compiled
    """Whether a run stops after an accepted step that reached ``t`` and ``step`` with a step ``dt``: one of the
    ``FLOW_*`` codes, checked in the order ``until_t``, ``max_steps``, stalled (a step too small to move ``t``:
    ``t + dt == t`` in float64; ``dt = 0`` at the start is not one).  ``until_t = inf`` and ``max_steps = 2**62``
    switch a condition off.
    """
    if t >= until_t:
        return FLOW_UNTIL_T
    if step >= max_steps:
        return FLOW_MAX_STEPS
    if dt > 0 and t + dt == t:
        return FLOW_STALLED
    return FLOW_GOES_ON


@njit(cache=True, inline="always")
def _max_abs_difference(x, y):  # pragma: no cover - compiled
    """``np.abs(x - y).max()``, NaN included (the first NaN met).

    Four running maxima, without a branch, then the largest of them: the same number as one running maximum (every
    ``d`` is ``+0`` or more, or NaN, which none of them takes), without the chain of dependent steps."""
    n = x.shape[0]
    top0 = top1 = top2 = top3 = 0.0
    nan = False
    i = 0
    while i + 4 <= n:
        d0, d1, d2, d3 = abs(x[i] - y[i]), abs(x[i + 1] - y[i + 1]), abs(x[i + 2] - y[i + 2]), abs(x[i + 3] - y[i + 3])
        nan |= (d0 != d0) | (d1 != d1) | (d2 != d2) | (d3 != d3)
        top0, top1 = (d0 if d0 > top0 else top0), (d1 if d1 > top1 else top1)
        top2, top3 = (d2 if d2 > top2 else top2), (d3 if d3 > top3 else top3)
        i += 4
    while i < n:
        d = abs(x[i] - y[i])
        nan |= d != d
        top0 = d if d > top0 else top0
        i += 1
    if nan:
        for i in range(n):
            d = abs(x[i] - y[i])
            if d != d:
                return d
    return max(max(top0, top1), max(top2, top3))


@njit(cache=True)
def flow_step(w_pi, w_0, g, g0, gain, dt, max_dgrad, min_dt, factor, c):  # pragma: no cover - compiled
    """One accepted step of the adaptive gradient flow (:class:`fsc.optim.GradientFlow`) with the compiled
    evaluation (:func:`fused_value_gradient`: the dense and choices engines).

    Tries ``w + dt g`` with smaller ``dt`` until :func:`flow_verdict` accepts it, while ``dt >= min_dt``.
    Returns ``(status, logits, init_logits, grad, grad_init, expected, dt, next_dt, evaluations,
    rejections)``; ``status`` is one of the ``STEP_*`` codes.
    """
    c = as_fused(c)
    return flow_step_into(w_pi, w_0, g, g0, gain, dt, max_dgrad, min_dt, factor, c, training_workspace(c))


@njit(cache=True, inline="always")
def flow_step_into(w_pi, w_0, g, g0, gain, dt, max_dgrad, min_dt, factor, c, work):  # pragma: no cover - compiled
    """:func:`flow_step`, each evaluation in the arrays ``work`` of :func:`training_workspace`."""
    evaluations = 0
    rejections = 0
    N, C = w_pi.shape
    while dt >= min_dt:
        logits = np.empty((N, C))
        logits_flat, w_flat, g_flat = logits.reshape(-1), np.ascontiguousarray(w_pi).reshape(-1), np.ascontiguousarray(g).reshape(-1)
        infinite = 0  # entries that are NaN or +inf, counted without a branch, so that the compiler vectorises
        for i in range(N * C):
            x = w_flat[i] + dt * g_flat[i]
            logits_flat[i] = x
            infinite += not x < np.inf
        init_logits = np.empty(N)
        for n in range(N):
            x = w_0[n] + dt * g0[n]
            init_logits[n] = x
            infinite += not x < np.inf
        finite = infinite == 0
        if not finite:
            return STEP_NOT_FINITE, logits, init_logits, g, g0, np.zeros(0), dt, dt, evaluations, rejections
        expected, G, G0, ok = value_gradient_into(logits, init_logits, c, work)
        evaluations += 1
        if not ok:
            return STEP_SINGULAR, logits, init_logits, g, g0, expected, dt, dt, evaluations, rejections
        dpi = _max_abs_difference(G.reshape(-1), g.reshape(-1))
        dp0 = _max_abs_difference(G0, g0)
        accepted, next_dt = flow_verdict(factor * expected[0], gain, dpi + dp0, dt, max_dgrad)
        if not accepted:
            rejections += 1
            if flow_cannot_move(factor * expected[0], gain, dpi + dp0, max_dgrad, w_pi, w_0, g, g0, next_dt):
                break
            dt = next_dt
            continue
        return STEP_ACCEPTED, logits, init_logits, G, G0, expected, dt, next_dt, evaluations, rejections
    return STEP_STALLED, w_pi, w_0, g, g0, np.zeros(0), dt, dt, evaluations, rejections


@njit(cache=True)
def flow_run(w_pi, w_0, g, g0, gain, dt, max_dgrad, min_dt, factor, c, t, step, until_t, max_steps, most, rows):  # pragma: no cover
    """Accepted steps of :func:`flow_step`, one after the other, until :func:`flow_stop` says stop (``t >=
    until_t``, ``step >= max_steps``, or a step too small to move ``t``) or ``most`` steps: the
    same steps as so many calls, without going back to Python between them.

    Returns ``(status, logits, init_logits, grad, grad_init, expected, dt, next_dt, t, step, evaluations,
    rejections)``: the last accepted step's (``dt`` the step it made), ``t`` and ``step`` after it, and the
    tries and rejections of the accepted steps.  A step that is not accepted ends the run: after accepted
    steps, they are returned (the next call meets that step first); first of all, its own status and
    arrays are, as :func:`flow_step` gives them.

    ``rows``: ``(most, ROW_EXPECTED + tables)`` to record the ``i``-th accepted step in ``rows[i]`` (its
    ``t``, ``step``, ``dt``, gradient norm, tries since the call began, :func:`monotonic` clock and
    expectations, at the ``ROW_*`` columns), or ``(0, 0)`` for none.
    """
    c = as_fused(c)
    evaluations = 0
    rejections = 0
    expected = np.zeros(0)
    used = 0.0
    taken = 0
    work = training_workspace(c)
    while True:
        status, logits, init_logits, G, G0, e, u, next_dt, tried, rejected = flow_step_into(w_pi, w_0, g, g0, gain, dt, max_dgrad, min_dt, factor, c, work)
        if status != STEP_ACCEPTED:
            if taken == 0:
                return status, logits, init_logits, G, G0, e, u, next_dt, t, step, evaluations + tried, rejections + rejected
            break
        w_pi, w_0, g, g0, expected, used, dt = logits, init_logits, G, G0, e, u, next_dt
        evaluations += tried
        rejections += rejected
        gain = factor * expected[0]
        t += used
        step += 1
        if rows.shape[0]:
            row = rows[taken]
            row[ROW_T], row[ROW_STEP], row[ROW_DT] = t, step, used
            row[ROW_GRAD_NORM], row[ROW_EVALUATIONS], row[ROW_CLOCK] = gradient_norm(g, g0), evaluations, monotonic()
            row[ROW_EXPECTED:] = expected
        taken += 1
        if flow_stop(t, used, step, until_t, max_steps) != FLOW_GOES_ON or taken >= most:
            break
    return STEP_ACCEPTED, w_pi, w_0, g, g0, expected, used, dt, t, step, evaluations, rejections


@njit(cache=True)
def fused_value_gradient_distribution(w_pi, w_0, c):  # pragma: no cover - compiled
    """:func:`fused_value_gradient` and the stationary distribution ``p_hat`` in one call, for ``fsc.evaluate`` under
    autograd: ``(expected, p_hat, grad, grad_init, ok)``, the same numbers; five results to hand back to Python
    instead of :func:`fused_forward_gradient`'s eleven (a caller that needs the factors computes them again)."""
    c = as_fused(c)
    probs, init_probs, A_t, piv, p, p_hat, total, expected, ok = fused_forward(w_pi, w_0, c)
    if not ok:
        return expected, p_hat, probs, init_probs, False
    grad, grad_init = fused_backward(c, probs, init_probs, A_t, piv, p, p_hat, total, c.step_reward, np.zeros((0, 0)), c.scale, False)
    return expected, p_hat, grad, grad_init, True
