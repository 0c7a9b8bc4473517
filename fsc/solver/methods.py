"""The methods :func:`fsc.solver.solve` combines, each a free function with one signature::

    method(problem: Problem, start: Policy, budget: Budget, rng: numpy.random.Generator) -> Policy

Each climbs the value of :class:`fsc.solver.problem.Problem` (the one evaluator) from ``start`` and
returns the best policy it has seen, never one worse than ``start``.  Step rules are invariant to the
scale of the rewards and of the discount: a step is measured against the spread of the gradient it
follows (or normalised coordinate by coordinate, as Adam does), never in absolute units.

- :func:`ascent`: Adam on the logits, with restarts around the best point when it stalls (a vanishing
  gradient at a symmetric or saturated point, or no progress for a while).
- :func:`mirror`: mirror ascent on each node's distribution (the natural gradient of the softmax
  parametrisation): ``pi(c | n) <- pi(c | n) exp(eta Q(n, c))``, ``Q(n, c)`` the value of choice ``c`` at
  the belief of node ``n``, with ``eta`` grown after a success and cut after a failure.
- :func:`em`: expectation-maximisation for finite-state controllers (Toussaint, Harmeling and Storkey
  2006; Kumar and Zilberstein 2010): ``pi(c | n) <- pi(c | n) (Q(n, c) - R_min / r)``, normalised; no
  step size, and each step is an improvement.
- :func:`greedy`: deterministic controllers: round the start, then switch one node's choice at a time
  (the switches the gradient ranks best first, each checked by exact evaluation), and kick the best
  controller when no switch improves it (iterated local search).
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from fsc.model.policy import Policy
from fsc.solver.problem import Budget, Look, Problem

__all__ = ["METHODS", "SHAPING", "ascent", "em", "greedy", "mirror", "shaped"]

#: The relative change in value below which a step counts as no progress.
TOLERANCE = 1e-12


def _better(new: float, old: float) -> bool:
    return new > old + TOLERANCE * max(1.0, abs(old)) if math.isfinite(old) else new > old


def _softened(problem: Problem, start: Policy, mix: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """The start's probabilities mixed with a trace of the uniform policy, so no allowed choice is impossible."""
    arch = problem.architecture
    allowed, reset = arch.allowed.astype(np.float64), arch.reset_mask.astype(np.float64)
    probs = (1 - mix) * start.probs().detach().numpy() + mix * allowed / allowed.sum(axis=1, keepdims=True)
    init = (1 - mix) * start.init_probs().detach().numpy() + mix * reset / reset.sum()
    return probs, init


def _keep_best(problem: Problem, start: Policy, best: Look) -> Policy:
    """``best`` as a policy, unless the start itself is worth more (a method never returns worse)."""
    probs, init = start.probs().detach().numpy(), start.init_probs().detach().numpy()
    return start if problem.value(probs, init) >= best.value else problem.policy(best.probs, best.init_probs)


def ascent(problem: Problem, start: Policy, budget: Budget, rng: np.random.Generator, *, rate: float = 0.1, patience: int = 100) -> Policy:
    """Adam on the logits of the value, restarting around the best point when the ascent stalls (module docstring)."""
    objective, arch, r = problem.objective, problem.architecture, problem.reset
    w = start.logits.detach().numpy().copy()
    w0 = start.init_logits.detach().numpy().copy()
    # Logits of -inf (a deterministic start) could never move: bring them within 20 of their row's top.
    w = np.maximum(w, np.where(arch.allowed, w, -np.inf).max(axis=1, keepdims=True) - 20.0)
    w0 = np.maximum(w0, w0[arch.reset_mask].max() - 20.0)
    m, v, k = np.zeros_like(w), np.zeros_like(w), 0
    m0, v0 = np.zeros_like(w0), np.zeros_like(w0)
    best, best_value, stale, step = (w.copy(), w0.copy()), -math.inf, 0, 0
    while not budget.over(step):
        point = objective(torch.from_numpy(w), torch.from_numpy(w0))
        problem.evaluations[0] += 1
        step += 1
        value, g, g0 = point.gain / r, point.grad_logits.numpy(), point.grad_init.numpy()
        if _better(value, best_value):
            best, best_value, stale = (w.copy(), w0.copy()), value, 0
        else:
            stale += 1
        scale = max(float(np.abs(g).max()), float(np.abs(g0).max()))
        if scale <= 1e-12 * max(1.0, abs(value)) * r or stale >= patience:  # stalled: a kick around the best point
            w, w0 = best[0] + rng.normal(0.0, 1.0, w.shape), best[1] + rng.normal(0.0, 1.0, w0.shape)
            m, v, m0, v0, k, stale = 0 * m, 0 * v, 0 * m0, 0 * v0, 0, 0
            continue
        k += 1
        for x, gx, mx, vx in ((w, g, m, v), (w0, g0, m0, v0)):
            mx *= 0.9
            mx += 0.1 * gx
            vx *= 0.999
            vx += 0.001 * gx * gx
            x += rate * (mx / (1 - 0.9**k)) / (np.sqrt(vx / (1 - 0.999**k)) + 1e-12 * scale)
    policy = Policy(architecture=arch, logits=best[0], init_logits=best[1])
    return start if problem.value(start.probs().detach().numpy(), start.init_probs().detach().numpy()) >= best_value else policy


