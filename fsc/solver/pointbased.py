"""Belief-guided starts: point-based value iteration (Perseus) on beliefs the world reaches, turned into a
controller the exact methods polish.

Gradient, EM and greedy steps climb from where they start; on worlds where a plan must gather information
over several steps before it pays (tiger-grid, RockSample, Tag) they stay at the first myopic controller.
:class:`PointBased` (``pointbased``) starts them elsewhere:

1. Beliefs: the start belief and the beliefs met along trajectories from it, simulated with an exploring
   policy (uniform actions; a third of ``beliefs``), with the QMDP policy (the action best for the fully
   observable values, weighted by the belief; one action in ten uniform; a sixth) and with the action best for
   those values at the run's true state (:func:`_cheating`; a sixth); after the values
   settle, more along the trajectories of the policy the values give and, half of them, of the true state's best
   action (:data:`GROWTH_AT_THE_STATE`; where those repeat, uniform ones and
   one step of every action from the set: :func:`every_action`), up to ``beliefs`` in all; settled on a full
   set, a fresh set (the vectors' witnesses kept), up to :data:`REFRESHES` times.
2. Values: Perseus (Spaan and Vlassis 2005): each stage backs up randomly chosen beliefs of the set until
   every belief's value has improved (a backup that does not improve keeps the old vector there).  It starts
   from the blind policies' values (play one action forever), so every vector is the value of a controller,
   whose plan :class:`Plans` records.
3. A controller: the plan of the best vector (worth the bound exactly) when it is small enough, and each vector a
   node with its action, its successor after ``o`` the vector best at the belief that follows its witness belief
   (:func:`fsc.solver.graph.closed_graph`), evaluated exactly, when there is no such plan or that graph is small
   (:data:`CLOSED_PAIRS`); the better of the two, on ``ram:K`` minimised, then merged or covered down to ``K``
   nodes of each action (:func:`fsc.solver.graph.compress`).

The search is kept with the world (a weak reference) for the later rounds of the portfolio and its memory
sizes: each call continues it for at most ``steps`` stages within its budget, and turns where it stands into
a controller for the objective's memory.  Its random draws come from a generator seeded by the first call's.
"""

from __future__ import annotations

import contextlib
import math
import time
import weakref
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from fsc.engines.cost import available_bytes
from fsc.limits import TimeUp
from fsc.model.policy import Policy
from fsc.model.pomdp import POMDP, Task, as_pomdp
from fsc.objective import Objective
from fsc.solver.graph import Model, PolicyGraph, as_policy, backup, closed_graph, compress, evaluate_graph, fits, minimal, reachable

__all__ = [
    "Plans", "Search", "blind_values", "forget", "every_action", "made", "model", "perseus_stage", "qmdp_values", "run_length", "sample_step",
    "search_for", "trajectories",
]  # fmt: skip

#: Uniform actions among the QMDP policy's and the value policy's, when they sample beliefs.
EXPLORE = 0.1

#: The plan of the best vector becomes the policy graph when its minimal graph has at most ``PLAN_NODES`` nodes
#: and ``PLAN_PAIRS`` pairs (node, state) (a deep plan is a large graph: slow to evaluate and to compress), and at most
#: a ``PLAN_PAIR_BYTES``-th of half the memory free when the search starts: RockSample[7,8]'s solve at 300 s peaked
#: at 3.8 GB with plans of 2,000 nodes (25.6 million pairs), where 16 million had stopped its search at 137 s
#: (21.249, against 21.337 at 300 s).
PLAN_NODES = 2000
PLAN_PAIRS = 32_000_000
PLAN_PAIR_BYTES = 160

#: The graph-only path makes a graph when the best vector's plan passes each of these shares of the most nodes a plan
#: may have (:meth:`Search.plan_outgrowing`): RockSample[7,8] at 300 s, with three quarters alone, returned 20.73 (the
#: graph made then; the plan outgrew the limit before the next), where 60 s had given 21.01.
PLAN_WARNINGS = (0.75, 0.95)

