"""A solution says when the point-based search found a controller worth more than the memory holds (``larger_value``,
``larger_memory``): on Tiger, whose optimum listens in three nodes (the count of growls heard, -1, 0 or +1 on the
side of the last difference), ``ram:1`` and ``ram:2`` cannot hold it and ``ram:3`` can."""

import json

import numpy as np
import pytest

import fsc
import tasks
from fsc.solver.graph import as_policy, fits
from fsc.solver.parallel import _merged
from fsc.solver.pointbased import made
from fsc.solver.solution import larger


@pytest.fixture(scope="module")
def tiger():
    return tasks.Tiger()


@pytest.mark.parametrize("memory", ["ram:1", "ram:2"])
def test_a_memory_too_small_for_the_optimum_names_the_larger_controller_and_its_memory(tiger, memory):
    solution = fsc.solve(tiger, memory, seconds=5, seed=0)
    assert solution.larger_memory == "ram:3" and solution.value < solution.larger_value - 1.0
    assert solution.larger_value == pytest.approx(solution.upper_bound, abs=1e-6)  # the optimum: the two-state grid's bound
    graph = max(made(tiger), key=lambda g: g.value)
    assert not fits(graph, int(memory[4:])) and fits(graph, 3)
    value = fsc.evaluate(tiger, as_policy(graph, fsc.RAM(3, arms=3, observations=2))).value
    assert float(value) == pytest.approx(solution.larger_value, rel=1e-10)  # the joint chain's evaluator agrees
    summary = solution.summary()
    assert (summary["larger_value"], summary["larger_memory"]) == (solution.larger_value, "ram:3")


def test_a_memory_that_holds_the_search_s_graph_names_none(tiger):
    solution = fsc.solve(tiger, "ram:3", seconds=5, seed=0)
    assert solution.value == pytest.approx(solution.upper_bound, abs=1e-6)
    assert solution.larger_value is None and solution.larger_memory is None


def test_restarts_keep_the_larger_controller_of_any_restart():
    made_policy = fsc.Policy.uniform(fsc.RAM(1, arms=2, observations=2))
    base = fsc.solver.Solution(policy=made_policy, value=1.0, upper_bound=3.0, method="mirror", seconds=1.0, history=[], seed=0,
                               reset=0.05, evaluations=1, metrics={})  # fmt: skip
    outcomes = [
        {"index": 0, "solution": base},
        {"index": 1, "solution": fsc.solver.Solution(**{**_fields(base), "value": 0.5, "larger_value": 2.0, "larger_memory": "ram:4"})},
        {"index": 2, "solution": fsc.solver.Solution(**{**_fields(base), "value": 0.9, "larger_value": 2.5, "larger_memory": "ram:6"})},
    ]
    merged = _merged(outcomes[0], outcomes, seed=0, seconds=2.0)
    assert (merged.value, merged.larger_value, merged.larger_memory) == (1.0, 2.5, "ram:6")
    worse = fsc.solver.Solution(**{**_fields(base), "larger_value": 0.8, "larger_memory": "ram:4"})
    beaten = _merged(outcomes[0], [outcomes[0], {"index": 1, "solution": worse}], seed=0, seconds=2.0)
    assert beaten.larger_value is None  # worth less than the best restart's own controller


def _fields(solution) -> dict:
    import attrs

    return attrs.asdict(solution, recurse=False)


def test_larger_keeps_the_best_found_only_when_it_beats_the_value_by_more_than_rounding():
    assert larger([None, (2.0, "ram:4"), (3.0, "ram:9")], 1.0) == {"larger_value": 3.0, "larger_memory": "ram:9"}
    assert larger([(1.0 + 1e-12, "ram:4")], 1.0) == {"larger_value": None, "larger_memory": None}
    assert larger([], 1.0) == {"larger_value": None, "larger_memory": None}
    assert larger([(np.float64(-1.0), "ram:2")], -2.0)["larger_value"] == -1.0


def test_fsc_solve_says_which_memory_holds_the_larger_controller(capsys):
    from fsc.cli import main

    assert main(["solve", "--world", "tiger", "--memory", "ram:1", "--max-seconds", "5", "--json"]) == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)
    assert record["larger_memory"] == "ram:3" and record["larger_value"] > record["value"]
    assert f"a controller worth {record['larger_value']:.6g} was found that needs ram:3 (--memory ram:3 holds it)" in captured.err
    assert main(["solve", "--world", "tiger", "--memory", "ram:1", "--max-seconds", "5", "--json", "--quiet"]) == 0
    assert "needs ram:3" not in capsys.readouterr().err


def test_with_the_point_based_search_the_memory_asked_for_is_solved_alone(tiger):
    """Tiger on ``ram:4``: the search's graph (three listening nodes) fits and is optimal; no smaller size is solved
    before it.  Without the search, the memory grows through ``ram:1`` and ``ram:2``."""
    solution = fsc.solve(tiger, "ram:4", seconds=30, seed=0)
    assert solution.method == "pointbased" and solution.gap <= 1e-9 * abs(solution.upper_bound)
    assert {record["memory"].split(",")[0] for record in solution.history} == {"RAM(M=4"}
    assert float(fsc.evaluate(tiger, solution.policy).value) == pytest.approx(solution.value, rel=1e-12)
    grown = fsc.solve(tiger, "ram:4", seconds=30, seed=0, rounds=1, methods="greedy")
    sizes = [record["memory"].split(",")[0] for record in grown.history]
    assert sorted(set(sizes), key=sizes.index) == ["RAM(M=1", "RAM(M=2", "RAM(M=4"]
