"""Belief-guided starts: Perseus, policy graphs and their controllers on RAM, against closed forms, Tiger's known
optimum (19.3714 at discount 0.95) and the framework's own evaluator (independent of the graph's linear system)."""

import itertools

import attrs
import numpy as np
import pytest
import scipy.sparse as sp

import fsc
import tasks
from fsc.errors import InputError, InputTypeError
from fsc.io.pomdpx import parse_pomdpx
from fsc.objective import Objective
from fsc.solver import METHODS, Budget, PointBased, Portfolio
from fsc.solver.graph import Model, as_policy, backup, closed_graph, compress, evaluate_graph, fits, merge, minimise, occupancy
from fsc.solver.pointbased import Search, blind_values, model, perseus_stage
from tests.fsc.rocksample_pomdpx import rocksample_flat, rocksample_pomdpx
from tests.fsc.sparse_world import random_model

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


@pytest.mark.parametrize("reset", [1e-5, 1e-7])
def test_a_graph_of_a_discount_near_one_has_its_closed_form_value(reset, monkeypatch):
    """The same hand-checked cycle at discounts where sweeps cannot settle (0.99999, 0.9999999): solved directly
    (never by BiCGSTAB, which can stall there), its value is the closed form, written without cancellation
    (1 - gamma^2 = r (2 - r)), to relative 1e-9 (the system's condition number is about 1 / r)."""
    monkeypatch.setattr("fsc.solver.graph.bicgstab", lambda *args, **kwargs: pytest.fail("BiCGSTAB on a graph of 4 pairs"))
    world, gamma = model(tasks.Tiger(), reset), 1 - reset
    cycle = evaluate_graph(world, [LISTEN, OPEN_LEFT], [[1, 1], [0, 0]], initial=0)
    assert cycle.value == pytest.approx((-1 - 45 * gamma) / (reset * (2 - reset)), rel=1e-9)
    assert evaluate_graph(world, [LISTEN], [[0, 0]]).value == pytest.approx(-1 / reset, rel=1e-9)


def test_perseus_reaches_tigers_optimum_from_below_and_never_lowers_a_beliefs_value():
    world = model(tasks.Tiger(), 0.05)
    search = Search(world, 300, np.random.default_rng(0))
    while not search.done:
        beliefs = search.beliefs  # a stage backs up this set; the set may grow or be renewed after it
        before = (beliefs @ search.vectors.T).max(axis=1)
        search.advance()
        assert np.all((beliefs @ search.vectors.T).max(axis=1) >= before - 1e-12)
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
    vectors, actions, witness, gain, origin = perseus_stage(world, search.vectors, search.actions, search.witness, search.beliefs, np.random.default_rng(0))
    assert gain >= 0
    assert origin.shape == (len(vectors), 3) and np.array_equal(vectors[origin[:, 0] >= 0], search.vectors[origin[origin[:, 0] >= 0, 0]])
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


def rocksample_model(n: int, k: int) -> Model:
    """RockSample[n, k] (tests/fsc/rocksample_pomdpx.py, built state by state) as belief computations read it."""
    flat = rocksample_flat(n, k)
    backward = tuple(sp.csr_matrix(flat["transition"][:, a]) for a in range(flat["transition"].shape[1]))
    return Model(discount=0.95, reward=flat["reward"], forward=tuple(t.T.tocsr() for t in backward), backward=backward,
                 observation=flat["observation"], initial=flat["initial"])  # fmt: skip


# RockSample[3, 2] (seed 0): rock 0 at (2, 0), rock 1 at (1, 2), the robot at (0, 1); actions north, south, east,
# west, sample, check0, check1; a state is cell * 4 + rocks, an observation sensor * 10 + the cell it was made in.
NORTH, EAST, SAMPLE, CHECK1 = 0, 2, 4, 6
GOOD1, BAD1 = 1 * 10 + 5, 2 * 10 + 5  # the sensor at cell c1_2 (index 5)


def hand_plan() -> tuple[list[int], np.ndarray]:
    """North, east (onto rock 1), check it (distance 0: the sensor is right), sample it if good, then east to the exit
    and east forever (nothing more to gain there)."""
    action = [NORTH, EAST, CHECK1, SAMPLE, EAST, EAST, EAST]
    successor = np.repeat([[1], [2], [0], [4], [5], [6], [6]], 30, axis=1)
    successor[2, GOOD1], successor[2, BAD1] = 3, 4
    return action, successor