def _node_q(look: Look) -> np.ndarray:
    """``Q(n, c)``: the value of choice ``c`` at the belief of node ``n`` (0 where the node is never visited)."""
    return look.grad / np.maximum(look.occupancy, 1e-300)[:, None]


def _spread(q: np.ndarray) -> float:
    """The largest ``max - min`` over the rows of ``q`` (``-inf``: a disallowed choice, left out)."""
    if not len(q):
        return 0.0
    low = np.where(np.isfinite(q), q, np.inf).min(axis=1)
    return float((q.max(axis=1) - low).max())


def mirror(problem: Problem, start: Policy, budget: Budget, rng: np.random.Generator, *, rate: float = 1.0) -> Policy:
    """Mirror ascent with exponentiated steps on each node's distribution (module docstring)."""
    arch = problem.architecture
    probs, init = _softened(problem, start)
    look, eta, step = problem.look(probs, init), rate, 0
    while not budget.over(step) and eta > 1e-9:
        q, q0 = _node_q(look), look.grad_init
        q = np.where(arch.allowed, q, -np.inf)
        q0 = np.where(arch.reset_mask, q0, -np.inf)
        spread = max(float(_spread(q[look.occupancy > 0])), _spread(q0[None, arch.reset_mask]))
        if spread <= 0:
            break
        with np.errstate(divide="ignore"):
            logits = np.log(look.probs) + (eta / spread) * (q - q.max(axis=1, keepdims=True))
            logits0 = np.log(look.init_probs) + (eta / spread) * (q0 - q0.max())
        new_probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        new_init = np.exp(logits0 - logits0.max())
        candidate = problem.look(new_probs / new_probs.sum(axis=1, keepdims=True), new_init / new_init.sum())
        step += 1
        if _better(candidate.value, look.value):
            look, eta = candidate, eta * 2.0
        else:
            eta /= 4.0
    return _keep_best(problem, start, look)


def em(problem: Problem, start: Policy, budget: Budget, rng: np.random.Generator) -> Policy:
    """Expectation-maximisation for controllers (module docstring)."""
    probs, init = _softened(problem, start)
    look, step = problem.look(probs, init), 0
    low = problem.lowest_reward / problem.reset  # every Q is at least this
    while not budget.over(step):
        weights = look.probs * np.maximum(look.grad - look.occupancy[:, None] * low, 0.0)
        sums = weights.sum(axis=1, keepdims=True)
        new_probs = np.where(sums > 0, weights / np.where(sums > 0, sums, 1.0), look.probs)
        weights0 = look.init_probs * np.maximum(look.grad_init - low, 0.0)
        new_init = weights0 / weights0.sum() if weights0.sum() > 0 else look.init_probs
        candidate = problem.look(new_probs, new_init)
        step += 1
        if not _better(candidate.value, look.value):
            if candidate.value >= look.value:
                look = candidate
            break
        look = candidate
    return _keep_best(problem, start, look)


