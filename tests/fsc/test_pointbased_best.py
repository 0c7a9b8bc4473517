"""The point-based search keeps the best graph it has made for each memory: what it offers never falls as the
search goes on or the memory grows, and each graph's value is the framework's exact value of its controller."""

from __future__ import annotations

import time

import numpy as np
import pytest

import fsc
from fsc.io.pomdpx import parse_pomdpx
from fsc.objective import Objective
from fsc.solver.graph import _estimate, _merged, as_policy, compress, evaluate_graph, fits, merge, minimise
from fsc.solver.pointbased import Search
from tests.fsc.rocksample_pomdpx import rocksample_pomdpx
from tests.fsc.test_pointbased import hand_plan, rocksample_model


def test_the_graph_offered_for_a_memory_never_falls_as_the_search_goes_on_or_the_memory_grows():
    world = rocksample_model(3, 2)
    pomdp = parse_pomdpx(rocksample_pomdpx(3, 2))
    search = Search(world, 200, np.random.default_rng(1))
    offered = {1: -np.inf, 2: -np.inf, 4: -np.inf}
    while not search.done and search.stages < 40:
        search.advance()
        if search.stages % 5:
            continue
        for memories in (1, 2, 4):
            graph = search.graph(memories)
            assert fits(graph, memories)
            assert graph.value >= offered[memories] - 1e-12  # never below what this memory was offered before
            assert graph.value >= offered.get(memories // 2, -np.inf) - 1e-12  # nor below a smaller memory's
            offered[memories] = graph.value
    for memories, value in offered.items():  # the values are the framework's own, on the RAM asked for
        policy = as_policy(search.best(memories), fsc.RAM(memories, arms=7, observations=30))
        assert float(fsc.evaluate(pomdp, policy, reset=0.05).value) == pytest.approx(value, abs=1e-9)


def test_a_merge_ranked_by_estimate_is_evaluated_exactly_and_the_estimate_nears_the_exact_value():
    world = rocksample_model(3, 2)
    graph = evaluate_graph(world, *hand_plan(), initial=0)
    merged = merge(world, graph, 1)
    again = evaluate_graph(world, merged.action, merged.successor, initial=merged.initial)
    assert merged.value == pytest.approx(again.value, abs=1e-12)
    # one merge's estimate (a few sweeps from the old values) against its exact value: within 1e-2 of what changed
    action, successor, initial, guess = _merged(graph, 5, 6, None)  # the two east nodes: moves into the last go to the other
    exact = evaluate_graph(world, action, successor, initial=initial).value
    assert _estimate(world, action, successor, initial, guess) == pytest.approx(exact, abs=1e-2 * max(1.0, abs(exact - graph.value)))


def test_nodes_that_hear_apart_merge_with_nothing_lost():
    """RockSample[3, 2]'s observations show the cell: the hand plan's two east nodes (onto the rock; to the exit and
    on) hear apart, so one merged node that moves after each observation as the node that hears it did plays the
    same plan on ``RAM(1)``, worth the hand-derived value exactly; moving as the kept node alone loses it."""
    world, gamma = rocksample_model(3, 2), 0.95
    graph = minimise(world, evaluate_graph(world, *hand_plan(), initial=0))
    hand = 0.5 * (10 * gamma**3 + 10 * gamma**5) + 0.5 * 10 * gamma**4
    assert not fits(graph, 1)
    union = merge(world, graph, 1, union=True)
    assert fits(union, 1) and union.value == pytest.approx(hand, abs=1e-12)
    assert merge(world, graph, 1).value < hand - 0.5  # the walk to the exit would check the rock again
    assert compress(world, graph, 1).value == pytest.approx(hand, abs=1e-12)
    policy = as_policy(union, fsc.RAM(1, arms=7, observations=30))
    assert float(fsc.evaluate(parse_pomdpx(rocksample_pomdpx(3, 2)), policy, reset=0.05).value) == pytest.approx(hand, abs=1e-9)


def test_a_graph_made_past_the_deadline_is_offered_and_kept():
    """The portfolio asks for the graph when the method's slice has run out (the stages take it all): the graph made
    then is still the controller offered, valued exactly, kept as the memory's best, and offered again (the same
    policy object, valued once) while the search rests."""
    pomdp = parse_pomdpx(rocksample_pomdpx(3, 2))
    arch = fsc.RAM(2, arms=7, observations=30)
    objective = Objective(world=pomdp, architecture=arch, reset=0.05, target="return")
    search = Search(rocksample_model(3, 2), 200, np.random.default_rng(1))
    while search.stages < 20:
        search.advance()
    policy = search.controller(objective, deadline=0.0)  # long past
    assert policy is not None and fits(search.best(2), 2)
    assert objective.value_of(policy) == pytest.approx(search.best(2).value, abs=1e-9)
    assert objective.value_of(policy) > objective.value_of(fsc.Policy.uniform(arch)) + 1.0
    assert search.controller(objective, deadline=0.0) is policy


def test_a_graph_compressed_in_steps_is_exact_at_least_the_direct_compression_and_kept_when_time_runs_out(monkeypatch):
    """``compress`` also compresses a small graph in steps (``STEPS``): what it returns fits, is worth its exact value
    and at least what the direct compression gives; steps priced above their share of the time left are not taken; a
    time limit inside the steps returns the best made before it."""
    from fsc.limits import TimeUp
    from fsc.solver import graph as graphs
    from fsc.solver.pointbased import model
    from tests.fsc.test_graph_policy import sparse_world

    world = model(sparse_world(), 0.05)
    search = Search(world, 200, np.random.default_rng(0))
    while search.stages < 30:
        search.advance()
    big = graphs.closed_graph(world, search.vectors, search.actions, search.witness)  # 107 nodes, 20 to 48 of an action
    monkeypatch.setattr(graphs, "STEPPED_PAIRS", 0)
    direct = compress(world, big, 3)
    monkeypatch.setattr(graphs, "STEPPED_PAIRS", 10**9)
    calls, made = [], graphs._compressed

    def counted(found, *args):
        calls.append(args[2])
        return made(found, *args)

    monkeypatch.setattr(graphs, "_compressed", counted)
    stepped = compress(world, big, 3)
    assert calls == [3, 9, 6, 5, 3]  # the direct one, then 3, 2 and 1.5 times the memories, rounded up, and the memories
    assert fits(stepped, 3) and stepped.value >= direct.value - 1e-12
    again = evaluate_graph(world, stepped.action, stepped.successor, initial=stepped.initial)
    assert stepped.value == pytest.approx(again.value, abs=1e-12)

    calls.clear()
    monkeypatch.setattr(graphs, "STEPPED_SHARE", 1e-9)
    with graphs.until(time.monotonic() + 1000.0):
        assert compress(world, big, 3).value == direct.value and calls == [3]  # the steps would take more than their share
    monkeypatch.setattr(graphs, "STEPPED_SHARE", 0.5)

    def cut(found, *args):
        if calls:
            raise TimeUp("the time limit")
        calls.append(args[2])
        return made(found, *args)

    calls.clear()
    monkeypatch.setattr(graphs, "_compressed", cut)
    assert compress(world, big, 3).value == direct.value  # the direct compression, made before the limit
