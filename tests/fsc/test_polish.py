"""Node improvement and iterated local search on policy graphs (fsc.solver.graph.improve, kick, polish; the portfolio's
``polish``): a hand-derived case on Tiger, the one-step value by loops over everything, and the framework's own
evaluator (independent of the graph's linear system) for the graphs they return."""

import time

import numpy as np
import pytest

import fsc
import tasks
from fsc.objective import Objective
from fsc.solver import METHODS, Budget, Polish
from fsc.solver.graph import _backed_up, _kicked, as_policy, compress, evaluate_graph, fits, improve, kick, occupancy, polish, until
from fsc.solver.pointbased import Search, model
from tests.fsc.sparse_world import random_model

LISTEN, OPEN_LEFT, OPEN_RIGHT = range(3)
HEAR_LEFT, HEAR_RIGHT = range(2)


def ram_value(world, graph, memories: int, reset: float = 0.05) -> float:
    """The framework's exact value of the graph mapped onto ``RAM(memories)``."""
    pomdp = fsc.as_pomdp(world)
    arch = fsc.RAM(memories, arms=pomdp.num_actions, observations=pomdp.num_observations)
    return float(fsc.evaluate(world, as_policy(graph, arch), reset=reset).value)


def test_a_node_whose_best_action_does_not_fit_takes_the_best_successors_of_its_own():
    """Tiger on ``ram:1`` (one node of each action).  The listening node goes on listening after hearing the tiger on
    the left and opens the left door after hearing it on the right, where the tiger is less likely: worth
    about -176.  At the belief it is reached in (the tiger on the left at 0.82), the best action is to open the right
    door, whose one node is taken; its own action, listening, with the best successors there (listen again after
    either sound: opening the left door costs more than it pays) is worth more than it is.  So the graph becomes
    "listen forever", -1 / (1 - gamma) = -20 (a node may only change to an action with room left, and none has)."""
    world = model(tasks.Tiger(), 0.05)
    graph = evaluate_graph(world, [LISTEN, OPEN_LEFT, OPEN_RIGHT], [[LISTEN, OPEN_LEFT], [LISTEN, LISTEN], [OPEN_LEFT, OPEN_RIGHT]], initial=0)
    assert graph.value == pytest.approx(-176.478, abs=1e-3)
    better = improve(world, graph, 1, 1)
    assert better.value == pytest.approx(-20.0, abs=1e-8)
    assert better.action.tolist() == [LISTEN, OPEN_LEFT, OPEN_RIGHT] and better.successor[0].tolist() == [LISTEN, LISTEN]
    assert ram_value(tasks.Tiger(), better, 1) == pytest.approx(better.value, abs=1e-8)


def test_the_one_step_value_of_given_successors_is_the_loop_formula():
    rng = np.random.default_rng(7)
    world, transition, observation = random_model(rng)
    S, A, O = world.shape
    k, n = 9, 5
    vectors, beliefs = rng.normal(size=(n, S)), rng.dirichlet(np.ones(S), size=k)
    action, successor = rng.integers(A, size=k), rng.integers(n, size=(k, O))
    found = _backed_up(world, beliefs, action, successor, vectors)
    for j in range(k):
        a = action[j]
        ahead = [sum(transition[a, s, s2] * observation[a, s2, o] * vectors[successor[j, o], s2] for s2 in range(S) for o in range(O)) for s in range(S)]
        expected = sum(beliefs[j, s] * (world.reward[s, a] + 0.9 * ahead[s]) for s in range(S))
        assert found[j] == pytest.approx(expected, abs=1e-12)


def test_a_kick_moves_a_few_visited_nodes_after_observations_their_action_can_produce():
    rng = np.random.default_rng(3)
    world, _, _ = random_model(rng, S=8, A=3, O=5)
    world.observation[:, :, 4] = 0.0  # observation 4 is never heard
    world.observation[:] /= world.observation.sum(axis=2, keepdims=True)
    action, successor = rng.integers(3, size=12), rng.integers(12, size=(12, 5))
    graph = evaluate_graph(world, action, successor, initial=0)
    visits, _ = occupancy(world, graph)
    for seed in range(20):
        moved = _kicked(world, graph, np.random.default_rng(seed), 3)
        changed = np.argwhere(moved != graph.successor)
        assert len(changed) <= 3
        assert all(visits[n] > 0 and o != 4 for n, o in changed)
    assert any(len(np.argwhere(_kicked(world, graph, np.random.default_rng(seed), 3) != graph.successor)) for seed in range(20))


