"""Monte Carlo rollouts of a controller in its world, with reset.

An independent check of :func:`fsc.evaluate`: it never builds the joint
chain, only samples it.  The estimator is regenerative: a reset starts a new,
independent episode, so with ``L`` the length of an episode and ``F`` the sum
of a per-step quantity over it,

.. math::

    E_p[f] = E[F] / E[L]

(the renewal-reward theorem; paper Lemma 2.1 gives the same ``p``).  Every
walker runs the same number of whole episodes, so the walkers' totals are
independent and identically distributed; the estimate is the ratio of their
sums and its standard error comes from the delta method.
"""

from __future__ import annotations

import math
import time

import attrs
import numpy as np

from fsc.checks import CONVENTIONS, check_reset, integer
from fsc.errors import InputError
from fsc.limits import MAX_WALKERS, check_dense_world, check_simulate_steps
from fsc.model.policy import Policy, Weights, check_policy
from fsc.model.pomdp import POMDP, Task, as_pomdp, paper_read

__all__ = ["Simulation", "simulate"]


@attrs.frozen(kw_only=True)
class Simulation:
    """Monte Carlo estimates with standard errors.

    Attributes:
        gain, gain_stderr: reward per step.
        metrics, stderrs: name -> estimate, name -> standard error.
        steps, episodes, walkers: the sample sizes.
    """

    gain: float
    gain_stderr: float
    metrics: dict[str, float]
    stderrs: dict[str, float]
    steps: int
    episodes: int
    walkers: int
    convention: str
    reset: float
    seconds: float

    def summary(self) -> dict:
        out = {"gain": self.gain, "gain_stderr": self.gain_stderr}
        for name, value in self.metrics.items():
            out[name] = value
            out[f"{name}_stderr"] = self.stderrs[name]
        out.update(steps=self.steps, episodes=self.episodes, walkers=self.walkers, convention=self.convention, reset=self.reset, seconds=self.seconds)
        return out


