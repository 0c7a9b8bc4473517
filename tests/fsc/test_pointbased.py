"""Belief-guided starts: Perseus, policy graphs and their controllers on RAM, against closed forms, Tiger's known
optimum (19.3714 at discount 0.95) and the framework's own evaluator (independent of the graph's linear system)."""

import attrs
import numpy as np
import pytest

import fsc
import tasks
from fsc.errors import InputError, InputTypeError
from fsc.objective import Objective
from fsc.solver import METHODS, Budget, PointBased, Portfolio
from fsc.solver.graph import as_policy, closed_graph, compress, evaluate_graph, fits, occupancy
from fsc.solver.pointbased import Search, blind_values, model, perseus_stage

TIGER_OPTIMUM = 19.3714  # tiger.95: fsc.bounds.two_state_bound, 19.37140 (SARSOP brackets it by 19.3711 / 19.3721)
LISTEN, OPEN_LEFT, OPEN_RIGHT = range(3)


def tiger_search(seed: int = 0, beliefs: int = 300) -> Search:
    world = tasks.Tiger()
    search = Search(model(world, 0.05), beliefs, np.random.default_rng(seed))
    while not search.done:
        search.advance()
    return search


def ram_value(world, graph, memories: int) -> float:
    """The framework's exact value of the graph mapped onto ``RAM(memories)``."""
    pomdp = fsc.as_pomdp(world)
    arch = fsc.RAM(memories, arms=pomdp.num_actions, observations=pomdp.num_observations)
    return float(fsc.evaluate(world, as_policy(graph, arch), reset=0.05).value)


def test_a_hand_checked_graph_has_its_closed_form_value_here_and_on_ram():
    tiger = tasks.Tiger()
    world, gamma = model(tiger, 0.05), 0.95
    listen = evaluate_graph(world, [LISTEN], [[0, 0]])
    assert listen.value == pytest.approx(-1 / (1 - gamma), abs=1e-9)  # listen forever: -20
    # Listen, then open the left door whatever was heard (the tiger is placed anew), and again: the start belief
    # comes back every two steps, so V = -1 + gamma (0.5 (-100) + 0.5 (10)) + gamma^2 V.
    cycle = evaluate_graph(world, [LISTEN, OPEN_LEFT], [[1, 1], [0, 0]], initial=0)
    assert cycle.value == pytest.approx((-1 - 45 * gamma) / (1 - gamma**2), abs=1e-9)
    assert cycle.vectors[1] == pytest.approx([-100 + gamma * cycle.value, 10 + gamma * cycle.value], abs=1e-9)
    assert ram_value(tiger, cycle, 1) == pytest.approx(cycle.value, abs=1e-9)  # two actions: one memory holds both
    visits, beliefs = occupancy(world, cycle)
    assert visits == pytest.approx([1 / (1 - gamma**2), gamma / (1 - gamma**2)], rel=1e-9)  # they sum to 1 / (1 - gamma)
    assert beliefs == pytest.approx(np.full((2, 2), 0.5), abs=1e-12)


def test_perseus_reaches_tigers_optimum_from_below_and_never_lowers_a_beliefs_value():
    world = model(tasks.Tiger(), 0.05)
    search = Search(world, 300, np.random.default_rng(0))
    before = (search.beliefs @ search.vectors.T).max(axis=1)
    while not search.done:
        search.advance()
        after = (search.beliefs @ search.vectors.T).max(axis=1)
        assert np.all(after >= before - 1e-12)
        before = after
    assert search.bound <= TIGER_OPTIMUM + 1e-4  # the value of a controller
    assert search.bound == pytest.approx(TIGER_OPTIMUM, abs=0.05)


def test_the_blind_values_solve_their_own_equation():
    world = model(tasks.Tiger(), 0.05)
    blind = blind_values(world)
    assert blind[LISTEN] == pytest.approx([-20.0, -20.0], abs=1e-9)
    # Opening a door forever: R + 0.95 * (the mean of the two values), as the tiger is placed anew each time.
    mean = blind[OPEN_LEFT].mean()
    assert blind[OPEN_LEFT] == pytest.approx([-100 + 0.95 * mean, 10 + 0.95 * mean], abs=1e-9)


def test_tigers_policy_graph_is_closed_optimal_and_its_value_is_its_alpha_vector_at_the_start():
    tiger = tasks.Tiger()
    search = tiger_search()
    graph = search.graph()
    assert graph.value == pytest.approx(TIGER_OPTIMUM, abs=1e-4)
    assert graph.value == pytest.approx(graph.vectors[graph.initial] @ np.array([0.5, 0.5]), abs=1e-12)
    assert graph.value >= search.bound - 1e-9
    assert ram_value(tiger, graph, graph.size) == pytest.approx(graph.value, abs=1e-9)  # the framework's evaluator agrees
    # Closed: each node's successors are the vectors best after its witness belief, and the values are a fixed point.
    again = closed_graph(search.world, graph.vectors, graph.action, np.repeat([[0.5, 0.5]], graph.size, axis=0))
    assert again.value <= graph.value + 1e-9


