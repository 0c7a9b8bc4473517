"""What :func:`fsc.solver.solve` returns."""

from __future__ import annotations

import attrs

from fsc.model.memory import memory_spec
from fsc.model.policy import Policy

__all__ = ["Solution"]


@attrs.frozen(kw_only=True, eq=False)
class Solution:
    """A controller, its exact value at the start belief, and how far it may be from the best.

    Attributes:
        policy: the controller (a :class:`fsc.Policy` on the memory asked for).
        value: its discounted return from the start belief, by :func:`fsc.evaluate` (what ``fsc evaluate`` prints).
        upper_bound: no controller on any memory is worth more (:func:`fsc.solver.upper_bound`).
        method: the method whose result it is (``uniform`` or ``start`` when nothing beat the start).
        seconds: wall time of the whole call.
        history: each new best: ``seconds``, ``memory``, ``value``, ``method``.
        seed, reset: as used (``reset = 1 - discount``).
        evaluations: the evaluator's solves, all methods together.
        metrics: the world's metrics of the controller (``q`` on the two-hypothesis world).
        cut_short: what the time limit stopped early (the upper bound, sizes of the ladder, the methods of a size), in order.
    """

    policy: Policy
    value: float
    upper_bound: float
    method: str
    seconds: float
    history: list
    seed: int
    reset: float
    evaluations: int
    metrics: dict
    cut_short: tuple[str, ...] = ()

    @property
    def gap(self) -> float:
        """``upper_bound - value``: the controller is within this of the best controller of any size."""
        return self.upper_bound - self.value

    def summary(self) -> dict:
        """Plain numbers (JSON-able), the history aside; ``memory`` is the architecture's canonical spec
        (:func:`fsc.model.memory.memory_spec`: ``ram:3``, or the architecture's dictionary)."""
        return {
            "value": self.value,
            "upper_bound": self.upper_bound,
            "gap": self.gap,
            "method": self.method,
            "seconds": self.seconds,
            "memory": memory_spec(self.policy.architecture),
            "seed": self.seed,
            "reset": self.reset,
            "evaluations": self.evaluations,
            **self.metrics,
            "cut_short": list(self.cut_short),
        }
