"""An upper bound on the value of any controller, within a deadline.

Every bound here is computed from above: the iteration starts at a function
that lies above the optimal value ``V*`` and applies a monotone operator whose
fixed point lies above ``V*``, so *every* iterate is an upper bound, and
stopping early (for time) only makes it looser, never wrong.

- a world with two states: :func:`fsc.bounds.two_state_bound` on a grid of
  2001 beliefs (Tiger: the optimum to 1e-14);
- otherwise the fast informed bound (:mod:`fsc.bounds`), iterated from the
  MDP's ``Q`` (which lies above it: the informed backup takes the max inside
  the sum over observations, the MDP's outside), then lowered where the start
  belief leads by trials of point-based backups on a sawtooth bound
  (:class:`Sawtooth`, :func:`refined`), as HSVI and SARSOP bound from above:
  each backup of a bound above ``V*`` is above ``V*``.  They take at most half of
  the bound's time (:data:`TRIAL_SHARE`) and stop early when they settle; the time
  limit ends them without a note (their length is open by design).

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
from fsc.solver.pointbased import model_of, run_length

__all__ = ["uniform_value", "upper_bound"]

#: Beliefs of the two-state grid: on Tiger as tight as 200,001 points, 100 times faster.
TWO_STATE_POINTS = 2001
#: :func:`refined` stops after ``TRIALS`` trials, when its points hold ``TRIAL_ENTRIES`` support entries (what each
#: value costs per belief), or when the last ``STALL`` trials lowered the bound by at most ``SETTLED`` of what all
#: trials have lowered it by; so with time to spare the bound is the same on every run.  In 3 s
#: (``benchmarks/bench_solve.py bounds``): network 380.885 (the informed bound) to 302.379, tiger-grid 2.7325 to 2.5276,
#: hallway 1.2894 to 1.2169, RockSample[4,4] 22.410 to 17.92449858 (its optimum, settled in 2.3 s).
TRIAL_ENTRIES = 1_000_000
TRIALS = 200
#: The trials take at most this share of the bound's seconds (:func:`upper_bound`; 3 s of ``fsc solve``'s 60): their
#: first seconds lower it most, and the methods need the time more (RockSample[7,8], seed 0, with 6 s of trials:
#: 21.089 against 21.293 without them, a spread its seeds show too).
TRIAL_SHARE = 0.5
STALL = 20
SETTLED = 0.001
#: :meth:`Sawtooth.value` compares beliefs with its points this many entries at a time (32 MB).
CHUNK_ENTRIES = 4_000_000
#: The trials' bound is raised by this much of the world's value scale (its largest reward over ``1 - discount``): the
#: rounding of its sums, which the informed bound's iteration from above does not need.
ROUNDING = 1e-12
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


def informed_from_above(pomdp, discount: float, deadline: Deadline, tolerance: float = 1e-10) -> tuple[float, np.ndarray | None]:
    """The fast informed bound at the start belief, iterated from the MDP's ``Q`` until ``deadline``, and its last
    ``Q`` (every iterate lies above ``Q*``; None before the MDP's first)."""
    rbar = _rbar(pomdp)
    Q = mdp_q(pomdp, discount, deadline)
    if Q is None:
        return float(np.abs(rbar).max()) / (1 - discount), None
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
            return best, Q
    deadline.note(CUT)
    return best, Q


class Sawtooth:
    r"""An upper bound on ``V*`` over beliefs that point-based backups lower (Hauskrecht 2000; Smith and Simmons 2004).

    It holds the corners ``c(s)`` (the informed bound at each state, ``max_a Q(s, a)``), the informed bound's planes
    ``Q(., a)``, and points ``(b_i, u_i)`` with ``u_i >= V*(b_i)``.  Its value at ``b`` is the lower of the planes'
    ``max_a b . Q(., a)`` and the sawtooth interpolation

    .. math::

        c \cdot b + \min\bigl(0, \min_i \phi_i(b) (u_i - c \cdot b_i)\bigr), \qquad
        \phi_i(b) = \min_{s: b_i(s) > 0} b(s) / b_i(s),

    both above ``V*`` because ``V*`` is convex: ``b = phi_i b_i + (1 - phi_i) b'`` with ``b'`` a belief, so
    ``V*(b) <= phi_i u_i + (1 - phi_i) c . b'``.  A backup at ``b`` (:meth:`backup`) is above ``V*(b)`` because the
    Bellman operator is monotone; :meth:`add` keeps it as a point when it lowers the value there.
    """

    def __init__(self, model, Q: np.ndarray):
        self.model, self.planes, self.corners = model, Q, Q.max(axis=1)
        self._beliefs: list[tuple[np.ndarray, np.ndarray]] = []  # each point's support and its probabilities there
        self._drops: list[float] = []  # u_i - c . b_i (< 0)
        self._table: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None  # the points as CSR rows, made on demand

    @property
    def size(self) -> int:
        """How many points it holds."""
        return len(self._drops)

    @property
    def entries(self) -> int:
        """The points' support entries, what a value costs per belief."""
        return sum(len(support) for support, _ in self._beliefs)

    def value(self, beliefs: np.ndarray) -> np.ndarray:
        """The bound at each belief of ``beliefs`` ``(k, S)``: ``(k,)``."""
        planes = (beliefs @ self.planes).max(axis=1)
        if not self._drops:
            return planes
        if self._table is None:
            indices = np.concatenate([support for support, _ in self._beliefs])
            data = np.concatenate([probs for _, probs in self._beliefs])
            starts = np.cumsum([0] + [len(support) for support, _ in self._beliefs[:-1]])
            self._table = (indices, data, starts, np.array(self._drops))
        indices, data, starts, drops = self._table
        lowest = np.empty(len(beliefs))
        rows = max(1, CHUNK_ENTRIES // len(indices))  # (rows, entries) at a time
        for first in range(0, len(beliefs), rows):
            phi = np.minimum.reduceat(beliefs[first : first + rows, indices] / data, starts, axis=1)  # (rows, points)
            lowest[first : first + rows] = (phi * drops).min(axis=1)
        return np.minimum(planes, beliefs @ self.corners + np.minimum(lowest, 0.0))

    def backup(self, belief: np.ndarray) -> tuple[np.ndarray, list[tuple[int, np.ndarray, np.ndarray]]]:
        """The value of each action at ``belief`` (reward now, the bound after each observation, ``(A,)``), and per
        action its observations' probabilities and the beliefs they lead to."""
        model = self.model
        S, A, _ = model.shape
        q = belief @ model.reward
        after, found = [], []
        for a in range(A):
            reached = model.forward[a] @ belief
            probs, nexts = [], []
            for _, states, chance in model.emitters(a):
                joint = reached[states] * chance
                total = joint.sum()
                if total > 0:
                    following = np.zeros(S)
                    following[states] = joint / total
                    probs.append(total)
                    nexts.append(following)
            found.append((a, np.array(probs), np.array(nexts).reshape(len(nexts), S)))
            after.append(len(nexts))
        stacked = np.concatenate([nexts for _, _, nexts in found])
        values = self.value(stacked) if len(stacked) else np.zeros(0)
        for (a, probs, _), (first, last) in zip(found, _spans(after), strict=True):
            q[a] += model.discount * probs @ values[first:last]
        return q, found

    def add(self, belief: np.ndarray, value: float) -> bool:
        """Keep ``(belief, value)`` as a point when it lowers the bound there; whether it did."""
        if not value < float(self.value(belief[None])[0]):
            return False
        drop = value - float(belief @ self.corners)
        if not drop < 0:
            return False
        support = np.flatnonzero(belief > 0)
        self._beliefs.append((support, belief[support]))
        self._drops.append(drop)
        self._table = None
        return True


def _spans(counts: list[int]) -> list[tuple[int, int]]:
    ends = np.cumsum(counts)
    return list(zip((ends - np.asarray(counts)).tolist(), ends.tolist(), strict=True))


def refined(model, Q: np.ndarray, deadline: Deadline, rng: np.random.Generator) -> float:
    """The bound at the start belief after trials of :class:`Sawtooth` until ``deadline``: each trial walks from the
    start, playing the action best by the bound and drawing the observation by its probability, for as many steps
    as the point-based search's sampled runs (:func:`fsc.solver.pointbased.run_length`), then backs up the beliefs it
    met, last first (:data:`TRIALS` and the constants beside it say when it stops)."""
    saw = Sawtooth(model, Q)
    start = model.initial
    first = bound = float(saw.value(start[None])[0])
    length = run_length(model.discount)
    history = [bound]
    while not deadline.expired() and saw.entries < TRIAL_ENTRIES and len(history) <= TRIALS:
        belief, path = start, []
        for _ in range(length):
            q, found = saw.backup(belief)
            path.append(belief)
            a = int(np.argmax(q))
            _, probs, nexts = found[a]
            if not len(probs):
                break
            belief = nexts[rng.choice(len(probs), p=probs / probs.sum())]
            if deadline.expired():
                break
        for belief in reversed(path):
            if deadline.expired():
                break
            saw.add(belief, float(saw.backup(belief)[0].max()))
        bound = min(bound, float(saw.value(start[None])[0]))
        history.append(bound)
        if len(history) > STALL and history[-STALL - 1] - bound <= SETTLED * (first - bound):
            break
    return bound


def upper_bound(world, discount: float, seconds: float = 10.0, *, deadline: Deadline | None = None) -> float:
    """An upper bound on the value at the start belief of every controller (module docstring), computed for at most
    ``seconds`` and never past ``deadline``."""
    pomdp = as_pomdp(world)
    deadline = (Deadline.never() if deadline is None else deadline).within(seconds)
    if pomdp.num_states == 2:
        return two_state_bound(world, discount, points=TWO_STATE_POINTS, tolerance=1e-12, deadline=deadline)
    informed, Q = informed_from_above(pomdp, discount, deadline)
    if Q is None or deadline.expired():
        return informed
    tables = model_of(world, 1 - discount)
    trials = refined(tables, Q, deadline.within(TRIAL_SHARE * seconds), np.random.default_rng(0))
    return min(informed, trials + ROUNDING * float(np.abs(tables.reward).max()) / (1 - discount))


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
