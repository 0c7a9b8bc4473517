"""Deterministic controllers valued on their own pairs (graph node, state) (:func:`fsc.solver.graph.from_policy`),
against the framework's evaluator on the joint chain (an independent linear system); and the solver and ``fsc
evaluate`` on a RAM no engine holds, which value the point-based search's graph that way."""

from __future__ import annotations

import numpy as np
import pytest

import fsc
import tasks
from fsc.io.pomdp_file import parse_pomdp
from fsc.solver.graph import as_policy, evaluate_graph, from_policy
from fsc.solver.pointbased import model
from tests.fsc.sparse_world import sparse_world_text


def deterministic(arch: fsc.MemoryArchitecture, rng: np.random.Generator) -> fsc.Policy:
    """A policy taking one allowed choice at random in every node, started in one reset node at random."""
    allowed = np.asarray(arch.allowed)
    probs = np.zeros((arch.num_nodes, arch.num_choices))
    for n in range(arch.num_nodes):
        probs[n, rng.choice(np.flatnonzero(allowed[n]))] = 1.0
    init = np.zeros(arch.num_nodes)
    init[rng.choice(np.flatnonzero(arch.reset_mask))] = 1.0
    return fsc.Policy.from_probs(arch, probs, init)


def sparse_world():
    return parse_pomdp(sparse_world_text(S=40, A=3, O=5, seed=3), source="sparse")


ARCHITECTURES = [
    ("tiger", lambda A, O: fsc.RAM(3, arms=A, observations=O)),
    ("tiger", lambda A, O: fsc.Chain(3, arms=A, observations=O)),
    ("tiger", lambda A, O: fsc.Memento(2, arms=A, observations=O)),
    ("sparse", lambda A, O: fsc.RAM(2, arms=A, observations=O)),
    ("sparse", lambda A, O: fsc.Column(2, arms=A, observations=O)),
    ("sparse", lambda A, O: fsc.Memento(1, arms=A, observations=O)),
]


@pytest.mark.parametrize(("looks", "krylov_after", "iterations"), [(1, 32, 250), (8, 32, 250), (10**6, 32, 250), (8, 0, 250), (8, 0, 1), (8, 10**6, 250)])
@pytest.mark.parametrize(("name", "build"), ARCHITECTURES)
def test_a_deterministic_policys_graph_value_is_its_value_on_the_joint_chain(name, build, looks, krylov_after, iterations, monkeypatch):
    """Whether the sweeps look at their progress after every sweep, every 8, or only after the last (then solved by
    LU or BiCGSTAB from there), whether BiCGSTAB takes over at once, after 32 sweeps or never, and even when it is
    stopped after one iteration, the value is the joint chain's."""
    monkeypatch.setattr("fsc.solver.graph.LOOKS", looks)
    monkeypatch.setattr("fsc.solver.graph.KRYLOV_AFTER", krylov_after)
    monkeypatch.setattr("fsc.solver.graph.KRYLOV_ITERATIONS", iterations)
    world = tasks.Tiger() if name == "tiger" else sparse_world()
    pomdp = fsc.as_pomdp(world)
    arch = build(pomdp.num_actions, pomdp.num_observations)
    reset = 0.05
    rng = np.random.default_rng(7)
    for _ in range(4):
        policy = deterministic(arch, rng)
        graph = from_policy(model(world, reset), policy)
        assert graph is not None
        exact = float(fsc.evaluate(world, policy, reset=reset).value)
        assert graph.value == pytest.approx(exact, rel=1e-10, abs=1e-12)
        assert graph.size <= arch.num_nodes


def test_a_graph_mapped_onto_ram_comes_back_with_the_same_value_and_at_most_its_nodes():
    world = sparse_world()
    pomdp = fsc.as_pomdp(world)
    m = model(world, 0.05)
    rng = np.random.default_rng(1)
    action = rng.integers(0, pomdp.num_actions, size=6)
    successor = rng.integers(0, 6, size=(6, pomdp.num_observations))
    graph = evaluate_graph(m, action, successor, initial=0)
    arch = fsc.RAM(int(np.bincount(action).max()), arms=pomdp.num_actions, observations=pomdp.num_observations)
    policy = as_policy(graph, arch)
    back = from_policy(m, policy)
    assert back is not None and back.size <= graph.size
    assert back.value == pytest.approx(graph.value, rel=1e-10)
    assert back.value == pytest.approx(float(fsc.evaluate(world, policy, reset=0.05).value), rel=1e-10)