def test_a_hand_made_rocksample_plan_has_its_hand_derived_value_and_minimises_onto_ram_2():
    world, gamma = rocksample_model(3, 2), 0.95
    graph = evaluate_graph(world, *hand_plan(), initial=0)
    # Rock 1 good (1/2): +10 sampling at step 3, +10 leaving at step 5; bad: +10 leaving at step 4.
    assert graph.value == pytest.approx(0.5 * (10 * gamma**3 + 10 * gamma**5) + 0.5 * 10 * gamma**4, abs=1e-9)
    assert not fits(graph, 2)  # four nodes play east
    small = minimise(world, graph)  # the three last east nodes all walk east forever: one node
    assert small.size == 5 and fits(small, 2)
    assert small.value == pytest.approx(graph.value, abs=1e-12)
    assert compress(world, graph, 2).value == pytest.approx(graph.value, abs=1e-12)
    pomdp = parse_pomdpx(rocksample_pomdpx(3, 2))
    policy = as_policy(compress(world, graph, 2), fsc.RAM(2, arms=7, observations=30))
    assert float(fsc.evaluate(pomdp, policy, reset=0.05).value) == pytest.approx(graph.value, abs=1e-9)  # the framework agrees
    assert compress(world, small, 8) is small  # a graph that fits is kept as it is


@pytest.mark.parametrize("merge_pairs", [200_000, 0])
def test_merging_keeps_the_graph_exact_and_fits_the_memory(merge_pairs, monkeypatch):
    """Whether the graphs on the way are solved exactly or for ranking (a graph of more than ``MERGE_PAIRS`` pairs),
    the merged graph's values are exact at every pair."""
    monkeypatch.setattr("fsc.solver.graph.MERGE_PAIRS", merge_pairs)
    world = rocksample_model(3, 2)
    graph = evaluate_graph(world, *hand_plan(), initial=0)
    pomdp = parse_pomdpx(rocksample_pomdpx(3, 2))
    merged = merge(world, graph, 1)
    assert fits(merged, 1) and merged.value <= graph.value + 1e-12
    again = evaluate_graph(world, merged.action, merged.successor, initial=merged.initial)
    assert again.value == pytest.approx(merged.value, abs=1e-12)
    np.testing.assert_allclose(merged.vectors, again.vectors, rtol=1e-11, atol=1e-11)
    policy = as_policy(merged, fsc.RAM(1, arms=7, observations=30))
    assert float(fsc.evaluate(pomdp, policy, reset=0.05).value) == pytest.approx(merged.value, abs=1e-9)


def test_the_occupancy_on_the_pairs_a_run_reaches_is_the_dense_solve_on_every_pair():
    """The hand plan on RockSample[3, 2] reaches few of its 7 x 37 pairs (each node is played in one or two cells):
    the visits and beliefs solved on the reached pairs alone equal those of the transposed system on every pair,
    built here entry by entry from the world's tables and solved densely."""
    world, gamma = rocksample_model(3, 2), 0.95
    action, successor = hand_plan()
    graph = evaluate_graph(world, action, successor, initial=0)
    S, _, O = world.shape
    N = len(action)
    step = np.zeros((N * S, N * S))
    for n, a in enumerate(action):
        T = world.backward[a].toarray()
        for o in range(O):
            m = successor[n, o]
            step[n * S : (n + 1) * S, m * S : (m + 1) * S] += T * world.observation[a, :, o][None]
    start = np.zeros(N * S)
    start[:S] = world.initial
    pairs = np.linalg.solve(np.eye(N * S) - gamma * step.T, start).reshape(N, S)
    visits, beliefs = occupancy(world, graph)
    assert visits == pytest.approx(pairs.sum(axis=1), abs=1e-10)
    assert visits.sum() == pytest.approx(1 / (1 - gamma), rel=1e-10)
    reached = visits > 0
    assert beliefs[reached] == pytest.approx(pairs[reached] / visits[reached, None], abs=1e-10)
    assert (np.abs(pairs) > 1e-12).sum() < 0.2 * N * S  # the case the restriction is for: few pairs reached


def test_perseus_on_a_small_rocksample_beats_the_hand_plan_and_the_plan_of_its_best_vector_is_worth_the_bound():
    world = rocksample_model(3, 2)
    hand = evaluate_graph(world, *hand_plan(), initial=0).value
    search = Search(world, 300, np.random.default_rng(0))
    while not search.done and search.stages < 300:
        search.advance()
    assert search.bound >= hand - 1e-9
    best = int(np.argmax(search.vectors @ world.initial))
    plan = search.plans.graph(world, int(search.ids[best]), 10**6)  # the alpha vector's own controller
    assert plan.value == pytest.approx(search.bound, abs=1e-9)
    assert search.graph().value >= search.bound - 1e-9
    pomdp = parse_pomdpx(rocksample_pomdpx(3, 2))
    for memories in (1, 2, 4):
        small = search.graph(memories)
        assert fits(small, memories)
        policy = as_policy(small, fsc.RAM(memories, arms=7, observations=30))
        assert float(fsc.evaluate(pomdp, policy, reset=0.05).value) == pytest.approx(small.value, abs=1e-9)


