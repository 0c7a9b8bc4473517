"""Node splitting: one node of a controller reached in beliefs that want different things becomes two.

A controller's node is reached along several edges, each in its own belief; its action and successors serve
them all at once.  Where the beliefs disagree (one wants to turn left, another right; one wants to look again,
another to go), no change of that node's own rows helps all of them, and the gradient at the node is the
average of what they want.  Splitting the node gives each group of beliefs a node of its own.

**In the framework's terms.**  As in :mod:`fsc.solver.bpi`, a controller on ``RAM(M)`` (stochastic or not) is
read as ``M A`` nodes, its choices ``c = (i, a)``, each playing ``a``; the RAM's row ``n = (i, a, o)`` (and
each blank row after a reset) is an edge into the choices it picks, with probability ``pi(c | n)``.  The exact
evaluation (:func:`fsc.solver.bpi.evaluate_values`) gives the value ``W(s, c)`` of every choice at every state
and the discounted visits ``rho(s, n)`` of every row: ``rho(., n)`` is the (unnormalised) belief the edges of
row ``n`` carry.  The one-step lookahead of a *key* ``k = (a, x)`` (an action and the next choice ``x_o``
after each observation) at row ``n``'s belief is

.. math::

    q_k(n) = \\sum_s \\rho(s, n) R(s, a) + \\gamma \\sum_o \\sum_{s, s'} \\rho(s, n) T(s' | s, a) O(o | s', a) W(s', x_o),

on the controller's own exact values.  For each of the most visited choices ``c``, the edges into it are split
in two groups by a two-means on keys: the key best over all its edges, the key best at the edge that gains
most by a key of its own, each edge to the key worth more at its belief, each key re-chosen at its group's
summed belief, a few times.  The estimated gain is ``sum_n pi(c | n) (q_(key of n's group)(n) - rho(., n) .
W(., c))``.

**Installing a split.**  A group whose key plays ``c``'s action keeps ``c`` (its rows become the key's next
choices); the other goes to a choice that already does what its key says, else to a free choice of its key's
action (one no row picks: memory the controller does not use), which takes the key's next choices, and its edges
move there with their probability.  When no choice of that action is free, the least visited one (not among the
keys' next choices) is re-assigned: the rows that picked it pick instead the choice best at their belief, by the
same values; when every one is a key's next choice, the group goes to the one worth most at its belief.  The new
controller is evaluated exactly and kept only when its value rises: the method never returns a controller worse
than its start.  Candidates are tried best first by their estimated gain, at most ``tries`` in a step.

**Where a controller is flat.**  At a controller that collects no reward (:meth:`fsc.objective.Objective.flat`)
every estimate is 0.  There the first step tries a start from beliefs (:func:`trial_graph`): runs of the fully
observable (QMDP) policy from the start belief, backed up point by point from their last belief back to the first
(so one pass carries a goal's value back to the start, as SARSOP's trials do), each new vector a node whose
successors are the vectors its backup chose (so the graph's exact values are its vectors), compressed to what the
memory holds (:func:`fsc.solver.graph.compress`); taken when it beats the start.  The graph is built once per world
and reset, its controller once per objective.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Callable

import attrs
import numpy as np

from fsc.limits import TimeUp
from fsc.model.memory import RAM
from fsc.model.policy import Policy
from fsc.model.pomdp import as_pomdp
from fsc.objective import Objective
from fsc.optim import State, no_clock
from fsc.solver import bpi
from fsc.solver.bpi import Values, evaluate_values
from fsc.solver.graph import PolicyGraph, as_policy, backup, compress, evaluate_graph
from fsc.solver.pointbased import blind_values, model_of, qmdp_values, sample_step

__all__ = ["Candidate", "Key", "candidates", "install", "start_state", "step", "trial_graph"]

#: Relative gains below this (of the reward scale) count as none.
TOLERANCE = bpi.TOLERANCE

#: The most visited choices examined for a split in one step.
NODES = 64

#: The rounds of the two-means that splits one node's edges.
ITERATIONS = 5

#: A choice whose visits are below this fraction of all visits is free.
FREE = 1e-12

#: The runs of the QMDP policy :func:`trial_graph` backs up, and the most steps of each.
RUNS, LENGTH = 2, 300


@attrs.frozen(eq=False)
class Key:
    """What a node does: its action, and the next choice after each observation ``(O,)``."""

    action: int
    successors: np.ndarray


@attrs.frozen(kw_only=True, eq=False)
class Candidate:
    """A split of choice ``choice``: the visited rows (indices into :attr:`_Lookahead.rows`) of each group with the
    key it gets, and the gain estimated at the controller's values."""

    choice: int
    groups: tuple[np.ndarray, np.ndarray]
    keys: tuple[Key, Key]
    gain: float


