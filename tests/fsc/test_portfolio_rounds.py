"""The portfolio's rounds (fsc.solver.portfolio._Run.round): even rounds go on from the best, odd ones from a fresh
start, which the point-based search's graph replaces unless the last round that climbed from that graph gained nothing;
the first round lasts at most ``FIRST_ROUND`` and each later one at most as long as the rounds before it."""

from __future__ import annotations

import time

import attrs
import numpy as np

import fsc
import tasks
from fsc.solver import Portfolio, portfolio
from fsc.solver.methods import PointBased
from tests.fsc.test_portfolio_shares import _Timed

ARCH = fsc.model.memory.RAM(1, arms=3, observations=2)  # Tiger's actions: listen, open left, open right


def _plays(listen: float) -> fsc.Policy:
    """Tiger's controller on RAM(1) that listens with probability ``listen`` and opens either door with the rest."""
    row = np.array([listen, (1 - listen) / 2, (1 - listen) / 2])
    return fsc.Policy.from_probs(ARCH, np.tile(row, (ARCH.num_nodes, 1)), np.eye(ARCH.num_nodes)[0])


@attrs.frozen(kw_only=True)
class _Search(PointBased):
    """A point-based search whose graph listens nine times in ten (about -110 on Tiger: better than any random start,
    worse than listening always), handed over when it beats the start; the same object every call (``fresh`` False),
    or a new one each call, as when the search has made a new graph."""

    fresh: bool = False
    made: list = attrs.field(factory=list, eq=False)

    def solve(self, objective, start, budget, rng):
        if self.fresh or not self.made:
            self.made.append(_plays(0.9))
        graph = self.made[-1]
        return graph if objective.value_of(graph) > objective.value_of(start) else start


@attrs.frozen(kw_only=True)
class _Stub(_Timed):
    """A method that records the controller each round hands it, and returns it unchanged or (``climbs``) the
    controller that always listens (-20 on Tiger) when that is better."""

    climbs: bool = False

    def solve(self, objective, start, budget, rng):
        self.seen.append(start)
        better = _plays(1.0)
        return better if self.climbs and objective.value_of(better) > objective.value_of(start) else start


def _rounds(climbs: bool, fresh: bool = False) -> tuple[list, list, list, float]:
    tiger = tasks.Tiger()
    search, stub = _Search(fresh=fresh), _Stub(climbs=climbs)
    solution = Portfolio(seconds=600, seed=0, rounds=4, methods=(search, stub)).solve(tiger, ARCH)
    assert len(stub.seen) == 4
    values = [float(fsc.evaluate(tiger, policy).value) for policy in stub.seen]
    return stub.seen, search.made, values, solution.value


def test_the_graph_a_round_climbed_from_in_vain_is_not_handed_to_fresh_rounds():
    """Round 0 climbs from the graph and gains nothing; rounds 1 and 3 start at random and keep their starts (worse than
    the graph); round 2 goes on from the best, the graph."""
    seen, made, values, best = _rounds(climbs=False)
    graph = made[0]
    assert -120.0 < values[0] < -100.0 and seen[0] is graph and seen[2] is graph
    assert seen[1] is not graph and seen[3] is not graph and seen[1] is not seen[3]
    assert values[1] < values[0] and values[3] < values[0]
    assert abs(best - values[0]) < 1e-9


def test_the_graph_a_round_climbed_from_is_handed_to_fresh_rounds():
    """Each round that climbs from the graph gains (to -20): the fresh rounds 1 and 3 are handed the graph again."""
    seen, made, values, best = _rounds(climbs=True)
    assert len(made) == 1 and seen[0] is made[0] and seen[1] is made[0] and seen[3] is made[0]
    assert abs(values[2] + 20.0) < 1e-9 and abs(best + 20.0) < 1e-9


def test_a_new_graph_is_handed_to_fresh_rounds():
    """A search that makes a new graph every call hands it to every round, though no round gained on the one before."""
    seen, made, values, _ = _rounds(climbs=False, fresh=True)
    assert seen[1] is made[1] and seen[3] is made[-1]
    assert all(abs(value - values[0]) < 1e-9 for value in values)


@attrs.frozen(kw_only=True)
class _Waits(_Timed):
    """A method that records when each round calls it and the deadline it is given (``seen``), and waits until then."""

    def solve(self, objective, start, budget, rng):
        now = time.monotonic()
        self.seen.append((now, budget.deadline))
        time.sleep(max(budget.deadline - now, 0.0))
        return start


def test_rounds_last_the_first_round_then_as_long_as_the_size_has_run(monkeypatch):
    """With a first round of 0.2 s and a budget of 600, round k is given ``max(0.2, the time since the first began)``
    (0.2, 0.2, 0.4, 0.8): a long solve begins with the rounds a short one runs.  Without the cap, each round would be
    given all of the time left."""
    monkeypatch.setattr(portfolio, "FIRST_ROUND", 0.2)
    waits = _Waits()
    Portfolio(seconds=600, seed=0, rounds=4, methods=(waits,)).solve(tasks.Tiger(), ARCH)
    first = waits.seen[0][0]
    given = [deadline - called for called, deadline in waits.seen]
    wanted = [max(0.2, called - first) for called, _ in waits.seen]
    assert len(given) == 4 and all(abs(g - w) < 0.05 for g, w in zip(given, wanted, strict=True)), (given, wanted)
    assert given[3] > 0.6


def test_a_budget_shorter_than_the_first_round_gives_the_round_all_of_it():
    """Rounds of a solve within the default budget run as they did before the cap: the first is given what is left."""
    waits = _Waits()
    Portfolio(seconds=1.0, seed=0, methods=(waits,)).solve(tasks.Tiger(), ARCH)
    called, deadline = waits.seen[0]
    assert 0.5 < deadline - called < 1.0