def test_a_stochastic_policy_gives_none_and_an_unreached_stochastic_node_does_not_matter():
    tiger = tasks.Tiger()
    arch = fsc.RAM(2, arms=3, observations=2)
    m = model(tiger, 0.05)
    assert from_policy(m, fsc.Policy.uniform(arch)) is None
    policy = deterministic(arch, np.random.default_rng(0))
    probs = policy.probs().detach().numpy().copy()
    init = policy.init_probs().detach().numpy()
    start = int(np.argmax(init))
    probs[start] = 1.0 / arch.num_choices  # the start node stochastic
    assert from_policy(m, fsc.Policy.from_probs(arch, probs, init)) is None
    # RAM(2): blank 1 is never entered from blank 0 (every choice leads to a node (i, a, o)): its choice may be anything
    probs = policy.probs().detach().numpy().copy()
    probs[1 - start] = 1.0 / arch.num_choices
    graph = from_policy(m, fsc.Policy.from_probs(arch, probs, init))
    assert graph is not None
    assert graph.value == pytest.approx(float(fsc.evaluate(tiger, policy, reset=0.05).value), rel=1e-10)
    mixed = np.full(arch.num_nodes, 0.0)
    mixed[arch.reset_mask] = 1.0 / arch.reset_mask.sum()
    assert from_policy(m, fsc.Policy.from_probs(arch, policy.probs().detach().numpy(), mixed)) is None  # a stochastic start


def many_observations(tmp_path):
    """A random sparse world of 40 observations as a ``.POMDP`` file and its RAM(2) (N = 242 nodes): the joint chain
    needs about a megabyte (the large engine 1.4 MB), the policy graph about 50 kB."""
    path = tmp_path / "many.POMDP"
    path.write_text(sparse_world_text(S=30, A=3, O=40, seed=3))
    world = fsc.read_pomdp(path)
    return path, world, fsc.RAM(2, arms=3, observations=40)


def small_machine(monkeypatch, world, arch):
    """The machine's memory cut so that no engine holds ``arch`` on ``world`` but its policy graph fits."""
    from fsc.engines import cost
    from fsc.engines.estimate import evaluable, graph_bytes

    limit = 4 * graph_bytes(world.num_states, arch)
    monkeypatch.setattr(cost, "available_bytes", lambda: int(limit / cost.MEMORY_SHARE))
    assert not evaluable(world, arch, 0.05)


def test_a_ram_no_engine_holds_is_solved_on_the_graph_only_path_with_the_exact_value_of_its_policy(monkeypatch, tmp_path):
    _, world, arch = many_observations(tmp_path)
    small_machine(monkeypatch, world, arch)
    with pytest.raises(ValueError, match="this machine has available"):
        fsc.evaluate(world, fsc.Policy.uniform(arch), reset=0.05)
    for settings in ({}, {"workers": 1, "restarts": 2}):
        solution = fsc.solve(world, arch, reset=0.05, seconds=1, seed=0, **settings)
        assert solution.method == "pointbased" and solution.evaluations == 0
        assert any("does not fit the memory" in cut for cut in solution.cut_short)
        graph = from_policy(model(world, 0.05), solution.policy)
        assert graph is not None and graph.value == pytest.approx(solution.value, rel=1e-10)
        assert solution.value <= solution.upper_bound + 1e-9
    with pytest.raises(ValueError, match="this machine has available"):  # no point-based method: refused as before
        fsc.solve(world, arch, reset=0.05, seconds=3, methods="mirror")
    from fsc.engines import cost

    monkeypatch.setattr(cost, "available_bytes", lambda: int(10**8 / cost.MEMORY_SHARE))  # the large engine fits, dense not
    with pytest.raises(ValueError, match="--engine large fits"):  # an engine named that does not fit where another does
        fsc.solve(world, arch, reset=0.05, seconds=1, engine="dense")
    monkeypatch.undo()  # the whole machine: the joint chain's evaluator agrees
    assert float(fsc.evaluate(world, solution.policy, reset=0.05).value) == pytest.approx(solution.value, rel=1e-10)