#: With the plan of the best vector in hand (worth the bound exactly), the vectors' own graph (cyclic, it can beat the
#: plan: Tiger's optimum 19.3714 against a plan's 19.335) is made too when it has at most ``CLOSED_PAIRS`` pairs
#: (node, state): on RockSample[7,8], 2.7 million pairs, it took 5 to 11 s of a 60 s budget for a graph worth less.
CLOSED_PAIRS = 1_000_000

#: How many times a search settled on a full belief set starts again on a fresh one (its vectors kept).
REFRESHES = 8

#: A memory that has a graph gets a new one (:meth:`Search.controller`) once the stages have grown by this factor
#: since the last graph was made: graphs at stages 10, 15, 23, 35, ..., not after every round's few stages.
GRAPH_GROWTH = 1.5

#: Perseus stages after which the belief set grows even if the values still move (the value at the start belief after
#: 25 s, against 50: Tag -6.03 against -7.08, tiger-grid 2.277 against 2.260, RockSample[7,8] 18.73 against 18.23).
STAGES_PER_EXPANSION = 10

#: The share of the runs that grow the belief set (every :data:`STAGES_PER_EXPANSION` stages) that play the fully
#: observable values' best action at the run's true state (:func:`_cheating`), the rest the values' policy.  Perseus for
#: 20 s, seeds 0 to 2, two jobs at a time, with half against none: Tag -6.025, -6.028, -6.014 against -6.267, -6.014,
#: -6.137; hallway 1.0100, 1.0121, 1.0060 against 1.0089, 1.0119, 1.0095; RockSample[7,8] for 40 s, seeds 0 to 3:
#: 20.80, 20.23, 20.61, 21.00 against 19.96, 20.23, 20.66, 20.93.
GROWTH_AT_THE_STATE = 0.5

#: A Perseus stage scores its beliefs as a sparse matrix when at most this share of their entries is nonzero (RockSample's
#: beliefs know the robot's cell: 2% of RockSample[7,8]'s 12,800 states).
SPARSE_BELIEFS = 0.25

#: A full belief set on which the value at the start belief has risen by less than :data:`STALL_GAIN` times the largest
#: |reward| / (1 - gamma) in this many stages is refreshed (:meth:`Search.refresh`) although other beliefs still gain.
STALL_STAGES = 10

#: See :data:`STALL_STAGES`.
STALL_GAIN = 1e-4

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


def sample_step(world: Model, state: int, belief: np.ndarray, action: int, rng: np.random.Generator) -> tuple[int, np.ndarray | None]:
    """The world's next state after ``action`` in ``state``, and the belief after the observation it emits."""
    row = world.backward[action]
    lo, hi = row.indptr[state], row.indptr[state + 1]
    state = int(row.indices[lo + rng.choice(hi - lo, p=row.data[lo:hi] / row.data[lo:hi].sum())])
    emits = world.observation[action, state]
    seen = int(rng.choice(len(emits), p=emits / emits.sum()))
    after = (world.forward[action] @ belief) * world.observation[action, :, seen]
    total = after.sum()
    return state, (after / total if total > 0 else None)


def run_length(discount: float) -> int:
    """How many steps a sampled run lasts: ``1 / (1 - discount)`` (the horizon that matters), from 10 to 100."""
    return int(min(100, max(10, math.ceil(1 / (1 - discount)))))


def trajectories(world: Model, rng: np.random.Generator, count: int, chooser: Callable, length: int) -> list[np.ndarray]:
    """``count`` beliefs met along runs of ``length`` steps from the start belief, ``chooser(belief, rng, state)`` choosing
    each action (``state``: the run's true state, which only a guide that cheats may read)."""
    S = world.shape[0]
    found: list[np.ndarray] = []
    while len(found) < count:
        belief = world.initial
        state = int(rng.choice(S, p=belief))
        for _ in range(length):
            state, belief = sample_step(world, state, belief, chooser(belief, rng, state), rng)
            if belief is None or len(found) >= count:
                break
            found.append(belief)
    return found


