"""The asymmetric column of confidence: closed form against exact evaluation and mpmath, its optimum."""

import itertools
import json
import math

import mpmath
import numpy as np
import pytest

import fsc
from fsc.cli import main
from policies import closed_form
from policies.asymmetric import asymmetric_ccp, asymmetric_ccp_optimum, asymmetric_ccp_q, to_convention
from tasks import TwoHypothesis

GRID = list(
    itertools.product(
        (0.1, 0.35),  # mu
        (1, 2, 5),  # M
        (0.0, 1e-4, 0.05),  # r
        (0.03, 1.0),  # eps_A
        (0.2, 0.7),  # eps_B
        (0.0, 0.3, 1.0),  # split
    )
)


@pytest.mark.parametrize("convention", ["native", "paper"])
def test_closed_form_matches_exact_evaluation_on_a_grid(convention):
    worst = 0.0
    for mu, M, r, eps_A, eps_B, split in GRID:
        if r == 0 and convention == "paper":
            continue
        arch, policy = asymmetric_ccp(M, eps_A, eps_B, split)
        exact = float(fsc.evaluate(TwoHypothesis(mu), policy, reset=r, convention=convention).metrics["q"])
        closed = asymmetric_ccp_q(mu, M, r, eps_A, eps_B, split, convention=convention)
        worst = max(worst, abs(exact - closed))
    assert worst < 1e-9


def _mpmath_q(mu, M, r, eps_A, eps_B, split, dps=50):
    """Independent: the 2M-state line chain of each hypothesis solved in mpmath, p = (1-r) Q p + r J."""
    mpmath.mp.dps = dps
    mu, r = mpmath.mpf(mu), mpmath.mpf(r)
    hi, lo = (1 + mu) / 2, (1 - mu) / 2
    total = 0
    for good in ("A", "B"):
        # position 0 = MA ... M-1 = 1A, M = 1B ... 2M-1 = MB; "toward MA" means index - 1.
        up = hi if good == "A" else lo  # A column moves toward MA on a + of A
        down_b = lo if good == "A" else hi  # B column moves toward MB on a + of B
        n = 2 * M
        Q = mpmath.zeros(n, n)  # Q[to, from]
        for s in range(n):
            if s < M:  # A column: toward MA with up, toward MB with 1 - up
                to_top, to_other = s - 1, s + 1
                p_top, p_other = up, 1 - up
                if s == 0:  # top MA: stay after +, leave with eps_A after -
                    Q[s, s] += p_top + (1 - eps_A) * p_other
                    Q[to_other, s] += eps_A * p_other
                    continue
            else:  # B column: toward MB with down_b, toward MA with 1 - down_b
                to_top, to_other = s + 1, s - 1
                p_top, p_other = down_b, 1 - down_b
                if s == n - 1:
                    Q[s, s] += p_top + (1 - eps_B) * p_other
                    Q[to_other, s] += eps_B * p_other
                    continue
            Q[to_top, s] += p_top
            Q[to_other, s] += p_other
        J = mpmath.zeros(n, 1)
        J[M - 1], J[M] = split, 1 - mpmath.mpf(split)
        p = mpmath.lu_solve(mpmath.eye(n) - (1 - r) * Q, r * J) if r > 0 else None
        worse = range(M, n) if good == "A" else range(M)
        total += sum(p[i] for i in worse) / sum(p)
    return total / 2


MPMATH_POINTS = [(0.1, 8, 1e-3, 0.0455, 0.043, 1.0), (0.2, 4, 1e-5, 0.9, 0.01, 0.25), (0.05, 30, 1e-2, 0.2, 0.3, 0.0)]


@pytest.mark.parametrize(("mu", "M", "r", "eps_A", "eps_B", "split"), MPMATH_POINTS)
def test_closed_form_matches_an_mpmath_solve(mu, M, r, eps_A, eps_B, split):
    reference = float(_mpmath_q(mu, M, r, eps_A, eps_B, split))
    assert asymmetric_ccp_q(mu, M, r, eps_A, eps_B, split) == pytest.approx(reference, rel=1e-13)


