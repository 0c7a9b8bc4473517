"""Tests of policies.closed_form against independent references.

References: the CCP chain of appendix C built entry by entry from the
description of Figure 1C and solved in 50-digit mpmath (a tridiagonal
elimination, or detailed balance at r = 0, itself checked against a dense
solve); the paper's own formulas evaluated literally in mpmath; hand-derived
small cases; scipy's numerical minimiser.
"""

import math

import mpmath as mp
import pytest
from scipy.optimize import minimize_scalar

from policies import closed_form as cf
from policies.necklaces import gray_chain

DPS = 50


# ----------------------------------------------------------------------------
# Independent references (mpmath)


def _mp_ccp_moves(M, eps, k_A, k_B):
    """Probabilities of one step toward MB (``right``) and toward MA (``left``) for the 2M states MA .. 1A 1B .. MB.

    A side: playing A, a positive reward (k_A) climbs toward MA, a negative
    one (1 - k_A) goes down, from 1A to 1B.  B side: playing B, a positive
    reward (k_B) climbs toward MB, a negative one goes down, from 1B to 1A.
    The tops leave only with probability eps on a negative reward.
    """
    n = 2 * M
    right = [mp.mpf(0)] * n
    left = [mp.mpf(0)] * n
    for i in range(n):
        if i < M:  # A side, i = 0 is MA
            right[i] = 1 - k_A
            left[i] = k_A if i > 0 else mp.mpf(0)
        else:  # B side, i = n - 1 is MB
            left[i] = 1 - k_B
            right[i] = k_B if i < n - 1 else mp.mpf(0)
    right[0] *= eps
    left[n - 1] *= eps
    return right, left


def _mp_dense(M, r, eps, k_A, k_B):
    """Dense ``Q[i2, i]`` (column-stochastic) and the stationary distribution of ``(1 - r) Q + r J``, by LU."""
    n = 2 * M
    right, left = _mp_ccp_moves(M, eps, k_A, k_B)
    Q = mp.zeros(n, n)
    for i in range(n):
        Q[i, i] = 1 - right[i] - left[i]
        if i + 1 < n:
            Q[i + 1, i] = right[i]
        if i > 0:
            Q[i - 1, i] = left[i]
    A = mp.eye(n) - (1 - r) * Q
    b = mp.zeros(n, 1)
    b[M - 1] = b[M] = r / 2
    if r == 0:  # replace one equation by the normalisation
        for j in range(n):
            A[n - 1, j] = 1
        b[n - 1] = 1
    return Q, mp.lu_solve(A, b)


def _mp_stationary(M, r, eps, k_A, k_B):
    """Stationary distribution of the CCP chain: tridiagonal elimination (r > 0) or detailed balance (r = 0)."""
    n = 2 * M
    right, left = _mp_ccp_moves(M, eps, k_A, k_B)
    if r == 0:
        p = [mp.mpf(1)]
        for i in range(n - 1):
            p.append(p[-1] * right[i] / left[i + 1])
        total = sum(p)
        return [x / total for x in p]
    diag = [1 - (1 - r) * (1 - right[i] - left[i]) for i in range(n)]
    sub = [-(1 - r) * right[i - 1] if i > 0 else 0 for i in range(n)]  # coefficient of p[i-1]
    sup = [-(1 - r) * left[i + 1] if i + 1 < n else 0 for i in range(n)]  # coefficient of p[i+1]
    rhs = [mp.mpf(0)] * n
    rhs[M - 1] = rhs[M] = r / 2
    c, d = [mp.mpf(0)] * n, [mp.mpf(0)] * n
    for i in range(n):
        den = diag[i] - (sub[i] * c[i - 1] if i > 0 else 0)
        c[i] = sup[i] / den
        d[i] = (rhs[i] - (sub[i] * d[i - 1] if i > 0 else 0)) / den
    p = [mp.mpf(0)] * n
    p[-1] = d[-1]
    for i in range(n - 2, -1, -1):
        p[i] = d[i] - c[i] * p[i + 1]
    return p


def mp_ccp_q(mu, M, r, eps):
    with mp.workdps(DPS):
        mu, r, eps = mp.mpf(mu), mp.mpf(r), mp.mpf(eps)
        p = _mp_stationary(M, r, eps, (1 + mu) / 2, (1 - mu) / 2)
        return sum(p[M:]) / sum(p)


