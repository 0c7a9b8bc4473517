"""The star policy (the CCP for k hypotheses) against exact evaluation, the CCP and Monte Carlo."""

import numpy as np
import pytest

import fsc
import fsc.testing
import tasks
from policies import ccp_probs, closed_form
from policies.star import star, star_architecture, star_eps_opt, star_probs, star_q, star_q_eps_zero, star_q_limit


@pytest.mark.parametrize("M", range(1, 7))
@pytest.mark.parametrize("eps", [1.0, 0.3, 0.01])
def test_two_branch_star_is_the_ccp_exactly(M, eps):
    arch = fsc.Column(M)
    star_tables, ccp_tables = star_probs(arch, eps), ccp_probs(arch, eps)
    assert np.array_equal(star_tables[0], ccp_tables[0]) and np.array_equal(star_tables[1], ccp_tables[1])


@pytest.mark.parametrize("M", [1, 2, 3, 8, 21])
@pytest.mark.parametrize("r", [0.5, 1e-3, 1e-6, 1e-9])
@pytest.mark.parametrize("mu, eps", [(0.1, 1.0), (0.1, 0.02), (0.37, 0.003)])
def test_two_branch_closed_form_is_appendix_c(M, r, mu, eps):
    assert star_q(mu, M, r, eps, 2) == pytest.approx(closed_form.ccp_q(mu, M, r, eps), rel=1e-11)


GRID = [(k, M, r, eps) for k in (2, 3, 4) for M in (1, 2, 3, 5) for r in (0.3, 1e-2, 1e-4) for eps in (1.0, 0.05)]


@pytest.mark.parametrize("k, M, r, eps", GRID)
def test_closed_form_matches_exact_evaluation(k, M, r, eps):
    arch, policy = star(M, k, eps)
    q = float(fsc.evaluate(tasks.TwoHypothesis(0.2, arms=k), policy, reset=r).metrics["q"])
    assert star_q(0.2, M, r, eps, k) == pytest.approx(q, rel=1e-9, abs=1e-13)


@pytest.mark.parametrize("k, M, r, eps", GRID)
def test_cyclic_closed_form_matches_exact_evaluation(k, M, r, eps):
    arch, policy = star(M, k, eps, order="cyclic")
    q = float(fsc.evaluate(tasks.TwoHypothesis(0.2, arms=k), policy, reset=r).metrics["q"])
    assert star_q(0.2, M, r, eps, k, order="cyclic") == pytest.approx(q, rel=1e-9, abs=1e-13)


@pytest.mark.parametrize("M", [1, 3, 8])
def test_two_cyclic_branches_are_the_ccp(M):
    arch = fsc.Column(M)
    assert np.array_equal(star_probs(arch, 0.1, "cyclic")[0], ccp_probs(arch, 0.1)[0])
    assert star_q(0.1, M, 1e-5, 0.1, 2, "cyclic") == pytest.approx(closed_form.ccp_q(0.1, M, 1e-5, 0.1), rel=1e-11)


@pytest.mark.parametrize("k", [3, 4])
def test_cyclic_star_of_single_memories_by_hand(k):
    """M = 1, eps = 1: the agent's branch is a k-state chain that stays on a win and
    moves to the next branch on a loss.  Its discounted occupation, solved directly
    (r (I - (1-r) P^T)^-1 p0, p0 uniform), gives q without the renewal argument."""
    mu, r = 0.3, 0.05
    q = 0.0
    for j in range(k):
        win = np.where(np.arange(k) == j, (1 + mu) / 2, (1 - mu) / 2)
        P = np.diag(win) + np.roll(np.diag(1 - win), 1, axis=1)  # P[x, x+1] = 1 - win_x
        occupation = r * np.linalg.solve(np.eye(k) - (1 - r) * P.T, np.full(k, 1 / k))
        q += (occupation.sum() - occupation[j]) / k
    assert star_q(mu, 1, r, 1.0, k, "cyclic") == pytest.approx(q, rel=1e-13)


@pytest.mark.parametrize("k", [3, 4])
def test_cyclic_star_searches_better_after_a_reset(k):
    """Visiting each worse branch at most once before the better one beats a uniform next branch."""
    for M, r in ((2, 1e-2), (4, 1e-3)):
        eps = star_eps_opt(0.1, M, r, k)
        assert star_q(0.1, M, r, eps, k, "cyclic") < star_q(0.1, M, r, eps, k)