def test_the_plan_is_said_to_outgrow_a_graph_once_per_share_of_its_limit_it_passes(monkeypatch):
    """On RockSample[3, 2] the best vector's plan grows with the stages: with a limit of 8 nodes per plan and shares of
    a quarter and three quarters, the search says so the first stage its minimal plan, made a graph, has more than 2
    nodes, the first it has more than 6, and the first it has more than 8 (no longer fits) after a stage it fitted;
    a jump past several is said once.  It watches the plan after every stage from the first share on, while the plan
    fits, and the best plan that fitted is what a graph falls back on: worth the best bound seen while it fitted."""
    monkeypatch.setattr("fsc.solver.pointbased.PLAN_NODES", 8)
    monkeypatch.setattr("fsc.solver.pointbased.PLAN_WARNINGS", (0.25, 0.75))
    monkeypatch.setattr("fsc.solver.pointbased.CLOSED_PAIRS", 0)
    world = rocksample_model(3, 2)
    search = Search(world, 300, np.random.default_rng(0))
    passed, fitted, said, best_fitting = 0, True, 0, -np.inf
    while not search.done and search.stages < 60:
        search.advance()
        nodes = search.plans.graph(world, search.best_id, 10**6).size
        now = (nodes > 2) + (nodes > 6)
        if nodes <= 8:
            best_fitting = max(best_fitting, search.bound)
        expected = now > passed or (fitted and nodes > 8)
        assert search.plan_outgrowing() == expected
        said += expected
        assert search.plan_watched == (now > 0 and nodes <= 8)
        passed, fitted = max(passed, now), nodes <= 8
    assert passed == 2 and said >= 2
    assert nodes > 8  # the plan has outgrown the limit: the graph is the best plan that fitted (the vectors' own not made)
    assert search.graph().value == pytest.approx(best_fitting, abs=1e-9)


@pytest.mark.parametrize("dense_after", [0, 10**9])
@pytest.mark.parametrize("sparse_beliefs", [False, True])
@pytest.mark.parametrize("sparse_share", [0.0, 1.0])
def test_the_backup_is_the_dense_formula(dense_after, sparse_beliefs, sparse_share, monkeypatch):
    """On a random world with zeros in its observations: each action's vector, and the best, by loops over everything;
    the beliefs after the observations scored as a sparse or a dense matrix, from beliefs on every state or on a few
    (so that some observations go unheard), moved through the transitions as dense or sparse matrices."""
    monkeypatch.setattr("fsc.solver.graph.DENSE_AFTER", dense_after)
    monkeypatch.setattr("fsc.solver.graph.SPARSE_SCORES", sparse_share)
    monkeypatch.setattr("fsc.solver.graph.SPARSE_MOVES", 0)
    rng = np.random.default_rng(4)
    S, A, O, k, n = 6, 3, 4, 5, 7
    world, transition, observation = random_model(rng, S, A, O)
    vectors, beliefs = rng.normal(size=(n, S)), rng.dirichlet(np.ones(S), size=k)
    if sparse_beliefs:
        beliefs = np.where(rng.random((k, S)) < 0.3, beliefs, 0.0)
        beliefs[:, 0] += 1e-3
        beliefs /= beliefs.sum(axis=1, keepdims=True)
    value, action, new, choice = backup(world, vectors, beliefs)
    for j, b in enumerate(beliefs):
        q = []
        for a in range(A):
            after = [(b @ transition[a]) * observation[a][:, o] for o in range(O)]
            pick = [int(np.argmax([after[o] @ v for v in vectors])) for o in range(O)]
            vector = world.reward[:, a] + 0.9 * transition[a] @ sum(observation[a][:, o] * vectors[pick[o]] for o in range(O))
            q.append((b @ vector, a, vector))
        best = max(q, key=lambda item: item[0])
        assert value[j] == pytest.approx(best[0], abs=1e-12) and action[j] == best[1]
        assert new[j] == pytest.approx(best[2], abs=1e-12)


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_merge_scores_on_the_beliefs_nonzero_entries_equal_the_dense_product(monkeypatch, share):
    """The scores that rank merges (:func:`fsc.solver.graph._scores`) are ``beliefs @ vectors.T`` whether the beliefs
    are multiplied dense or on their nonzero entries (a few states each, as a plan's nodes are reached)."""
    from fsc.solver.graph import _scores

    monkeypatch.setattr("fsc.solver.graph.SPARSE_SCORES", share)
    rng = np.random.default_rng(5)
    beliefs = rng.random((7, 50)) * (rng.random((7, 50)) < 0.1)
    vectors = rng.normal(size=(9, 50))
    expected = np.array([[sum(beliefs[i, s] * vectors[j, s] for s in range(50)) for j in range(9)] for i in range(7)])
    assert np.allclose(_scores(beliefs, vectors), expected, rtol=1e-13, atol=1e-13)


