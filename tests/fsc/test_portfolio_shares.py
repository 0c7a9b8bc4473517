"""The portfolio's shares of a round (fsc.solver.portfolio._Credit): weights from recent gains per second, derived by hand;
a round gives a method that gained nothing a smaller share of its time, and one that gained no more than an equal share."""

from __future__ import annotations

import time
from typing import ClassVar

import attrs
import numpy as np

import fsc
import tasks
from fsc.solver import Portfolio
from fsc.solver.methods import Method
from fsc.solver.portfolio import DECAY, FLOOR, _Credit


def test_weights_are_equal_until_a_method_gains_then_scale_with_the_gain_per_second():
    credit = _Credit(3)
    assert np.array_equal(credit.weights(), np.ones(3))  # nothing run
    credit.record(1, 0.0, 2.0)
    assert np.array_equal(credit.weights(), np.ones(3))  # run, but no gain anywhere: all equal
    credit.record(0, 1.0, 1.0)  # rate 1, the best; method 1 rate 0: the floor; method 2 never ran: 1
    assert np.allclose(credit.weights(), [1.0, FLOOR, 1.0])
    credit.record(1, 1.0, 1.0)  # method 1: gain DECAY * 0 + 1 in DECAY * 2 + 1 seconds; method 0's rate still 1, the best
    assert np.allclose(credit.weights(), [1.0, FLOOR + (1 - FLOOR) / (2 * DECAY + 1), 1.0])
    credit.record(0, 0.0, 3.0)  # method 0: gain DECAY * 1 in DECAY * 1 + 3 seconds, now below method 1's
    zero, one = DECAY / (DECAY + 3), 1 / (2 * DECAY + 1)
    assert zero < one
    assert np.allclose(credit.weights(), [FLOOR + (1 - FLOOR) * zero / one, 1.0, 1.0])


def test_a_negative_gain_counts_as_none():
    credit = _Credit(2)
    credit.record(0, 2.0, 1.0)
    credit.record(1, -1e-15, 1.0)  # rounding below the start: a method never returns worse
    assert np.allclose(credit.weights(), [1.0, FLOOR])


@attrs.frozen(kw_only=True)
class _Timed(Method):
    """A method that returns ``target`` when it beats the start (or the start), and records the seconds its budget gave it."""

    name: ClassVar[str] = "timed"
    target: fsc.Policy | None = None
    seen: list = attrs.field(factory=list, eq=False)
    steps: int = 1

    def init(self, objective, start, *, rng=None, clock=None):  # never called: solve is the method's own
        raise AssertionError

    def update(self, objective, state, clock=None):
        raise AssertionError

    def solve(self, objective, start, budget, rng):
        self.seen.append(budget.deadline - time.monotonic())
        if self.target is not None and objective.value_of(self.target) > objective.value_of(start):
            return self.target
        return start


def test_a_method_that_gained_nothing_gets_a_smaller_share_of_the_next_round():
    """Two methods, the idle one first: in the first round it gets half of what is left; once the other has gained,
    FLOOR / (FLOOR + 1) of it.  The methods return at once, so the gainer, last, gets all that is left (less two
    evaluations, against a budget of 600 seconds): the idle one's share is the ratio of the two."""
    tiger = tasks.Tiger()
    arch = fsc.model.memory.RAM(1, arms=3, observations=2)
    listen = fsc.Policy.from_probs(arch, np.eye(arch.num_choices)[[0] * arch.num_nodes], np.eye(arch.num_nodes)[0])
    idle, gainer = _Timed(), _Timed(target=listen)
    solution = Portfolio(seconds=600, seed=0, rounds=2, methods=(idle, gainer)).solve(tiger, arch)
    assert solution.method == "timed" and abs(solution.value - float(fsc.evaluate(tiger, listen).value)) < 1e-9
    assert len(idle.seen) == 2 and len(gainer.seen) == 2
    first, second = idle.seen[0] / gainer.seen[0], idle.seen[1] / gainer.seen[1]  # the gainer's: all that is left
    assert abs(first - 0.5) < 0.02
    assert abs(second - FLOOR / (FLOOR + 1.0)) < 0.02


def test_a_method_that_gained_gets_no_more_than_an_equal_share():
    """The gainer first: its weight is 1 and the idle one's FLOOR, but its share stays half of what is left (the
    idle one, last, gets the rest): a method that pays never takes the time of the methods after it."""
    tiger = tasks.Tiger()
    arch = fsc.model.memory.RAM(1, arms=3, observations=2)
    listen = fsc.Policy.from_probs(arch, np.eye(arch.num_choices)[[0] * arch.num_nodes], np.eye(arch.num_nodes)[0])
    gainer, idle = _Timed(target=listen), _Timed()
    Portfolio(seconds=600, seed=0, rounds=2, methods=(gainer, idle)).solve(tiger, arch)
    assert len(gainer.seen) == 2 and len(idle.seen) == 2
    for k in range(2):
        assert abs(gainer.seen[k] / idle.seen[k] - 0.5) < 0.02


def test_a_slice_shorter_than_two_evaluations_still_gives_the_method_half_of_it(monkeypatch):
    """Each method's slice is cut by two evaluations (its step in flight, the offer of its result), but never below
    half of it.  Evaluations priced at 10 s in a 60 s budget: the stage keeps 60 - 2 * 10 = 40 s for the final
    evaluation's sake, the first of two methods a slice of 20 s, which two evaluations would cut to nothing; it gets
    10 s (a method that evaluates nothing, such as the point-based search, would otherwise never run on a world of
    slow evaluations).  The methods return at once."""
    monkeypatch.setattr(fsc.Objective, "seconds", property(lambda self: 10.0))
    tiger = tasks.Tiger()
    arch = fsc.model.memory.RAM(1, arms=3, observations=2)
    first, second = _Timed(), _Timed()
    Portfolio(seconds=60, seed=0, rounds=1, methods=(first, second)).solve(tiger, arch)
    assert len(first.seen) == 1 and len(second.seen) == 1
    assert 9.0 < first.seen[0] <= 10.0