def test_the_conversion_to_ram_gives_a_valid_deterministic_policy_of_the_graphs_value():
    tiger = tasks.Tiger()
    graph = tiger_search().graph()
    for memories in (int(np.bincount(graph.action).max()), 8):
        arch = fsc.RAM(memories, arms=3, observations=2)
        policy = as_policy(graph, arch)
        probs = policy.probs().detach().numpy()
        assert probs.shape == (arch.num_nodes, arch.num_choices)
        assert np.allclose(probs.sum(axis=1), 1.0) and set(np.unique(probs)) <= {0.0, 1.0}
        assert policy.init_probs().detach().numpy()[0] == 1.0
        assert float(fsc.evaluate(tiger, policy).value) == pytest.approx(graph.value, abs=1e-9)
    with pytest.raises(InputError, match="does not fit"):
        as_policy(graph, fsc.RAM(1, arms=3, observations=2))
    with pytest.raises(InputTypeError, match="RAM"):
        as_policy(graph, fsc.Chain(2, arms=3, observations=2))


def test_compression_fits_the_memory_and_its_value_is_exact():
    tiger = tasks.Tiger()
    search = tiger_search()
    for memories in (1, 2, 4):
        small = compress(search.world, search.graph(), memories)
        assert fits(small, memories)
        assert ram_value(tiger, small, memories) == pytest.approx(small.value, abs=1e-9)
        assert search.graph(memories).value >= small.value - 1e-12
    assert search.graph(1).value == pytest.approx(-20.0, abs=1e-9)  # one memory: no controller beats listening forever
    assert search.graph(4).value == pytest.approx(TIGER_OPTIMUM, abs=1e-4)


def test_the_method_finds_tigers_optimum_on_ram_4_and_never_returns_worse_than_its_start():
    tiger = tasks.Tiger()
    arch = fsc.RAM(4, arms=3, observations=2)
    problem = Objective(world=tiger, architecture=arch, reset=0.05, target="return")
    found = PointBased().solve(problem, fsc.Policy.uniform(arch), Budget.of(500, 60.0), np.random.default_rng(0))
    assert float(fsc.evaluate(tiger, found).value) == pytest.approx(TIGER_OPTIMUM, abs=1e-4)
    assert PointBased().solve(problem, found, Budget.of(5, 60.0), np.random.default_rng(1)) is found  # nothing better: the start
    chain = fsc.Chain(2, arms=3, observations=2)
    other = Objective(world=tiger, architecture=chain, reset=0.05, target="return")
    start = fsc.Policy.uniform(chain)
    assert PointBased().solve(other, start, Budget.of(5, 60.0), np.random.default_rng(0)) is start  # not a RAM: the start


def test_the_same_seed_gives_the_same_search_and_the_same_solution():
    first, second = tiger_search(seed=3), tiger_search(seed=3)
    assert np.array_equal(first.beliefs, second.beliefs) and np.array_equal(first.vectors, second.vectors)
    solutions = [Portfolio(seconds=60, seed=5, rounds=1, methods="pointbased,greedy").solve(tasks.Tiger(), "ram:2") for _ in range(2)]
    assert solutions[0].value == solutions[1].value
    assert np.array_equal(solutions[0].policy.logits.numpy(), solutions[1].policy.logits.numpy())


def test_a_stage_keeps_an_old_vector_where_a_backup_does_not_improve():
    world = model(tasks.Tiger(), 0.05)
    search = tiger_search()
    vectors, actions, witness, gain = perseus_stage(world, search.vectors, search.actions, search.witness, search.beliefs, np.random.default_rng(0))
    assert gain >= 0
    assert np.all((search.beliefs @ vectors.T).max(axis=1) >= (search.beliefs @ search.vectors.T).max(axis=1) - 1e-12)
    assert len(vectors) == len(actions) == len(witness)


def test_settings_are_checked_and_the_method_is_first_in_the_portfolio():
    assert list(METHODS)[0] == "pointbased" and METHODS["pointbased"] == PointBased()
    assert attrs.asdict(PointBased()) == {"beliefs": 1000, "steps": 500}
    for bad in ({"beliefs": 0}, {"steps": 0}, {"beliefs": 2.5}):
        with pytest.raises((ValueError, TypeError), match=next(iter(bad))):
            PointBased(**bad)
    with pytest.raises(InputError, match="successors"):
        evaluate_graph(model(tasks.Tiger(), 0.05), [0], [[0]])
    with pytest.raises(InputError, match="lie in"):
        evaluate_graph(model(tasks.Tiger(), 0.05), [3], [[0, 0]])


def test_fsc_solve_reaches_the_settings_and_refuses_bad_ones_in_one_line(capsys):
    from fsc.cli import main, make_parser
    from fsc.cli.solve import _solver

    argv = ["solve", "--world", "tiger", "--methods", "pointbased,greedy", "--pointbased-beliefs", "50", "--pointbased-steps", "7"]
    args = make_parser("solve").parse_args(argv)
    assert _solver(args).methods[0] == PointBased(beliefs=50, steps=7)
    for options, word in [(["--pointbased-beliefs", "0"], "beliefs"), (["--methods", "em", "--pointbased-steps", "5"], "pointbased is not among")]:
        assert main(["solve", "--world", "tiger", "--memory", "ram:1", "--quiet", *options]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and word in err[0], err
