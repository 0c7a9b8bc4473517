"""What :func:`fsc.solver.solve` returns."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from fsc.model.memory import memory_spec
from fsc.model.policy import Policy

__all__ = ["Solution", "larger"]


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
        larger_value, larger_memory: a controller worth more that the memory does not hold, when the point-based
            search made one (its policy graph before it was compressed onto the memory): its exact value and the
            smallest RAM that holds it (``ram:K``, K its most nodes of one action); else None.  A value well above
            :attr:`value` says the memory, not the time, limits the answer.
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
    larger_value: float | None = None
    larger_memory: str | None = None

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
            "larger_value": self.larger_value,
            "larger_memory": self.larger_memory,
        }


def larger(found: Iterable[tuple[float, str] | None], value: float) -> dict:
    """``larger_value`` and ``larger_memory`` of a :class:`Solution` worth ``value``: the best of the controllers
    ``found`` (each its exact value and the RAM that holds it, or None) when it is worth more than ``value`` by more
    than rounding, else both None."""
    best = max((item for item in found if item is not None), key=lambda item: item[0], default=None)
    if best is None or not best[0] - value > 1e-9 * max(abs(best[0]), abs(value)):
        return {"larger_value": None, "larger_memory": None}
    return {"larger_value": float(best[0]), "larger_memory": best[1]}