def _one_hot(choice: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros((len(choice), size))
    out[np.arange(len(choice)), choice] = 1.0
    return out


def _switches(look: Look, choice: np.ndarray, initial: int, allowed: np.ndarray, reset: np.ndarray) -> list[tuple[int, int]]:
    """Single switches ``(node, choice)`` (node ``-1``: the initial node) the gradient says improve, best first."""
    gain = look.grad - look.grad[np.arange(len(choice)), choice][:, None]
    gain[~allowed] = -np.inf
    gain0 = np.where(reset, look.grad_init - look.grad_init[initial], -np.inf)
    scale = TOLERANCE * max(1.0, abs(look.value))
    nodes, choices = np.nonzero(gain > scale)
    moves = [(float(gain[n, c]), int(n), int(c)) for n, c in zip(nodes, choices, strict=True)]
    moves += [(float(gain0[n]), -1, int(n)) for n in np.flatnonzero(gain0 > scale)]
    moves.sort(key=lambda move: -move[0])
    return [(n, c) for _, n, c in moves]


def greedy(problem: Problem, start: Policy, budget: Budget, rng: np.random.Generator, *, tries: int = 20) -> Policy:
    """Deterministic controllers by single switches and kicks (module docstring)."""
    arch = problem.architecture
    allowed, reset, C = arch.allowed, arch.reset_mask, arch.num_choices
    choice = np.where(allowed, start.probs().detach().numpy(), -1.0).argmax(axis=1)
    initial = int(np.where(reset, start.init_probs().detach().numpy(), -1.0).argmax())

    def look_at(choice: np.ndarray, initial: int) -> Look:
        return problem.look(_one_hot(choice, C), _one_hot(np.array([initial]), arch.num_nodes)[0])

    look, step = look_at(choice, initial), 1
    best = (look, choice.copy(), initial)
    while not budget.over(step):
        for n, c in _switches(look, choice, initial, allowed, reset)[:tries]:
            new_choice, new_initial = choice.copy(), initial
            if n < 0:
                new_initial = c
            else:
                new_choice[n] = c
            step += 1
            if _better(problem.value(_one_hot(new_choice, C), _one_hot(np.array([new_initial]), arch.num_nodes)[0]), look.value):
                look, choice, initial = look_at(new_choice, new_initial), new_choice, new_initial
                break
            if budget.over(step):
                break
        else:  # a local optimum: keep it if best, and kick the best one at one to three nodes it visits
            if _better(look.value, best[0].value):
                best = (look, choice.copy(), initial)
            choice, initial = best[1].copy(), best[2]
            visited = np.flatnonzero(best[0].occupancy > 0)
            for n in rng.choice(visited, size=min(len(visited), 1 + int(rng.integers(3))), replace=False):
                choice[n] = rng.choice(np.flatnonzero(allowed[n]))
            look, step = look_at(choice, initial), step + 1
    if _better(look.value, best[0].value):
        best = (look, choice, initial)
    return _keep_best(problem, start, best[0])


#: name -> method, in the order the portfolio runs them.
METHODS = {"mirror": mirror, "ascent": ascent, "em": em, "greedy": greedy}

#: The weights of the negative rewards in the objectives :func:`shaped` climbs in turn before the true one (1).
SHAPING = (0.0, 0.5)


def shaped(problem: Problem, start: Policy, budget: Budget, rng: np.random.Generator, *, methods: tuple[str, ...] = tuple(METHODS)) -> Policy:
    """Leave a flat region by continuation: climb with the negative rewards weighted by each of :data:`SHAPING`, then the true value.

    At a controller that collects no reward on a world with rewards of both signs (tiger-grid: avoiding the
    trap and the goal alike), the gradient vanishes.  With the penalties switched off the goal pulls, and
    raising their weight step by step keeps what was learnt where it pays; the controller returned is the
    best by the true value, never worse than ``start``.
    """
    current, objectives = start, [problem.shaped(weight) for weight in SHAPING] + [problem]
    for index, objective in enumerate(objectives):
        left = (budget.deadline - time.monotonic()) / (len(objectives) - index)
        for name in methods:
            current = METHODS[name](objective, current, Budget(steps=budget.steps, deadline=time.monotonic() + left / len(methods)), rng)
    start_value = problem.value(start.probs().detach().numpy(), start.init_probs().detach().numpy())
    return current if problem.value(current.probs().detach().numpy(), current.init_probs().detach().numpy()) > start_value else start