def _sample(cumulative: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Index drawn from each row of ``cumulative`` (cumulative probabilities) with uniforms ``u``."""
    index = (cumulative < u[:, None]).sum(axis=1)
    return np.minimum(index, cumulative.shape[1] - 1)


def _ratio(F: np.ndarray, L: np.ndarray) -> tuple[float, float]:
    """Ratio estimator ``sum F / sum L`` and its delta-method standard error."""
    estimate = F.sum() / L.sum()
    W = len(F)
    if W < 2:
        return float(estimate), math.inf
    spread = (F - estimate * L).std(ddof=1)
    return float(estimate), float(spread / (L.mean() * math.sqrt(W)))


@attrs.frozen(kw_only=True)
class _Sampler:
    """The cumulative tables a rollout draws from, and the controller's wiring.

    Attributes:
        policy: (N, C) the choice probabilities of each node, cumulated.
        init, world: (1, N) and (1, S) the start distributions of the controller and the world, cumulated.
        transition, observation: (S, A, S) and (A, S, O) the world's tables, cumulated along the last axis.
        action, next_node: the architecture's choice -> action and (node, choice, observation) -> node.
        tables: the per-step quantities tallied: the reward, then the world's metrics in order.
    """

    policy: np.ndarray
    init: np.ndarray
    world: np.ndarray
    transition: np.ndarray
    observation: np.ndarray
    action: np.ndarray
    next_node: np.ndarray
    tables: list[np.ndarray]

    @classmethod
    def of(cls, pomdp: POMDP, policy: Policy | Weights) -> _Sampler:
        probs, init_probs = _probabilities(policy)
        check_dense_world(pomdp.num_states, pomdp.num_actions, pomdp.num_observations, what="fsc.simulate")  # its tables are dense
        architecture = policy.architecture
        return cls(
            policy=np.cumsum(probs, axis=1),
            init=np.cumsum(init_probs)[None, :],
            world=np.cumsum(pomdp.initial)[None, :],
            transition=np.cumsum(pomdp.transition, axis=2),
            observation=np.cumsum(pomdp.observation, axis=2),
            action=architecture.choice_action,
            next_node=architecture.next_node,
            tables=[pomdp.reward, *pomdp.metrics.values()],  # row 0 of the tallies is the reward; a metric may be called "gain" too
        )

    def starts(self, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
        """World states and controller nodes that ``count`` new episodes start in."""
        return _sample(self.world, rng.random(count)), _sample(self.init, rng.random(count))


def _probabilities(policy: Policy | Weights) -> tuple[np.ndarray, np.ndarray]:
    """The choice probabilities ``(N, C)`` and initial-node probabilities ``(N,)`` of a policy: by torch's softmax
    for a :class:`Policy`, by numpy's for its :class:`Weights` (no torch)."""
    if isinstance(policy, Policy):
        return policy.probs().detach().numpy(), policy.init_probs().detach().numpy()
    return policy.probs(), policy.init_probs()


def _rollouts(
    sampler: _Sampler, *, reset: float, walkers: int, per_walker: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Run each of ``walkers`` walkers through ``per_walker`` whole episodes.

    Returns:
        ``totals``, ``carried``: (tables, walkers) each walker's sums of the reward and the metrics, over every
        step and over the steps not followed by a reset (the paper convention); ``length``: each walker's
        steps; ``episodes``: each walker's finished episodes.
    """
    W = walkers
    s, n = sampler.starts(rng, W)
    episodes = np.zeros(W, dtype=np.int64)
    length = np.zeros(W)
    totals = np.zeros((len(sampler.tables), W))
    last = np.zeros((len(sampler.tables), W))  # value of the step just taken, per walker
    carried = np.zeros((len(sampler.tables), W))  # paper: values of steps not followed by a reset
    active = np.ones(W, dtype=bool)
    while active.any():
        idx = np.flatnonzero(active)
        ss, nn = s[idx], n[idx]
        c = _sample(sampler.policy[nn], rng.random(len(idx)))
        a = sampler.action[c]
        s2 = _sample(sampler.transition[ss, a], rng.random(len(idx)))
        o = _sample(sampler.observation[a, s2], rng.random(len(idx)))
        for i, table in enumerate(sampler.tables):
            value = table[ss, a, s2, o]
            totals[i, idx] += value
            carried[i, idx] += value
            last[i, idx] = value
        length[idx] += 1
        s[idx], n[idx] = s2, sampler.next_node[nn, c, o]
        resets = idx[rng.random(len(idx)) < reset]
        if len(resets):
            carried[:, resets] -= last[:, resets]
            episodes[resets] += 1
            s[resets], n[resets] = sampler.starts(rng, len(resets))
            active[resets[episodes[resets] >= per_walker]] = False
    return totals, carried, length, episodes


def _estimates(
    world: POMDP | Task, names: list[str], source: np.ndarray, length: np.ndarray, convention: str
) -> tuple[float, float, dict[str, float], dict[str, float]]:
    """The gain, its standard error, and each metric's estimate and standard error, from the tallies ``source``
    (row 0 the reward, then the metrics ``names``) and the walkers' lengths.

    In the paper convention, the metrics of a world that reads them from the gain
    (:func:`fsc.model.pomdp.paper_read`) are read so, and their error is the gain's, scaled.
    """
    gain, gain_stderr = _ratio(source[0], length)
    estimates = {name: _ratio(source[1 + i], length) for i, name in enumerate(names)}
    metrics = {k: v[0] for k, v in estimates.items()}
    stderrs = {k: v[1] for k, v in estimates.items()}
    read = paper_read(world, gain) if convention == "paper" else None
    if read is not None:  # metrics that are functions of the gain: their error is the gain's, scaled
        metrics = {k: float(v) for k, v in read.items()}
        one, zero = paper_read(world, 1.0), paper_read(world, 0.0)
        stderrs = {k: abs(float(one[k]) - float(zero[k])) * gain_stderr for k in metrics}
    return gain, gain_stderr, metrics, stderrs


def simulate(
    world: POMDP | Task,
    policy: Policy | Weights,
    *,
    reset: float,
    steps: int = 1_000_000,
    walkers: int = 256,
    seed: int | None = None,
    convention: str = "native",
) -> Simulation:
    """Estimate gain and metrics of a controller by sampling it.

    ``policy``: a :class:`fsc.Policy`, or its numpy logits (:class:`fsc.model.policy.Weights`), with which
    nothing imports torch.

    Args:
        reset: reset probability ``r`` per step, in (0, 1].
        steps: step budget; each of the ``walkers`` runs
            ``max(1, round(steps * r / walkers))`` whole episodes.
        seed: seed of the numpy random generator.
        convention: ``native`` (the step's reward) or ``paper`` (the reward
            carried by the state it leads to, 0 in a reset state).
    """
    start = time.perf_counter()
    if not isinstance(policy, Weights):  # Weights: a policy's numpy logits, checked when made (no torch)
        check_policy(policy)
    reset = check_reset(reset)
    if convention not in CONVENTIONS:
        raise InputError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    steps, walkers = integer("steps", steps, 1), integer("walkers", walkers, 1)
    if walkers > MAX_WALKERS:  # each walker holds a few hundred bytes of state, allocated up front
        raise InputError(f"walkers must be at most {MAX_WALKERS:.0e} (fsc.limits.MAX_WALKERS), got {walkers!r}")
    check_simulate_steps(steps, walkers, reset)  # a small reset makes every episode long
    architecture = policy.architecture
    pomdp = as_pomdp(world)
    if architecture.num_actions != pomdp.num_actions or architecture.num_observations != pomdp.num_observations:
        raise InputError(f"{architecture!r} does not match the world's actions and observations")
    rng = np.random.default_rng(seed)
    sampler = _Sampler.of(pomdp, policy)
    per_walker = max(1, round(steps * reset / walkers))
    totals, carried, length, episodes_done = _rollouts(sampler, reset=reset, walkers=walkers, per_walker=per_walker, rng=rng)
    source = totals if convention == "native" else carried
    gain, gain_stderr, metrics, stderrs = _estimates(world, list(pomdp.metrics), source, length, convention)
    return Simulation(
        gain=gain,
        gain_stderr=gain_stderr,
        metrics=metrics,
        stderrs=stderrs,
        steps=int(length.sum()),
        episodes=int(episodes_done.sum()),
        walkers=walkers,
        convention=convention,
        reset=reset,
        seconds=time.perf_counter() - start,
    )
