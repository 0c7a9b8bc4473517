"""Bounded policy iteration (fsc.solver.bpi): monotone node improvement, Tiger's values, the two node models, determinism.

The values per (state, node) the tests compare are computed here from the world's dense tables by one linear
solve (:func:`ram_values`, :func:`node_values`): an evaluation independent of the engines BPI runs on.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import fsc
import tasks
from fsc.bounds import two_state_bound
from fsc.errors import InputError
from fsc.model.memory import RAM, Memento
from fsc.model.pomdp import as_pomdp
from fsc.objective import Objective
from fsc.solver import METHODS, Budget, Portfolio
from fsc.solver.bpi import NodeController, evaluate_values, node_controller, ram_policy, start_state, step, sweep


def _objective(world, arch, reset=0.05):
    return Objective(world=world, architecture=arch, reset=reset, target="return")


def ram_values(world, probs: np.ndarray, arch, gamma: float) -> np.ndarray:
    """``V[s, n]`` of a policy on a RAM-like memory, by a dense solve of
    ``V(s, n) = sum_c pi(c | n) (R(s, a_c) + gamma sum_{s', o} T O V(s', next(n, c, o)))``."""
    pomdp = as_pomdp(world)
    T, O = pomdp.transition, pomdp.observation
    R = np.einsum("sat,ato,sato->sa", T, O, np.broadcast_to(pomdp.reward, T.shape + (O.shape[2],)))
    S, (N, C) = pomdp.num_states, probs.shape
    system, rhs = np.eye(S * N), np.zeros(S * N)
    for s in range(S):
        for n in range(N):
            for c in range(C):
                a = arch.choice_action[c]
                rhs[s * N + n] += probs[n, c] * R[s, a]
                for s2 in range(S):
                    for o in range(O.shape[2]):
                        system[s * N + n, s2 * N + arch.next_node[n, c, o]] -= gamma * probs[n, c] * T[s, a, s2] * O[a, s2, o]
    return np.linalg.solve(system, rhs).reshape(S, N)


def choice_values(world, values: np.ndarray, arch, gamma: float) -> np.ndarray:
    """``W[s, c] = R(s, a_c) + gamma sum_{s', o} T O V(s', next(c, o))`` from :func:`ram_values`: BPI's node vectors."""
    pomdp = as_pomdp(world)
    T, O = pomdp.transition, pomdp.observation
    R = np.einsum("sat,ato,sato->sa", T, O, np.broadcast_to(pomdp.reward, T.shape + (O.shape[2],)))
    a, nxt = arch.choice_action, arch.next_node[0]  # (C,), (C, O)
    return R[:, a] + gamma * np.einsum("sct,cto,tco->sc", T[:, a], O[a], values[:, nxt])


def node_values(world, nodes: NodeController, gamma: float) -> np.ndarray:
    """``V[s, k]`` of Poupart and Boutilier's controller, by a dense solve of
    ``V(s, k) = sum_a psi(a | k) (R(s, a) + gamma sum_{s', o, k'} T O eta(k' | k, a, o) V(s', k'))``."""
    pomdp = as_pomdp(world)
    T, O = pomdp.transition, pomdp.observation
    R = np.einsum("sat,ato,sato->sa", T, O, np.broadcast_to(pomdp.reward, T.shape + (O.shape[2],)))
    S, K = pomdp.num_states, len(nodes.start)
    step_ = np.einsum("ka,sat,ato,kaoj->sktj", nodes.action, T, O, nodes.successor)
    rhs = np.einsum("ka,sa->sk", nodes.action, R)
    return np.linalg.solve(np.eye(S * K) - gamma * step_.reshape(S * K, S * K), rhs.reshape(-1)).reshape(S, K)


def test_a_sweep_never_lowers_the_value_at_any_state_and_bpi_node():
    """From random controllers on Tiger and the cheese maze, each sweep's new controller is worth at least as much
    as the old one at every state and BPI node (a choice: ``W[s, c]``), by the independent dense evaluation, and
    more from the start.  (A single RAM row's ``V[s, n]`` may fall: a program trades one observation's row
    against another's, the sum dominating.)"""
    for world, M in ((tasks.Tiger(), 2), (tasks.CheeseMaze(), 2)):
        pomdp = as_pomdp(world)
        arch = RAM(M, arms=pomdp.num_actions, observations=pomdp.num_observations)
        objective = _objective(world, arch)
        policy = fsc.Policy.random(arch, 3)
        probs, init = policy.probs().detach().numpy(), policy.init_probs().detach().numpy()
        tables = start_state(objective, policy).slots["tables"]
        for _ in range(3):
            before = ram_values(world, probs, arch, 0.95)
            values = evaluate_values(tables, probs, init)
            np.testing.assert_allclose(values.node, before, rtol=1e-10, atol=1e-9)  # the engine's V is the dense one
            new, programs = sweep(tables, values, probs)
            assert programs and all(program.rows > 0 and program.columns > 0 for program in programs)
            after = ram_values(world, new, arch, 0.95)
            old, now = choice_values(world, before, arch, 0.95), choice_values(world, after, arch, 0.95)
            np.testing.assert_allclose(values.choice, old, rtol=1e-10, atol=1e-9)
            assert np.all(now >= old - 1e-9 * np.abs(old).max())
            assert _start(pomdp, init, after) >= _start(pomdp, init, before)
            probs = new
        assert _start(pomdp, init, after) > _start(pomdp, init, ram_values(world, policy.probs().detach().numpy(), arch, 0.95)) + 1.0


