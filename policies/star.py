r"""The star: the column of confidence for k hypotheses (paper section 6's suggestion).

With ``k`` arms, one of which is better, the column of confidence becomes a
star: a column (branch) of ``M`` memories per arm, joined at the bottom.  In
branch ``x`` the agent plays arm ``x``; a win climbs the branch, a loss
descends it; at the top a loss descends only with the branch's exit
probability ``eps_x``; a loss at the bottom moves to the bottom of another
branch, chosen uniformly.  With ``k = 2`` this is the CCP exactly.

The architecture is written as rules (:class:`fsc.Automaton`), its nodes the
tuples ``(memory, arm, last reward)`` with the start node ``(1, None,
None)``, like the values of RAM's nodes; the policy is defined on those
values, so the same function puts it on the star, on ``Column(M, arms=k)``
or on ``RAM(M, arms=k)`` (to train from near it).

Closed form (native convention).  Under hypothesis ``j`` each branch is a
birth-death chain, played until a loss at its bottom; let ``D_x`` be the
discounted number of steps of one visit to branch ``x`` and ``L_x`` the
discounted time at which it ends, ``E[gamma^tau]`` with ``gamma = 1 - r``
(appendix C's column quantities; :func:`branch_visit`).  The discounted
number ``W_x`` of steps on a worse arm from the bottom of branch ``x`` obeys
the renewal equations

.. math::

    W_x = [x \ne j] D_x + \frac{L_x}{k-1} \sum_{y \ne x} W_y ,

and ``q = r / k sum_x W_x`` (a reset enters each branch with probability
``1/k``).  Since ``1 - L_x = r D_x`` (``1 - gamma^tau = r sum_{t<tau}
gamma^t``), summing the equations solves them without cancellation:

.. math::

    q_j = \frac{\sum_{x \ne j} w_x}{\sum_x w_x}, \qquad
    w_x = \frac{r D_x}{k - r D_x},

averaged over the hypotheses ``j``; at ``k = 2`` this is appendix C's
``q = N_B / (N_A + N_B)``.

The cyclic star (``order="cyclic"``) leaves branch ``x`` for branch
``x + 1`` (mod ``k``) instead of a uniform other branch: the search after a
reset visits each worse branch at most once before the better one, as
gradient flow finds from near the uniform star.  Its renewal equations
``W_x = [x != j] D_x + L_x W_{x+1}`` go once round the cycle:

.. math::

    r W_x = \frac{\sum_{n < k,\ x + n \ne j} u_{x+n} \prod_{i < n} L_{x+i}}{1 - \prod_y L_y},
    \qquad u_x = r D_x = 1 - L_x,

sums of positive terms again (``1 - prod L = -expm1(sum log1p(-u))``).  At ``r = 0``, with equal
exits, ``q = (k-1) T_B / ((k-1) T_B + T_A)`` with ``T`` the mean visit length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

import fsc
from fsc.errors import InputError, InputTypeError
from fsc.model.architecture import MemoryArchitecture, arm_labels, observation_labels
from fsc.model.policy import Policy

ORDERS = ("uniform", "cyclic")

__all__ = ["ORDERS", "branch_visit", "star", "star_architecture", "star_eps_opt", "star_probs", "star_q", "star_q_eps_zero", "star_q_limit"]


def _integer(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputTypeError(f"{name} must be an int >= {low}, got {value!r}")
    if value < low:
        raise InputError(f"{name} must be >= {low}, got {value!r}")
    return int(value)


def _exits(eps: float | Sequence[float], k: int) -> np.ndarray:
    values = np.atleast_1d(np.asarray(eps, dtype=np.float64)) if not isinstance(eps, bool) else None
    if values is None or values.ndim != 1 or len(values) not in (1, k):
        raise InputError(f"eps must be a number or {k} numbers (one per branch), got {eps!r}")
    if not (np.isfinite(values).all() and (values > 0).all() and (values <= 1).all()):
        raise InputError(f"eps must be in (0, 1], got {eps!r}")
    return np.broadcast_to(values, (k,)).copy()


def star_architecture(M: int, k: int) -> fsc.Automaton:
    """The star with ``k`` branches of ``M`` memories, written as rules.

    Nodes ``(i, x, o)``: memory ``i`` of branch ``x``, last reward ``o``; the
    start node ``(1, None, None)``.  Choices ``(i, x)``.  Allowed: the next
    memory is a neighbour, and above memory 1 the branch does not change.
    """
    M, k = _integer("M", M, 1), _integer("k", k, 2)
    arms, rewards = arm_labels(k), observation_labels(2)
    start = (1, None, None)
    return fsc.Automaton(
        nodes=[start] + [(i, x, o) for i in range(1, M + 1) for x in arms for o in rewards],
        choices=[(i, x) for i in range(1, M + 1) for x in arms],
        step=lambda node, choice, obs: (*choice, rewards[obs]),
        action=lambda choice: arms.index(choice[1]),
        actions=k,
        observations=2,
        allowed=lambda node, choice: abs(node[0] - choice[0]) <= 1 and (node[0] == 1 or node[1] in (None, choice[1])),
        reset=[start],
    )


def star_probs(arch: MemoryArchitecture, eps: float | Sequence[float], order: str = "uniform") -> tuple[np.ndarray, np.ndarray]:
    """The star policy's ``(probs, init_probs)`` on an architecture with RAM's node values.

    ``arch``: the star, ``Column(M, arms=k)``, ``Chain`` or ``RAM`` with ``k``
    arms and two observations (``+`` a win).  ``eps``: the exit probability
    at the top, one for all branches or one per branch.  With ``M = 1`` the
    top is the bottom: a loss leaves the branch with probability ``eps_x``.
    The reset starts in ``(1, None, None)`` and enters each branch with
    probability ``1/k``; other blank nodes (never reached) play uniformly.
    ``order``: where a loss at the bottom of branch ``x`` goes, ``"uniform"``
    (any other branch) or ``"cyclic"`` (branch ``x + 1`` mod ``k``).

    Raises:
        ValueError: another kind of architecture, a move it does not allow, an unknown order.
    """
    _order(order)
    nodes, choices = arch.node_values, arch.choice_values
    if arch.num_observations != 2 or not nodes or not all(isinstance(v, tuple) and len(v) == 3 for v in nodes):
        raise InputError(f"the star policy needs nodes (memory, arm, reward) and two observations (RAM, Chain, Column or the star), got {arch!r}")
    k = arch.num_actions
    arms = arm_labels(k)
    M = max(v[0] for v in nodes)
    exits = _exits(eps, k)
    choice_index = {value: c for c, value in enumerate(choices)}
    probs = np.zeros((arch.num_nodes, arch.num_choices))
    for n, (i, x, o) in enumerate(nodes):
        row = probs[n]
        if x is None:
            if i == 1:
                for y in arms:
                    row[choice_index[(1, y)]] = 1 / k
            else:
                row[:] = arch.allowed[n] / arch.allowed[n].sum()
            continue
        e = exits[arms.index(x)]
        others = [y for y in arms if y != x] if order == "uniform" else [arms[(arms.index(x) + 1) % k]]
        if o == "+":
            row[choice_index[(min(i + 1, M), x)]] = 1
        elif i == M:
            row[choice_index[(M, x)]] += 1 - e
            if M > 1:
                row[choice_index[(M - 1, x)]] += e
            else:
                for y in others:
                    row[choice_index[(1, y)]] += e / len(others)
        elif i == 1:
            for y in others:
                row[choice_index[(1, y)]] = 1 / len(others)
        else:
            row[choice_index[(i - 1, x)]] = 1
    bad = np.argwhere((probs > 0) & ~arch.allowed)
    if len(bad):
        n, c = bad[0]
        raise InputError(f"{arch!r} does not allow the star's choice {choices[c]!r} in node {nodes[n]!r}")
    init = np.zeros(arch.num_nodes)
    init[nodes.index((1, None, None))] = 1
    return probs, init


def star(M: int, k: int, eps: float | Sequence[float], order: str = "uniform") -> tuple[fsc.Automaton, Policy]:
    """The star architecture and the star policy on it (``order``: see :func:`star_probs`)."""
    arch = star_architecture(M, k)
    return arch, Policy.from_probs(arch, *star_probs(arch, eps, order))


def _order(order: object) -> str:
    if order not in ORDERS:
        raise InputError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    return order


def branch_visit(win: float, M: int, eps: float, gamma: float) -> tuple[float, float]:
    """``(D, L)`` of one visit to a branch entered at its bottom.

    The branch is the birth-death chain of memories ``1..M`` played with win
    probability ``win``: a win climbs (stays at ``M``), a loss descends,
    descends from ``M`` with probability ``eps`` only, and leaves from memory
    1 (from ``M = 1``: with probability ``eps``).  ``D = E[sum_{t < tau}
    gamma^t]`` counts the visit's steps, ``L = E[gamma^tau]`` discounts its
    end (``tau``: the first step in the next branch).  Both solve the
    tridiagonal system ``(I - gamma P) x = b`` (the recursion of appendix C),
    solved by elimination from the top with pivots that are sums of positive terms.
    """
    lose = 1.0 - win
    # Row i: x_i - gamma (up_i x_{i+1} + stay_i x_i + down_i x_{i-1}) = b_i, where
    # stay_i = 1 - up_i - down_i - leave_i is never formed (it would cancel).
    up = np.full(M, win)
    down = np.full(M, lose)
    leave = np.zeros(M)
    up[M - 1] = 0.0
    down[M - 1] = lose * eps
    if M == 1:
        leave[0], down[0] = lose * eps, 0.0
    else:
        leave[0], down[0] = lose, 0.0
    # Eliminate from the top: x_i = a_i + c_i x_{i-1}.  With e_i = 1 - c_i and
    # up + down + stay + leave = 1, each pivot 1 - gamma (stay_i + up_i c_{i+1})
    # is the sum of positive terms r + gamma (down_i + leave_i + up_i e_{i+1}),
    # so no digit cancels, even at gamma = 1 with a tiny eps.
    r = 1.0 - gamma
    results = []
    for b in (np.ones(M), gamma * leave):
        a_next, e_next = 0.0, 1.0
        for i in range(M - 1, -1, -1):
            pivot = r + gamma * (down[i] + leave[i] + up[i] * e_next)
            a_next = (b[i] + gamma * up[i] * a_next) / pivot
            e_next = (r + gamma * (leave[i] + up[i] * e_next)) / pivot
        results.append(float(a_next))  # x_1 (down[0] = 0)
    return results[0], results[1]


def star_q(mu: float, M: int, r: float, eps: float | Sequence[float], k: int, order: str = "uniform") -> float:
    """Exact ``q`` (native convention) of the star policy with ``k`` arms at reset ``r``.

    ``order="uniform"``: ``q = mean_j sum_{x != j} w_x / sum_x w_x`` with
    ``w_x = r D_x / (k - r D_x)``; ``order="cyclic"``: the cyclic renewal
    (module docstring).  ``k = 2`` gives :func:`policies.closed_form.ccp_q`
    for both orders.
    """
    k, M = _integer("k", k, 2), _integer("M", M, 1)
    _order(order)
    if not (isinstance(mu, (int, float)) and 0 < mu < 1):
        raise InputError(f"mu must be in (0, 1), got {mu!r}")
    if not (isinstance(r, (int, float)) and 0 < r <= 1):
        raise InputError(f"r must be in (0, 1], got {r!r} (use star_q_limit for r -> 0)")
    exits = _exits(eps, k)
    good, bad = (1 + mu) / 2, (1 - mu) / 2
    q = 0.0
    for j in range(k):
        u = np.array([r * branch_visit(good if x == j else bad, M, float(exits[x]), 1.0 - r)[0] for x in range(k)])
        if order == "uniform":
            w = u / (k - u)
            q += (w.sum() - w[j]) / w.sum()
            continue
        # Cyclic: r W_x for each start branch x, going once round from x.
        cycle = -math.expm1(float(np.log1p(-u).sum()))
        for x in range(k):
            survive, worse = 1.0, 0.0
            for n in range(k):
                y = (x + n) % k
                if y != j:
                    worse += survive * u[y]
                survive *= 1.0 - u[y]
            q += worse / cycle / k
    return q / k


def star_q_limit(mu: float, M: int, eps: float, k: int) -> float:
    """``q`` as ``r -> 0`` for equal exits: ``(k-1) T_B / ((k-1) T_B + T_A)``.

    ``T_A``, ``T_B``: mean visit lengths of the better and a worse branch.
    As ``eps -> 0`` this tends to ``(k-1) alpha^(2M-1) / ((k-1) alpha^(2M-1) + 1)``
    with ``alpha = (1 - mu) / (1 + mu)`` (the CCP's limit at ``k = 2``).
    """
    T_A, _ = branch_visit((1 + mu) / 2, M, eps, 1.0)
    T_B, _ = branch_visit((1 - mu) / 2, M, eps, 1.0)
    return (k - 1) * T_B / ((k - 1) * T_B + T_A)


def star_q_eps_zero(mu: float, M: int, k: int) -> float:
    """The ``eps -> 0``, ``r -> 0`` limit: ``(k-1) alpha^(2M-1) / ((k-1) alpha^(2M-1) + 1)``."""
    a = (1 - mu) / (1 + mu)
    x = (k - 1) * math.pow(a, 2 * M - 1)
    return x / (x + 1)


def star_eps_opt(mu: float, M: int, r: float, k: int, order: str = "uniform") -> float:
    """The equal exit probability ``eps`` in (0, 1] that minimises :func:`star_q` (numerically).

    A bounded search on ``log eps`` (scipy's Brent method, tolerance 1e-10);
    at ``k = 2`` it agrees with :func:`policies.closed_form.ccp_eps_opt`
    (capped at 1).  ``M = 1`` has no top to leave: the exit is the switch.
    """
    from scipy.optimize import minimize_scalar

    best = minimize_scalar(lambda log_eps: star_q(mu, M, r, math.exp(log_eps), k, order), bounds=(-40.0, 0.0), method="bounded", options={"xatol": 1e-10})
    return min(1.0, math.exp(best.x))
