"""Bounded policy iteration (Poupart and Boutilier, "Bounded finite state controllers", NIPS 2003) on the
framework's controllers: node improvement by linear programs, and an escape by backups at beliefs.

**Two node models.**  BPI's controller has ``K`` nodes: node ``k`` plays action ``a`` with probability
``psi(a | k)``, then after observation ``o`` moves to node ``k'`` with probability ``eta(k' | k, a, o)``
(:class:`NodeController`).  A policy on ``RAM(M)`` chooses, at node ``(i, a, o)`` (memory ``i``, the action
``a`` just played, the observation ``o`` just seen) or at a blank node ``(i, _)`` after a reset, a choice
``(i', a')``: the next memory and the action to play, jointly.  They map onto each other exactly:

- RAM to BPI (:func:`node_controller`): BPI's nodes are the RAM's *choices* ``c = (i, a)``, ``K = M A`` of
  them; node ``c`` plays ``a`` for sure and moves to ``c''`` with the probability the RAM's node ``(i, a, o)``
  gives it, ``eta(c'' | c, a, o) = pi(c'' | (i, a, o))``; the start distribution is
  ``sum_i pi_0(i) pi(c | (i, _))``.  Each row ``(i, a, o)`` of the RAM serves one choice alone, so a RAM
  controller is exactly a BPI controller of ``M A`` nodes whose actions are deterministic, one node per
  (memory, action); the reset distribution and the blank rows collapse into BPI's start distribution.
- BPI to RAM (:func:`ram_policy`): a BPI controller of ``K`` nodes is a policy on ``RAM(K)`` whose node
  ``(i, a, o)`` chooses ``(i', a')`` with probability ``eta(i' | i, a, o) psi(a' | i')``, and whose blank
  nodes choose ``(i', a')`` with probability ``start(i') psi(a' | i')``.  So ``RAM(M)`` holds every BPI
  controller of ``M`` nodes, and more: its choice of action may depend on the last action and observation.
  A controller in the first form (``K = M A`` deterministic nodes) maps back onto ``RAM(M)`` itself.

**Node improvement, in the framework's terms.**  The value of choice ``c = (i, a)`` at state ``s``,
``W(s, c) = R(s, a) + gamma sum_{s', o} T(s' | s, a) O(o | s', a) V(s', (i, a, o))``, is BPI's value vector of
node ``c``, and ``V(s, n) = sum_c pi(c | n) W(s, c)``.  The one-step backups of node ``c`` keep its action (a
choice plays one action; the RAM mixes actions in the rows that choose) and pick, per observation, a
distribution ``x_o`` over the next choices; the linear program of node ``c`` is

.. math::

    \\max_{x \\ge 0} \\sum_s w(s) \\sum_o (H_{a, o} x_o)(s) \\quad\\text{s.t.}\\quad
    R(s, a) + \\sum_o (H_{a, o} x_o)(s) \\ge W(s, c) \\ \\forall s, \\qquad \\sum_{c''} x_o(c'') = 1 \\ \\forall o,

with ``H_{a, o}[s, c''] = gamma sum_{s'} T(s' | s, a) O(o | s', a) W(s', c'')``: the convex combination of
backups that dominates node ``c``'s vector at every state and gains most where the node is visited (``w``:
its discounted visits ``rho(s, c)``, normalised, plus a trace of the uniform distribution; the
belief-weighted variant, where BPI's original maximises the least gain ``epsilon``).  The solution replaces
the rows ``(i, a, o)``.  All choices are improved against the same values, then the controller is evaluated
again: by the policy improvement theorem the value never falls at any (state, node).  The blank rows choose
the choice of best value at the start belief.

**Escape.**  When a sweep gains nothing, the backup at the beliefs the controller meets (each visited node's
normalised visits ``rho(., n)``, the start belief among them, best first by the visits) is a node whose
vector beats the controller there: it goes into the choice ``(i, a*)`` of its action visited least (a free
one when some memory is unused), the node it was found at chooses it, and it is kept when the exact value
rises (else the next candidate is tried).  That is Poupart and Boutilier's escape (a backed-up node at a
belief reached from a tangent belief), within the ``M`` memories of the RAM.

Policy evaluation is the framework's: :class:`fsc.evaluate.Evaluator`'s forward solve gives the visits and
one adjoint solve the values ``V(s, n)``, on whatever engine the objective runs (sparse where the world is).
The programs run on :func:`scipy.optimize.linprog` (HiGHS), sparse where the backups are.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable

import attrs
import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog  # imported with the solver, before a budget's clock starts (it takes seconds)

from fsc.errors import InputError
from fsc.evaluate import Evaluator
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import RAM
from fsc.model.policy import Policy
from fsc.model.pomdp import as_pomdp
from fsc.objective import Look, Objective
from fsc.optim import State, no_clock

__all__ = ["NodeController", "Program", "Values", "escape", "evaluate_values", "node_controller", "ram_policy", "start_state", "step", "sweep", "valued_state"]

#: Relative gains below this (of the reward scale) count as none; the LP's constraints hold to this too.
TOLERANCE = 1e-9

#: The most a program's solution may fall below a node's vector at a state, in units of the reward scale (HiGHS's
#: feasibility tolerance): a solution that falls further is not taken.
FEASIBLE = 1e-10

#: The weight of the uniform distribution mixed into each node's visits in its program's objective.
UNIFORM = 1e-3

#: The most beliefs (visited nodes, most visited first) where the escape computes a backup.
BELIEFS = 64


# --- the two node models ------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True, eq=False)
class NodeController:
    """Poupart and Boutilier's stochastic controller.

    Attributes:
        action: ``psi[k, a]``, ``(K, A)``, rows summing to 1.
        successor: ``eta[k, a, o, k']``, ``(K, A, O, K)``, rows (over ``k'``) summing to 1.
        start: ``(K,)``, the node after a reset.
    """

    action: np.ndarray
    successor: np.ndarray
    start: np.ndarray


def _successors(arch: MemoryArchitecture) -> np.ndarray | None:
    """``(C, O)``: the node after choice ``c`` and observation ``o``, when it depends on them alone and each such
    node follows one (choice, observation) only (RAM, Chain, Column); else None."""
    nxt = arch.next_node
    if nxt.shape[0] == 0 or not np.all(nxt == nxt[:1]):
        return None
    first = nxt[0]
    if len(np.unique(first)) != first.size or arch.reset_mask[first].any():
        return None
    return np.array(first)


def node_controller(policy: Policy) -> NodeController:
    """The BPI controller of a RAM-like policy: one node per choice ``(i, a)``, playing ``a`` (module docstring).

    Raises:
        InputError: an architecture whose next node depends on more than the choice and the observation.
    """
    arch = policy.architecture
    nxt = _successors(arch)
    if nxt is None:
        raise InputError(f"bounded policy iteration needs a memory whose next node follows from the choice and the observation (RAM), got {arch!r}")
    probs, init = policy.probs().detach().numpy(), policy.init_probs().detach().numpy()
    C, A, O = arch.num_choices, arch.num_actions, arch.num_observations
    action = np.zeros((C, A))
    action[np.arange(C), arch.choice_action] = 1.0
    rows = probs[nxt]  # (C, O, C): eta(c'' | c, a_c, o)
    successor = np.broadcast_to(rows[:, None], (C, A, O, C)).copy()  # the rows of actions a node never plays: the same
    return NodeController(action=action, successor=successor, start=init @ probs)


def ram_policy(nodes: NodeController, arch: MemoryArchitecture | None = None) -> Policy:
    """The policy of a BPI controller (module docstring): on ``arch`` when ``nodes`` has one deterministic node
    per choice of ``arch`` (the form :func:`node_controller` gives), else on ``RAM(K)``.

    Raises:
        InputError: ``arch`` given and ``nodes`` not in its form.
    """
    K, A, O, _ = nodes.successor.shape
    if arch is not None:
        nxt = _successors(arch)
        own = np.zeros((arch.num_choices, A))
        own[np.arange(arch.num_choices), arch.choice_action] = 1.0
        if nxt is None or nodes.action.shape != own.shape or not np.array_equal(nodes.action, own):
            raise InputError(f"a controller of {K} nodes is not one deterministic node per choice of {arch!r}")
        probs = np.full((arch.num_nodes, arch.num_choices), 1.0 / arch.num_choices)
        probs[nxt] = nodes.successor[np.arange(K), arch.choice_action]
        probs[arch.reset_mask] = nodes.start
        init = arch.reset_mask / arch.reset_mask.sum()
        return Policy.from_probs(arch, probs, init)
    ram = RAM(K, arms=A, observations=O)
    joint = lambda weights: (weights[:, :, None] * nodes.action[None]).reshape(len(weights), K * A)  # noqa: E731
    probs = np.empty((ram.num_nodes, K * A))
    probs[:K] = joint(nodes.start[None].repeat(K, axis=0))
    probs[K:] = joint(nodes.successor.reshape(K * A * O, K))
    unused = probs.sum(axis=1) == 0  # (i, a, o) after an action node i never plays: any row
    probs[unused] = 1.0 / (K * A)
    return Policy.from_probs(ram, probs, np.full(ram.num_nodes, 1.0 / K) * ram.reset_mask)


# --- the world in BPI's terms -------------------------------------------------------------------------------


@attrs.frozen(eq=False)
class _Tables:
    """What the sweeps read of a world and an architecture (built once per objective).

    Attributes:
        evaluator: the framework's evaluator (the objective's world, memory, reset, engine, convention).
        gamma: ``1 - r``.
        reward: ``R[s, a]``, the expected reward of a step, ``(S, A)``.
        blocks: per action ``a``, the pairs ``(o, G)`` with ``G[s, s'] = T(s' | s, a) O(o | s', a)`` (CSR), ``G != 0``.
        successor: ``(C, O)``, the node after choice ``c`` and observation ``o``.
        inside: ``(S,)``, the states of the closed parts the reset can start in.
        initial: ``(S,)``, the start belief.
    """

    evaluator: Evaluator
    gamma: float
    reward: np.ndarray
    blocks: tuple
    successor: np.ndarray
    inside: np.ndarray
    initial: np.ndarray

    @functools.cached_property
    def scale(self) -> float:
        """The largest ``|value|`` a controller can have (at least 1e-300)."""
        return max(float(np.abs(self.reward).max(initial=0.0)) / (1 - self.gamma), 1e-300)


#: The last tables built, by the identity of the objective's world and memory and its reset, engine and convention:
#: the portfolio's rounds call BPI again and again on one objective.
_LAST: dict = {}


def _tables(objective: Objective) -> _Tables | None:
    """The tables of ``objective``'s world and memory (the last ones again for the same), or None when BPI does
    not apply (a memory whose next node depends on more than the choice and the observation)."""
    key = (id(objective.world), id(objective.architecture), objective.reset, objective.engine, objective.convention)
    found = _LAST.get("tables")
    if found is not None and _LAST.get("key") == key and found[0] is objective.world and found[1] is objective.architecture:
        return found[2]
    tables = _built(objective)
    _LAST.update(key=key, tables=(objective.world, objective.architecture, tables))
    return tables


def _built(objective: Objective) -> _Tables | None:
    """:func:`_tables`, built."""
    arch = objective.architecture
    nxt = _successors(arch)
    if nxt is None:
        return None
    world = as_pomdp(objective.world)
    evaluator = Evaluator.of(objective.world, arch, objective.reset, objective.engine, objective.convention)
    S, A = world.num_states, world.num_actions
    obs = world.observation_table
    dense = obs.dense() if obs.num_rows * obs.num_columns <= 1 << 24 else None
    blocks = []
    for a in range(A):
        found = []
        for o in range(world.num_observations):
            column = dense[a, :, o] if dense is not None else obs.lookup(a * S + np.arange(S), np.full(S, o))
            if np.any(column):
                G = world.sparse_transition[a] @ sp.diags(column)
                G.eliminate_zeros()
                found.append((o, G.tocsr()))
        blocks.append(tuple(found))
    inside = np.zeros(S, dtype=bool)
    inside[np.concatenate([np.asarray(part, dtype=np.int64) for part in world.parts])] = True
    reward = world.expected_step(world.reward_table)
    return _Tables(evaluator, 1 - objective.reset, reward, tuple(blocks), nxt, inside, np.asarray(world.initial))


# --- policy evaluation --------------------------------------------------------------------------------------


@attrs.frozen(eq=False)
class Values:
    """The exact evaluation of a policy, per state.

    Attributes:
        look: the value, its gradient in the probabilities and the node occupancy (:class:`fsc.objective.Look`).
        node: ``V[s, n]``, the discounted return from state ``s`` at node ``n``, ``(S, N)``.
        choice: ``W[s, c]``, the same just after choice ``c`` is made, ``(S, C)``.
        visits: ``rho[s, n]``, the discounted visits of ``(s, n)`` from the start, ``(S, N)`` (they sum to ``1 / r``).
    """

    look: Look
    node: np.ndarray
    choice: np.ndarray
    visits: np.ndarray

    @property
    def value(self) -> float:
        return self.look.value


def evaluate_values(tables: _Tables, probs: np.ndarray, init: np.ndarray) -> Values:
    """:class:`Values` of the policy ``(probs, init)``: the evaluator's forward solve (visits, value) and one
    adjoint solve with the expected reward of each (state, node) as its seed (``V``)."""
    ev = tables.evaluator
    chain, r = ev.chain, ev.reset
    K, S_part, N, C = ev.shape
    run = ev.forward_probs(np.ascontiguousarray(probs, dtype=np.float64), np.ascontiguousarray(init, dtype=np.float64))
    seed = ev.step_reward.reshape(K, S_part, C) @ probs.T  # the expected reward at (s, n)
    lam = np.asarray(run.backend.solve_adjoint(np.ascontiguousarray(seed.reshape(K, S_part * N)))).reshape(K, S_part, N)
    visits_part = run.p.reshape(K, S_part, N) * (chain.part_weights / r)[:, None, None]
    S = len(tables.inside)
    node, visits = np.zeros((S, N)), np.zeros((S, N))
    for k in range(K):
        states = chain.part_states[k]
        real = states >= 0
        node[states[real]] = lam[k, real]
        visits[states[real]] += visits_part[k, real]
    choice = _choice_values(tables, node)
    look = Look(
        probs=probs, init_probs=init, value=run.gain / r, grad=visits.T @ choice, grad_init=tables.initial @ node,
        occupancy=visits.sum(axis=0), metrics=run.metrics,
    )  # fmt: skip
    return Values(look=look, node=node, choice=choice, visits=visits)


def _choice_values(tables: _Tables, node: np.ndarray) -> np.ndarray:
    """``W[s, c] = R(s, a_c) + gamma sum_o (G_{a_c, o} V[:, next(c, o)])(s)``, ``(S, C)``."""
    action = tables.evaluator.architecture.choice_action
    W = tables.reward[:, action].copy()
    for a, blocks in enumerate(tables.blocks):
        mine = np.flatnonzero(action == a)
        for o, G in blocks:
            W[:, mine] += tables.gamma * (G @ node[:, tables.successor[mine, o]])
    return W


# --- node improvement ---------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Program:
    """One node's linear program: its size and its seconds (what a sweep reports)."""

    choice: int
    rows: int
    columns: int
    nonzeros: int
    seconds: float
    gain: float


def _undominated(block: np.ndarray) -> np.ndarray:
    """The columns of ``block`` that no other column matches or beats at every row (of equal ones, the first): a
    dominated next choice is never needed, its dominator does at least as well in every constraint."""
    k = block.shape[1]
    if k < 2 or block.size * k > 1 << 24:
        return np.arange(k)
    geq = (block[:, :, None] >= block[:, None, :]).all(axis=0)  # geq[i, j]: column i >= column j everywhere
    beaten = (geq & ~geq.T).any(axis=0) | np.triu(geq & geq.T, 1).any(axis=0)
    return np.flatnonzero(~beaten)


def _node_program(backups: dict, rows: dict, probs: np.ndarray, allowed: np.ndarray, weight: np.ndarray, inside: np.ndarray,
                  scale: float, deadline: float = math.inf) -> tuple[dict | None, tuple[int, int, int]]:  # fmt: skip
    """The rows of one choice that dominate its vector and gain most under ``weight`` (None: no gain, or the program
    not solved by ``deadline``: HiGHS's time limit), and the program's size ``(rows, columns, nonzeros)``.
    ``backups[o]``: ``H_{a, o}`` ``(S, C)``; ``rows[o]``: the node whose row is ``x_o``."""
    blocks, columns, base = [], [], 0.0
    for o, H in backups.items():
        block = H[inside] / scale
        base = base + block @ probs[rows[o]]
        keep = np.flatnonzero(allowed[rows[o]])
        keep = keep[_undominated(block[:, keep])]
        blocks.append(block[:, keep])
        columns.append(keep)
    matrix = np.hstack(blocks)
    starts = np.cumsum([0] + [len(keep) for keep in columns])
    objective = weight[inside] @ matrix
    equal = sp.csr_matrix((np.ones(starts[-1]), np.arange(starts[-1]), starts), shape=(len(columns), starts[-1]))
    dense = np.count_nonzero(matrix)
    upper = sp.csr_matrix(-matrix) if dense < 0.3 * matrix.size else -matrix
    size = (matrix.shape[0] + len(columns), matrix.shape[1], dense + starts[-1])
    options = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
    if math.isfinite(deadline):  # a degenerate program can take HiGHS minutes
        options["time_limit"] = max(deadline - time.monotonic(), 1e-3)
    found = linprog(-objective, A_ub=upper, b_ub=-base, A_eq=equal, b_eq=np.ones(len(columns)), bounds=(0, None), method="highs", options=options)
    if found.status != 0:
        return None, size
    parts = [np.maximum(found.x[starts[j] : starts[j + 1]], 0.0) for j in range(len(columns))]
    if not all(part.sum() > 0 for part in parts):
        return None, size
    x = np.concatenate([part / part.sum() for part in parts])
    if objective @ x - weight[inside] @ base <= TOLERANCE or (matrix @ x - base).min(initial=0.0) < -FEASIBLE:
        return None, size
    new_rows = {}
    for part, o, keep in zip(parts, backups, columns, strict=True):
        row = np.zeros(probs.shape[1])
        row[keep] = part / part.sum()
        new_rows[rows[o]] = row
    return new_rows, size


def _weights(visits: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """A node's program's weights: its visits, normalised, plus :data:`UNIFORM` times the uniform distribution."""
    uniform = inside / inside.sum()
    total = visits.sum()
    return (1 - UNIFORM) * visits / total + UNIFORM * uniform if total > 0 else uniform


def sweep(tables: _Tables, values: Values, probs: np.ndarray, deadline: float = math.inf) -> tuple[np.ndarray, list[Program]]:
    """Every choice's program against the same values (action by action, the most visited first, until
    ``deadline``), and the blank rows' best choice at the start belief: the new probabilities, and the programs run."""
    arch = tables.evaluator.architecture
    action, W = arch.choice_action, values.choice
    chosen = values.visits @ probs  # rho(s, c): the visits of state s when choice c is made, (S, C)
    order = np.argsort(-chosen.sum(axis=0), kind="stable")
    new, programs = probs.copy(), []
    for a in dict.fromkeys(action[order].tolist()):  # the actions in the order of their most visited choice
        backups = {o: tables.gamma * (G @ W) for o, G in tables.blocks[a]}  # H_{a, o}, (S, C)
        for c in order[action[order] == a]:
            if time.monotonic() >= deadline:
                break
            programs.append(_improve(tables, backups, int(c), probs, new, chosen[:, c], deadline))
    at_start = tables.initial @ W
    for n in np.flatnonzero(arch.reset_mask):
        scores = np.where(arch.allowed[n], at_start, -np.inf)
        best = int(np.argmax(scores))
        if scores[best] > probs[n] @ at_start + TOLERANCE * tables.scale:
            new[n] = np.eye(len(at_start))[best]
    return new, programs


def _improve(tables: _Tables, backups: dict, c: int, probs: np.ndarray, new: np.ndarray, visits: np.ndarray,
             deadline: float = math.inf) -> Program:  # fmt: skip
    """Choice ``c``'s program (:func:`_node_program`, solved by ``deadline``), its rows written into ``new`` when it gains."""
    clock = time.monotonic()
    rows = {o: tables.successor[c, o] for o in backups}
    allowed = tables.evaluator.architecture.allowed
    found, size = _node_program(backups, rows, probs, allowed, _weights(visits, tables.inside), tables.inside, tables.scale, deadline)
    gain = 0.0
    if found is not None:
        for n, row in found.items():
            new[n] = row
        gain = float(visits @ (_backed(backups, rows, new) - _backed(backups, rows, probs)))
    return Program(choice=c, rows=size[0], columns=size[1], nonzeros=size[2], seconds=time.monotonic() - clock, gain=gain)


def _backed(backups: dict, rows: dict, probs: np.ndarray) -> np.ndarray:
    """``sum_o H_{a, o} x_o`` for the rows ``x_o`` of ``probs``."""
    return sum(H @ probs[rows[o]] for o, H in backups.items())


# --- escape -------------------------------------------------------------------------------------------------


def _backups(tables: _Tables, values: Values, beliefs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The best one-step backup at each belief (columns of ``beliefs``, ``(S, B)``, unnormalised) over the
    controller's choices: its value there, its action and its next choice per observation ``(B, O)``."""
    arch = tables.evaluator.architecture
    B, O = beliefs.shape[1], arch.num_observations
    free = arch.allowed.all(axis=0)  # the choices a new node's rows may make whatever its memory
    best_q, best_a, best_next = np.full(B, -np.inf), np.zeros(B, dtype=np.int64), np.zeros((B, O), dtype=np.int64)
    for a, blocks in enumerate(tables.blocks):
        if not np.any(arch.choice_action == a):
            continue
        q = beliefs.T @ tables.reward[:, a]
        nxt = np.zeros((B, O), dtype=np.int64)
        for o, G in blocks:
            scores = tables.gamma * ((G.T @ beliefs).T @ values.choice)  # (B, C): the belief's weight on H_{a, o}
            scores[:, ~free] = -np.inf
            nxt[:, o] = np.argmax(scores, axis=1)
            q += scores[np.arange(B), nxt[:, o]]
        better = q > best_q
        best_q[better], best_a[better], best_next[better] = q[better], a, nxt[better]
    return best_q, best_a, best_next


def _candidates(tables: _Tables, values: Values, probs: np.ndarray) -> list[list[tuple[int, int, np.ndarray]]]:
    """Sets of new nodes, best first: for each of the most visited choices ``c = (i, a)`` and for the start, the
    backups at the beliefs after it (each row ``(i, a, o)``'s visits; the start belief) that beat the
    controller there, as ``(row, action, next choice per observation)``."""
    arch = tables.evaluator.architecture
    chosen = (values.visits @ probs).sum(axis=0)
    groups = [np.flatnonzero(arch.reset_mask)] + [tables.successor[c] for c in np.argsort(-chosen, kind="stable")[:BELIEFS] if chosen[c] > 0]
    rows = np.unique(np.concatenate(groups))
    q, action, successors = _backups(tables, values, values.visits[:, rows])
    gains = q - np.einsum("sb,sb->b", values.visits[:, rows], values.node[:, rows])
    at = {int(n): b for b, n in enumerate(rows)}
    found = []
    for group in groups:
        better = [(int(n), at[int(n)]) for n in group if gains[at[int(n)]] > TOLERANCE * tables.scale * max(values.look.occupancy[n], 1e-300)]
        better.sort(key=lambda item: -gains[item[1]])  # the best first: they get the choices when there are too few
        if better:
            found.append((sum(gains[b] for _, b in better), [(n, int(action[b]), successors[b]) for n, b in better]))
    found.sort(key=lambda item: -item[0])
    return [nodes for _, nodes in found]


def _installed(tables: _Tables, values: Values, probs: np.ndarray, nodes: list[tuple[int, int, np.ndarray]]) -> tuple[np.ndarray, np.ndarray] | None:
    """``probs`` with the new nodes ``(row, action, next choices)`` (best first; one choice for equal ones) each in
    the choice of its action visited least (never one a new node goes to, nor one owning a row of ``nodes``),
    nothing choosing them yet; and the same with each row choosing its new node (the blank rows all, for the
    start).  A node that finds no free choice is left out; None when none is placed."""
    arch = tables.evaluator.architecture
    chosen = (values.visits @ probs).sum(axis=0)
    used = {int(c) for _, _, successors in nodes for c in successors}
    used |= {int(c) for c in np.flatnonzero(np.isin(tables.successor, [row for row, _, _ in nodes]).any(axis=1))}
    new, placed, slot_of = probs.copy(), [], {}
    for row, action, successors in nodes:
        key = (action, tuple(successors.tolist()))
        if key not in slot_of:
            free = [int(c) for c in np.flatnonzero(arch.choice_action == action) if int(c) not in used]
            if not free:
                continue
            slot_of[key] = slot = min(free, key=lambda c: (chosen[c], c))
            used.add(slot)
            for o, _ in tables.blocks[action]:
                new[tables.successor[slot, o]] = np.eye(arch.num_choices)[successors[o]]
        placed.append((row, slot_of[key]))
    if not placed:
        return None
    chosen_new = new.copy()
    for row, slot in placed:
        for target in np.flatnonzero(arch.reset_mask) if arch.reset_mask[row] else [row]:
            if arch.allowed[target, slot]:
                chosen_new[target] = np.eye(arch.num_choices)[slot]
    return new, chosen_new


def escape(tables: _Tables, values: Values, probs: np.ndarray, init: np.ndarray, tries: int, deadline: float,
           count: Callable[[], None]) -> tuple[np.ndarray, Values, int] | None:  # fmt: skip
    """The first of at most ``tries`` sets of backed-up nodes (:func:`_candidates`) which raise the exact value,
    installed and followed by a sweep, or chosen where they were found: the new probabilities, their values and
    the evaluations; None when none does.  ``count()`` after each evaluation."""
    if not tables.evaluator.architecture.allowed.all(axis=0).any():
        return None
    tried, evaluations = 0, 0
    for nodes in _candidates(tables, values, probs):
        if tried >= tries or time.monotonic() >= deadline:
            break
        installed = _installed(tables, values, probs, nodes)
        if installed is None:
            continue
        tried += 1
        between = evaluate_values(tables, installed[0], init)
        swept, _ = sweep(tables, between, installed[0], deadline)
        for candidate in (swept, installed[1]):
            found = evaluate_values(tables, candidate, init)
            evaluations += 1
            count()
            if found.value > values.value + TOLERANCE * tables.scale:
                return candidate, found, evaluations + tried
    return None


# --- the step -----------------------------------------------------------------------------------------------


def valued_state(objective: Objective, start: Policy, clock: Callable[[], float] = no_clock, **slots: object) -> State:
    """The state at ``start`` (one evaluation, on BPI's tables), its slots ``tables``, ``values`` and ``slots``;
    ``slots["tables"]`` alone, None, where the tables do not apply (a memory BPI does not read)."""
    tables = _tables(objective)
    probs, init = start.probs().detach().numpy().copy(), start.init_probs().detach().numpy().copy()
    if tables is None:
        return State(point=objective.look(probs, init), seconds=clock(), slots={"tables": None})
    values = evaluate_values(tables, probs, init)
    objective.counter[0] += 1
    return State(point=values.look, seconds=clock(), slots={"tables": tables, "values": values, **slots})


def start_state(objective: Objective, start: Policy, clock: Callable[[], float] = no_clock) -> State:
    """The state at ``start`` (one evaluation); ``slots["tables"]`` is None where BPI does not apply."""
    return valued_state(objective, start, clock, programs=[], escapes=0)


def step(objective: Objective, state: State, *, tries: int, deadline: float = math.inf, clock: Callable[[], float] = no_clock) -> State | None:
    """One sweep of node improvement, or (when the last one gained nothing) one escape; None when neither
    improves the controller, or BPI does not apply to its memory."""
    slots = state.slots
    tables = slots["tables"]
    if tables is None or slots.get("stalled"):
        return None
    values, look = slots["values"], state.point
    probs, init = look.probs, look.init_probs
    count = lambda: objective.counter.__setitem__(0, objective.counter[0] + 1)  # noqa: E731
    if not slots.get("stuck"):
        new, programs = sweep(tables, values, probs, deadline)
        found = evaluate_values(tables, new, init)
        count()
        if found.value > values.value + TOLERANCE * tables.scale:
            return _next(state, found, 1, clock, programs=[*slots["programs"], programs])
        if found.value >= values.value and not np.array_equal(new, probs):  # no worse, by rounding: keep the sweep
            return _next(state, found, 1, clock, programs=[*slots["programs"], programs], stuck=True)
        return _next(state, values, 1, clock, programs=[*slots["programs"], programs], stuck=True)
    escaped = escape(tables, values, probs, init, tries, deadline, count)
    if escaped is None:
        return _next(state, values, 0, clock, stalled=True)
    return _next(state, escaped[1], escaped[2], clock, escapes=slots["escapes"] + 1, stuck=False)


def _next(state: State, values: Values, evaluations: int, clock: Callable[[], float], **slots: object) -> State:
    return State(point=values.look, step=state.step + 1, evaluations=state.evaluations + evaluations, seconds=clock(),
                 slots={**state.slots, "values": values, **slots})  # fmt: skip
