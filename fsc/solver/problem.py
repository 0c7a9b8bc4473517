"""What every method of :mod:`fsc.solver` shares: the problem (one evaluator) and the budget.

A method reads the value of a policy, its gradient and the occupancy of each node from
:class:`Problem`, which runs :class:`fsc.evaluate.Evaluator` (the computation of :func:`fsc.evaluate`)
and :class:`fsc.objective.Objective` (its compiled value and gradient), so every method climbs the same
numbers that ``fsc evaluate`` reports.
"""

from __future__ import annotations

import functools
import time

import attrs
import numpy as np

from fsc.evaluate import Evaluator
from fsc.model.architecture import MemoryArchitecture
from fsc.model.policy import Policy
from fsc.model.pomdp import POMDP, Task, as_pomdp
from fsc.objective import Objective

__all__ = ["Budget", "Look", "Problem"]


@attrs.frozen(kw_only=True, eq=False)
class Look:
    """A policy seen through the evaluator: its value and what the methods step on.

    Attributes:
        probs, init_probs: the policy's probabilities ``(N, C)`` and ``(N,)``.
        value: the discounted return from the start belief (``gain / r``).
        grad: ``dV/dpi[n, c]``, each probability moved alone: ``sum_s rho(s, n) Q(s, n, c)``.
        grad_init: ``dV/dpi_0[n]``: ``sum_s b0(s) V(s, n)``.
        occupancy: ``rho(n) = sum_s rho(s, n)``, the discounted visits of each node (they sum to ``1 / r``).
        metrics: the world's metrics (``q`` on the two-hypothesis world).
    """

    probs: np.ndarray
    init_probs: np.ndarray
    value: float
    grad: np.ndarray
    grad_init: np.ndarray
    occupancy: np.ndarray
    metrics: dict


@attrs.frozen(kw_only=True, eq=False)
class Problem:
    """A world, a memory architecture and a reset ``r`` (discount ``1 - r``), with their evaluator."""

    world: POMDP | Task
    architecture: MemoryArchitecture
    reset: float
    engine: str = "auto"
    evaluations: list = attrs.field(factory=lambda: [0], repr=False)  # a counter the methods share
    variants: dict = attrs.field(factory=dict, repr=False)  # the shaped problems, by weight

    @functools.cached_property
    def evaluator(self) -> Evaluator:
        return Evaluator(self.world, self.architecture, self.reset, self.engine)

    @functools.cached_property
    def objective(self) -> Objective:
        """The value ``gain / r`` and its gradient in the logits (what :func:`fsc.solver.methods.ascent` climbs)."""
        return Objective(world=self.world, architecture=self.architecture, reset=self.reset, engine=self.engine, target="return")

    @functools.cached_property
    def lowest_reward(self) -> float:
        """The smallest reward of any step: every ``Q`` is at least this over ``r``."""
        return float(self.evaluator.step_reward.min())

    @functools.cached_property
    def reward_scale(self) -> float:
        """The largest ``|reward|`` of a step over ``r``: no value is larger in size."""
        return float(np.abs(self.evaluator.step_reward).max()) / self.reset

    def flat(self, value: float) -> bool:
        """Whether ``value`` is that of a controller that collects (almost) no reward, on a world whose rewards
        have both signs: the flat region where avoiding every reward is a local optimum and the gradient vanishes."""
        rewards = self.evaluator.step_reward
        return bool(rewards.min() < 0 < rewards.max()) and abs(value) <= 1e-6 * self.reward_scale

    def shaped(self, weight: float) -> Problem:
        """The same problem on the world whose negative rewards are multiplied by ``weight`` (a shaped objective)."""
        if weight not in self.variants:
            pomdp = as_pomdp(self.world)
            world = attrs.evolve(pomdp, reward=np.where(pomdp.reward < 0, weight * pomdp.reward, pomdp.reward), metrics={})
            self.variants[weight] = Problem(world=world, architecture=self.architecture, reset=self.reset, engine=self.engine, evaluations=self.evaluations)
        return self.variants[weight]

    def look(self, probs: np.ndarray, init_probs: np.ndarray) -> Look:
        """Value, gradient in the probabilities and node occupancy of the policy ``(probs, init_probs)``."""
        ev, r = self.evaluator, self.reset
        run = ev.forward_probs(np.ascontiguousarray(probs, dtype=np.float64), np.ascontiguousarray(init_probs, dtype=np.float64))
        grad, grad_init = ev.backward(run, value=1.0, on="probs")
        K, S, N, _ = ev.shape
        occupancy = (run.p.reshape(K, S, N) * ev.chain.part_weights[:, None, None]).sum(axis=(0, 1)) / r
        self.evaluations[0] += 1
        return Look(probs=probs, init_probs=init_probs, value=run.gain / r, grad=grad, grad_init=grad_init, occupancy=occupancy, metrics=run.metrics)

    def value(self, probs: np.ndarray, init_probs: np.ndarray) -> float:
        """The value alone (one forward solve)."""
        run = self.evaluator.forward_probs(np.ascontiguousarray(probs, dtype=np.float64), np.ascontiguousarray(init_probs, dtype=np.float64))
        self.evaluations[0] += 1
        return run.gain / self.reset

    def policy(self, probs: np.ndarray, init_probs: np.ndarray) -> Policy:
        """The policy with these probabilities (zeros become ``-inf`` logits)."""
        probs = probs / probs.sum(axis=1, keepdims=True)
        init_probs = init_probs / init_probs.sum()
        return Policy.from_probs(self.architecture, probs, init_probs)


@attrs.frozen(kw_only=True)
class Budget:
    """How long a method may run: at most ``steps`` steps, and never past ``deadline`` (``time.monotonic()``).

    With a deadline far away, a method's result depends on its start, its steps and its random generator
    only: the same seed gives the same controller.
    """

    steps: int
    deadline: float

    def over(self, step: int) -> bool:
        return step >= self.steps or time.monotonic() >= self.deadline

    @classmethod
    def of(cls, steps: int, seconds: float) -> Budget:
        return cls(steps=steps, deadline=time.monotonic() + seconds)