@pytest.mark.parametrize("k", [3, 4])
def test_exits_per_branch_and_the_column_architecture(k):
    """Unequal exits (the renewal equations do not need symmetry), and the same
    policy on Column(M, arms=k), whose extra blank nodes are never reached."""
    eps = np.linspace(0.02, 0.4, k)
    world = tasks.TwoHypothesis(0.15, arms=k)
    for arch in (star_architecture(4, k), fsc.Column(4, arms=k), fsc.RAM(4, arms=k)):
        q = float(fsc.evaluate(world, fsc.Policy.from_probs(arch, *star_probs(arch, eps)), reset=1e-2).metrics["q"])
        assert star_q(0.15, 4, 1e-2, eps, k) == pytest.approx(q, rel=1e-9)


def test_star_architecture_is_the_reachable_part_of_column():
    arch = star_architecture(3, 3)
    column = fsc.Column(3, arms=3)
    assert arch.num_nodes == column.num_nodes - 2  # the blank nodes 2_ and 3_ are unreachable from 1_
    kept = [column.node_values.index(label) for label in arch.node_labels]
    assert np.array_equal(arch.allowed, column.allowed[kept])
    fsc.testing.check_architecture(arch)


@pytest.mark.parametrize("k", [3, 4])
def test_monte_carlo_within_four_standard_errors(k):
    arch, policy = star(3, k, 0.1)
    sim = fsc.simulate(tasks.TwoHypothesis(0.2, arms=k), policy, reset=1e-2, steps=1_000_000, seed=k)
    assert abs(sim.metrics["q"] - star_q(0.2, 3, 1e-2, 0.1, k)) <= 4 * sim.stderrs["q"]


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("M", [2, 5, 8])
def test_limits(k, M):
    """r -> 0 (mean visit lengths) and then eps -> 0: ((k-1) alpha^(2M-1)) / ((k-1) alpha^(2M-1) + 1)."""
    assert star_q_limit(0.1, M, 0.05, k) == pytest.approx(star_q(0.1, M, 1e-11, 0.05, k), rel=1e-6)
    assert star_q_limit(0.1, M, 1e-9, k) == pytest.approx(star_q_eps_zero(0.1, M, k), rel=1e-6)
    if k == 2:
        assert star_q_eps_zero(0.1, M, 2) == pytest.approx(closed_form.ccp_q_limit(0.1, M), rel=1e-12)


@pytest.mark.parametrize("M, r", [(2, 1e-2), (5, 1e-4), (8, 1e-3)])
def test_optimal_exit(M, r):
    assert star_eps_opt(0.1, M, r, 2) == pytest.approx(min(1.0, closed_form.ccp_eps_opt(0.1, M, r)), rel=1e-6)
    eps = star_eps_opt(0.1, M, r, 3)
    best = star_q(0.1, M, r, eps, 3)
    assert all(star_q(0.1, M, r, eps * f, 3) > best for f in (0.9, 1.1))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: star_q(0.1, 3, 1e-3, [0.1, 0.2], 3), ValueError, r"eps must be a number or 3 numbers"),
        (lambda: star_q(0.1, 3, 1e-3, 0.0, 3), ValueError, r"eps must be in \(0, 1\]"),
        (lambda: star_q(0.1, 3, 0.0, 0.1, 3), ValueError, r"r must be in \(0, 1\]"),
        (lambda: star_q(1.2, 3, 1e-3, 0.1, 3), ValueError, r"mu must be in \(0, 1\), got 1.2"),
        (lambda: star_architecture(3, 1), ValueError, "k must be >= 2, got 1"),
        (lambda: star_q(0.1, 3, 1e-3, 0.1, 3, order="random"), ValueError, "order must be one of uniform, cyclic, got 'random'"),
        (lambda: star(3, 3, 0.1, order="clockwise"), ValueError, "order must be one of"),
        (lambda: star_architecture(0, 3), ValueError, "M must be >= 1, got 0"),
        (lambda: star_probs(fsc.Memento(2), 0.1), ValueError, "the star policy needs nodes"),
        (
            lambda: star_probs(fsc.Column(2, arms=3).restrict(lambda n, c: n[:2] != (1, "A") or c != (1, "B")), 0.1),
            ValueError,
            "does not allow the star's choice",
        ),
    ],
)
def test_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()
