"""Closed forms for the column of confidence policy (CCP) and the necklace policy.

Setting (paper eq. (1)): two arms paying ``+1`` with probability ``k_A`` and
``k_B``; under ``H_A``, ``k_A = (1 + mu) / 2 > k_B = (1 - mu) / 2``, and
``alpha = (1 - mu) / (1 + mu)``.  ``q`` is the stationary probability of
playing the worse arm.

CCP (paper Figure 1C, appendix C).  With ``M`` memories and exit probability
``eps``, the ``2M`` merged states lie on a line ``MA .. 2A 1A 1B 2B .. MB``;
the transition matrix ``Q`` moves one step toward ``MA`` with probability
``k_A`` and one step toward ``MB`` with probability ``k_B`` (an ``A`` side
state moves toward ``MA`` on a positive reward of ``A``, a ``B`` side state
toward ``MA`` on a negative reward of ``B``), except at the tops: ``MA`` leaves
with probability ``eps k_B`` and ``MB`` with ``eps k_A`` (for ``M = 1`` the
tops are ``1A`` and ``1B``).  The reset ``r`` restarts in ``1A`` or ``1B``
with probability 1/2 each: ``p = (1 - r) Q p + r J``, and ``q`` is the mass of
the ``B`` side.

All functions take and return python floats (or ints); none of them
overflows or cancels catastrophically for large ``M``, tiny ``r`` or tiny
``eps``.  The limits accept ``log=True`` to return ``log q`` when ``q``
itself underflows.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Sequence
from decimal import Decimal

from fsc.checks import check_reset, real
from fsc.errors import InputError

from .necklaces import GrayChain, check_chain, gray_chain
from .necklaces.words import integer_arg

__all__ = [
    "alpha",
    "ccp_eps_best",
    "ccp_eps_opt",
    "ccp_eps_opt_taylor",
    "ccp_q",
    "ccp_q_limit",
    "ccp_q_limit_general",
    "necklace_q_star",
    "necklace_q_star_general",
    "q_hellman_cover",
    "to_convention",
]


# ----------------------------------------------------------------------------
# Argument checks


def _open_unit(name: str, value: object) -> float:
    value = real(name, value)
    if not 0 < value < 1:
        raise InputError(f"{name} must be in (0, 1), got {value!r}")
    return value


def _check_r(r: object, allow_zero: bool) -> float:
    return check_reset(r, allow_zero=allow_zero, name="r", solved=False)  # a formula: any r > 0


def _check_eps(eps: object) -> float:
    eps = real("eps", eps)
    if not 0 < eps <= 1:
        raise InputError(f"eps must be in (0, 1], got {eps!r}")
    return eps


def _check_k(k_A: object, k_B: object) -> tuple[float, float]:
    k_A, k_B = _open_unit("k_A", k_A), _open_unit("k_B", k_B)
    if not k_A > k_B:
        raise InputError(f"k_A must be larger than k_B, got k_A={k_A!r}, k_B={k_B!r}")
    return k_A, k_B


# ----------------------------------------------------------------------------
# Helpers


def _log_alpha(mu: float) -> float:
    """``log alpha = log((1 - mu) / (1 + mu)) = -2 atanh(mu)``, accurate for every ``mu`` in (0, 1)."""
    return -2.0 * math.atanh(mu)


def _log_odds_ratio(k: float) -> float:
    """``log(1 / k - 1) = log((1 - k) / k)``."""
    return math.log1p(-k) - math.log(k)


def _logistic(t: float, log: bool) -> float:
    """``1 / (1 + exp(-t))``, or its log, without overflow."""
    if log:
        return -math.log1p(math.exp(-t)) if t >= 0 else t - math.log1p(math.exp(t))
    if t >= 0:
        return 1.0 / (1.0 + math.exp(-t))
    e = math.exp(t)
    return e / (1.0 + e)


def _q_from_log_odds(log_odds: float, log: bool) -> float:
    """``q`` from ``L = log(1/q - 1)``: ``q = 1 / (1 + e^L)``."""
    return _logistic(-log_odds, log)


# ----------------------------------------------------------------------------
# CCP at finite reset


def alpha(mu: float) -> float:
    """``alpha = (1 - mu) / (1 + mu)`` (paper section 3).

    Raises:
        TypeError, ValueError: if ``mu`` is not a number in (0, 1).
    """
    mu = _open_unit("mu", mu)
    return (1.0 - mu) / (1.0 + mu)


def _side_weight(r: float, toward_top: float, toward_center: float, eps: float, M: int) -> float:
    """Center weight ``N = r + 2 (1 - r) c sigma`` of one column of the CCP chain (see :func:`ccp_q`)."""
    return r + 2.0 * _crossing(r, toward_top, toward_center, eps, M)


def _crossing(r: float, toward_top: float, toward_center: float, eps: float, M: int) -> float:
    """``x = (1 - r) c sigma``: flux from a column's central state to the other column per unit column mass.

    ``sigma_j = p_j / (p_0 + ... + p_j)`` along the column from its top
    (``j = 0``) to its central state (``j = M - 1``) obeys, by balancing the
    flux out of ``{0 .. j}``,

    .. math::

        \\sigma_0 = 1, \\qquad
        \\sigma_{j+1} = \\frac{r + (1-r) c_j \\sigma_j}{r + (1-r) c_j \\sigma_j + (1-r) k_{top}},

    with ``c_0 = eps * toward_center`` and ``c_j = toward_center`` after: only
    sums, products and quotients of positive numbers.  Each step contracts
    relative errors by a factor ``1 - O(mu)``, so rounding errors add up over
    at most ``~min(M, 1/mu)`` steps.
    """
    beta = (1.0 - r) * toward_center
    gamma = (1.0 - r) * toward_top
    c = eps * beta
    sigma = 1.0
    for _ in range(M - 1):
        a = r + c * sigma
        sigma = a / (a + gamma)
        c = beta
    return c * sigma


def _ccp_log_odds_r0(log_x: float, M: int, eps: float) -> float:
    """``log(P_A / P_B)`` at ``r = 0`` by detailed balance (the chain is a birth-death chain).

    With ``x = alpha``: ``p_MA = 1``, ``p_i = eps x^i`` inside and
    ``p_MB = x^(2M - 1)``, so with ``g = (1 - x^(M-1)) / (1 - x)``

    .. math::

        \\frac{P_A}{P_B} = \\frac{1 + \\epsilon x g}{x^M (x^{M-1} + \\epsilon g)}.
    """
    x = math.exp(log_x)
    g = -math.expm1((M - 1) * log_x) / -math.expm1(log_x) if M > 1 else 0.0
    return math.log1p(eps * x * g) - M * log_x - math.log(math.exp((M - 1) * log_x) + eps * g)


def ccp_q(mu: float, M: int, r: float, eps: float) -> float:
    """Exact probability ``q`` that the CCP plays the worse arm at reset ``r`` (paper appendix C, eq. (exact_q)).

    The paper writes ``q`` with the roots ``w_pm`` of the bulk recursion
    (eq. (wpm)),

    .. math::

        w_\\pm = \\frac{1 \\pm \\sqrt{1 - (1-r)^2 (1-\\mu^2)}}{(1-r)(1+\\mu)},

    a ratio of differences of powers ``w_+^{2M}``, ``w_-^{2M}`` that overflows
    and cancels for large ``M`` and small ``r``.  This function solves the same
    stationary equations ``p = (1 - r) Q p + r J`` in a stable form instead.
    Summing the balance equations over a column from its top to any state
    gives an O(M) recursion with positive terms only (``_side_weight``); the two
    central states then give

    .. math::

        q = \\frac{N_A}{N_A + N_B}, \\qquad
        N_A = r + 2 (1-r) c_A \\sigma_A, \\quad N_B = r + 2 (1-r) c_B \\sigma_B,

    where ``sigma_A = p_{1A} / P_A`` (``P_A``: mass of the ``A`` column),
    ``c_A = k_B`` the probability to cross from ``1A`` to ``1B`` (``eps k_B`` if
    ``M = 1``) and symmetrically for ``B``.  At ``r = 0`` (the stationary
    distribution of ``Q``, unique since ``eps > 0``) detailed balance gives
    ``q`` in closed form (``_ccp_log_odds_r0``).  Measured against a 50-digit
    solve of the chain: relative error about ``3e-16 * (10 + min(M, 1/mu))`` or less,
    at most ``4e-14`` for ``M <= 1000``, ``r >= 1e-12``.

    Args:
        mu: gap, in (0, 1).
        M: memories per column, >= 1.
        r: reset probability, in [0, 1] (``r = 0``: no reset).
        eps: exit probability of the top states, in (0, 1].

    Raises:
        TypeError, ValueError: for arguments out of range.
    """
    mu = _open_unit("mu", mu)
    M = integer_arg("M", M, 1)
    r = _check_r(r, allow_zero=True)
    eps = _check_eps(eps)
    if r == 0:
        return _q_from_log_odds(_ccp_log_odds_r0(_log_alpha(mu), M, eps), log=False)
    k_A, k_B = (1.0 + mu) / 2.0, (1.0 - mu) / 2.0
    N_A = _side_weight(r, k_A, k_B, eps, M)
    N_B = _side_weight(r, k_B, k_A, eps, M)
    return N_A / (N_A + N_B)


# ----------------------------------------------------------------------------
# Optimal eps


def _side_mobius(r: Decimal, toward_top: Decimal, toward_center: Decimal, M: int) -> tuple[Decimal, ...]:
    """``N(eps) = (P1 eps + P0) / (D1 eps + D0)`` for one column and ``Delta = P1 D0 - P0 D1``, in decimal arithmetic.

    Each step of the ``sigma`` recursion of ``_crossing`` is the Moebius map
    ``(n, d) -> (beta n + r d, beta n + (r + gamma) d)``, of determinant
    ``beta gamma``, applied to ``(n, d) = (eps, 1)``; the last map
    ``N = (2 beta n + r d) / d`` has determinant ``2 beta``.  All
    coefficients are non-negative, and the determinant is accumulated as a
    product (never as a difference).
    """
    beta = (1 - r) * toward_center
    gamma = (1 - r) * toward_top
    n1, n0, d1, d0 = Decimal(1), Decimal(0), Decimal(0), Decimal(1)
    for _ in range(M - 1):
        n1, n0, d1, d0 = beta * n1 + r * d1, beta * n0 + r * d0, beta * n1 + (r + gamma) * d1, beta * n0 + (r + gamma) * d0
    det = (beta * gamma) ** (M - 1) * 2 * beta
    return 2 * beta * n1 + r * d1, 2 * beta * n0 + r * d0, d1, d0, det


def ccp_eps_opt(mu: float, M: int, r: float) -> float:
    """Exit probability ``eps`` in (0, 1] minimising :func:`ccp_q` (paper appendix C, eq. (optimal_epsilon)).

    ``q = N_A / (N_A + N_B)`` where each ``N = P / D`` is a Moebius function
    of ``eps`` (``_side_mobius``), so ``dq/d eps = 0`` reduces to the quadratic

    .. math::

        Q(\\epsilon) = \\Delta_B\\, P_A(\\epsilon) D_A(\\epsilon) - \\Delta_A\\, P_B(\\epsilon) D_B(\\epsilon) = 0,

    with ``Delta = P1 D0 - P0 D1``; ``q`` decreases where ``Q > 0``.  Its
    root is the paper's eq. (optimal_epsilon), written there with ``w_pm``.
    For small ``r`` the linear coefficient of ``Q`` is a difference of
    numbers of order 1 that cancel down to ``O(r)`` (the optimum is
    ``O(sqrt(r))``), so the coefficients and the root (cancellation-free
    quadratic formula) are computed in decimal arithmetic (standard library
    ``decimal``) with ``40 + log10(1/r)`` digits from the exact values of the
    float arguments; the result is then correctly rounded up to a few ulp.

    Constrained to (0, 1]: the candidates are the roots where ``Q`` changes
    from ``+`` to ``-`` (local minima) and ``eps = 1`` when ``Q > 0`` just
    below 1 (closed form above 1, or not real, or ``q`` decreasing again
    after a local maximum); the candidate with the lowest ``q`` is returned.
    For ``M = 1`` ``q`` decreases on (0, 1] and the result is 1; for ``r = 1``
    ``q = 1/2`` for every ``eps`` and the result is 1.

    Args:
        mu: gap, in (0, 1).
        M: memories per column, >= 1.
        r: reset probability, in (0, 1]; as ``r -> 0`` the minimiser tends to 0
            (at ``r = 0`` ``q`` increases with ``eps``; see :func:`ccp_q_limit`).

    Raises:
        TypeError, ValueError: for arguments out of range.
    """
    mu = _open_unit("mu", mu)
    M = integer_arg("M", M, 1)
    r = _check_r(r, allow_zero=False)
    if r == 1:
        return 1.0
    with decimal.localcontext() as ctx:
        ctx.prec = 40 + max(0, math.ceil(-math.log10(r)))
        ctx.Emin, ctx.Emax = decimal.MIN_EMIN, decimal.MAX_EMAX
        ctx.traps[decimal.Underflow] = True
        mu_d, r_d = Decimal(mu), Decimal(r)
        k_A, k_B = (1 + mu_d) / 2, (1 - mu_d) / 2
        pa1, pa0, da1, da0, det_a = _side_mobius(r_d, k_A, k_B, M)
        pb1, pb0, db1, db0, det_b = _side_mobius(r_d, k_B, k_A, M)
        c2 = det_b * pa1 * da1 - det_a * pb1 * db1
        c1 = det_b * (pa1 * da0 + pa0 * da1) - det_a * (pb1 * db0 + pb0 * db1)
        c0 = det_b * pa0 * da0 - det_a * pb0 * db0

        def sign_q(e: Decimal) -> int:
            value = (c2 * e + c1) * e + c0
            return (value > 0) - (value < 0)

        def q_at(e: Decimal) -> Decimal:
            n_a = (pa1 * e + pa0) / (da1 * e + da0)
            n_b = (pb1 * e + pb0) / (db1 * e + db0)
            return n_a / (n_a + n_b)

        roots: list[Decimal] = []
        if c2 == 0:
            if c1 != 0:
                roots.append(-c0 / c1)
        else:
            disc = c1 * c1 - 4 * c2 * c0
            if disc >= 0:
                h = -(c1 + disc.sqrt().copy_sign(c1)) / 2
                roots.append(h / c2)
                if h != 0:
                    roots.append(c0 / h)
        inner = sorted({e for e in roots if 0 < e < 1})
        points = [Decimal(0), *inner, Decimal(1)]
        signs = [sign_q((a + b) / 2) for a, b in zip(points[:-1], points[1:], strict=True)]
        candidates = [points[i + 1] for i in range(len(inner)) if signs[i] > 0 and signs[i + 1] < 0]
        if signs[-1] >= 0:
            candidates.append(Decimal(1))
        if signs[0] < 0 or not candidates:  # q increases near 0: its infimum is at eps -> 0
            candidates.append(Decimal(0))
        best = min(candidates, key=lambda e: (q_at(e), e))
        if best == 0:  # never observed: no minimiser in (0, 1]
            raise ArithmeticError(f"q decreases toward eps -> 0 for mu={mu!r}, M={M}, r={r!r}: no minimiser in (0, 1]")
        return float(best)


def ccp_eps_best(mu: float, M: int, r: float) -> float:
    """The exit probability the reference CCP uses: :func:`ccp_eps_opt` capped at 1 (beyond 1 it is not a
    probability)."""
    return min(1.0, ccp_eps_opt(mu, M, r))


def ccp_eps_opt_taylor(mu: float, M: int, r: float) -> float:
    """Leading order in ``r`` of the optimal ``eps`` (paper appendix C, eq. (optimal_epsilon_taylor)).

    .. math::

        \\epsilon \\simeq \\sqrt{2r}\\,
        \\frac{\\sqrt{\\alpha - \\alpha^{3M-1} + \\alpha^M (2\\mu - 3) + \\alpha^{2M} (2\\mu + 3)}}
             {\\sqrt{1 - \\alpha^M}\\,(1 - \\alpha^M - \\mu - \\alpha^M \\mu)}.

    With ``x = alpha``, ``y = x^M``, the radicand factors as
    ``(x - y) S / (x (1 + x))`` with
    ``S = (1 + x) (sqrt(x) - y)^2 + 2 y sqrt(x) (1 - sqrt(x))^2 >= 0``, and
    ``1 - alpha^M - mu - alpha^M mu = 2 (x - y) / (1 + x)``, so

    .. math::

        \\epsilon \\simeq \\sqrt{\\frac{r}{2} \\frac{(1 + x) S}{x (x - y) (1 - y)}},

    evaluated with ``expm1`` (no cancellation; ``sqrt(2 r / (1 - mu^2))`` for
    large ``M``).  The result is not capped at 1.

    Raises:
        TypeError, ValueError: for arguments out of range, and for ``M = 1``,
            where the leading term does not exist (the radicand and the
            denominator vanish; ``q`` decreases on (0, 1] and the optimum is 1).
    """
    mu = _open_unit("mu", mu)
    M = integer_arg("M", M, 1)
    r = _check_r(r, allow_zero=True)
    if M == 1:
        raise InputError("the Taylor form of the optimal eps needs M >= 2, got M = 1 (there the optimal eps is 1)")
    log_x = _log_alpha(mu)
    x = math.exp(log_x)
    sx = math.exp(log_x / 2)
    y = math.exp(M * log_x)
    x_minus_y = -x * math.expm1((M - 1) * log_x)
    one_minus_y = -math.expm1(M * log_x)
    sx_minus_y = -sx * math.expm1((M - 0.5) * log_x)
    one_minus_sx = -math.expm1(log_x / 2)
    S = (1 + x) * sx_minus_y**2 + 2 * y * sx * one_minus_sx**2
    return math.sqrt(r / 2 * (1 + x) * S / (x * x_minus_y * one_minus_y))


# ----------------------------------------------------------------------------
# Limits r -> 0


def ccp_q_limit(mu: float, M: int, *, log: bool = False) -> float:
    """``q`` of the CCP as ``r -> 0`` with the optimal ``eps`` (paper section 3 and appendix C).

    .. math::

        q_{CCP}(M) = \\frac{\\alpha^{2M-1}}{\\alpha^{2M-1} + 1},

    computed as the logistic function of ``(2M - 1) log alpha``: no overflow,
    and positive until ``q`` underflows (then ``log=True`` gives ``log q``).

    Raises:
        TypeError, ValueError: for arguments out of range.
    """
    mu = _open_unit("mu", mu)
    M = integer_arg("M", M, 1)
    return _logistic((2 * M - 1) * _log_alpha(mu), log)


def ccp_q_limit_general(k_A: float, k_B: float, M: int, *, log: bool = False) -> float:
    """``q`` of the CCP as ``r -> 0`` then ``eps -> 0`` for any ``k_A > k_B`` (paper appendix D.4, Table 1).

    .. math::

        q^{-1} - 1 = \\frac{1 - k_B}{1 - k_A}
        \\left(\\frac{1/k_B - 1}{1/k_A - 1}\\right)^{M-1},

    evaluated in log space.  With ``k_A = (1 + mu) / 2``, ``k_B = (1 - mu) / 2``
    it is :func:`ccp_q_limit`.

    Raises:
        TypeError, ValueError: unless ``0 < k_B < k_A < 1`` and ``M >= 1``.
    """
    k_A, k_B = _check_k(k_A, k_B)
    M = integer_arg("M", M, 1)
    log_odds = math.log1p(-k_B) - math.log1p(-k_A) + (M - 1) * (_log_odds_ratio(k_B) - _log_odds_ratio(k_A))
    return _q_from_log_odds(log_odds, log)


def q_hellman_cover(mu: float, M: int, *, log: bool = False) -> float:
    """Hellman and Cover's optimal ``q`` for a RAM of ``M`` states as ``r -> 0`` (paper section 3).

    .. math::

        q_{HC}(M) = \\frac{\\alpha^{M-1}}{\\alpha^{M-1} + 1}.

    Raises:
        TypeError, ValueError: for arguments out of range.
    """
    mu = _open_unit("mu", mu)
    M = integer_arg("M", M, 1)
    return _logistic((M - 1) * _log_alpha(mu), log)


# ----------------------------------------------------------------------------
# Necklace policy


def necklace_q_star(mu: float, m: int, n: int | None = None, *, log: bool = False) -> float:
    """Bound ``q*`` of the necklace policy with memory ``m`` (paper Theorem 4.3, eq. (bound_qstar)).

    .. math::

        q^* = \\left(1 + \\alpha^{m (1 - n(m))}\\right)^{-1},

    computed as the logistic function of ``m (n - 1) log alpha``.

    Args:
        mu: gap, in (0, 1).
        m: memory length, >= 1.
        n: length of the Gray chain (necklaces, both ends included); default
            ``n(m)``, the longest, from :func:`policies.necklaces.gray_chain`,
            which must prove it optimal.
        log: return ``log q*`` (``q*`` underflows for large ``m``).

    Raises:
        TypeError, ValueError: for arguments out of range, or when ``n`` is
            not given and ``n(m)`` is not proved within the default time budget.
    """
    mu = _open_unit("mu", mu)
    m = integer_arg("m", m, 1)
    if n is None:
        found = gray_chain(m)
        if not found.optimal:
            raise InputError(f"n({m}) is not proved (best chain {found.length}, upper bound {found.upper_bound}); pass n explicitly")
        n = found.length
    n = integer_arg("n", n, 2)
    return _logistic(m * (n - 1) * _log_alpha(mu), log)


def necklace_q_star_general(k_A: float, k_B: float, m: int, chain: GrayChain | Sequence[str], *, log: bool = False) -> float:
    """``q*`` of the necklace policy on a given chain, for any ``k_A > k_B`` (paper appendix D.3).

    By the lemma of appendix D.2 with ``L / R = ((1 - k_B) / (1 - k_A))^m``
    and ``l_i / r_i = k_A^a_i (1 - k_B)^b_i / ((1 - k_A)^a_i k_B^b_i)``:

    .. math::

        q^{-1} - 1 = \\left(\\frac{1 - k_B}{1 - k_A}\\right)^m
        \\prod_i \\frac{(1/k_B - 1)^{b_i}}{(1/k_A - 1)^{a_i}},

    the product over the inner necklaces (the chain without its ends), with
    ``a_i``, ``b_i`` their numbers of ``A`` and ``B``.  Table 1's form
    ``((1 - k_B)/(1 - k_A))^m ((1/k_B - 1)/(1/k_A - 1))^(m (n - 2) / 2)``
    holds only when ``sum a_i = sum b_i`` (e.g. a chain equal to its
    reversed complement); with ``k_A + k_B = 1`` both reduce to
    :func:`necklace_q_star` for any chain.

    Args:
        k_A, k_B: probabilities of a positive reward, ``0 < k_B < k_A < 1``.
        m: memory length (the length of the chain's words).
        chain: a Gray chain from ``A^m`` to ``B^m`` (words or a :class:`~policies.necklaces.GrayChain`).
        log: return ``log q*``.

    Raises:
        TypeError, ValueError: for arguments out of range or an invalid chain.
    """
    k_A, k_B = _check_k(k_A, k_B)
    m = integer_arg("m", m, 1)
    reps = check_chain(chain)
    if len(reps[0]) != m:
        raise InputError(f"chain words must have length m = {m}, got {len(reps[0])}")
    inner = reps[1:-1]
    sum_b = sum(w.count("B") for w in inner)
    sum_a = m * len(inner) - sum_b
    log_odds = m * (math.log1p(-k_B) - math.log1p(-k_A)) + sum_b * _log_odds_ratio(k_B) - sum_a * _log_odds_ratio(k_A)
    return _q_from_log_odds(log_odds, log)


def to_convention(q_native: float, r: float, convention: str) -> float:
    """``q`` in ``convention``: ``native`` unchanged, ``paper``: ``(1 - r) q + r / 2`` (the gain carried by the next state)."""
    if convention == "native":
        return q_native
    if convention == "paper":
        return (1.0 - r) * q_native + r / 2.0
    raise InputError(f"convention must be 'native' or 'paper', got {convention!r}")
