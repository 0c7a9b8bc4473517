"""Reference values for discounted POMDPs: upper bounds for any controller, and exact optima of two-state worlds.

No controller, finite-state or not, is worth more than the optimal POMDP
value ``V*(b0)``, and ``V*`` lies below

- :func:`mdp_bound`: the value of the fully observable MDP, ``sum_s b0(s) V_MDP(s)``;
- :func:`informed_bound`: the fast informed bound (Hauskrecht 2000), which
  lets the agent see the state only one step late, so it is tighter:
  ``Q(s, a) = rbar(s, a) + gamma sum_o max_a' sum_s2 T(s2 | s, a) O(o | a, s2) Q(s2, a')``
  and the bound is ``max_a sum_s b0(s) Q(s, a)``.

For a world with two states the belief is one number, and
:func:`two_state_bound` bounds ``V*(b0)`` from above to the resolution of a
fine grid of beliefs: with the best controller found as a lower bound, it
brackets the optimum (Tiger: within 2e-9).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fsc.checks import integer
from fsc.errors import InputError
from fsc.limits import Deadline
from fsc.model.pomdp import SparseTable, as_pomdp

__all__ = ["informed_bound", "informed_steps", "mdp_bound", "two_state_bound"]


def _tables(world, discount: float):
    pomdp = as_pomdp(world)
    if not 0 < discount < 1:
        raise InputError(f"discount must be in (0, 1), got {discount!r}")
    return pomdp, pomdp.expected_step(pomdp.reward)


def _iterations(rbar: np.ndarray, discount: float, tolerance: float) -> int:
    span = max(float(np.abs(rbar).max()), 1e-300) / (1 - discount)
    return int(np.ceil(np.log(tolerance / span) / np.log(discount))) + 1


def mdp_bound(world, discount: float, tolerance: float = 1e-12) -> float:
    """``sum_s b0(s) V_MDP(s)``: the value if the agent saw the state (value iteration to ``tolerance``, on the
    world's sparse transitions)."""
    pomdp, rbar = _tables(world, discount)
    V = np.zeros(pomdp.num_states)
    for _ in range(_iterations(rbar, discount, tolerance)):
        V = (rbar + discount * np.stack([T @ V for T in pomdp.sparse_transition], axis=1)).max(axis=1)
    return float(pomdp.initial @ V)


def informed_bound(world, discount: float, tolerance: float = 1e-12) -> float:
    """The fast informed bound on ``V*(b0)`` (module docstring), by value iteration to ``tolerance``.

    Each sweep runs per action on the world's sparse transitions and the observations each end state can
    give: ``O(nnz(T) O' A)`` operations (``O'`` the observations seen), never an ``(S, A, O, S)`` table.
    """
    pomdp, rbar = _tables(world, discount)
    S, A = rbar.shape
    steps = informed_steps(pomdp)
    Q = np.zeros_like(rbar)
    for _ in range(_iterations(rbar, discount, tolerance)):
        # sum_o max_a' sum_s2 T(s2 | s, a) O(o | a, s2) Q(s2, a'), per action a
        future = np.stack([(step @ Q).reshape(S, -1, A).max(axis=2).sum(axis=1) for step in steps], axis=1)
        Q = rbar + discount * future
    return float((pomdp.initial @ Q).max())


def informed_steps(world) -> list[sp.csr_matrix]:
    """Per action, the informed step ``K_a`` of :func:`_step`, from the world's sparse tables."""
    pomdp = as_pomdp(world)
    return [_step(T, pomdp.observation_table, a) for a, T in enumerate(pomdp.sparse_transition)]


def _step(transition: sp.csr_matrix, observation: SparseTable, a: int) -> sp.csr_matrix:
    """``K[(s, o), s2] = T(s2 | s, a) O(o | a, s2)`` over the observations ``o`` action ``a`` can give, CSR
    ``(S O', S)``: its product with ``Q`` holds every ``sum_s2 T O Q(s2, a')`` of a sweep.  Built from the
    entries of ``T`` and ``O`` alone (``O`` by rows ``(a, s2)``)."""
    S = transition.shape[0]
    coo = transition.tocoo()
    lo, hi = observation.indptr[a * S], observation.indptr[(a + 1) * S]
    seen = np.unique(observation.indices[lo:hi])
    position = np.zeros(observation.num_columns, dtype=np.int64)
    position[seen] = np.arange(len(seen))
    which, at = observation.gather(a * S + coo.col)  # each transition (s, s2) against the observations of s2
    values = coo.data[which] * observation.data[at]
    return sp.csr_matrix((values, (coo.row[which] * len(seen) + position[observation.indices[at]], coo.col[which])), shape=(S * len(seen), S))


def two_state_bound(world, discount: float, points: int = 200_001, tolerance: float = 1e-12, *, deadline: Deadline | None = None) -> float:
    """An upper bound on ``V*(b0)`` of a world with two states, tight to the grid's resolution.

    Value iteration on the belief ``x = P(state 1)`` sampled at ``points``
    equally spaced values, reading ``V`` between them by linear
    interpolation.  ``V*`` is convex, so its chords lie above it: the
    interpolated backup maps a function above ``V*`` to one above ``V*``, and
    its fixed point is an upper bound (Lovejoy 1991).  With 200,001 points it
    is within about 2e-9 of the best Tiger controllers found.  Every iterate is
    an upper bound too, so a ``deadline`` (:class:`fsc.limits.Deadline`) that
    passes only makes it looser (the stop is noted on the deadline).

    The backup of each action is one sparse matrix on the grid, ``W_a[x, j]``: the probability of each
    observation times the interpolation weights of the next belief's neighbours, summed over the
    observations, so a sweep costs ``O(points A)`` entries whatever the number of observations.
    """
    pomdp, rbar = _tables(world, discount)
    if pomdp.num_states != 2:
        raise InputError(f"two_state_bound needs a world with two states, got {pomdp.num_states}")
    points = integer("points", points, 2)
    deadline = Deadline.never() if deadline is None else deadline
    xs = np.linspace(0.0, 1.0, points)
    beliefs = np.stack([1 - xs, xs], axis=1)
    V = np.full(points, float(rbar.max()) / (1 - discount))  # above V*: the iteration stays above it
    backups = [_grid_backup(pomdp, a, beliefs, discount, deadline) for a in range(pomdp.num_actions)]
    if any(backup is None for backup in backups):  # cut short while tabulating: the first iterate, from above
        deadline.note("the upper bound")
        return float(V[0])
    immediate = beliefs @ rbar  # (n, A)
    for _ in range(_iterations(rbar, discount, tolerance)):
        if deadline.expired():
            deadline.note("the upper bound")
            break
        V = np.maximum.reduce([immediate[:, a] + backup @ V for a, backup in enumerate(backups)])
    return float(np.interp(pomdp.initial[1], xs, V))


def _grid_backup(pomdp, a: int, beliefs: np.ndarray, discount: float, deadline: Deadline) -> sp.csr_matrix | None:
    """``W[x, j]``: ``discount`` times the probability of each observation after action ``a`` at belief ``x``, times
    the weight of grid point ``j`` in the linear interpolation at the next belief, summed over the observations
    (a CSR matrix on the grid; observations in chunks, so that memory stays ``O(points)`` per observation);
    None if ``deadline`` passes first."""
    n = len(beliefs)
    joint_by_end = (beliefs @ pomdp.transition[:, a, :])[:, :, None]  # (n, S2, 1): P(s2 | x, a)
    observation = pomdp.observation[a]  # (S2, O)
    # Observations whose columns are proportional lead every belief to the same next belief: one column, their sum.
    mass = observation.sum(axis=0)
    kept = mass > 0
    _, group = np.unique(observation[1, kept] / mass[kept], return_inverse=True)
    observation = np.zeros((2, group.max(initial=-1) + 1))
    np.add.at(observation.T, group.reshape(-1), pomdp.observation[a][:, kept].T)
    seen = np.arange(observation.shape[1])
    total = sp.csr_matrix((n, n))
    chunk = max(1, 2**20 // n)
    for lo in range(0, len(seen), chunk):
        if deadline.expired():
            return None
        joint = joint_by_end * observation[None, :, seen[lo : lo + chunk]]  # (n, S2, o)
        p = discount * joint.sum(axis=1)  # (n, o)
        x2 = np.divide(joint[:, 1], joint.sum(axis=1), out=np.zeros_like(p), where=p > 0) * (n - 1)
        left = np.minimum(x2.astype(np.int64), n - 2)  # x2 >= 0: truncation is the floor
        right = p * (x2 - left)
        # Row x holds 2 o entries (the two neighbours of each next belief): a CSR matrix laid out directly.
        data = np.stack([p - right, right], axis=2).reshape(n, -1)
        indices = np.stack([left, left + 1], axis=2).reshape(n, -1)
        block = sp.csr_matrix((data.ravel(), indices.ravel(), np.arange(0, data.size + 1, data.shape[1])), shape=(n, n))
        block.sum_duplicates()
        total = total + block
    return total