def every_action(world: Model, rng: np.random.Generator, beliefs: np.ndarray, count: int) -> list[np.ndarray]:
    """About ``count`` beliefs one step from ``beliefs``: from each of ``count // A`` of them drawn at random, the
    belief after each action and an observation drawn for it (a state drawn from the belief, its next state and
    what it emits), so that the set grows in the direction of every action, information gathering included."""
    S, A, _ = world.shape
    found = []
    for b in rng.choice(len(beliefs), size=min(len(beliefs), max(1, count // A)), replace=False):
        for a in range(A):
            _, after = sample_step(world, int(rng.choice(S, p=beliefs[b])), beliefs[b], a, rng)
            if after is not None:
                found.append(after)
    return found


def _greedy(values: np.ndarray, actions: np.ndarray | None, A: int, explore: float = EXPLORE) -> Callable:
    """A chooser: the action of the best of ``values`` at the belief (``actions`` None: ``values`` are per action),
    a uniform one with probability ``explore``."""

    def choose(belief: np.ndarray, rng: np.random.Generator, state: int) -> int:
        if rng.random() < explore:
            return int(rng.integers(A))
        scores = values @ belief
        return int(np.argmax(scores)) if actions is None else int(actions[np.argmax(scores)])

    return choose


def _cheating(q: np.ndarray, explore: float = EXPLORE) -> Callable:
    """A chooser that sees the run's true state: the action best for the fully observable values ``q`` ``(S, A)`` there,
    a uniform one with probability ``explore``.  Its runs go where the rewards are (as the forward search value
    iteration of Shani, Brafman and Shimony 2007 samples beliefs), which neither uniform actions nor the values' policy
    reach when no belief yet knows the way."""

    def choose(belief: np.ndarray, rng: np.random.Generator, state: int) -> int:
        if rng.random() < explore:
            return int(rng.integers(q.shape[1]))
        return int(np.argmax(q[state]))

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
                  rng: np.random.Generator, batch: int = 8, deadline: float = math.inf,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, np.ndarray]:  # fmt: skip
    """One stage of Perseus: new ``(vectors, actions, witness)`` whose value at every belief is at least the old one,
    the largest gain at a belief, and where each new vector comes from ``(k, 1 + O)``: ``[j, ...]`` the old vector
    ``j`` kept, ``[-1, c_1, ..., c_O]`` a backup moving to old vector ``c_o`` after ``o``.  Beliefs are backed up
    ``batch`` at a time, drawn among those not yet improved; a backup that does not improve its belief keeps the
    old vector best there; past ``deadline`` (``time.monotonic()``), so does every belief not yet improved."""
    held = sp.csr_matrix(beliefs) if np.count_nonzero(beliefs) <= SPARSE_BELIEFS * beliefs.size else beliefs
    old = np.asarray(held @ vectors.T)
    before, was = old.max(axis=1), old.argmax(axis=1)
    by_state = np.ascontiguousarray(vectors.T)  # for every backup of the stage (:func:`fsc.solver.graph.backup`)
    slack = 1e-12 * max(1.0, float(np.abs(before).max()))
    now = np.full(len(beliefs), -np.inf)
    kept_v, kept_a, kept_w, origin, reused = [], [], [], [], set()
    O = world.shape[2]
    todo = np.arange(len(beliefs))
    while todo.size:
        if time.monotonic() >= deadline:  # no more backups: each belief left keeps its old vector
            pick, value, action, new, choice = todo, before[todo] - 1.0, None, None, None
        else:
            pick = rng.choice(todo, size=min(batch, todo.size), replace=False)
            value, action, new, choice = backup(world, vectors, beliefs[pick], by_state)
        added = len(kept_v)
        for j, b in enumerate(pick):
            if value[j] >= before[b]:
                kept_v.append(new[j]), kept_a.append(action[j]), kept_w.append(beliefs[b]), origin.append(np.concatenate([[-1], choice[j]]))
            elif was[b] not in reused:
                reused.add(was[b])
                kept_v.append(vectors[was[b]]), kept_a.append(actions[was[b]]), kept_w.append(witness[was[b]])
                origin.append(np.concatenate([[was[b]], np.zeros(O, dtype=np.int64)]))
        if len(kept_v) > added:  # the beliefs not yet improved are all that the next draws need
            now[todo] = np.maximum(now[todo], np.asarray(held[todo] @ np.array(kept_v[added:]).T).max(axis=1))
        todo = np.flatnonzero(now < before - slack)
    kept_v = np.array(kept_v)
    gain = float((np.asarray(held @ kept_v.T).max(axis=1) - before).max())
    return kept_v, np.array(kept_a, dtype=np.int64), np.array(kept_w), gain, np.array(origin, dtype=np.int64)


class Plans:
    """The plan of every vector Perseus has made: its action and, after each observation, the vector (its id here)
    its backup chose then.  A blind vector plays its action forever.  The plan of a vector is the controller
    whose exact value the vector is, so the graph of the best one (:meth:`graph`) loses nothing.

    Args:
        actions: the blind vectors' actions (their ids ``0 .. A - 1``).
        observations: ``O``.
    """

    def __init__(self, actions: np.ndarray, observations: int):
        self.action = [int(a) for a in actions]
        self.successor = [np.full(observations, n, dtype=np.int64) for n in range(len(actions))]

    def record(self, ids: np.ndarray, actions: np.ndarray, origin: np.ndarray) -> np.ndarray:
        """The ids of the vectors of a stage (:func:`perseus_stage`: ``actions`` and ``origin``), ``ids`` the old ones'."""
        new = np.empty(len(origin), dtype=np.int64)
        for j, row in enumerate(origin):
            if row[0] >= 0:
                new[j] = ids[row[0]]
            else:
                new[j] = len(self.action)
                self.action.append(int(actions[j]))
                self.successor.append(ids[row[1:]])
        return new

    def graph(self, world: Model, start: int, most: int) -> PolicyGraph | None:
        """The plan of vector ``start`` as a policy graph: the vectors it can reach, equivalent ones merged
        (:func:`fsc.solver.graph.minimal`), evaluated exactly; None if more than ``most`` nodes remain (or more
        than ten times as many are reached)."""
        found = self.minimal(world, start, most)
        return None if found is None else evaluate_graph(world, found[0], found[1], initial=found[2])

    def minimal(self, world: Model, start: int, most: int) -> tuple[np.ndarray, np.ndarray, int] | None:
        """The plan of vector ``start`` minimised, as actions, successors and initial node (:meth:`graph` unevaluated:
        a tenth of a second on RockSample[7,8]'s plans), or None as there."""
        action, successor = np.array(self.action, dtype=np.int64), np.array(self.successor, dtype=np.int64)
        keep = reachable(world, action, successor, start)
        if len(keep) > 10 * most:  # a deep plan: its minimisation alone takes as many refinements
            return None
        renumber = np.zeros(len(action), dtype=np.int64)
        renumber[keep] = np.arange(len(keep))
        action, successor, initial, _ = minimal(world, action[keep], renumber[successor[keep]], int(renumber[start]))
        return (action, successor, initial) if len(action) <= most else None


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
        self.world, self.most, self.rng, self.refreshes = world, beliefs, rng, 0
        self.scale = max(float(np.abs(world.reward).max()), 1e-300) / (1 - world.discount)
        self.length = run_length(world.discount)
        self.vectors, self.actions, self.witness = blind_values(world), np.arange(A), np.repeat(world.initial[None], A, axis=0)
        uniform = trajectories(world, rng, beliefs // 3, lambda belief, rng, state: int(rng.integers(A)), self.length)
        self.q = qmdp_values(world)
        guided = trajectories(world, rng, beliefs // 6, _greedy(self.q.T, None, A), self.length)
        guided += trajectories(world, rng, beliefs // 6, _cheating(self.q), self.length)
        self.beliefs = _distinct(world.initial[None], uniform + guided)
        self.plans, self.ids = Plans(self.actions, world.shape[2]), np.arange(A)
        self.stages, self.since, self.done, self.gain = 0, 0, False, math.inf
        self._bounds: list[float] = []  # the value at the start belief after each stage since the set last changed
        self._graphs: dict[tuple[int, int], PolicyGraph] = {}
        self._best: dict[int, PolicyGraph] = {}  # memories -> the best graph of that size made at any stage
        self._top: PolicyGraph | None = None  # the best graph of every stage turned into one (uncompressed)
        self._top_sizes: set[int] = set()  # the memories it has been compressed for
        self._made = 0  # the stage of the last graph made
        self._plan_pairs = min(PLAN_PAIRS, available_bytes() // (2 * PLAN_PAIR_BYTES))
        self.graphs_made = 0  # how many graphs :meth:`graph` has made (asked again for the last one's plan, it makes none)
        self._warned = 0  # how many shares of PLAN_WARNINGS :meth:`plan_outgrowing` has said the plan passed
        self._outgrown = False  # whether the best vector's plan no longer fitted when :meth:`plan_outgrowing` last looked
        self._fitting: tuple[float, int, tuple] | None = None  # the best vector seen whose plan fits: its bound, id and plan
        self._planned: tuple[int, float] | None = None  # the vector whose plan the last graph was made of, and its bound
        self._offered: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # objective -> stages when last offered
        self.graph_seconds = 0.0  # what the last graph and its compressions took (:meth:`controller`)
        self._policies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # objective -> (graph, its policy) offered

    def advance(self, deadline: float = math.inf) -> None:
        """One Perseus stage; when the values settle (or every :data:`STAGES_PER_EXPANSION` stages), more beliefs
        along the trajectories of the policy the values give and of the true state's best action
        (:data:`GROWTH_AT_THE_STATE`), or (when those repeat) one step of every action
        from beliefs of the set (:func:`every_action`), up to ``beliefs``; settled on a full set, the set may
        double, up to :data:`GROWTH` times ``beliefs``; done when settled on a set that may not grow.  A stage cut short
        at ``deadline`` (:func:`perseus_stage`) counts as a stage, and the set stays as it is, as it does when less than
        the stage's time is left (the set's growth is priced as one more stage)."""
        started = time.monotonic()
        stage = perseus_stage(self.world, self.vectors, self.actions, self.witness, self.beliefs, self.rng, deadline=deadline)
        self.vectors, self.actions, self.witness, self.gain, origin = stage
        self.ids = self.plans.record(self.ids, self.actions, origin)
        self.stages, self.since = self.stages + 1, self.since + 1
        self._bounds.append(self.bound)
        now = time.monotonic()
        if now + (now - started) >= deadline:  # less than one more stage's time left: the set stays as it is
            return
        settled = self.gain <= SETTLED * self.scale
        if (settled or self.since >= STAGES_PER_EXPANSION) and len(self.beliefs) < self.most:
            count = max(1, self.most // 6)
            A = self.world.shape[1]
            guided = int(count * GROWTH_AT_THE_STATE)
            new = trajectories(self.world, self.rng, count - guided, _greedy(self.vectors, self.actions, A), self.length)
            new += trajectories(self.world, self.rng, guided, _cheating(self.q), self.length)
            grown = _distinct(self.beliefs, new)
            if len(grown) - len(self.beliefs) < count // 4:  # the policy's runs repeat: uniform runs, every action from the set
                new = trajectories(self.world, self.rng, count // 2, lambda belief, rng, state: int(rng.integers(A)), self.length)
                grown = _distinct(grown, new + every_action(self.world, self.rng, self.beliefs, count))
            if len(grown) == len(self.beliefs):  # nothing new: the set is all it can be
                self.most, self.refreshes = len(grown), REFRESHES
            self.beliefs, self.since, self._bounds = grown[: max(self.most, len(self.beliefs))], 0, []
        elif settled and self.refreshes < REFRESHES:  # settled on a full set: a fresh one
            self.refresh()
        elif self._stalled():  # the start belief's value stands still on a full set: fresh beliefs, not counted
            self.refresh(counted=False)
        elif settled:
            self.done = True

    def _stalled(self) -> bool:
        """Whether the set is full and the value at the start belief rose by less than :data:`STALL_GAIN` (scaled) in the
        last :data:`STALL_STAGES` stages on it."""
        recent = self._bounds[-STALL_STAGES - 1 :]
        return len(self.beliefs) >= self.most and len(recent) > STALL_STAGES and recent[-1] - recent[0] <= STALL_GAIN * self.scale

    def refresh(self, counted: bool = True) -> None:
        """A fresh belief set of as many beliefs: the start belief, the witnesses of the vectors (so none is lost
        where it was made), and beliefs along runs of uniform actions, of the fully observable values' action at the
        true state (:func:`_cheating`) and of the values' policy."""
        A = self.world.shape[1]
        count = max(1, (self.most - len(self.vectors)) // 2)
        new = trajectories(self.world, self.rng, count // 2, lambda belief, rng, state: int(rng.integers(A)), self.length)
        new += trajectories(self.world, self.rng, count - count // 2, _cheating(self.q), self.length)
        new += trajectories(self.world, self.rng, count, _greedy(self.vectors, self.actions, A), self.length)
        self.beliefs = _distinct(_distinct(self.world.initial[None], list(self.witness)), new)
        self.refreshes, self.since, self._bounds = self.refreshes + int(counted), 0, []

    @property
    def best_id(self) -> int:
        """The id in :attr:`plans` of the vector best at the start belief."""
        return int(self.ids[np.argmax(self.vectors @ self.world.initial)])

    @property
    def plan_nodes(self) -> int:
        """The most nodes of a plan made a graph (:data:`PLAN_NODES`, :data:`PLAN_PAIRS`)."""
        return min(PLAN_NODES, self._plan_pairs // self.world.shape[0])

    def plan_outgrowing(self) -> bool:
        """Whether the best vector's plan has just passed the next share of :data:`PLAN_WARNINGS` of :attr:`plan_nodes`
        (or no longer fits): True once per share, and, where the vectors' own graph is not made (:attr:`closed_too`),
        when it no longer fits where it did at the last look.  Made a graph now, it is still the plan, worth the bound;
        some stages later it may be too large (RockSample[7,8] at 300 s: the vectors' own graph, 15.2 against a bound
        of 20.9).  A plan that fits is remembered (:meth:`graph` falls back on the best of them)."""
        fitted, found = not self._outgrown, self._best_plan()
        self._outgrown = found is None
        nodes = math.inf if found is None else len(found[0])
        passed = sum(nodes > share * self.plan_nodes for share in PLAN_WARNINGS)
        if passed <= self._warned and not (fitted and self._outgrown and not self.closed_too):
            return False
        self._warned = max(self._warned, passed)
        return True

    @property
    def plan_watched(self) -> bool:
        """Whether the best vector's plan, when last looked at (:meth:`plan_outgrowing`), had passed the first share of
        :data:`PLAN_WARNINGS` and still fitted, the vectors' own graph not made (:attr:`closed_too`): worth looking at
        after every stage, so that the plan remembered is at most a stage old when it no longer fits (RockSample[7,8],
        seed 1: from 470 nodes to more than 625 in 12 stages)."""
        return self._warned > 0 and not self._outgrown and not self.closed_too

    @property
    def plan_outgrown(self) -> bool:
        """Whether more stages can give no new graph: the best vector's plan no longer fitted when last looked at, and
        the vectors' own graph is not made (:data:`CLOSED_PAIRS`)."""
        return self._outgrown and not self.closed_too

    @property
    def closed_too(self) -> bool:
        """Whether a graph is also made of the vectors' own successors (:data:`CLOSED_PAIRS`): then a plan that no longer
        fits leaves that graph (Tag's plans of 2,000 nodes are worth less than it), not the best plan that fitted."""
        return len(self.vectors) * self.world.shape[0] <= CLOSED_PAIRS

    def _best_plan(self) -> tuple[np.ndarray, np.ndarray, int] | None:
        """The minimal plan of the best vector (:meth:`Plans.minimal`) when it fits :attr:`plan_nodes`, else None; the
        best one seen that fits is remembered with its bound and id (a plan never changes once recorded)."""
        start, bound = self.best_id, self.bound
        found = self.plans.minimal(self.world, start, self.plan_nodes)
        if found is not None and (self._fitting is None or bound > self._fitting[0]):
            self._fitting = (bound, start, found)
        return found

    @property
    def bound(self) -> float:
        """The best vector's value at the start belief: the value of a controller (a lower bound on the optimum)."""
        return float((self.vectors @ self.world.initial).max())

    def graph(self, size: int | None = None, deadline: float = math.inf) -> PolicyGraph:
        """The policy graph of the vectors as they stand (the plan of the best vector or
        :func:`fsc.solver.graph.closed_graph`: module docstring); with ``size``, one that fits ``RAM(size)``: itself
        or compressed (:func:`fsc.solver.graph.compress`), or the best one made
        before (:meth:`best`: at an earlier stage, for this size or a smaller one (``size // 2``, ... are made too, each
        compressed from the one before),
        or compressed from the best graph of an earlier stage) if better.

        Raises:
            TimeUp: the time limit of an enclosing :func:`fsc.solver.graph.until` passed while a graph was evaluated.
        """
        full = self._graphs.get((self.stages, 0))
        if full is None:
            self._graphs = {key: graph for key, graph in self._graphs.items() if key[0] == self.stages}
            start, worth, closed = self.best_id, self.bound, self.closed_too
            found = self._best_plan()
            if found is None and self._fitting is not None and not closed:  # the best plan seen that fits, worth its bound then
                worth, start, found = self._fitting
            if found is not None and self._planned is not None and not closed and (start == self._planned[0] or worth <= self._planned[1]) and (
                size is None or min(self._best, default=size + 1) <= size
            ):
                return self._top if size is None else self.best(size)  # no plan better than the last graph's: nothing new to make
            plan = None if found is None else evaluate_graph(self.world, found[0], found[1], initial=found[2])
            full = plan
            if plan is None or closed:
                full = closed_graph(self.world, self.vectors, self.actions, self.witness, deadline)
                full = plan if plan is not None and plan.value > full.value else full
            if time.monotonic() >= deadline:  # perhaps cut short: not made again from, nor compressed for the smaller sizes
                if size is None:
                    return full
                made = full if fits(full, size) else compress(self.world, full, size)
                if size not in self._best or made.value > self._best[size].value:  # its value is exact: the best if better
                    self._best[size] = made
                return self.best(size)
            self._graphs[self.stages, 0] = full
            self._made, self._planned, self.graphs_made = self.stages, None if plan is None else (start, worth), self.graphs_made + 1
            if self._top is None or full.value > self._top.value:
                self._top, self._top_sizes = full, set()
        if size is None:
            return full
        source = full
        for smaller in (size >> k for k in range(size.bit_length())):  # and the smaller sizes, each from the one before
            if (self.stages, smaller) in self._graphs or (smaller < size and time.monotonic() >= deadline):
                break
            source = self._graphs[self.stages, smaller] = self._keep(smaller, source)
        if size not in self._top_sizes and time.monotonic() < deadline:  # the best graph of the stages before, compressed for this size too
            self._keep(size, self._top)
        return self.best(size)

    def _keep(self, size: int, graph: PolicyGraph) -> PolicyGraph:
        """``graph`` fitted to ``RAM(size)`` (itself or compressed), kept as :meth:`best` if better than those before."""
        found = graph if fits(graph, size) else compress(self.world, graph, size)
        if size not in self._best or found.value > self._best[size].value:
            self._best[size] = found
        if graph is self._top:
            self._top_sizes.add(size)
        return found

    @property
    def top(self) -> PolicyGraph | None:
        """The best graph :meth:`graph` has made at any stage, before it was compressed for a memory (None before the first)."""
        return self._top

    def best(self, size: int) -> PolicyGraph:
        """The best graph made so far (every stage) for ``RAM(size)`` or a smaller RAM, which fits too: the value
        never falls as the search goes on or the memory grows."""
        return max((graph for kept, graph in self._best.items() if kept <= size), key=lambda graph: graph.value)

    def due(self, objective: Objective) -> bool:
        """Whether :meth:`controller` makes a new graph for this objective: the search has moved since its last call with
        it and, once a graph for its memory exists, the stages have grown by :data:`GRAPH_GROWTH` since the last graph."""
        memories = objective.architecture.M
        return self._offered.get(objective) != self.stages and not (memories in self._best and self.stages < GRAPH_GROWTH * self._made)

    def controller(self, objective: Objective, deadline: float = math.inf) -> Policy | None:
        """The best policy graph made for the objective's ``RAM(K)`` (:meth:`best`), as a deterministic policy (the same
        object while that graph stays the best, so the objective values it once); None before any graph fits.  A new
        graph is made (:meth:`graph` of ``K`` memories) when the search has moved since the last call with this
        objective and, once a graph for ``K`` exists, the stages have grown by :data:`GRAPH_GROWTH` since the last
        graph was made (a graph and its compressions cost more than many stages: Tag's ram:8, 10 s against 25)."""
        memories = objective.architecture.M
        if self.due(objective):
            started = time.monotonic()
            with contextlib.suppress(TimeUp):  # no graph within the solve's time (fsc.solver.graph.until): the best before
                self.graph(memories, deadline)
            self._offered[objective], self.graph_seconds = self.stages, time.monotonic() - started
        if not any(kept <= memories for kept in self._best):
            return None
        graph = self.best(memories)
        mapped = self._policies.get(objective)
        if mapped is None or mapped[0] is not graph:
            mapped = self._policies[objective] = (graph, as_policy(graph, objective.architecture))
        return mapped[1]


_SEARCHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_MODELS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def model_of(world: POMDP | Task, reset: float) -> Model:
    """:func:`model`, kept with the world (one per reset): the methods that read the world's tables share them."""
    found = _MODELS.setdefault(as_pomdp(world), {})
    if reset not in found:
        found[reset] = model(world, reset)
    return found[reset]


def forget(world) -> None:
    """Drop the searches kept with ``world``: a solve starts its own (its seed, not an earlier solve's, decides)."""
    _SEARCHES.pop(as_pomdp(world), None)


def made(world) -> list[PolicyGraph]:
    """The best graph each search kept with ``world`` has made (:attr:`Search.top`), uncompressed."""
    return [search.top for search in _SEARCHES.get(as_pomdp(world), {}).values() if search.top is not None]


def search_for(objective: Objective, beliefs: int, rng: np.random.Generator) -> Search:
    """The search on the objective's world and reset with this many beliefs: the one kept with the world, or a
    new one (its generator seeded from ``rng``)."""
    world = as_pomdp(objective.world)
    found = _SEARCHES.setdefault(world, {})
    key = (objective.reset, beliefs)
    if key not in found:
        found[key] = Search(model_of(world, objective.reset), beliefs, np.random.default_rng(int(rng.integers(2**63))))
    return found[key]
