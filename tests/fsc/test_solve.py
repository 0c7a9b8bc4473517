"""fsc.solve and its methods: references from enumeration, the bounds and finite differences, never from the solver."""

import itertools
import json

import attrs
import numpy as np
import pytest

import fsc
import tasks
from fsc.bounds import informed_bound, mdp_bound, two_state_bound
from fsc.cli import main
from fsc.errors import InputError
from fsc.objective import Objective
from fsc.solver import METHODS, Budget, Portfolio, embed, random_start, solve, split, upper_bound


def objective_of(*, world, architecture, reset) -> Objective:
    """The objective the solver's methods climb: the discounted return."""
    return Objective(world=world, architecture=architecture, reset=reset, target="return")


def small_world(seed: int, S: int = 3, A: int = 2, O: int = 2, discount: float = 0.9) -> fsc.POMDP:
    rng = np.random.default_rng(seed)
    return fsc.POMDP(
        transition=rng.dirichlet(np.ones(S) * 0.5, size=(S, A)),
        observation=rng.dirichlet(np.ones(O), size=(A, S)),
        reward=np.broadcast_to(rng.normal(size=(S, A, 1, 1)), (S, A, S, O)).copy(),
        initial=rng.dirichlet(np.ones(S)),
        discount=discount,
    )


def best_deterministic(world: fsc.POMDP, arch) -> float:
    """The best value over every deterministic policy on ``arch`` (every choice of every node), by enumeration."""
    N, C = arch.num_nodes, arch.num_choices
    best = -np.inf
    for choices in itertools.product(range(C), repeat=N):
        probs = np.eye(C)[list(choices)]
        init = np.eye(N)[0]
        best = max(best, float(fsc.evaluate(world, fsc.Policy.from_probs(arch, probs, init)).value))
    return best


def value(world, policy) -> float:
    return float(fsc.evaluate(world, policy).value)


def test_the_gradient_the_methods_follow_is_the_value_moved_one_probability_at_a_time():
    world = small_world(1)
    arch = fsc.RAM(2, arms=2, observations=2)
    problem = objective_of(world=world, architecture=arch, reset=0.1)
    policy = fsc.Policy.random(arch, 3)
    probs, init = policy.probs().numpy().copy(), policy.init_probs().numpy().copy()
    look = problem.look(probs, init)
    assert look.value == pytest.approx(value(world, policy), abs=1e-12)
    assert look.occupancy.sum() == pytest.approx(1 / 0.1, rel=1e-12)  # discounted visits sum to 1 / r
    h = 1e-6
    for n, c in [(0, 1), (3, 2), (7, 0)]:
        moved = probs.copy()
        moved[n, c] += h
        assert (problem.value(moved, init) - look.value) / h == pytest.approx(look.grad[n, c], rel=1e-4, abs=1e-7)


@pytest.mark.parametrize("name", list(METHODS))
def test_each_method_never_returns_a_worse_controller_and_climbs_from_the_uniform_one(name):
    world = small_world(2)
    arch = fsc.RAM(2, arms=2, observations=2)
    problem = objective_of(world=world, architecture=arch, reset=0.1)
    rng = np.random.default_rng(0)
    for start in (fsc.Policy.uniform(arch), random_start(arch, rng)):
        found = METHODS[name].solve(problem, start, Budget.of(50, 30.0), rng)
        assert found.architecture == arch
        assert value(world, found) >= value(world, start) - 1e-12
    assert value(world, METHODS[name].solve(problem, fsc.Policy.uniform(arch), Budget.of(50, 30.0), rng)) > value(world, fsc.Policy.uniform(arch)) + 1e-6


def test_one_em_step_is_an_improvement():
    world = small_world(4)
    arch = fsc.RAM(2, arms=2, observations=2)
    problem = objective_of(world=world, architecture=arch, reset=0.1)
    start = fsc.Policy.random(arch, 5)
    values = [value(world, start)]
    policy = start
    for _ in range(5):
        policy = METHODS["em"].solve(problem, policy, Budget.of(1, 30.0), np.random.default_rng(0))
        values.append(value(world, policy))
    assert all(b >= a - 1e-12 for a, b in zip(values, values[1:], strict=False))
    assert values[-1] > values[0]


