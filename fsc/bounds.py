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

from fsc.errors import InputError
from fsc.model.pomdp import as_pomdp

__all__ = ["informed_bound", "mdp_bound", "two_state_bound"]


def _tables(world, discount: float):
    pomdp = as_pomdp(world)
    if not 0 < discount < 1:
        raise InputError(f"discount must be in (0, 1), got {discount!r}")
    rbar = np.einsum("sat,ato,sato->sa", pomdp.transition, pomdp.observation, np.asarray(pomdp.reward))
    return pomdp, rbar


def _iterations(rbar: np.ndarray, discount: float, tolerance: float) -> int:
    span = max(float(np.abs(rbar).max()), 1e-300) / (1 - discount)
    return int(np.ceil(np.log(tolerance / span) / np.log(discount))) + 1


def mdp_bound(world, discount: float, tolerance: float = 1e-12) -> float:
    """``sum_s b0(s) V_MDP(s)``: the value if the agent saw the state (value iteration to ``tolerance``)."""
    pomdp, rbar = _tables(world, discount)
    V = np.zeros(pomdp.num_states)
    for _ in range(_iterations(rbar, discount, tolerance)):
        V = (rbar + discount * pomdp.transition @ V).max(axis=1)
    return float(pomdp.initial @ V)


def informed_bound(world, discount: float, tolerance: float = 1e-12) -> float:
    """The fast informed bound on ``V*(b0)`` (module docstring), by value iteration to ``tolerance``."""
    pomdp, rbar = _tables(world, discount)
    # step[s, a, o, s2] = T(s2 | s, a) O(o | a, s2)
    step = np.einsum("sat,ato->saot", pomdp.transition, pomdp.observation)
    Q = np.zeros_like(rbar)
    for _ in range(_iterations(rbar, discount, tolerance)):
        Q = rbar + discount * (step @ Q).max(axis=3).sum(axis=2)
    return float((pomdp.initial @ Q).max())


def two_state_bound(world, discount: float, points: int = 200_001, tolerance: float = 1e-12) -> float:
    """An upper bound on ``V*(b0)`` of a world with two states, tight to the grid's resolution.

    Value iteration on the belief ``x = P(state 1)`` sampled at ``points``
    equally spaced values, reading ``V`` between them by linear
    interpolation.  ``V*`` is convex, so its chords lie above it: the
    interpolated backup maps a function above ``V*`` to one above ``V*``, and
    its fixed point is an upper bound (Lovejoy 1991).  With 200,001 points it
    is within about 2e-9 of the best Tiger controllers found.
    """
    pomdp, rbar = _tables(world, discount)
    if pomdp.num_states != 2:
        raise InputError(f"two_state_bound needs a world with two states, got {pomdp.num_states}")
    if isinstance(points, bool) or not isinstance(points, int) or points < 2:
        raise InputError(f"points must be an int >= 2, got {points!r}")
    xs = np.linspace(0.0, 1.0, points)
    beliefs = np.stack([1 - xs, xs], axis=1)
    # Per action and observation: probability of o and the next belief's x.
    moves = []
    for a in range(pomdp.num_actions):
        for o in range(pomdp.num_observations):
            joint = beliefs @ (pomdp.transition[:, a, :] * pomdp.observation[a, None, :, o])  # (n, S2)
            p = joint.sum(axis=1)
            moves.append((a, p, np.where(p > 0, joint[:, 1] / np.where(p > 0, p, 1.0), 0.0)))
    immediate = beliefs @ rbar  # (n, A)
    V = np.full(points, float(rbar.max()) / (1 - discount))  # above V*: the iteration stays above it
    for _ in range(_iterations(rbar, discount, tolerance)):
        Q = immediate.copy()
        for a, p, x2 in moves:
            Q[:, a] += discount * p * np.interp(x2, xs, V)
        V = Q.max(axis=1)
    return float(np.interp(pomdp.initial[1], xs, V))