def _start(pomdp, init: np.ndarray, values: np.ndarray) -> float:
    """The value from the start: the reset's state and node distributions against ``V[s, n]``."""
    return float(np.einsum("s,n,sn->", pomdp.initial, init, values))


def _run(world, M, steps=60):
    pomdp = as_pomdp(world)
    arch = RAM(M, arms=pomdp.num_actions, observations=pomdp.num_observations)
    objective = _objective(world, arch)
    state = start_state(objective, fsc.Policy.uniform(arch))
    for _ in range(steps):
        new = step(objective, state, tries=4)
        if new is None:
            break
        state = new
    return objective, state


def test_tiger_from_the_uniform_controller():
    """RAM(3): BPI reaches the optimum of every controller, 19.3714 (the two-state bound); RAM(2), with one listening
    node too few for "listen, then open on a second agreeing sound" on both sides, ends above listening for ever
    (``-1 / (1 - 0.95) = -20``), at the value the independent dense evaluation gives its controller."""
    tiger = tasks.Tiger()
    objective, state = _run(tiger, 2)
    dense = _start(as_pomdp(tiger), state.point.init_probs, ram_values(tiger, state.point.probs, objective.architecture, 0.95))
    assert state.point.value == pytest.approx(dense, abs=1e-9)
    assert -20.0 + 1.0 < state.point.value < 19.3714
    objective, state = _run(tiger, 3)
    optimum = two_state_bound(tiger, 0.95)
    assert optimum == pytest.approx(19.3714, abs=1e-4)
    assert state.point.value == pytest.approx(optimum, abs=1e-8)
    assert state.slots["escapes"] >= 1
    value = float(fsc.evaluate(tiger, objective.policy(state.point.probs, state.point.init_probs), reset=0.05).value)
    assert value == pytest.approx(optimum, abs=1e-8)


def test_the_node_models_map_onto_each_other_exactly():
    """RAM -> BPI (one node per choice) -> RAM keeps every row (i, a, o), the blank rows become the start
    distribution, and the values agree; a stochastic BPI controller of K nodes -> RAM(K) keeps its values."""
    world = tasks.Tiger()
    pomdp = as_pomdp(world)
    arch = RAM(2, arms=3, observations=2)
    policy = fsc.Policy.random(arch, 7)
    nodes = node_controller(policy)
    assert nodes.action.shape == (6, 3) and nodes.successor.shape == (6, 3, 2, 6)
    back = ram_policy(nodes, arch)
    probs, again = policy.probs().detach().numpy(), back.probs().detach().numpy()
    np.testing.assert_allclose(again[2:], probs[2:], rtol=0, atol=1e-15)
    start = policy.init_probs().detach().numpy()[:2] @ probs[:2]
    np.testing.assert_allclose(again[:2], np.stack([start, start]), atol=1e-15)
    value = float(fsc.evaluate(world, policy, reset=0.05).value)
    assert float(fsc.evaluate(world, back, reset=0.05).value) == pytest.approx(value, abs=1e-10)
    assert pomdp.initial @ node_values(world, nodes, 0.95) @ nodes.start == pytest.approx(value, abs=1e-10)
    rng = np.random.default_rng(0)
    draw = lambda *shape: (lambda x: x / x.sum(axis=-1, keepdims=True))(rng.random(shape))  # noqa: E731
    stochastic = NodeController(action=draw(3, 3), successor=draw(3, 3, 2, 3), start=draw(3))
    embedded = ram_policy(stochastic)
    assert embedded.architecture == RAM(3, arms=3, observations=2)
    expected = pomdp.initial @ node_values(world, stochastic, 0.95) @ stochastic.start
    assert float(fsc.evaluate(world, embedded, reset=0.05).value) == pytest.approx(expected, abs=1e-10)
    assert pomdp.initial @ node_values(world, node_controller(embedded), 0.95) @ node_controller(embedded).start == pytest.approx(expected, abs=1e-10)
    with pytest.raises(InputError):
        ram_policy(stochastic, arch)


def test_bpi_is_a_method_of_the_portfolio_and_deterministic():
    """``bpi`` runs last in a round but for ``nodesplit``; the same start gives the same controller; a memory whose next node depends on
    more than the choice (Memento) is returned as it came."""
    assert list(METHODS)[-2:] == ["bpi", "nodesplit"]
    world = tasks.CheeseMaze()
    pomdp = as_pomdp(world)
    arch = RAM(2, arms=pomdp.num_actions, observations=pomdp.num_observations)
    objective = _objective(world, arch)
    start = fsc.Policy.uniform(arch)
    found = [METHODS["bpi"].solve(objective, start, Budget(steps=30, deadline=math.inf), np.random.default_rng(0)) for _ in range(2)]
    assert np.array_equal(found[0].probs().detach().numpy(), found[1].probs().detach().numpy())
    assert objective.value_of(found[0]) > objective.value_of(start) + 1.0
    memento = Memento(2, arms=pomdp.num_actions, observations=pomdp.num_observations)
    other = _objective(world, memento)
    uniform = fsc.Policy.uniform(memento)
    assert METHODS["bpi"].solve(other, uniform, Budget(steps=5, deadline=math.inf), np.random.default_rng(0)) is uniform
    solution = Portfolio(seconds=30, seed=0, rounds=1, methods="bpi").solve(tasks.Tiger(), "ram:3", reset=0.05)
    assert solution.value == pytest.approx(two_state_bound(tasks.Tiger(), 0.95), abs=1e-8)
