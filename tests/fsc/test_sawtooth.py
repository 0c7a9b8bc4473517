"""The upper bound lowered by trials of point-based backups on a sawtooth (:class:`fsc.solver.bound.Sawtooth`,
:func:`fsc.solver.bound.refined`): its interpolation by hand, and never below the optimum, checked against the
optimum where it is known (Tiger, by the two-state grid; a fully observed world, the MDP) and against controllers
found by the point-based search elsewhere."""

import numpy as np
import pytest

import fsc
import tasks
from fsc.bounds import informed_bound, mdp_bound, two_state_bound
from fsc.limits import Deadline
from fsc.model.pomdp import as_pomdp
from fsc.solver.bound import Sawtooth, informed_from_above, refined, upper_bound
from fsc.solver.pointbased import Search, model_of


def random_world(seed: int, S: int = 5, A: int = 3, O: int = 3, discount: float = 0.9) -> fsc.POMDP:
    rng = np.random.default_rng(seed)
    return fsc.POMDP(
        transition=rng.dirichlet(np.ones(S) * 0.5, size=(S, A)),
        observation=rng.dirichlet(np.ones(O) * 0.5, size=(A, S)),
        reward=np.broadcast_to(rng.normal(size=(S, A, 1, 1)), (S, A, S, O)).copy(),
        initial=rng.dirichlet(np.ones(S)),
        discount=discount,
    )


def test_the_sawtooth_interpolates_a_point_with_the_corners_as_derived_by_hand():
    """Corners worth 1 and one point (1/2, 1/2) worth 0: at ``b`` the bound is ``1 - phi(b)``, ``phi(b)`` the most of
    the point that fits under ``b``, ``min(2 b(0), 2 b(1))``."""
    saw = Sawtooth(None, np.array([[1.0], [1.0]]))
    assert saw.add(np.array([0.5, 0.5]), 0.0) and saw.size == 1
    beliefs = np.array([[0.5, 0.5], [0.25, 0.75], [1.0, 0.0], [0.1, 0.9]])
    np.testing.assert_allclose(saw.value(beliefs), [0.0, 0.5, 1.0, 0.8], rtol=0, atol=1e-15)
    assert not saw.add(np.array([0.25, 0.75]), 0.6)  # not lower than the bound there: not kept
    assert saw.add(np.array([0.25, 0.75]), 0.4) and saw.size == 2
    assert saw.value(np.array([[0.25, 0.75]]))[0] == pytest.approx(0.4, abs=1e-15)


def test_the_trials_on_tiger_stay_above_its_optimum_and_close_the_informed_bounds_gap():
    tiger = tasks.Tiger()
    pomdp = as_pomdp(tiger)
    optimum = two_state_bound(tiger, 0.95, tolerance=1e-12)  # the grid's value iteration: within 2e-9 of V*(b0)
    informed, Q = informed_from_above(pomdp, 0.95, Deadline.after(30))
    bound = refined(model_of(tiger, 0.05), Q, Deadline.after(60), np.random.default_rng(0))
    assert bound >= optimum - 1e-8
    assert bound - optimum < 0.2 * (informed - optimum)  # most of the informed bound's excess gone


def test_where_each_observation_names_the_state_the_bound_is_the_optimum_one_action_before_it():
    """The agent sees the state after its first action: ``V*(b0) = max_a sum_s b0(s) Q(s, a)``, ``Q`` the fully
    observable MDP's (by value iteration here), below the MDP's ``sum_s b0(s) max_a Q(s, a)``."""
    rng = np.random.default_rng(4)
    S, A, gamma = 6, 3, 0.9
    T, R, b0 = rng.dirichlet(np.ones(S) * 0.5, size=(S, A)), rng.normal(size=(S, A)), rng.dirichlet(np.ones(S))
    world = fsc.POMDP(transition=T, observation=np.broadcast_to(np.eye(S), (A, S, S)).copy(),
                      reward=np.broadcast_to(R[:, :, None, None], (S, A, S, S)).copy(), initial=b0, discount=gamma)  # fmt: skip
    Q = np.zeros((S, A))
    for _ in range(600):
        Q = R + gamma * T @ Q.max(axis=1)
    optimum = float((b0 @ Q).max())
    assert optimum < mdp_bound(world, gamma) - 1e-3
    assert upper_bound(world, gamma, seconds=30) == pytest.approx(optimum, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_on_random_worlds_the_bound_lies_between_a_controller_found_and_the_informed_bound(seed):
    world = random_world(seed)
    search = Search(model_of(world, 0.1), 300, np.random.default_rng(seed))
    while not search.done and search.stages < 300:
        search.advance()
    found = search.graph().value  # a controller's exact value: at most V*(b0)
    bound = upper_bound(world, 0.9, seconds=30)
    assert found <= bound + 1e-9
    assert bound <= informed_bound(world, 0.9) + 1e-9
    assert bound == upper_bound(world, 0.9, seconds=30)  # time to spare: the same bound on every run


def test_the_trials_stop_at_the_deadline():
    world = random_world(0, S=60, A=4, O=6, discount=0.99)
    informed, Q = informed_from_above(as_pomdp(world), 0.99, Deadline.after(30))
    deadline = Deadline.after(0.3)
    bound = refined(model_of(world, 0.01), Q, deadline, np.random.default_rng(0))
    assert deadline.remaining() > -0.3 and bound <= informed + 1e-9