def test_solve_reaches_the_best_deterministic_controller_found_by_enumeration_and_stays_below_the_bounds():
    world = small_world(6)
    arch = fsc.RAM(1, arms=2, observations=2)  # 5 nodes, 2 choices: 32 deterministic policies
    reference = best_deterministic(world, arch)
    solution = solve(world, arch, seconds=20, seed=0, rounds=3)
    assert solution.value >= reference - 1e-9
    assert solution.value <= informed_bound(world, 0.9) + 1e-9
    assert solution.upper_bound >= solution.value - 1e-12  # the trials of point-based backups lower it below the informed
    assert solution.upper_bound <= informed_bound(world, 0.9) + 1e-9  # bound, never below a controller's value
    assert solution.upper_bound <= mdp_bound(world, 0.9) + 1e-9
    assert solution.gap == pytest.approx(solution.upper_bound - solution.value)
    assert solution.value == pytest.approx(value(world, solution.policy), abs=1e-12)


def test_a_world_in_tiny_units_is_solved_as_the_same_world_in_its_own_units():
    """Rewards times 2^-1000 (exact in float64: every value scales by it): the solver's tolerances are relative to
    the world's value scale, so it climbs to the same best controller (before, such a world looked optimal at the
    uniform controller, or was refused)."""
    tiger = fsc.model.pomdp.as_pomdp(tasks.Tiger())
    tiny = attrs.evolve(tiger, reward=np.asarray(tiger.reward) * 2.0**-1000, metrics={})
    arch = fsc.RAM(1, arms=3, observations=2)
    reference = best_deterministic(tiger, arch) * 2.0**-1000  # the enumeration on the world in its own units
    solution = solve(tiny, arch, seconds=20, seed=0, rounds=2)
    assert solution.value >= reference - 1e-9 * abs(reference)
    assert solution.value <= solution.upper_bound * (1 + 1e-9)

@pytest.mark.slow
def test_the_two_state_bound_of_tiger_is_its_optimum_and_solve_reaches_it():
    tiger = tasks.Tiger()
    bound = upper_bound(tiger, 0.95, seconds=5)
    assert bound == pytest.approx(two_state_bound(tiger, 0.95), abs=1e-8)  # 19.3714, tight to 2e-9 with 200,001 points
    solution = solve(tiger, "ram:3", seconds=30, seed=0)
    assert solution.value >= 0.98 * bound
    assert solution.value <= bound + 1e-9
    assert solution.method in METHODS


def test_solve_reaches_tigers_optimum_from_a_deterministic_enumeration():
    tiger = tasks.Tiger()
    arch = fsc.RAM(1, arms=3, observations=2)  # 7 nodes, 3 choices: 2187 deterministic controllers
    reference = best_deterministic(tiger, arch)
    solution = solve(tiger, arch, seconds=20, seed=0, rounds=2)
    assert solution.value >= reference - 1e-9
    assert solution.value <= solution.upper_bound + 1e-9


@pytest.mark.slow
def test_on_the_papers_world_solve_from_random_starts_is_at_least_as_good_as_the_column_of_confidence():
    from policies.closed_form import ccp_eps_opt, ccp_q

    mu, M, r = 0.1, 8, 1e-3
    solution = solve(tasks.TwoHypothesis(mu), f"ram:{M}", seconds=60, seed=0, reset=r)
    assert solution.metrics["q"] <= ccp_q(mu, M, r, ccp_eps_opt(mu, M, r)) + 1e-9


def test_embedding_keeps_the_value_so_solving_a_larger_memory_never_ends_worse():
    world = small_world(7, A=3)
    small = fsc.RAM(2, arms=3, observations=2)
    large = fsc.RAM(4, arms=3, observations=2)
    policy = fsc.Policy.random(small, 1)
    grown = embed(policy, large)
    assert value(world, grown) == pytest.approx(value(world, policy), abs=1e-11)
    first = solve(world, small, seconds=10, seed=0, rounds=1)
    second = solve(world, large, seconds=10, seed=0, rounds=1, start=first)
    assert second.value >= first.value - 1e-9
    with pytest.raises(InputError):
        embed(grown, small)


