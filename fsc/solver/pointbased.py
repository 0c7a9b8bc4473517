"""Belief-guided starts: point-based value iteration (Perseus) on beliefs the world reaches, turned into a
controller the exact methods polish.

Gradient, EM and greedy steps climb from where they start; on worlds where a plan must gather information
over several steps before it pays (tiger-grid, RockSample, Tag) they stay at the first myopic controller.
:class:`PointBased` (``pointbased``) starts them elsewhere:

1. Beliefs: the start belief and the beliefs met along trajectories from it, simulated with an exploring
   policy (uniform actions) and with the QMDP policy (the action best for the fully observable values,
   weighted by the belief; one action in ten uniform), about a third of ``beliefs`` each; after the values
   settle, more along the trajectories of the policy the values give, up to ``beliefs`` in all.
2. Values: Perseus (Spaan and Vlassis 2005): each stage backs up randomly chosen beliefs of the set until
   every belief's value has improved (a backup that does not improve keeps the old vector there).  It starts
   from the blind policies' values (play one action forever), so every vector is the value of a controller.
3. A controller: each vector a node with its action, its successor after ``o`` the vector best at the belief
   that follows its witness belief (:func:`fsc.solver.graph.closed_graph`), evaluated exactly; on
   ``ram:K`` its ``K`` most visited nodes, successors re-chosen among them
   (:func:`fsc.solver.graph.compress`).

The search is kept with the world (a weak reference) for the later rounds of the portfolio and its memory
sizes: each call continues it for at most ``steps`` stages within its budget, and turns where it stands into
a controller for the objective's memory.  Its random draws come from a generator seeded by the first call's.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from fsc.model.policy import Policy
from fsc.model.pomdp import POMDP, Task, as_pomdp
from fsc.objective import Objective
from fsc.solver.graph import Model, PolicyGraph, as_policy, backup, closed_graph, compress, fits

__all__ = ["Search", "blind_values", "forget", "model", "perseus_stage", "qmdp_values", "search_for", "trajectories"]

#: Uniform actions among the QMDP policy's and the value policy's, when they sample beliefs.
EXPLORE = 0.1

#: Perseus stages after which the belief set grows even if the values still move.
STAGES_PER_EXPANSION = 50

#: A stage improving no belief's value by more than this times the largest |reward| / (1 - gamma) has converged.
SETTLED = 1e-6


def model(world: POMDP | Task, reset: float) -> Model:
    """The world's tables for belief computations (:class:`fsc.solver.graph.Model`), at discount ``1 - reset``."""
    pomdp = as_pomdp(world)
    backward = tuple(matrix.tocsr() for matrix in pomdp.sparse_transition)
    forward = tuple(matrix.T.tocsr() for matrix in backward)
    initial = np.asarray(pomdp.initial, dtype=np.float64)
    return Model(
        discount=1.0 - reset, reward=pomdp.expected_step(pomdp.reward_table), forward=forward, backward=backward,
        observation=np.asarray(pomdp.observation, dtype=np.float64), initial=initial / initial.sum(),
    )  # fmt: skip


def blind_values(world: Model) -> np.ndarray:
    """``(A, S)``: the value of playing action ``a`` forever, ``(I - gamma T_a)^-1 R_a``."""
    S, A, _ = world.shape
    eye = sp.identity(S, format="csc")
    return np.stack([splu((eye - world.discount * world.backward[a]).tocsc()).solve(world.reward[:, a].copy()) for a in range(A)])


def qmdp_values(world: Model, sweeps: int = 300) -> np.ndarray:
    """``(S, A)``: the fully observable ``Q`` after ``sweeps`` value iterations from 0 (a guide, not a bound)."""
    S, A, _ = world.shape
    q = np.zeros((S, A))
    for _ in range(sweeps):
        best = q.max(axis=1)
        new = world.reward + world.discount * np.stack([world.backward[a] @ best for a in range(A)], axis=1)
        if np.abs(new - q).max() <= 1e-9 * max(1.0, np.abs(new).max()):
            return new
        q = new
    return q