@pytest.fixture(scope="module")
def maze():
    """The 4x3 maze with Perseus's graph after 30 stages, compressed onto ``ram:1`` (one node of each action)."""
    world = tasks.Grid4x3()
    search = Search(model(world, 0.05), 200, np.random.default_rng(0))
    while search.stages < 30 and not search.done:
        search.advance()
    return world, search.world, compress(search.world, search.graph(), 1)


def test_polish_never_lowers_the_value_fits_the_memory_and_its_value_is_exact(maze):
    world, tables, start = maze
    found = polish(tables, start, 1, np.random.default_rng(0), steps=30)
    assert fits(found, 1) and found.value >= start.value
    assert ram_value(world, found, 1) == pytest.approx(found.value, abs=1e-9)
    assert polish(tables, start, 1, np.random.default_rng(0), deadline=0.0) is start  # no time: the graph as it was


def test_the_method_returns_a_better_policy_or_its_start(maze):
    world, tables, start = maze
    assert list(METHODS)[:2] == ["pointbased", "polish"] and METHODS["polish"] == Polish()
    arch = fsc.RAM(1, arms=4, observations=fsc.as_pomdp(world).num_observations)
    problem = Objective(world=world, architecture=arch, reset=0.05, target="return")
    policy = as_policy(start, arch)
    found = Polish(steps=20).solve(problem, policy, Budget.of(20, 60.0), np.random.default_rng(0))
    assert problem.value_of(found) >= problem.value_of(policy)
    uniform = fsc.Policy.uniform(arch)  # stochastic: rounded, then polished, and better than the uniform controller
    assert problem.value_of(Polish(steps=5).solve(problem, uniform, Budget.of(5, 60.0), np.random.default_rng(0))) > problem.value_of(uniform)
    chain = fsc.Chain(2, arms=4, observations=fsc.as_pomdp(world).num_observations)  # no policy graph: the start itself
    other = fsc.Policy.uniform(chain)
    assert Polish().solve(Objective(world=world, architecture=chain, reset=0.05, target="return"), other, Budget.of(5, 60.0), np.random.default_rng(0)) is other
    with pytest.raises((ValueError, TypeError), match="kicks"):
        Polish(kicks=0)


def test_the_method_cut_short_while_it_reads_the_graph_returns_its_start(maze):
    """Inside a portfolio's time limit (``until``), the evaluation of the start's graph may be the one the limit cuts:
    the method returns its start (a shaped world's objective has no handler for the limit around it)."""
    world, _, start = maze
    arch = fsc.RAM(1, arms=4, observations=fsc.as_pomdp(world).num_observations)
    problem = Objective(world=world, architecture=arch, reset=0.05, target="return")
    for policy in (as_policy(start, arch), fsc.Policy.uniform(arch)):
        with until(time.monotonic() - 1.0):
            assert Polish().solve(problem, policy, Budget.of(5, 60.0), np.random.default_rng(0)) is policy


def test_the_method_ends_after_patience_kicks_without_a_gain(monkeypatch):
    """At Tiger's optimum on ``ram:4`` no kick can gain: ``patience`` kicks, then the method ends, its start returned."""
    tiger = tasks.Tiger()
    search = Search(model(tiger, 0.05), 300, np.random.default_rng(0))
    while not search.done:
        search.advance()
    arch = fsc.RAM(4, arms=3, observations=2)
    problem = Objective(world=tiger, architecture=arch, reset=0.05, target="return")
    policy = as_policy(search.graph(4), arch)
    assert problem.value_of(policy) == pytest.approx(19.3714, abs=1e-4)  # the optimum (fsc.bounds.two_state_bound)
    calls = []
    monkeypatch.setattr("fsc.solver.methods.kick", lambda *args: calls.append(1) or kick(*args))
    assert Polish(patience=4, steps=1000).solve(problem, policy, Budget.of(1000, 60.0), np.random.default_rng(0)) is policy
    assert len(calls) == 4