def test_a_plan_may_have_as_many_pairs_as_half_the_free_memory_holds(monkeypatch):
    """The most nodes of a plan made a graph: at most :data:`PLAN_PAIRS` pairs (node, state), and at most one pair
    for every ``2 * PLAN_PAIR_BYTES`` bytes free when the search starts."""
    import fsc.solver.pointbased as pointbased

    world = rocksample_model(3, 2)
    states = world.shape[0]
    monkeypatch.setattr(pointbased, "available_bytes", lambda: 2 * pointbased.PLAN_PAIR_BYTES * states * 5 + 1)
    assert Search(world, 50, np.random.default_rng(0)).plan_nodes == 5
    monkeypatch.setattr(pointbased, "available_bytes", lambda: 10**15)
    assert Search(world, 50, np.random.default_rng(0)).plan_nodes == min(pointbased.PLAN_NODES, pointbased.PLAN_PAIRS // states)


@pytest.mark.parametrize("stalls", [True, False])
def test_a_full_set_whose_start_value_stands_still_is_refreshed_without_counting(stalls, monkeypatch):
    """On a full set, a stage that leaves the value at the start belief where it stood ``STALL_STAGES`` stages before
    (within ``STALL_GAIN`` of the scale) refreshes the set, not counted among the refreshes of a settled set; never
    when no gain counts as a stall."""
    import fsc.solver.pointbased as pointbased

    monkeypatch.setattr(pointbased, "STALL_STAGES", 2)
    monkeypatch.setattr(pointbased, "STALL_GAIN", 1.0 if stalls else -1.0)
    from fsc.io.pomdp_file import parse_pomdp
    from tests.fsc.sparse_world import sparse_world_text

    world = parse_pomdp(sparse_world_text(S=40, A=3, O=5, seed=3), source="sparse")  # its values move for many stages
    search = Search(model(world, 0.05), 40, np.random.default_rng(0))
    calls = []
    refresh = search.refresh
    monkeypatch.setattr(search, "refresh", lambda counted=True: (calls.append((counted, len(search.beliefs), search.stages)), refresh(counted))[1])
    while search.stages < 80 and not search.done:
        search.advance()
    uncounted = [call for call in calls if not call[0]]
    assert search.refreshes == len(calls) - len(uncounted)
    if stalls:
        assert uncounted and all(size >= search.most for _, size, _ in uncounted)
        assert all(later - earlier > 2 for (_, _, earlier), (_, _, later) in itertools.pairwise(uncounted))  # two stages' record at least
    else:
        assert not uncounted


def test_a_graph_solved_for_ranking_is_exact_on_the_pairs_a_run_reaches_and_keeps_the_guess_elsewhere():
    """On a hand-made RockSample plan: the pairs a run from the initial node reaches (a breadth-first walk here, on the
    nonzero entries of the exact solve's operator) hold the exact values to the ranking tolerance, the others the
    guess; the value at the start is exact to that tolerance; without an initial node it is refused."""
    from fsc.solver.graph import RANKING_TOLERANCE, _system

    world = rocksample_model(3, 2)
    action, successor = hand_plan()
    exact = evaluate_graph(world, action, successor, initial=0)
    guess = np.full_like(exact.vectors, 123.0)
    ranked = evaluate_graph(world, action, successor, initial=0, guess=guess, ranking=True)
    step, _ = _system(world, np.asarray(action), np.asarray(successor))
    seen = {int(s) for s in np.flatnonzero(world.initial > 0)}
    frontier = list(seen)
    while frontier:
        pair = frontier.pop()
        for after in step.indices[step.indptr[pair] : step.indptr[pair + 1]]:
            if int(after) not in seen:
                seen.add(int(after))
                frontier.append(int(after))
    reached = np.zeros(exact.vectors.size, dtype=bool)
    reached[sorted(seen)] = True
    assert 0 < reached.sum() < reached.size
    scale = np.abs(exact.vectors).max()
    np.testing.assert_allclose(ranked.vectors.reshape(-1)[reached], exact.vectors.reshape(-1)[reached], atol=100 * RANKING_TOLERANCE * scale)
    assert (ranked.vectors.reshape(-1)[~reached] == 123.0).all()
    assert ranked.value == pytest.approx(exact.value, abs=100 * RANKING_TOLERANCE * scale)
    with pytest.raises(InputError, match="initial node"):
        evaluate_graph(world, action, successor, guess=guess, ranking=True)