def _step(world: Model, state: int, belief: np.ndarray, action: int, rng: np.random.Generator) -> tuple[int, np.ndarray | None]:
    """The world's next state after ``action`` in ``state``, and the belief after the observation it emits."""
    row = world.backward[action]
    lo, hi = row.indptr[state], row.indptr[state + 1]
    state = int(row.indices[lo + rng.choice(hi - lo, p=row.data[lo:hi] / row.data[lo:hi].sum())])
    emits = world.observation[action, state]
    seen = int(rng.choice(len(emits), p=emits / emits.sum()))
    after = (world.forward[action] @ belief) * world.observation[action, :, seen]
    total = after.sum()
    return state, (after / total if total > 0 else None)


def trajectories(world: Model, rng: np.random.Generator, count: int, chooser: Callable, length: int) -> list[np.ndarray]:
    """``count`` beliefs met along runs of ``length`` steps from the start belief, ``chooser(belief, rng)`` choosing each action."""
    S = world.shape[0]
    found: list[np.ndarray] = []
    while len(found) < count:
        belief = world.initial
        state = int(rng.choice(S, p=belief))
        for _ in range(length):
            state, belief = _step(world, state, belief, chooser(belief, rng), rng)
            if belief is None or len(found) >= count:
                break
            found.append(belief)
    return found


def _greedy(values: np.ndarray, actions: np.ndarray | None, A: int) -> Callable:
    """A chooser: the action of the best of ``values`` at the belief (``actions`` None: ``values`` are per action), one in ten uniform."""

    def choose(belief: np.ndarray, rng: np.random.Generator) -> int:
        if rng.random() < EXPLORE:
            return int(rng.integers(A))
        scores = values @ belief
        return int(np.argmax(scores)) if actions is None else int(actions[np.argmax(scores)])

    return choose


def _distinct(beliefs: np.ndarray, new: list[np.ndarray]) -> np.ndarray:
    """``beliefs`` and the beliefs of ``new`` not already among them (to 1e-9)."""
    seen = {np.round(b, 9).tobytes() for b in beliefs}
    kept = []
    for belief in new:
        key = np.round(belief, 9).tobytes()
        if key not in seen:
            seen.add(key)
            kept.append(belief)
    return np.concatenate([beliefs, np.array(kept)]) if kept else beliefs