@pytest.mark.parametrize(("small_memory", "large_memory"), [(1, 2), (2, 3), (2, 5), (3, 3)])
def test_splitting_into_copies_keeps_the_value_and_reaches_every_copy(small_memory, large_memory):
    world = small_world(9, A=3)
    small = fsc.RAM(small_memory, arms=3, observations=2)
    large = fsc.RAM(large_memory, arms=3, observations=2)
    policy = fsc.Policy.random(small, 2)
    grown = split(policy, large, np.random.default_rng(0))
    assert value(world, grown) == pytest.approx(value(world, policy), abs=1e-11)
    old, new = policy.probs().numpy(), grown.probs().numpy()
    # Node (m, a, o) plays (m mod K, a, o)'s rules: summed over the copies of each memory, the same choices.
    memory, _ = large.memory_and_arm
    folded = np.zeros((large.num_nodes, small.num_choices))
    for choice in range(large.num_choices):  # choice (m', a) is m' * arms + a
        folded[:, (choice // 3 % small_memory) * 3 + choice % 3] += new[:, choice]
    per = 3 * 2
    for node in range(large.num_nodes):
        m = memory[node]
        original = m % small_memory if node < large_memory else small_memory + (m % small_memory) * per + (node - large_memory - m * per)
        np.testing.assert_allclose(folded[node], old[original], atol=1e-15)
    # Unlike embed, every memory is entered: each copy gets a share of its original's entries.
    assert (new.reshape(large.num_nodes, large_memory, 3).sum(axis=(0, 2)) > 0).all()
    with pytest.raises(InputError):
        split(fsc.Policy.random(fsc.RAM(4, arms=3, observations=2), 0), small, np.random.default_rng(0))


def test_the_same_seed_gives_the_same_controller():
    world = small_world(8)
    runs = [solve(world, "ram:2", seconds=60, seed=3, rounds=2) for _ in range(2)]
    assert runs[0].value == runs[1].value
    assert np.array_equal(runs[0].policy.probs().numpy(), runs[1].policy.probs().numpy())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"seconds": 0}, "seconds"),
        ({"methods": "em,nope"}, "methods"),
        ({"memory": "ram:2x"}, "memory|ram"),
        ({"seed": -1}, "seed"),
        ({"rounds": 0}, "rounds"),
        ({"discount": 1.5}, "discount"),
    ],
)
def test_bad_input_is_refused_naming_the_value(kwargs, match):
    world = small_world(9)
    kwargs = {"memory": "ram:1", **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        solve(world, kwargs.pop("memory"), **kwargs)


def test_fsc_solve_writes_a_policy_that_fsc_evaluate_reads_back_with_the_same_value(tmp_path, capsys):
    path = tmp_path / "world.POMDP"
    fsc.write_pomdp(small_world(10), path)
    out = tmp_path / "run"
    assert main(["solve", "--pomdp", str(path), "--memory", "ram:2", "--max-seconds", "10", "--rounds", "1", "--json", "--quiet", "--out", str(out)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert {"value", "upper_bound", "gap", "method", "seconds"} <= record.keys()
    assert record["value"] <= record["upper_bound"]
    assert main(["evaluate", "--pomdp", str(path), "--policy", str(out / "policy.npz"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == pytest.approx(record["value"], abs=1e-9)
    assert json.loads((out / "solution.json").read_text())["history"]


def test_fsc_solve_reports_q_on_the_two_hypothesis_world_and_refuses_bad_input_in_one_line(capsys):
    assert main(["solve", "--mu", "0.2", "--memory", "ram:1", "--reset", "0.05", "--max-seconds", "5", "--rounds", "1", "--json", "--quiet"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert 0 <= record["q"] <= 1
    assert main(["solve", "--mu", "0.2", "--methods", "magic", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "methods" in err[0]


def test_shaping_leaves_the_flat_region_where_no_reward_is_collected():
    """Free listening: "always listen" collects exactly 0, and every door has a reward of one sign or the other."""
    from fsc.solver import Shaped

    world = tasks.Tiger(listen_cost=0.0)
    assert world.pomdp.action_labels[0] == "listen"
    arch = fsc.RAM(2, arms=3, observations=2)
    problem = objective_of(world=world, architecture=arch, reset=0.05)
    listen = fsc.Policy.from_probs(arch, np.eye(arch.num_choices)[np.zeros(arch.num_nodes, int)], np.eye(arch.num_nodes)[0])
    assert value(world, listen) == pytest.approx(0.0, abs=1e-12)
    assert problem.flat(value(world, listen)) and not problem.flat(1.0)
    assert not objective_of(world=tasks.Tiger(listen_cost=0.0, penalty=-1.0), architecture=arch, reset=0.05).flat(0.0)  # rewards of one sign: nothing to shape
    climbing = {name: method for name, method in METHODS.items() if name != "pointbased"}  # pointbased does not start from listen
    for name, method in climbing.items():  # the premise: from there, no method that climbs moves but bpi (its escape's backed-up nodes)
        moved = value(world, method.solve(problem, listen, Budget.of(100, 30.0), np.random.default_rng(0)))
        assert moved > 1.0 if name == "bpi" else moved == pytest.approx(0.0, abs=1e-9), name
    found = Shaped().solve(problem, listen, Budget.of(100, 30.0), np.random.default_rng(0), methods=tuple(climbing.values()))
    assert value(world, found) > 1.0  # listening then opening the quiet door pays


def test_the_solver_is_a_value_with_every_setting_of_its_methods_and_checks_them():
    from fsc.choices import SHAPED, SOLVER_METHODS
    from fsc.optim import Adam
    from fsc.solver import BPI, EM, Greedy, Mirror, NodeSplit, PointBased, Polish, Restarts, Shaped, configured, settings

    solver = Portfolio()
    assert solver == Portfolio(seconds=60.0, seed=0, rounds=None, patience=3, engine="auto",
                               methods=(PointBased(beliefs=1000, steps=500), Polish(kicks=3, patience=30, steps=200), Mirror(rate=1.0, steps=2000),
                                        Restarts(rule=Adam(lr=0.1, eps=1e-12, relative_eps=True), patience=100, steps=300),
                                        EM(steps=200), Greedy(tries=20, steps=300), BPI(tries=4, steps=10), NodeSplit(tries=8, steps=50)),
                               shaped=Shaped(weights=(0.0, 0.5), steps=300))  # fmt: skip
    assert [method.name for method in solver.methods] == list(SOLVER_METHODS) == ["pointbased", "polish", "mirror", "adam", "em", "greedy", "bpi", "nodesplit"]
    assert {method.name: settings(method) for method in solver.methods} == SOLVER_METHODS  # the command line's options come from there
    assert settings(solver.shaped) == SHAPED
    assert type(solver.methods[3].rule) is Adam  # the one Adam, fsc train's too
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        solver.seed = 1
    assert Portfolio(seed=np.int64(3)).seed == 3 and type(Portfolio(seed=np.int64(3)).seed) is int
    assert Portfolio(methods="em,greedy").methods == (EM(), Greedy())
    assert Portfolio(methods=None).methods == solver.methods  # every method, in order, as fsc.solve(methods=None)
    assert configured(METHODS["adam"], lr=0.5, patience=7) == Restarts(rule=Adam(lr=0.5, eps=1e-12, relative_eps=True), patience=7)
    for bad, match in [(lambda: Mirror(rate=0), "rate"), (lambda: Greedy(steps=0), "steps"), (lambda: Portfolio(patience=0), "patience"),
                       (lambda: Portfolio(seconds=-1), "seconds"), (lambda: Restarts(patience=1.5), "patience"), (lambda: Shaped(weights=(2.0,)), "weights"),
                       (lambda: Portfolio(methods=("mirror", "ascent")), "methods"), (lambda: configured(METHODS["em"], rate=1.0), "rate"),
                       (lambda: Restarts(rule=EM()), "rule")]:  # fmt: skip
        with pytest.raises((ValueError, TypeError), match=match):
            bad()


def test_solve_with_a_solver_value_is_the_solvers_own_call_and_takes_numpy_integers():
    world = small_world(8)
    solver = Portfolio(seconds=60, seed=np.int64(3), rounds=1, methods=("em", "greedy"))
    a = solve(world, "ram:1", solver=solver)
    b = solver.solve(world, "ram:1")
    c = solve(world, "ram:1", seconds=60, seed=np.int64(3), rounds=np.int64(1), methods="em,greedy")
    assert a.value == b.value == c.value and a.seed == 3
    with pytest.raises(TypeError, match="speed"):
        solve(world, "ram:1", speed=2)


def test_the_solvers_adam_is_adam_with_an_epsilon_relative_to_the_gradient():
    """One step of fsc.optim.Adam(relative_eps=True) against the formula written out in numpy."""
    from fsc.optim import Adam

    world = small_world(3)
    arch = fsc.RAM(1, arms=2, observations=2)
    objective = objective_of(world=world, architecture=arch, reset=0.1)
    rule = Adam(lr=0.1, eps=1e-3, relative_eps=True)
    state = rule.init(objective, fsc.Policy.random(arch, 0))
    g, g0 = state.point.grad_logits.numpy(), state.point.grad_init.numpy()
    scale = max(np.abs(g).max(), np.abs(g0).max())
    moved = rule.update(objective, state)
    for w, grad, new in ((state.point.logits.numpy(), g, moved.point.logits.numpy()), (state.point.init_logits.numpy(), g0, moved.point.init_logits.numpy())):
        m, v = 0.1 * grad, 0.001 * grad * grad
        expected = w + 0.1 * (m / 0.1) / (np.sqrt(v / 0.001) + 1e-3 * scale)
        np.testing.assert_allclose(new, expected, rtol=1e-12, atol=1e-14)


def test_fsc_solve_reaches_every_method_setting_and_refuses_bad_ones_in_one_line(capsys):
    from fsc.cli import make_parser
    from fsc.cli.solve import _solver
    from fsc.solver import EM, Mirror

    args = make_parser("solve").parse_args(["solve", "--mu", "0.2", "--methods", "mirror,em", "--mirror-rate", "0.5", "--em-steps", "7",
                                            "--shaped-weights", "0,0.25", "--patience", "2", "--seed", "4", "--rounds", "3"])  # fmt: skip
    solver = _solver(args)
    assert solver.methods == (Mirror(rate=0.5), EM(steps=7))
    assert (solver.shaped.weights, solver.patience, solver.seed, solver.rounds) == ((0.0, 0.25), 2, 4, 3)
    args = make_parser("solve").parse_args(["solve", "--mu", "0.2", "--adam-relative-eps", "false", "--adam-beta2", "0.99"])
    assert _solver(args).methods[3].rule.beta2 == 0.99 and not _solver(args).methods[3].rule.relative_eps
    for options, word in [(["--mirror-rate", "-1"], "rate"), (["--methods", "em", "--greedy-steps", "5"], "greedy"), (["--greedy-tries", "0"], "tries")]:
        assert main(["solve", "--mu", "0.2", "--memory", "ram:1", "--quiet", *options]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and word in err[0], err


def test_restarts_around_the_flow_counts_every_evaluation_the_flow_makes():
    """The objective's counter holds every evaluation, the compiled flow's tries included (the flow takes at least
    one per accepted step), so a solution's count is that of the work done whatever the rule."""
    from fsc.optim import GradientFlow
    from fsc.solver import Budget, Restarts

    world = small_world(3)
    arch = fsc.RAM(1, arms=2, observations=2)
    objective = objective_of(world=world, architecture=arch, reset=0.1)
    Restarts(rule=GradientFlow(), steps=20).solve(objective, fsc.Policy.random(arch, 0), Budget.of(20, 60.0), np.random.default_rng(0))
    assert objective.evaluations >= 20