@attrs.frozen(eq=False)
class _Lookahead:
    """The one-step lookahead at each visited row's belief.

    Attributes:
        rows: ``(B,)`` the visited rows.
        reward: ``(A, B)``, ``rho(., n) . R(., a)``.
        scores: per action, ``(O, B, C)``: ``gamma (rho(., n) G_{a, o}) . W(., x)`` for each next choice ``x``.
        current: ``(B, C)``, ``rho(., n) . W(., c)``.
        alone: ``(B,)``, the best key's value at each row alone.
        free: ``(C,)``, the choices a new node's rows may pick whatever its memory.
    """

    rows: np.ndarray
    reward: np.ndarray
    scores: tuple
    current: np.ndarray
    alone: np.ndarray
    free: np.ndarray

    def restricted(self, rows: np.ndarray) -> _Lookahead:
        """The lookahead at the visited rows of index ``rows`` alone."""
        scores = tuple(scores[:, rows] for scores in self.scores)
        return _Lookahead(self.rows[rows], self.reward[:, rows], scores, self.current[rows], self.alone[rows], self.free)

    def value(self, key: Key) -> np.ndarray:
        """``q_key`` at every visited row, ``(B,)``."""
        scores = self.scores[key.action]
        return self.reward[key.action] + scores[np.arange(len(key.successors)), :, key.successors].sum(axis=0)

    def best(self, weights: np.ndarray) -> tuple[float, Key]:
        """The key of largest ``sum_n weights_n q_key(n)``, and that sum."""
        found = (-math.inf, None)
        for a, scores in enumerate(self.scores):
            sums = np.tensordot(scores, weights, axes=([1], [0]))  # (O, C)
            sums[:, ~self.free] = -np.inf
            successors = sums.argmax(axis=1)
            total = float(self.reward[a] @ weights + sums[np.arange(len(successors)), successors].sum())
            if total > found[0]:
                found = (total, Key(a, successors))
        return found


def _lookahead(tables, values: Values) -> _Lookahead:
    """:class:`_Lookahead` of the controller whose exact values are ``values``."""
    arch = tables.evaluator.architecture
    rows = np.flatnonzero(values.look.occupancy > 0)
    beliefs = values.visits[:, rows]
    O, B, C = arch.num_observations, len(rows), arch.num_choices
    scores = []
    for blocks in tables.blocks:
        found = np.zeros((O, B, C))
        for o, G in blocks:
            found[o] = tables.gamma * ((G.T @ beliefs).T @ values.choice)
        scores.append(found)
    reward = (beliefs.T @ tables.reward).T
    free = arch.allowed.all(axis=0)
    alone = np.max([reward[a] + np.where(free, scores[a], -np.inf).max(axis=2).sum(axis=0) for a in range(len(scores))], axis=0)
    return _Lookahead(rows, reward, tuple(scores), beliefs.T @ values.choice, alone, free)


def _split(look: _Lookahead, weights: np.ndarray, choice: int, scale: float) -> Candidate | None:
    """The two-means split of the edges into ``choice`` (``weights``: ``pi(choice | n)`` per visited row), or None."""
    into = np.flatnonzero(weights > 0)
    if len(into) < 2:
        return None
    mine, weights = look.restricted(into), weights[into]
    _, first = mine.best(weights)
    gains = weights * (mine.alone - mine.value(first))
    seed = int(np.argmax(gains))
    if not gains[seed] > TOLERANCE * scale:
        return None
    keys = (first, mine.best(np.eye(len(weights))[seed] * weights[seed])[1])
    for _ in range(ITERATIONS):
        second = mine.value(keys[1]) > mine.value(keys[0])
        if second.all() or not second.any():
            return None
        groups = (~second, second)
        keys = (mine.best(weights * groups[0])[1], mine.best(weights * groups[1])[1])
    second = mine.value(keys[1]) > mine.value(keys[0])
    if second.all() or not second.any():
        return None
    groups = (~second, second)
    gain = sum(float(weights[g] @ mine.value(k)[g]) for g, k in zip(groups, keys, strict=True)) - float(weights @ mine.current[:, choice])
    if not gain > TOLERANCE * scale:
        return None
    return Candidate(choice=choice, groups=(into[groups[0]], into[groups[1]]), keys=keys, gain=gain)