@pytest.mark.parametrize(("mu", "M", "r", "eps"), [(0.1, 8, 1e-3, 0.04), (0.3, 1, 0.2, 0.5), (0.2, 20, 1e-6, 1e-3), (0.1, 4, 0.0, 0.1)])
def test_equal_exits_and_even_split_is_the_symmetric_ccp(mu, M, r, eps):
    assert asymmetric_ccp_q(mu, M, r, eps, eps, 0.5) == pytest.approx(closed_form.ccp_q(mu, M, r, eps), rel=1e-14)
    # equal exits: flat in the split
    assert asymmetric_ccp_q(mu, M, r, eps, eps, 1.0) == pytest.approx(closed_form.ccp_q(mu, M, r, eps), rel=1e-13)


def test_q_is_linear_in_the_split_and_mirror_symmetric():
    a, b, c = (asymmetric_ccp_q(0.1, 6, 1e-2, 0.3, 0.1, j) for j in (0.0, 0.4, 1.0))
    assert b == pytest.approx(0.6 * a + 0.4 * c, rel=1e-13)
    assert asymmetric_ccp_q(0.1, 6, 1e-2, 0.3, 0.1, 0.2) == pytest.approx(asymmetric_ccp_q(0.1, 6, 1e-2, 0.1, 0.3, 0.8), rel=1e-14)


def test_the_issue_point_m8():
    """M = 8, mu = 0.1, r = 1e-3: symmetric 0.1077339, asymmetric 0.1076991 at eps_A ~ 0.04552, eps_B ~ 0.04296."""
    o = asymmetric_ccp_optimum(0.1, 8, 1e-3)
    assert o.q_symmetric == pytest.approx(0.1077339, abs=1e-7)
    assert o.q == pytest.approx(0.1076991, abs=1e-7)
    assert (o.eps_A, o.eps_B, o.split) == (pytest.approx(0.04552, abs=1e-5), pytest.approx(0.04296, abs=1e-5), 1.0)
    # brute force: no point of a fine grid around it does better
    best = min(asymmetric_ccp_q(0.1, 8, 1e-3, ea, eb, 1.0) for ea in np.linspace(0.040, 0.050, 41) for eb in np.linspace(0.038, 0.048, 41))
    assert o.q <= best + 1e-15
    paper = asymmetric_ccp_optimum(0.1, 8, 1e-3, convention="paper")
    assert paper.q == pytest.approx(to_convention(o.q, 1e-3, "paper"), rel=1e-12)
    assert paper.q == pytest.approx(0.9990 * o.q + 5e-4, rel=1e-12)


@pytest.mark.parametrize("mu", [0.1, 0.2])
def test_optimum_below_the_symmetric_ccp_on_part_of_the_figure2_grid(mu):
    for M in (2, 5, 10, 20, 37):
        for r in (2.0**-20, 1e-4, 2.0**-7, 1e-2, 2.0**-1):
            o = asymmetric_ccp_optimum(mu, M, r)
            assert o.q <= o.q_symmetric * (1 + 1e-15), (mu, M, r, o)
            if o.eps_symmetric < 1:  # an inner symmetric optimum is a saddle: strictly better nearby
                assert o.q < o.q_symmetric * (1 - 1e-12), (mu, M, r, o)
                assert o.eps_A > o.eps_B


def test_cli(capsys):
    assert main(["closed-form", "asymmetric-ccp", "--mu", "0.1", "--M", "8", "--reset", "1e-3", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert set(record) >= {"q", "eps_A", "eps_B", "split", "q_symmetric"}
    assert record["q"] < record["q_symmetric"]
    assert main(["closed-form", "asymmetric-ccp", "--M", "8", "--reset", "1e-3", "--convention", "paper", "--json"]) == 0
    paper = json.loads(capsys.readouterr().out)
    assert paper["q"] == pytest.approx(0.999 * record["q"] + 5e-4, rel=1e-12)
    assert main(["closed-form", "ccp", "--M", "8", "--reset", "1e-3", "--convention", "paper", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["q"] == pytest.approx(paper["q_symmetric"], rel=1e-13)
    assert main(["closed-form", "asymmetric-ccp", "--M", "8", "--reset", "0"]) == 2
    assert "0.0" in capsys.readouterr().err


def test_bad_arguments_name_the_value():
    with pytest.raises(ValueError, match="1.5"):
        asymmetric_ccp_q(0.1, 4, 1e-3, 0.1, 0.1, 1.5)
    with pytest.raises(TypeError, match="'x'"):
        asymmetric_ccp(4, "x", 0.1, 0.5)
    assert math.isfinite(asymmetric_ccp_q(0.1, 4, 1e-3, 1.0, 1.0, 0.0))
