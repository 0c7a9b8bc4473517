"""The two-hypothesis testing problem (paper section 2.3, eq. (1))."""

from __future__ import annotations

import functools

import attrs
import numpy as np

from fsc.checks import integer, positive
from fsc.errors import InputError
from fsc.model.architecture import arm_labels
from fsc.model.pomdp import POMDP, Task

__all__ = ["TwoHypothesis"]


@attrs.frozen(eq=False)
class TwoHypothesis(Task):
    """Arms that pay +1 or -1; one of them, unknown to the agent, is better.

    Under hypothesis ``H_i`` arm ``i`` pays +1 with probability ``k_A`` and
    every other arm with ``k_B < k_A``.  With ``mu``: ``k_A = (1 + mu) / 2``,
    ``k_B = (1 - mu) / 2``.  The hypotheses are equally likely and never
    change, so each is a closed part of the world.

    World: states ``H_A, H_B, ...``; actions the arms ``A, B, ...``;
    observations the reward sign ``+, -``; reward +1 / -1.  Metric ``q``: the
    probability that the arm played is not the best one.

    Args:
        mu: the gap, in (0, 1); or give ``k_A`` and ``k_B`` instead.
        arms: number of arms (= hypotheses), at least 2.
    """

    mu: float | None = None
    k_A: float | None = attrs.field(default=None, kw_only=True)
    k_B: float | None = attrs.field(default=None, kw_only=True)
    arms: int = attrs.field(default=2, kw_only=True)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "arms", integer("arms", self.arms, 2))
        if self.mu is not None:
            if self.k_A is not None or self.k_B is not None:
                raise InputError("give either mu or (k_A, k_B), not both")
            mu = positive("mu", self.mu, 1)
            object.__setattr__(self, "mu", mu)
            object.__setattr__(self, "k_A", (1 + mu) / 2)
            object.__setattr__(self, "k_B", (1 - mu) / 2)
            return
        if self.k_A is None or self.k_B is None:
            raise InputError("give mu, or both k_A and k_B")
        k_A, k_B = positive("k_A", self.k_A, 1), positive("k_B", self.k_B, 1)
        if not k_A > k_B:
            raise InputError(f"k_A must be larger than k_B, got k_A={k_A!r}, k_B={k_B!r}")
        object.__setattr__(self, "k_A", k_A)
        object.__setattr__(self, "k_B", k_B)

    @functools.cached_property
    def pomdp(self) -> POMDP:
        n = self.arms
        names = arm_labels(n)
        pay = np.where(np.eye(n, dtype=bool), self.k_A, self.k_B)  # pay[a, s2]
        observation = np.stack([pay, 1 - pay], axis=-1)  # (A, S, O)
        transition = np.broadcast_to(np.eye(n)[:, None, :], (n, n, n))
        reward = np.broadcast_to(np.array([1.0, -1.0]), (n, n, n, 2))
        worse = np.broadcast_to((~np.eye(n, dtype=bool)).astype(float)[:, :, None, None], (n, n, n, 2))
        return POMDP(
            transition=transition,
            observation=observation,
            reward=reward,
            initial=np.full(n, 1 / n),
            metrics={"q": worse},
            state_labels=tuple(f"H_{x}" for x in names),
            action_labels=names,
            observation_labels=("+", "-"),
        )

    def paper_metrics(self, gain):
        """``q = ((2 k_A - 1) - gain) / (2 (k_A - k_B))``: ``(1 - gain/mu)/2`` with ``mu``.

        Only defined for two arms (the published code's setting).
        """
        if self.arms != 2:
            raise InputError(f"the paper convention reads q from the gain of two arms, got arms={self.arms}")
        return {"q": ((2 * self.k_A - 1) - gain) / (2 * (self.k_A - self.k_B))}