def candidates(tables, values: Values) -> tuple[_Lookahead, list[Candidate]]:
    """The splits of the most visited choices (:data:`NODES`) whose estimated gain is positive, best first."""
    look = _lookahead(tables, values)
    probs = values.look.probs
    chosen = (values.visits @ probs).sum(axis=0)
    found = []
    for c in np.argsort(-chosen, kind="stable")[:NODES]:
        if chosen[c] <= 0:
            break
        candidate = _split(look, probs[look.rows, c], int(c), tables.scale)
        if candidate is not None:
            found.append(candidate)
    found.sort(key=lambda candidate: -candidate.gain)
    return look, found


def _slot(tables, values: Values, key: Key, weights: np.ndarray, used: set) -> tuple[int, str] | None:
    """Where a group with ``key`` goes (its rows' ``weights`` over the states, summed): a choice that already does what
    ``key`` says (``"same"``), else a free choice of its action not in ``used`` (``"free"``), else the least visited
    one (``"reassign"``), else the choice of its action worth most at the group's belief (``"same"``: its rows kept)."""
    arch = tables.evaluator.architecture
    probs, chosen = values.look.probs, (values.visits @ values.look.probs).sum(axis=0)
    mine = [int(d) for d in np.flatnonzero(arch.choice_action == key.action)]
    emitted = [o for o, _ in tables.blocks[key.action]]
    for d in mine:
        rows = probs[tables.successor[d, emitted]]
        if np.all(rows[np.arange(len(emitted)), key.successors[emitted]] == 1.0):
            return d, "same"
    options = [d for d in mine if d not in used]
    free = [d for d in options if chosen[d] <= FREE * chosen.sum()]
    if free:
        return min(free), "free"
    if options:
        return min(options, key=lambda d: (chosen[d], d)), "reassign"
    return (max(mine, key=lambda d: weights @ values.choice[:, d]), "same") if mine else None


def _reassign(tables, look: _Lookahead, values: Values, new: np.ndarray, slot: int, used: set) -> None:
    """The rows that pick ``slot`` pick instead the choice best at their belief (not ``slot``, nor one in ``used``)."""
    arch = tables.evaluator.architecture
    current = values.visits.T @ values.choice  # (N, C)
    for n in np.flatnonzero(new[:, slot] > 0):
        scores = np.where(arch.allowed[n] & look.free, current[n], -np.inf)
        scores[[slot, *used]] = -np.inf
        if np.isfinite(scores.max()):
            target = int(np.argmax(scores))
            new[n, target] += new[n, slot]
            new[n, slot] = 0.0


def install(tables, look: _Lookahead, values: Values, candidate: Candidate) -> np.ndarray | None:
    """The probabilities with ``candidate`` installed (module docstring), or None when a group finds no choice."""
    arch = tables.evaluator.architecture
    probs = values.look.probs
    c = candidate.choice
    used = {c, *(int(x) for key in candidate.keys for x in key.successors)}
    new, slots, written = probs.copy(), [], []
    for key, group in zip(candidate.keys, candidate.groups, strict=True):
        if key.action == arch.choice_action[c] and c not in slots:
            slots.append(c)
            written.append(True)
            continue
        found = _slot(tables, values, key, values.visits[:, look.rows[group]].sum(axis=1), used | set(slots))
        if found is None or found[0] in slots:
            return None
        if found[1] == "reassign":
            _reassign(tables, look, values, new, found[0], used | set(slots))
        slots.append(found[0])
        written.append(found[1] != "same")
    for group, slot in zip(candidate.groups, slots, strict=True):
        for n in look.rows[group]:
            if slot != c and arch.allowed[n, slot]:
                new[n, slot] += new[n, c]
                new[n, c] = 0.0
    for key, slot, write in zip(candidate.keys, slots, written, strict=True):
        for o, _ in tables.blocks[key.action] if write else ():
            new[tables.successor[slot, o]] = np.eye(arch.num_choices)[key.successors[o]]
    return new


# --- a start where the controller is flat ---------------------------------------------------------------------