def mp_paper_q(mu, M, r, eps):
    """Paper appendix C, eq. (exact_q), literally."""
    with mp.workdps(DPS):
        mu, r, e = mp.mpf(mu), mp.mpf(r), mp.mpf(eps)
        s = mp.sqrt(1 - (1 - r) ** 2 * (1 - mu**2))
        wp, wm = (1 + s) / ((1 - r) * (1 + mu)), (1 - s) / ((1 - r) * (1 + mu))

        def t(a, b):
            return a * (1 + a) * (1 - b) * b ** (2 * M) * (1 + a * (e - 1)) * (b + e - 1)

        def d(a, b):
            return a ** (2 * M) * b * (1 + b * (e - 1)) * (a + e - 1)

        num = t(wp, wm) + t(wm, wp) + (wm * wp) ** M * (wm * wp - 1) * ((wm - 1) * (wp - 1) * (wm + wp) * (e - 1) + 2 * wm * wp * e**2)
        return num / (2 * (wm - wp) * (d(wp, wm) - d(wm, wp)))


def mp_paper_eps_opt(mu, M, r, dps=60):
    """Paper appendix C, eq. (optimal_epsilon), literally (M >= 2)."""
    with mp.workdps(dps):
        mu, r = mp.mpf(mu), mp.mpf(r)
        s = mp.sqrt(1 - (1 - r) ** 2 * (1 - mu**2))
        wp, wm = (1 + s) / ((1 - r) * (1 + mu)), (1 - s) / ((1 - r) * (1 + mu))
        first = (wm - 1) * wm**M * (wp - 1) * wp**M * (wm * wp - 1) * (wm**M * wp - wm * wp**M) ** 2
        inner = (
            wm ** (3 * M) * wp**2 * (1 + wm) * (1 + wp)
            - wp ** (3 * M) * wm**2 * (1 + wp) * (1 + wm)
            + wp ** (2 * M) * wm ** (1 + M) * (2 * wp + wm + wp * wm * (7 + 2 * wp) + wm**2 * (wp - 1))
            - wm ** (2 * M) * wp ** (1 + M) * (2 * wm + wp + wm * wp * (7 + 2 * wm) + wp**2 * (wm - 1))
        )
        radicand = (wm - 1) * (wp - 1) * (wm * wp) ** (1 + 2 * M) * (wm * wp - 1) ** 2 * (wp**M - wm**M) * inner
        den = (wm * wp - 1) * (
            wm**2 * wp ** (2 * M) * (1 + wm * (wp - 1) + wp)
            + wp**2 * wm ** (2 * M) * (1 + wp * (wm - 1) + wm)
            - 2 * wm ** (1 + M) * wp ** (1 + M) * (1 + wm * wp)
        )
        value = (wm * wp) ** (-M) * (first - mp.sqrt(radicand)) / den
        return mp.re(value) if abs(mp.im(value)) < mp.mpf(10) ** (-dps // 2) * abs(value) else None


def mp_paper_eps_taylor(mu, M, r):
    """Paper appendix C, eq. (optimal_epsilon_taylor), literally."""
    with mp.workdps(DPS):
        mu, r = mp.mpf(mu), mp.mpf(r)
        a = (1 - mu) / (1 + mu)
        num = a - a ** (3 * M - 1) + a**M * (2 * mu - 3) + a ** (2 * M) * (2 * mu + 3)
        return mp.sqrt(2) * mp.sqrt(num) / (mp.sqrt(1 - a**M) * (1 - a**M - mu - a**M * mu)) * mp.sqrt(r)


def rel(x, ref):
    ref = mp.mpf(ref)
    return float(abs((mp.mpf(x) - ref) / ref))


# ----------------------------------------------------------------------------
# The reference itself


@pytest.mark.parametrize("M", [1, 2, 4])
@pytest.mark.parametrize("r", [0, 0.01])
def test_reference_chain_is_column_stochastic_and_solvers_agree(M, r):
    with mp.workdps(DPS):
        mu, eps = mp.mpf("0.3"), mp.mpf("0.05")
        k_A, k_B = (1 + mu) / 2, (1 - mu) / 2
        Q, dense = _mp_dense(M, mp.mpf(r), eps, k_A, k_B)
        for j in range(2 * M):
            assert abs(sum(Q[i, j] for i in range(2 * M)) - 1) < mp.mpf(10) ** -45
            assert all(Q[i, j] >= 0 for i in range(2 * M))
        tri = _mp_stationary(M, mp.mpf(r), eps, k_A, k_B)
        assert abs(sum(tri) - 1) < mp.mpf(10) ** -40
        assert max(abs(dense[i] - tri[i]) for i in range(2 * M)) < mp.mpf(10) ** -40


def test_paper_exact_q_formula_matches_the_chain():
    """Eq. (exact_q) of the paper is right (checked here, for M = 1 .. 8)."""
    for mu, M, r, eps in [(0.3, 1, 0.1, 1), (0.3, 2, 0.01, 0.05), (0.1, 5, 1e-4, 0.003), (0.8, 8, 1e-6, 1e-6), (0.05, 3, 0.5, 0.7)]:
        assert rel(mp_paper_q(mu, M, r, eps), mp_ccp_q(mu, M, r, eps)) < 1e-35


# ----------------------------------------------------------------------------
# ccp_q


def test_alpha():
    assert cf.alpha(0.5) == 1 / 3
    assert cf.alpha(0.1) == pytest.approx(0.9 / 1.1, rel=1e-15)


@pytest.mark.parametrize("M", [1, 2, 3, 5, 8, 13, 21, 100])
def test_ccp_q_matches_mpmath(M):
    # Relative error <= ~M ulp: alpha = k_B / k_A is rounded to a float
    # (k_A = (1 + mu) / 2), and the chain raises it to the power ~M.
    tol = 1e-15 * (10 + M)
    worst = 0.0
    for mu in (0.05, 0.3, 0.9):
        for r in (1e-1, 1e-2, 1e-4, 1e-6, 1e-8, 1e-10):
            for eps in (1, 0.05, 0.003, 1e-6):
                worst = max(worst, rel(cf.ccp_q(mu, M, r, eps), mp_ccp_q(mu, M, r, eps)))
    assert worst < tol


@pytest.mark.parametrize("M", [200, 1000])
def test_ccp_q_large_M_tiny_r_and_eps(M):
    for mu in (0.01, 0.2):
        for r in (1e-1, 1e-6, 1e-12):
            for eps in (1, 1e-6, 1e-12):
                q = cf.ccp_q(mu, M, r, eps)
                assert 0 < q < 0.5 and math.isfinite(q)
                assert rel(q, mp_ccp_q(mu, M, r, eps)) < 1e-15 * (10 + M)


@pytest.mark.parametrize("M", [1, 2, 5, 13, 100])
def test_ccp_q_at_r0_matches_mpmath(M):
    for mu in (0.05, 0.3, 0.9):
        for eps in (1, 0.05, 1e-6):
            ref = mp_ccp_q(mu, M, 0, eps)
            if ref > 1e-300:
                assert rel(cf.ccp_q(mu, M, 0, eps), ref) < 1e-15 * (10 + M)


def test_ccp_q_is_continuous_at_r0():
    for M in (1, 3, 8):
        for eps in (1, 1e-3):
            q0 = cf.ccp_q(0.2, M, 0, eps)
            assert cf.ccp_q(0.2, M, 1e-13, eps) == pytest.approx(q0, rel=1e-8)


def test_ccp_q_hand_derived_M1():
    # Two states 1A, 1B: p_A = (1 - r) ((1 - eps k_B) p_A + eps k_A p_B) + r / 2,
    # hence q = p_B = (r / 2 + (1 - r) eps k_B) / (r + (1 - r) eps).
    for mu, r, eps in [(0.3, 0.1, 1), (0.5, 1e-3, 0.2), (0.9, 0.7, 1e-4)]:
        k_B = (1 - mu) / 2
        expected = (r / 2 + (1 - r) * eps * k_B) / (r + (1 - r) * eps)
        assert cf.ccp_q(mu, 1, r, eps) == pytest.approx(expected, rel=1e-14)


def test_ccp_q_no_memory_when_always_reset():
    for M in (1, 4, 50):
        assert cf.ccp_q(0.4, M, 1, 0.3) == 0.5


def test_ccp_q_large_M_r0_tiny_but_positive():
    q = cf.ccp_q(0.01, 5000, 0, 1e-3)
    assert 0 < q < 1e-40
    assert rel(q, mp_ccp_q(0.01, 5000, 0, 1e-3)) < 1e-11
    assert cf.ccp_q(0.5, 1000, 0, 1) == 0.0  # alpha^1999 ~ 1e-954 underflows: exactly 0, no NaN


# ----------------------------------------------------------------------------
# Optimal eps


def test_ccp_eps_opt_matches_paper_closed_form():
    """The paper's eq. (optimal_epsilon), evaluated literally at 60 digits, is the minimiser where it lies in (0, 1]."""
    checked = 0
    for mu in (0.01, 0.1, 0.5, 0.9):
        for M in (2, 3, 5, 8, 13, 21, 100):
            for r in (0.5, 1e-1, 1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12):
                paper = mp_paper_eps_opt(mu, M, r)
                ours = cf.ccp_eps_opt(mu, M, r)
                if paper is not None and 0 < paper <= 1:
                    assert rel(ours, paper) < 1e-14, (mu, M, r)
                    checked += 1
                elif paper is not None and paper > 1:
                    assert ours == 1.0
    assert checked > 150


@pytest.mark.parametrize(("mu", "M", "r"), [(0.1, 2, 1e-2), (0.1, 5, 1e-4), (0.5, 3, 1e-6), (0.9, 8, 1e-8), (0.3, 21, 1e-3), (0.05, 13, 1e-10)])
def test_ccp_eps_opt_is_a_minimum(mu, M, r):
    e = cf.ccp_eps_opt(mu, M, r)
    assert 0 < e < 1
    q = cf.ccp_q(mu, M, r, e)
    for delta in (1e-2, 1e-3):
        assert cf.ccp_q(mu, M, r, e * (1 + delta)) >= q
        assert cf.ccp_q(mu, M, r, e * (1 - delta)) >= q
    # scipy's bounded minimiser on log eps (accurate to ~sqrt(machine eps) in eps)
    res = minimize_scalar(lambda u: cf.ccp_q(mu, M, r, math.exp(u)), bounds=(math.log(e) - 3, 0), method="bounded", options={"xatol": 1e-9})
    assert math.exp(res.x) == pytest.approx(e, rel=1e-3)


def test_ccp_eps_opt_capped_at_one():
    # M = 1: q = (r/2 + (1-r) eps k_B) / (r + (1-r) eps) decreases with eps.
    for mu, r in [(0.1, 0.5), (0.5, 1e-6), (0.9, 1e-12)]:
        assert cf.ccp_eps_opt(mu, 1, r) == 1.0
        assert cf.ccp_q(mu, 1, r, 0.5) > cf.ccp_q(mu, 1, r, 1.0)
    # Large r: the unconstrained optimum (paper formula) is above 1 and q decreases on (0, 1].
    paper = mp_paper_eps_opt(0.9, 2, 0.5)
    assert paper > 1
    assert cf.ccp_eps_opt(0.9, 2, 0.5) == 1.0
    assert cf.ccp_q(0.9, 2, 0.5, 0.99) > cf.ccp_q(0.9, 2, 0.5, 1.0)
    assert cf.ccp_eps_opt(0.3, 4, 1) == 1.0


def test_ccp_eps_opt_large_M_and_tiny_r():
    for M in (200, 1000):
        for r in (1e-4, 1e-12, 1e-40):
            e = cf.ccp_eps_opt(0.3, M, r)
            # large M: eps ~ sqrt(2 r / (1 - mu^2)) (paper appendix C) up to O(r)
            assert e == pytest.approx(math.sqrt(2 * r / (1 - 0.3**2)), rel=max(5 * math.sqrt(r), 1e-13))


@pytest.mark.parametrize("M", [2, 3, 8, 50, 1000])
def test_ccp_eps_opt_taylor(M):
    for mu in (0.01, 0.1, 0.5, 0.9):
        # cancellation-free rewriting == the paper's literal formula
        assert rel(cf.ccp_eps_opt_taylor(mu, M, 1e-6), mp_paper_eps_taylor(mu, M, 1e-6)) < 1e-13
        # leading order: the relative difference to the exact optimum is O(sqrt(r))
        errors = [abs(cf.ccp_eps_opt_taylor(mu, M, r) / cf.ccp_eps_opt(mu, M, r) - 1) for r in (1e-8, 1e-10, 1e-12)]
        assert errors[0] < 5 * math.sqrt(1e-8)
        assert errors[1] == pytest.approx(errors[0] / 10, rel=0.02)
        assert errors[2] == pytest.approx(errors[1] / 10, rel=0.02)


def test_ccp_eps_opt_taylor_large_M_limit():
    for mu in (0.1, 0.6):
        assert cf.ccp_eps_opt_taylor(mu, 400, 1e-6) == pytest.approx(math.sqrt(2e-6 / (1 - mu**2)), rel=1e-14)


# ----------------------------------------------------------------------------
# Limits r -> 0


def mp_logistic_power(mu, power):
    with mp.workdps(DPS):
        a = (1 - mp.mpf(mu)) / (1 + mp.mpf(mu))
        return a**power / (a**power + 1)


def test_ccp_q_limit_formula():
    for mu in (0.01, 0.1, 0.5, 0.99):
        for M in (1, 2, 5, 20, 50):
            ref = mp_logistic_power(mu, 2 * M - 1)
            if ref > 1e-300:
                assert rel(cf.ccp_q_limit(mu, M), ref) < 1e-13


def test_ccp_q_limit_huge_M():
    q = cf.ccp_q_limit(0.01, 10**4)
    assert 0 < q < 1e-170 and math.isfinite(q)
    assert rel(q, mp_logistic_power(0.01, 2 * 10**4 - 1)) < 1e-12
    assert cf.ccp_q_limit(0.1, 10**4) == 0.0  # ~ 1e-1743: underflows to 0, no NaN
    with mp.workdps(DPS):
        ref = mp.log(mp_logistic_power(0.1, 2 * 10**4 - 1))
    assert rel(cf.ccp_q_limit(0.1, 10**4, log=True), ref) < 1e-14


@pytest.mark.parametrize(("mu", "M"), [(0.1, 3), (0.3, 2), (0.5, 5)])
def test_ccp_q_limit_is_the_small_r_limit(mu, M):
    """q(r, eps_opt(r)) - q_limit ~ C sqrt(r) (paper appendix C)."""
    limit = cf.ccp_q_limit(mu, M)
    scaled = [(cf.ccp_q(mu, M, r, cf.ccp_eps_opt(mu, M, r)) - limit) / math.sqrt(r) for r in (1e-8, 1e-10, 1e-12)]
    assert all(s > 0 for s in scaled)
    assert scaled[2] == pytest.approx(scaled[1], rel=2e-3)
    assert scaled[1] == pytest.approx(scaled[0], rel=2e-2)
    # and with the eps -> 0 limit at r = 0
    assert cf.ccp_q(mu, M, 0, 1e-12) == pytest.approx(limit, rel=1e-10)


def mp_general_ccp_q(k_A, k_B, M, eps="1e-30"):
    """The general-(k_A, k_B) CCP chain at r = 0, solved densely at 60 digits."""
    with mp.workdps(60):
        k_A, k_B, eps = mp.mpf(k_A), mp.mpf(k_B), mp.mpf(eps)
        _, p = _mp_dense(M, mp.mpf(0), eps, k_A, k_B)
        return sum(p[M:]) / sum(p)


def test_ccp_q_limit_general_matches_the_chain():
    for k_A, k_B in [(0.7, 0.4), (0.2, 0.1), (0.95, 0.9), (0.55, 0.45)]:
        for M in (1, 2, 3, 6):
            assert rel(cf.ccp_q_limit_general(k_A, k_B, M), mp_general_ccp_q(k_A, k_B, M)) < 1e-13


def test_ccp_q_limit_general_reduces_to_mu_case():
    for mu in (0.05, 0.3, 0.8):
        for M in (1, 2, 7, 40):
            assert cf.ccp_q_limit_general((1 + mu) / 2, (1 - mu) / 2, M) == pytest.approx(cf.ccp_q_limit(mu, M), rel=1e-13)


def test_q_hellman_cover():
    for mu in (0.05, 0.3, 0.8):
        for M in (1, 2, 7, 40):
            ref = mp_logistic_power(mu, M - 1)
            assert rel(cf.q_hellman_cover(mu, M), ref) < 1e-13
            # the CCP with M memories matches Hellman-Cover's optimum with 2M states (paper section 3)
            assert cf.ccp_q_limit(mu, M) == pytest.approx(cf.q_hellman_cover(mu, 2 * M), rel=1e-14)
    assert cf.q_hellman_cover(0.3, 1) == 0.5


# ----------------------------------------------------------------------------
# Necklace policy


def test_necklace_q_star_m7():
    # n(7) = 2 + (2^7 - 2) / 7 = 20: q* = 1 / (1 + alpha^(-7 * 19)) at mu = 0.1
    ref = mp_logistic_power(0.1, 7 * 19)
    assert float(ref) == pytest.approx(2.5646e-12, rel=1e-4)
    assert rel(cf.necklace_q_star(0.1, 7), ref) < 1e-14
    assert cf.necklace_q_star(0.1, 7, n=20) == cf.necklace_q_star(0.1, 7)


def test_necklace_q_star_default_n_and_log():
    assert cf.necklace_q_star(0.2, 4) == pytest.approx(float(mp_logistic_power(0.2, 4 * 4)), rel=1e-14)  # n(4) = 5
    assert cf.necklace_q_star(0.2, 3) == pytest.approx(float(mp_logistic_power(0.2, 3 * 3)), rel=1e-14)  # n(3) = 4
    # m = 13: n = 632 necklaces, q* ~ alpha^(13 * 631) underflows; log q* does not
    with mp.workdps(DPS):
        ref = mp.log(mp_logistic_power(0.1, 13 * 631))
    assert rel(cf.necklace_q_star(0.1, 13, log=True), ref) < 1e-14


def mp_necklace_walk_q(k_A, k_B, chain, eps="1e-30"):
    """Lemmas 4.1-4.2 by brute force: the walk on the chain's necklaces, solved at 60 digits.

    Inner necklace i steps left with l_i = k_A^a (1 - k_B)^b, right with
    r_i = (1 - k_A)^a k_B^b; the ends leave with eps (1 - k_A)^m and eps (1 - k_B)^m.
    """
    with mp.workdps(60):
        k_A, k_B, eps = mp.mpf(k_A), mp.mpf(k_B), mp.mpf(eps)
        m, n = len(chain[0]), len(chain)
        right, left = [], []
        for i, w in enumerate(chain):
            a, b = w.count("A"), w.count("B")
            right.append(eps * (1 - k_A) ** m if i == 0 else (1 - k_A) ** a * k_B**b if i < n - 1 else 0)
            left.append(eps * (1 - k_B) ** m if i == n - 1 else k_A**a * (1 - k_B) ** b if i > 0 else 0)
        A = mp.zeros(n, n)
        for i in range(n):
            A[i, i] = -(right[i] + left[i])
            if i > 0:
                A[i, i - 1] = right[i - 1]
            if i + 1 < n:
                A[i, i + 1] = left[i + 1]
        for j in range(n):
            A[n - 1, j] = 1
        b = mp.zeros(n, 1)
        b[n - 1] = 1
        p = mp.lu_solve(A, b)
        return p[n - 1] / sum(p)


def table1_necklace(k_A, k_B, m, n):
    with mp.workdps(DPS):
        k_A, k_B = mp.mpf(k_A), mp.mpf(k_B)
        odds = ((1 - k_B) / (1 - k_A)) ** m * ((1 / k_B - 1) / (1 / k_A - 1)) ** (mp.mpf(m * (n - 2)) / 2)
        return 1 / (1 + odds)


def inner_letter_counts(chain):
    inner = chain[1:-1]
    return sum(w.count("A") for w in inner), sum(w.count("B") for w in inner)


def test_necklace_q_star_general():
    for k_A, k_B in [(0.7, 0.4), (0.3, 0.2), (0.9, 0.6)]:
        for m in (3, 4, 5):
            chain = gray_chain(m)
            assert chain.symmetric
            assert inner_letter_counts(chain.chain)[0] == inner_letter_counts(chain.chain)[1]
            q = cf.necklace_q_star_general(k_A, k_B, m, chain)
            assert rel(q, mp_necklace_walk_q(k_A, k_B, chain.chain)) < 1e-13
            assert rel(q, table1_necklace(k_A, k_B, m, chain.length)) < 1e-13  # Table 1 holds: sum a = sum b
        chain = gray_chain(6)
        # Every longest chain for m = 6 misses one necklace with 2 or 4 B (level
        # counts 1, 1, 3, 4, 3, 1, 1 and 13 of 14 necklaces, all four of level 3
        # used), so its inner necklaces hold unequal numbers of A and B.
        sum_a, sum_b = inner_letter_counts(chain.chain)
        assert sum_a != sum_b
        q = cf.necklace_q_star_general(k_A, k_B, 6, chain)
        assert rel(q, mp_necklace_walk_q(k_A, k_B, chain.chain)) < 1e-13
        assert rel(q, table1_necklace(k_A, k_B, 6, chain.length)) > 1e-3  # Table 1 does not


def test_necklace_q_star_general_reduces_to_theorem():
    for mu in (0.1, 0.4):
        k_A, k_B = (1 + mu) / 2, (1 - mu) / 2
        for m in (3, 4, 6, 7):
            chain = gray_chain(m)
            assert cf.necklace_q_star_general(k_A, k_B, m, chain) == pytest.approx(cf.necklace_q_star(mu, m, chain.length), rel=1e-13)
        assert not gray_chain(6).symmetric  # with k_A + k_B = 1 Theorem 4.3 holds for it too


# ----------------------------------------------------------------------------
# Bad inputs


BAD = [
    (cf.alpha, (1.5,), ValueError, r"mu must be in \(0, 1\), got 1.5"),
    (cf.alpha, (0,), ValueError, r"mu must be in \(0, 1\), got 0"),
    (cf.alpha, ("0.1",), TypeError, "mu must be a number"),
    (cf.alpha, (True,), TypeError, "mu must be a number"),
    (cf.alpha, (math.nan,), ValueError, "mu must not be NaN"),
    (cf.ccp_q, (0.1, 0, 0.1, 0.1), ValueError, "M must be >= 1, got 0"),
    (cf.ccp_q, (0.1, 2.0, 0.1, 0.1), TypeError, "M must be an int, got 2.0"),
    (cf.ccp_q, (0.1, 2, -0.1, 0.1), ValueError, r"r must be in \[0, 1\], got -0.1"),
    (cf.ccp_q, (0.1, 2, 1.1, 0.1), ValueError, r"r must be in \[0, 1\], got 1.1"),
    (cf.ccp_q, (0.1, 2, 0.1, 0), ValueError, r"eps must be in \(0, 1\], got 0"),
    (cf.ccp_q, (0.1, 2, 0.1, 1.5), ValueError, r"eps must be in \(0, 1\], got 1.5"),
    (cf.ccp_eps_opt, (0.1, 2, 0), ValueError, r"r must be in \(0, 1\], got 0"),
    (cf.ccp_eps_opt_taylor, (0.1, 1, 1e-3), ValueError, "needs M >= 2"),
    (cf.ccp_q_limit, (0.1, -3), ValueError, "M must be >= 1, got -3"),
    (cf.ccp_q_limit_general, (0.3, 0.4, 2), ValueError, "k_A must be larger than k_B"),
    (cf.ccp_q_limit_general, (1.0, 0.4, 2), ValueError, r"k_A must be in \(0, 1\), got 1.0"),
    (cf.q_hellman_cover, (0.1, None), TypeError, "M must be an int, got None"),
    (cf.necklace_q_star, (0.1, 4, 1), ValueError, "n must be >= 2, got 1"),
    (cf.necklace_q_star, (0.1, 0), ValueError, "m must be >= 1, got 0"),
    (cf.necklace_q_star_general, (0.6, 0.4, 3, ("AAA", "ABB", "BBB")), ValueError, "not adjacent"),
    (cf.necklace_q_star_general, (0.6, 0.4, 4, ("AAA", "AAB", "ABB", "BBB")), ValueError, "length m = 4"),
]


@pytest.mark.parametrize(("function", "args", "error", "pattern"), BAD)
def test_bad_inputs(function, args, error, pattern):
    with pytest.raises(error, match=pattern):
        function(*args)