def perseus_stage(world: Model, vectors: np.ndarray, actions: np.ndarray, witness: np.ndarray, beliefs: np.ndarray,
                  rng: np.random.Generator, batch: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:  # fmt: skip
    """One stage of Perseus: new ``(vectors, actions, witness)`` whose value at every belief is at least the old one,
    and the largest gain at a belief.  Beliefs are backed up ``batch`` at a time, drawn among those not yet
    improved; a backup that does not improve its belief keeps the old vector best there."""
    old = beliefs @ vectors.T
    before, was = old.max(axis=1), old.argmax(axis=1)
    slack = 1e-12 * max(1.0, float(np.abs(before).max()))
    now = np.full(len(beliefs), -np.inf)
    kept_v, kept_a, kept_w, reused = [], [], [], set()
    todo = np.arange(len(beliefs))
    while todo.size:
        pick = rng.choice(todo, size=min(batch, todo.size), replace=False)
        value, action, new, _ = backup(world, vectors, beliefs[pick])
        for j, b in enumerate(pick):
            if value[j] >= before[b]:
                kept_v.append(new[j]), kept_a.append(action[j]), kept_w.append(beliefs[b])
                now = np.maximum(now, beliefs @ new[j])
            elif was[b] not in reused:
                reused.add(was[b])
                kept_v.append(vectors[was[b]]), kept_a.append(actions[was[b]]), kept_w.append(witness[was[b]])
                now = np.maximum(now, beliefs @ vectors[was[b]])
        todo = np.flatnonzero(now < before - slack)
    return np.array(kept_v), np.array(kept_a, dtype=np.int64), np.array(kept_w), float((now - before).max())


class Search:
    """A point-based search in progress on one world: its beliefs, its vectors (each with its action and the
    belief it was made at) and where it stands; :meth:`advance` runs one more stage.

    Args:
        world: the world's tables (:func:`model`).
        beliefs: the most beliefs it samples.
        rng: its random draws.
    """

    def __init__(self, world: Model, beliefs: int, rng: np.random.Generator):
        S, A, _ = world.shape
        self.world, self.most, self.rng = world, beliefs, rng
        self.scale = max(float(np.abs(world.reward).max()), 1e-300) / (1 - world.discount)
        self.length = int(min(100, max(10, math.ceil(1 / (1 - world.discount)))))
        self.vectors, self.actions, self.witness = blind_values(world), np.arange(A), np.repeat(world.initial[None], A, axis=0)
        uniform = trajectories(world, rng, beliefs // 3, lambda belief, rng: int(rng.integers(A)), self.length)
        guided = trajectories(world, rng, beliefs // 3, _greedy(qmdp_values(world).T, None, A), self.length)
        self.beliefs = _distinct(world.initial[None], uniform + guided)
        self.stages, self.since, self.done, self.gain = 0, 0, False, math.inf
        self._graphs: dict[tuple[int, int], PolicyGraph] = {}
        self._offered: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # objective -> stages when last offered

    def advance(self) -> None:
        """One Perseus stage; when the values settle (or every :data:`STAGES_PER_EXPANSION` stages), more beliefs
        along the trajectories of the policy the values give, up to ``beliefs``; done when settled and full."""
        self.vectors, self.actions, self.witness, self.gain = perseus_stage(self.world, self.vectors, self.actions, self.witness, self.beliefs, self.rng)
        self.stages, self.since = self.stages + 1, self.since + 1
        settled = self.gain <= SETTLED * self.scale
        if (settled or self.since >= STAGES_PER_EXPANSION) and len(self.beliefs) < self.most:
            chooser = _greedy(self.vectors, self.actions, self.world.shape[1])
            new = trajectories(self.world, self.rng, min(self.most - len(self.beliefs), max(1, self.most // 6)), chooser, self.length)
            grown = _distinct(self.beliefs, new)
            self.most = self.most if len(grown) > len(self.beliefs) else len(grown)  # nothing new: the set is all it can be
            self.beliefs, self.since = grown, 0
        elif settled:
            self.done = True

    @property
    def bound(self) -> float:
        """The best vector's value at the start belief: the value of a controller (a lower bound on the optimum)."""
        return float((self.vectors @ self.world.initial).max())

    def graph(self, size: int | None = None, deadline: float = math.inf) -> PolicyGraph:
        """The policy graph of the vectors as they stand (:func:`fsc.solver.graph.closed_graph`); with ``size``, one
        that fits ``RAM(size)``: itself or compressed (:func:`fsc.solver.graph.compress`), or that of ``size // 2``
        if better."""
        full = self._graphs.get((self.stages, 0))
        if full is None:
            self._graphs = {key: graph for key, graph in self._graphs.items() if key[0] == self.stages}
            full = closed_graph(self.world, self.vectors, self.actions, self.witness, deadline)
            if time.monotonic() >= deadline:  # perhaps cut short: not kept for later calls
                return full if size is None or fits(full, size) else compress(self.world, full, size)
            self._graphs[self.stages, 0] = full
        if size is None:
            return full
        if (self.stages, size) not in self._graphs:
            found = full if fits(full, size) else compress(self.world, full, size)
            # fits too: the value never falls as the memory grows
            smaller = self.graph(size // 2, deadline) if size > 1 and time.monotonic() < deadline else found
            self._graphs[self.stages, size] = found if found.value >= smaller.value else smaller
        return self._graphs[self.stages, size]

    def controller(self, objective: Objective, deadline: float = math.inf) -> Policy | None:
        """The policy graph on the objective's ``RAM(K)`` (:meth:`graph` of ``K`` memories), as a deterministic
        policy; None when the search has not moved since the last call with this objective (it had it then)."""
        if self._offered.get(objective) == self.stages:
            return None
        self._offered[objective] = self.stages
        return as_policy(self.graph(objective.architecture.M, deadline), objective.architecture)


_SEARCHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def forget(world) -> None:
    """Drop the searches kept with ``world``: a solve starts its own (its seed, not an earlier solve's, decides)."""
    _SEARCHES.pop(as_pomdp(world), None)


def search_for(objective: Objective, beliefs: int, rng: np.random.Generator) -> Search:
    """The search on the objective's world and reset with this many beliefs: the one kept with the world, or a
    new one (its generator seeded from ``rng``)."""
    world = as_pomdp(objective.world)
    found = _SEARCHES.setdefault(world, {})
    key = (objective.reset, beliefs)
    if key not in found:
        found[key] = Search(model(world, objective.reset), beliefs, np.random.default_rng(int(rng.integers(2**63))))
    return found[key]