def trial_graph(world, reset: float, rng: np.random.Generator, deadline: float = math.inf, runs: int = RUNS) -> PolicyGraph:
    """The policy graph of point-based backups along ``runs`` runs of the QMDP policy from the start belief, each
    run backed up from its last belief to its first (a backup that beats the vectors there is kept).  Each vector
    is a node playing its action, and moving after each observation to the vector its backup chose there: the
    blind policies' vectors (one action forever) first, so the graph is closed and its exact values are the
    vectors; its best node at the start belief starts it."""
    tables = model_of(world, reset)
    S, A, O = tables.shape
    q = qmdp_values(tables)
    vectors, actions = blind_values(tables), np.arange(A)
    successors = np.repeat(np.arange(A)[:, None], O, axis=1)
    for _ in range(runs):
        belief, path = tables.initial, [tables.initial]
        state = int(rng.choice(S, p=belief))
        for _ in range(LENGTH):
            state, belief = sample_step(tables, state, belief, int(np.argmax(belief @ q)), rng)
            if belief is None or np.abs(belief - path[-1]).max() <= 1e-12:  # absorbed: nothing more to learn on this run
                break
            path.append(belief)
        for belief in path[::-1]:
            if time.monotonic() >= deadline:
                break
            value, action, vector, chosen = backup(tables, vectors, belief[None])
            if value[0] > (vectors @ belief).max() + TOLERANCE * max(1.0, abs(value[0])):
                vectors, actions, successors = np.vstack([vectors, vector]), np.append(actions, action), np.vstack([successors, chosen])
    return evaluate_graph(tables, actions, successors, guess=vectors)


#: The trial graphs built, per world and reset (built once: every size of the ladder meets the flat start).
_GRAPHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: The controller :func:`_flat_start` gave each objective (once: the rounds meet flat starts again).
_FLAT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _flat_start(objective: Objective, rng: np.random.Generator, deadline: float) -> Policy | None:
    """The policy of :func:`trial_graph` compressed to the objective's ``RAM(K)`` (once per objective), or None on
    another memory."""
    arch = objective.architecture
    if type(arch) is not RAM:
        return None
    if objective not in _FLAT:
        world = as_pomdp(objective.world)
        graphs = _GRAPHS.setdefault(world, {})
        try:
            if objective.reset not in graphs:
                graphs[objective.reset] = trial_graph(world, objective.reset, rng, deadline)
            _FLAT[objective] = as_policy(compress(model_of(world, objective.reset), graphs[objective.reset], arch.M), arch)
        except TimeUp:  # its evaluation or compression did not end within this round (fsc.solver.graph.until): none now,
            return None  # tried again in a later round (the trial graph, once made, is kept): never given up for good
    return _FLAT[objective]


# --- the step -----------------------------------------------------------------------------------------------


def start_state(objective: Objective, start: Policy, clock: Callable[[], float] = no_clock) -> State:
    """The state at ``start``; ``slots["tables"]`` is None where the method does not apply (a memory BPI does not
    read), ``slots["flat"]`` says whether the first step tries :func:`trial_graph`'s controller."""
    state = bpi.valued_state(objective, start, clock, splits=0)
    if state.slots["tables"] is not None:
        state.slots["flat"] = objective.flat(state.slots["values"].value)
    return state


def _from_flat(objective: Objective, state: State, rng: np.random.Generator | None, deadline: float, clock: Callable[[], float]) -> State:
    """The state at :func:`trial_graph`'s controller if it is worth more than the (flat) state's, else the state."""
    tables, values = state.slots["tables"], state.slots["values"]
    slots = {**state.slots, "flat": False}
    flat = _flat_start(objective, np.random.default_rng() if rng is None else rng, deadline)
    if flat is not None:
        found = evaluate_values(tables, flat.probs().detach().numpy(), flat.init_probs().detach().numpy())
        objective.counter[0] += 1
        if found.value > values.value + TOLERANCE * tables.scale:
            return State(point=found.look, step=state.step + 1, evaluations=state.evaluations + 1, seconds=clock(), slots={**slots, "values": found})
    return State(point=state.point, step=state.step + 1, evaluations=state.evaluations, seconds=clock(), slots=slots)


def step(objective: Objective, state: State, *, tries: int, rng: np.random.Generator | None = None, deadline: float = math.inf,
         clock: Callable[[], float] = no_clock) -> State | None:  # fmt: skip
    """From a flat state, the controller of :func:`_flat_start` (when worth more); else the first of the best ``tries``
    splits (:func:`candidates`) that raises the exact value, installed; None when none does (or the method does
    not apply)."""
    slots = state.slots
    tables = slots["tables"]
    if tables is None:
        return None
    if slots["flat"]:
        return _from_flat(objective, state, rng, deadline, clock)
    values = slots["values"]
    look, found = candidates(tables, values)
    evaluations = 0
    for candidate in found[:tries]:
        if time.monotonic() >= deadline:
            break
        new = install(tables, look, values, candidate)
        if new is None:
            continue
        trial = evaluate_values(tables, new, values.look.init_probs)
        objective.counter[0] += 1
        evaluations += 1
        if trial.value > values.value + TOLERANCE * tables.scale:
            return State(point=trial.look, step=state.step + 1, evaluations=state.evaluations + evaluations, seconds=clock(),
                         slots={**slots, "values": trial, "splits": slots["splits"] + 1})  # fmt: skip
    return None
