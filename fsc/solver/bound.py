"""An upper bound on the value of any controller, within a deadline.

Every bound here is computed from above: the iteration starts at a function
that lies above the optimal value ``V*`` and applies a monotone operator whose
fixed point lies above ``V*``, so *every* iterate is an upper bound, and
stopping early (for time) only makes it looser, never wrong.

- a world with two states: :func:`fsc.bounds.two_state_bound` on a grid of
  2001 beliefs (Tiger: the optimum to 1e-14);
- otherwise the fast informed bound (:mod:`fsc.bounds`), iterated from the
  MDP's ``Q`` (which lies above it: the informed backup takes the max inside
  the sum over observations, the MDP's outside).

Everything runs on the world's sparse tables (per action ``T_a``, and the informed step of
:func:`fsc.bounds.informed_steps`): never a dense ``(S, A, S)`` or ``(S, A, O, S)`` array.  A
:class:`fsc.limits.Deadline` that passes stops the iteration where it is (noted on the deadline as
``the upper bound``); before the first iterate, the bound is the largest reward over ``1 - discount``.
"""

from __future__ import annotations

import numpy as np

from fsc.bounds import informed_steps, two_state_bound
from fsc.limits import Deadline
from fsc.model.pomdp import as_pomdp

__all__ = ["uniform_value", "upper_bound"]

#: Beliefs of the two-state grid: on Tiger as tight as 200,001 points, 100 times faster.
TWO_STATE_POINTS = 2001
#: What the deadline's record calls a bound that stopped early.
CUT = "the upper bound"


def _rbar(pomdp) -> np.ndarray:
    return pomdp.expected_step(pomdp.reward_table)


def _backup(pomdp, rbar: np.ndarray, discount: float, V: np.ndarray) -> np.ndarray:
    """``Q(s, a) = rbar(s, a) + discount sum_s2 T(s2 | s, a) V(s2)``, on the sparse ``T_a``."""
    return rbar + discount * np.stack([T @ V for T in pomdp.sparse_transition], axis=1)


def mdp_q(pomdp, discount: float, deadline: Deadline, iterations: int = 100) -> np.ndarray | None:
    """``Q`` of the fully observable MDP from above, by policy iteration (each policy's values by one sparse LU
    solve), plus the largest Bellman residual over ``1 - discount``; None if ``deadline`` passes before the
    first policy's values."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    rbar = _rbar(pomdp)
    S = pomdp.num_states
    greedy = rbar.argmax(axis=1)
    identity = sp.identity(S, format="csc")
    Q = None
    for _ in range(iterations):
        if deadline.expired():
            deadline.note(CUT)
            break
        rows = sum(sp.diags((greedy == a).astype(np.float64)) @ T for a, T in enumerate(pomdp.sparse_transition))
        V = spla.spsolve((identity - discount * rows).tocsc(), rbar[np.arange(S), greedy])
        Q = _backup(pomdp, rbar, discount, V)
        better = Q.argmax(axis=1)
        keep = Q[np.arange(S), better] <= Q[np.arange(S), greedy] + 1e-12 * (1 + np.abs(V))
        if keep.all():
            break
        greedy = np.where(keep, greedy, better)
    if Q is None:
        return None
    # One Bellman backup from above removes the solve's rounding (and an unfinished iteration's shortfall):
    # ||Q - Q*|| <= ||B Q - Q|| / (1 - discount), so Q plus that is above Q_MDP.
    residual = float(np.abs(_backup(pomdp, rbar, discount, Q.max(axis=1)) - Q).max())
    return Q + residual / (1 - discount)


def informed_from_above(pomdp, discount: float, deadline: Deadline, tolerance: float = 1e-10) -> float:
    """The fast informed bound at the start belief, iterated from the MDP's ``Q`` until ``deadline``."""
    rbar = _rbar(pomdp)
    Q = mdp_q(pomdp, discount, deadline)
    if Q is None:
        return float(np.abs(rbar).max()) / (1 - discount)
    S, A = rbar.shape
    best = float((pomdp.initial @ Q).max())
    steps = informed_steps(pomdp)
    while not deadline.expired():
        future = np.stack([(step @ Q).reshape(S, -1, A).max(axis=2).sum(axis=1) for step in steps], axis=1)
        new = np.minimum(Q, rbar + discount * future)
        bound = float((pomdp.initial @ new).max())
        change = best - bound
        Q, best = new, min(best, bound)
        if change <= tolerance * max(1.0, abs(best)):
            return best
    deadline.note(CUT)
    return best


def upper_bound(world, discount: float, seconds: float = 10.0, *, deadline: Deadline | None = None) -> float:
    """An upper bound on the value at the start belief of every controller (module docstring), computed for at most
    ``seconds`` and never past ``deadline``."""
    pomdp = as_pomdp(world)
    deadline = (Deadline.never() if deadline is None else deadline).within(seconds)
    if pomdp.num_states == 2:
        return two_state_bound(world, discount, points=TWO_STATE_POINTS, tolerance=1e-12, deadline=deadline)
    return informed_from_above(pomdp, discount, deadline)


def uniform_value(world, reset: float) -> float:
    """The exact value at the start belief of the uniform controller (every action with equal probability, whatever
    it saw: :meth:`fsc.Policy.uniform` on a RAM), by one sparse solve on the world's states: ``b0 (I - gamma T_u)^-1 R_u``
    with ``T_u`` and ``R_u`` the mean of the actions' transitions and rewards, ``gamma = 1 - reset``.  What the
    solver returns when not even one evaluation on the memory fits the time limit."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    pomdp = as_pomdp(world)
    A = pomdp.num_actions
    mean = sum(pomdp.sparse_transition) / A
    system = (sp.identity(pomdp.num_states, format="csc") - (1 - reset) * mean).tocsc()
    values = spla.splu(system).solve(np.ascontiguousarray(_rbar(pomdp).mean(axis=1)))
    initial = np.asarray(pomdp.initial, dtype=np.float64)
    return float(initial @ values / initial.sum())