def test_fsc_solve_and_evaluate_on_a_ram_no_engine_holds(monkeypatch, tmp_path, capsys):
    import json

    from fsc.cli import main
    from fsc.resolve import resolve_world_and_memory

    path, world, arch = many_observations(tmp_path)
    small_machine(monkeypatch, world, arch)
    with pytest.raises(ValueError, match="this machine has available"):  # the declared sizes alone: refused
        resolve_world_and_memory("ram:2", pomdp=str(path))
    out = tmp_path / "solved"
    common = ["--pomdp", str(path), "--memory", "ram:2", "--reset", "0.05"]
    solve = ["solve", *common, "--max-seconds", "2", "--workers", "1", "--quiet"]
    assert main([*solve, "--out", str(out)]) == 2  # the search's 1,000 beliefs with the graph do not fit: refused, both needs said
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "available (its policy graph: 0.000769 GB); choose" in err, err
    assert not out.exists()
    assert main([*solve, "--pointbased-beliefs", "100", "--json", "--out", str(out)]) == 0
    solved = json.loads(capsys.readouterr().out)
    assert main(["evaluate", *common, "--policy", str(out / "policy.npz"), "--json"]) == 0
    evaluated = json.loads(capsys.readouterr().out)
    assert evaluated["engine"] == "graph" and evaluated["graph_nodes"] >= 1
    assert evaluated["value"] == pytest.approx(solved["value"], rel=1e-10)
    assert evaluated["gain"] == pytest.approx(0.05 * solved["value"], rel=1e-10)
    assert main(["evaluate", *common, "--policy", str(out / "policy.npz"), "--convention", "paper", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == pytest.approx(0.95 * solved["value"], rel=1e-10)
    for refused in (["--policy", "uniform"], ["--policy", str(out / "policy.npz"), "--grad"]):  # stochastic; a gradient
        assert main(["evaluate", *common, *refused]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "this machine has available" in err
    assert main(["solve", *common, "--max-seconds", "2", "--workers", "1", "--methods", "mirror", "--quiet"]) == 2
    assert "this machine has available" in capsys.readouterr().err


def test_a_link_only_after_an_observation_the_action_cannot_produce_closes_no_cycle():
    """Successors after observations a node's action cannot produce are placeholders (a plan's point to node 0): node 1
    of action 1, which always hears observation 0, linking back to node 0 after observation 1 closes no cycle; after
    observation 0 it does."""
    from fsc.solver import graph as graphs

    observation = np.zeros((2, 3, 2))
    observation[0] = 0.5
    observation[1, :, 0] = 1.0
    m = graphs.Model(discount=0.9, reward=np.zeros((3, 2)), forward=(), backward=(), observation=observation, initial=np.full(3, 1 / 3))
    action = np.array([0, 1])
    assert not graphs._cyclic(m, action, np.array([[1, 1], [1, 0]]))
    assert graphs._cyclic(m, action, np.array([[1, 1], [0, 1]]))


def test_a_graph_without_cycles_is_swept_and_one_with_cycles_solved_with_bicgstab_to_the_same_values(monkeypatch):
    """A plan (each node moving to later nodes or to itself) has no cycle; a graph moving back has one.  Both ways
    of solving a graph (sweeps alone, BiCGSTAB after a few) give its values to rounding."""
    from fsc.solver import graph as graphs

    m = model(sparse_world(), 0.05)
    emits = m.observation.max(axis=1) > 0  # (A, O)
    action = np.array([0, 1, 2])
    plan = np.array([[1, 2, 2, 1, 2], [2, 2, 2, 2, 2], [2, 2, 2, 2, 2]])  # node 2 plays its action forever
    assert not graphs._cyclic(m, action, plan)
    back = plan.copy()
    back[2, np.flatnonzero(emits[2])[-1]] = 0
    assert graphs._cyclic(m, action, back)
    for successor in (plan, back):
        values = [evaluate_graph(m, action, successor, initial=0).vectors]
        flip = not graphs._cyclic(m, action, successor)
        with monkeypatch.context() as flipped:
            flipped.setattr(graphs, "_cyclic", lambda _model, _action, _successor, flip=flip: flip)
            values.append(evaluate_graph(m, action, successor, initial=0).vectors)
        np.testing.assert_allclose(values[0], values[1], rtol=1e-11, atol=1e-11)
