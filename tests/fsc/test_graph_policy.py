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


@pytest.mark.parametrize(("name", "build"), ARCHITECTURES)
def test_a_deterministic_policys_graph_value_is_its_value_on_the_joint_chain(name, build):
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
