"""The methods :class:`fsc.solver.Portfolio` combines: steps (:class:`fsc.optim.Step`) it runs within a budget.

Each method is a frozen settings value with a step rule (``init`` and ``update`` on an
:class:`fsc.objective.Objective`) and ``steps``, the most steps it takes in one round of the portfolio.
:meth:`Method.solve` is the loop over its steps: it climbs the objective from ``start`` within a
:class:`Budget` and returns the best policy it has seen, never one worse than ``start``.  Step rules are
invariant to the scale of the rewards and of the discount: a step is measured against the spread of the
gradient it follows (or normalised coordinate by coordinate, as Adam does), never in absolute units.

- :class:`Polish` (``polish``): iterated local search on a deterministic controller's policy graph
  (:func:`fsc.solver.graph.polish`): node improvement at the beliefs the nodes are reached in, and random kicks.
- :class:`BPI` (``bpi``): bounded policy iteration (Poupart and Boutilier 2003; :mod:`fsc.solver.bpi`): each
  choice's rows by a linear program whose solution dominates its value at every state, and backed-up nodes
  at the beliefs the controller meets when no program gains.
- :class:`Restarts` (``adam``): a step on the logits, by default :class:`fsc.optim.Adam` with an epsilon
  relative to the gradient's scale, restarted around the best point when it stalls (a vanishing gradient
  at a symmetric or saturated point, or no progress for ``patience`` steps).
- :class:`Mirror` (``mirror``): mirror ascent on each node's distribution (the natural gradient of the
  softmax parametrisation): ``pi(c | n) <- pi(c | n) exp(eta Q(n, c))``, ``Q(n, c)`` the value of choice
  ``c`` at the belief of node ``n``, with ``eta`` grown after a success and cut after a failure.
- :class:`EM` (``em``): expectation-maximisation for finite-state controllers (Toussaint, Harmeling and
  Storkey 2006; Kumar and Zilberstein 2010): ``pi(c | n) <- pi(c | n) (Q(n, c) - R_min / r)``,
  normalised; no step size, and each step is an improvement.
- :class:`NodeSplit` (``nodesplit``): node splitting (:mod:`fsc.solver.nodesplit`): a node reached in beliefs
  that want different actions or successors becomes two, kept when the exact value rises.
- :class:`Greedy` (``greedy``): deterministic controllers: round the start, then switch one node's choice
  at a time (the switches the gradient ranks best first, each checked by exact evaluation), and kick the
  best controller when no switch improves it (iterated local search).

:class:`Shaped` is the continuation the portfolio runs from a flat region: the methods in turn on shaped
objectives (:meth:`fsc.objective.Objective.shaped`), then on the true one.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from typing import Any, ClassVar

import attrs
import numpy as np
import torch

from fsc.checks import integer, positive, real
from fsc.choices import SHAPED, SOLVER_METHODS
from fsc.errors import InputTypeError
from fsc.limits import TimeUp
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import RAM
from fsc.model.policy import Policy
from fsc.objective import Look, Objective
from fsc.optim import Adam, State, Step, checked, no_clock
from fsc.solver import bpi, nodesplit
from fsc.solver.graph import POLISH_ROUNDS, as_policy, from_policy, improve, kick, until
from fsc.solver.pointbased import model_of, search_for

__all__ = [
    "BPI", "EM", "METHODS", "Budget", "Greedy", "Method", "Mirror", "NodeSplit", "PointBased", "Polish", "Restarts", "Shaped", "configured", "settings",
]  # fmt: skip

#: The relative change in value below which a step counts as no progress.
TOLERANCE = 1e-12


@attrs.frozen(kw_only=True)
class Budget:
    """How long a method may run: at most ``steps`` steps, and never past ``deadline`` (``time.monotonic()``).

    With a deadline far away, a method's result depends on its start, its steps and its random generator
    only: the same seed gives the same controller.
    """

    steps: int
    deadline: float

    def over(self, step: int) -> bool:
        return step >= self.steps or time.monotonic() >= self.deadline

    @classmethod
    def of(cls, steps: int, seconds: float) -> Budget:
        return cls(steps=steps, deadline=time.monotonic() + seconds)


def _better(new: float, old: float, scale: float) -> bool:
    """Whether ``new`` beats ``old`` by more than rounding: relative to the larger of ``old`` and the world's value
    scale (``Objective.reward_scale``), so that a world's units never decide what counts as progress."""
    return new > old + TOLERANCE * max(scale, abs(old)) if math.isfinite(old) else new > old


def _count(default: int):
    return attrs.field(default=default, validator=checked(integer, 1))


class Method(Step):
    """A step the portfolio runs: :meth:`solve` loops over its steps within a budget.

    ``State.step`` counts what the budget counts (each method's docstring says what).
    """

    steps: int

    def solve(self, objective: Objective, start: Policy, budget: Budget, rng: np.random.Generator) -> Policy:
        """The best policy the steps from ``start`` reach within ``budget``, never worse than ``start`` (``start`` itself,
        not even the method's set-up run, when the budget has no time left)."""
        if budget.over(0):
            return start
        state = self.init(objective, start, rng=rng)
        self.within(state, budget)
        while not budget.over(state.step):
            new = self.update(objective, state)
            if new is None:
                break
            state = new
        return self.result(objective, start, state)

    def within(self, state: State, budget: Budget) -> None:
        """Tell a method whose steps are long the round's deadline (kept in ``state.slots``); most need not know."""

    def result(self, objective: Objective, start: Policy, state: State) -> Policy:
        """The policy of the last state, unless the start itself is worth more (a method never returns worse)."""
        return _keep_best(objective, start, state.point)


def _softened(objective: Objective, start: Policy, mix: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """The start's probabilities mixed with a trace of the uniform policy, so no allowed choice is impossible."""
    arch = objective.architecture
    allowed, reset = arch.allowed.astype(np.float64), arch.reset_mask.astype(np.float64)
    probs = (1 - mix) * start.probs().detach().numpy() + mix * allowed / allowed.sum(axis=1, keepdims=True)
    init = (1 - mix) * start.init_probs().detach().numpy() + mix * reset / reset.sum()
    return probs, init


def _keep_best(objective: Objective, start: Policy, best: Look) -> Policy:
    """``best`` as a policy, unless the start itself is worth more (a method never returns worse)."""
    return start if objective.value_of(start) >= best.value else objective.policy(best.probs, best.init_probs)


def _looked(state: State, look: Look, clock: Callable[[], float], **slots: Any) -> State:
    """The state after one more step, at ``look``."""
    return State(point=look, step=state.step + 1, evaluations=state.evaluations + 1, seconds=clock(), slots={**state.slots, **slots})


@attrs.frozen(kw_only=True)
class Restarts(Method):
    """A step on the logits (``rule``; by default Adam with an epsilon relative to the gradient's scale), kicked
    around the best point seen when it stalls: a gradient that vanishes (at a symmetric or saturated point) or
    ``patience`` steps without progress.  A kick moves every logit of the best point by a standard normal draw
    and starts the rule again there.  ``State.step`` counts the rule's updates and kicks (one evaluation each
    with Adam or plain ascent; a rule that evaluates more per update, such as the flow, counts as many in
    :attr:`fsc.objective.Objective.evaluations`).

    Args:
        rule: the step on the logits (a :class:`fsc.optim.Step` climbing the objective's points).
        patience: steps without a better value after which it kicks.
        steps: the most updates and kicks in one round of the portfolio.
    """

    rule: Step = attrs.field(factory=lambda: Adam(**{name: SOLVER_METHODS["adam"][name] for name in ("lr", "beta1", "beta2", "eps", "relative_eps")}))
    patience: int = attrs.field(default=SOLVER_METHODS["adam"]["patience"], validator=checked(integer, 1))
    steps: int = _count(SOLVER_METHODS["adam"]["steps"])

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.rule, Step) or isinstance(self.rule, Method):
            raise InputTypeError(f"rule must be a step on the logits (a fsc.optim.Step such as fsc.optim.Adam), got {self.rule!r}")

    @property
    def name(self) -> str:  # the rule's: the portfolio's "adam" is Adam with restarts
        return self.rule.name

    def init(self, objective: Objective, start: Policy, *, rng: np.random.Generator | None = None, clock: Callable[[], float] = no_clock) -> State:
        arch = objective.architecture
        w, w0 = start.logits.detach().numpy().copy(), start.init_logits.detach().numpy().copy()
        # Logits of -inf (a deterministic start) could never move: bring them within 20 of their row's top.
        w = np.maximum(w, np.where(arch.allowed, w, -np.inf).max(axis=1, keepdims=True) - 20.0)
        w0 = np.maximum(w0, w0[arch.reset_mask].max() - 20.0)
        inner = self.rule.at(objective(torch.from_numpy(w), torch.from_numpy(w0)))
        slots = {"inner": inner, "rng": rng, "best": (w, w0), "best_value": -math.inf, "stale": 0}
        return self._tracked(objective, State(point=inner.point, evaluations=0, seconds=clock(), slots=slots), inner, 0, clock)

    def update(self, objective: Objective, state: State, clock: Callable[[], float] = no_clock) -> State | None:
        slots, r = state.slots, objective.reset
        point, stale = state.point, slots["stale"]
        value = point.gain / r
        scale = max(float(np.abs(point.grad_logits.numpy()).max()), float(np.abs(point.grad_init.numpy()).max()))
        inner = None
        if not (scale <= 1e-12 * max(objective.reward_scale, abs(value)) * r or stale >= self.patience):
            inner = self.rule.update(objective, slots["inner"])
        if inner is None:  # stalled: a kick around the best point
            w, w0 = slots["best"]
            rng = slots["rng"]
            w, w0 = w + rng.normal(0.0, 1.0, w.shape), w0 + rng.normal(0.0, 1.0, w0.shape)
            inner, stale = self.rule.at(objective(torch.from_numpy(w), torch.from_numpy(w0))), 0
        return self._tracked(objective, state, inner, stale, clock)

    def _tracked(self, objective: Objective, state: State, inner: State, stale: int, clock: Callable[[], float]) -> State:
        """The state after the evaluation of ``inner``'s point: the best so far kept, or one more step without progress."""
        point, slots = inner.point, dict(state.slots)
        value = point.gain / objective.reset
        if _better(value, slots["best_value"], objective.reward_scale):
            slots.update(best=(point.logits.numpy(), point.init_logits.numpy()), best_value=value, stale=0)
        else:
            slots["stale"] = stale + 1
        slots["inner"] = inner
        return State(point=point, step=state.step + 1, evaluations=state.evaluations + 1, seconds=clock(), slots=slots)

    def result(self, objective: Objective, start: Policy, state: State) -> Policy:
        (w, w0), best_value = state.slots["best"], state.slots["best_value"]
        policy = Policy(architecture=objective.architecture, logits=w, init_logits=w0)
        return start if objective.value_of(start) >= best_value else policy


def _node_q(look: Look) -> np.ndarray:
    """``Q(n, c)``: the value of choice ``c`` at the belief of node ``n`` (0 where the node is never visited)."""
    return look.grad / np.maximum(look.occupancy, 1e-300)[:, None]


def _spread(q: np.ndarray) -> float:
    """The largest ``max - min`` over the rows of ``q`` (``-inf``: a disallowed choice, left out)."""
    if not len(q):
        return 0.0
    low = np.where(np.isfinite(q), q, np.inf).min(axis=1)
    return float((q.max(axis=1) - low).max())


@attrs.frozen(kw_only=True)
class Mirror(Method):
    """Mirror ascent with exponentiated steps on each node's distribution (module docstring): the step
    ``eta / spread`` times ``Q``, ``eta`` doubled after a better value and quartered after a worse one; it
    ends when ``eta`` falls to 1e-9 or every ``Q`` is equal.  ``State.step`` counts the steps tried.

    Args:
        rate: the first ``eta``.
        steps: the most steps in one round of the portfolio.
    """

    name: ClassVar[str] = "mirror"
    rate: float = attrs.field(default=SOLVER_METHODS["mirror"]["rate"], validator=checked(positive))
    steps: int = _count(SOLVER_METHODS["mirror"]["steps"])

    def init(self, objective: Objective, start: Policy, *, rng: np.random.Generator | None = None, clock: Callable[[], float] = no_clock) -> State:
        return State(point=objective.look(*_softened(objective, start)), seconds=clock(), slots={"eta": float(self.rate)})

    def update(self, objective: Objective, state: State, clock: Callable[[], float] = no_clock) -> State | None:
        arch, look, eta = objective.architecture, state.point, state.slots["eta"]
        if not eta > 1e-9:
            return None
        q = np.where(arch.allowed, _node_q(look), -np.inf)
        q0 = np.where(arch.reset_mask, look.grad_init, -np.inf)
        spread = max(float(_spread(q[look.occupancy > 0])), _spread(q0[None, arch.reset_mask]))
        if spread <= 0:
            return None
        with np.errstate(divide="ignore"):
            logits = np.log(look.probs) + (eta / spread) * (q - q.max(axis=1, keepdims=True))
            logits0 = np.log(look.init_probs) + (eta / spread) * (q0 - q0.max())
        new_probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        new_init = np.exp(logits0 - logits0.max())
        candidate = objective.look(new_probs / new_probs.sum(axis=1, keepdims=True), new_init / new_init.sum())
        if _better(candidate.value, look.value, objective.reward_scale):
            return _looked(state, candidate, clock, eta=eta * 2.0)
        return _looked(state, look, clock, eta=eta / 4.0)


@attrs.frozen(kw_only=True)
class EM(Method):
    """Expectation-maximisation for controllers (module docstring); it ends at the first step that is no
    improvement (keeping it if it is no worse).  ``State.step`` counts the steps.

    Args:
        steps: the most steps in one round of the portfolio.
    """

    name: ClassVar[str] = "em"
    steps: int = _count(SOLVER_METHODS["em"]["steps"])

    def init(self, objective: Objective, start: Policy, *, rng: np.random.Generator | None = None, clock: Callable[[], float] = no_clock) -> State:
        return State(point=objective.look(*_softened(objective, start)), seconds=clock(), slots={"done": False})

    def update(self, objective: Objective, state: State, clock: Callable[[], float] = no_clock) -> State | None:
        if state.slots["done"]:
            return None
        look = state.point
        low = objective.lowest_reward / objective.reset  # every Q is at least this
        weights = look.probs * np.maximum(look.grad - look.occupancy[:, None] * low, 0.0)
        sums = weights.sum(axis=1, keepdims=True)
        new_probs = np.where(sums > 0, weights / np.where(sums > 0, sums, 1.0), look.probs)
        weights0 = look.init_probs * np.maximum(look.grad_init - low, 0.0)
        new_init = weights0 / weights0.sum() if weights0.sum() > 0 else look.init_probs
        candidate = objective.look(new_probs, new_init)
        if _better(candidate.value, look.value, objective.reward_scale):
            return _looked(state, candidate, clock)
        return _looked(state, candidate if candidate.value >= look.value else look, clock, done=True)


def _rounded(arch: MemoryArchitecture, start: Policy) -> tuple[np.ndarray, int]:
    """The most likely allowed choice of each node of ``start`` and its most likely reset node."""
    choice = np.where(arch.allowed, start.probs().detach().numpy(), -1.0).argmax(axis=1)
    return choice, int(np.where(arch.reset_mask, start.init_probs().detach().numpy(), -1.0).argmax())


def _one_hot(choice: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros((len(choice), size))
    out[np.arange(len(choice)), choice] = 1.0
    return out


def _switches(look: Look, choice: np.ndarray, initial: int, allowed: np.ndarray, reset: np.ndarray, scale: float) -> list[tuple[int, int]]:
    """Single switches ``(node, choice)`` (node ``-1``: the initial node) the gradient says improve, best first."""
    gain = look.grad - look.grad[np.arange(len(choice)), choice][:, None]
    gain[~allowed] = -np.inf
    gain0 = np.where(reset, look.grad_init - look.grad_init[initial], -np.inf)
    scale = TOLERANCE * max(scale, abs(look.value))
    nodes, choices = np.nonzero(gain > scale)
    moves = [(float(gain[n, c]), int(n), int(c)) for n, c in zip(nodes, choices, strict=True)]
    moves += [(float(gain0[n]), -1, int(n)) for n in np.flatnonzero(gain0 > scale)]
    moves.sort(key=lambda move: -move[0])
    return [(n, c) for _, n, c in moves]


@attrs.frozen(kw_only=True)
class Greedy(Method):
    """Deterministic controllers by single switches and kicks (module docstring).  A step tries one switch
    (among the ``tries`` the gradient ranks best), or, when none is left, kicks the best controller at one to
    three of the nodes it visits.  ``State.step`` counts the rounding of the start, the switches tried and the kicks.

    Args:
        tries: the switches tried from one controller before it counts as a local optimum.
        steps: the most steps in one round of the portfolio.
    """

    name: ClassVar[str] = "greedy"
    tries: int = _count(SOLVER_METHODS["greedy"]["tries"])
    steps: int = _count(SOLVER_METHODS["greedy"]["steps"])

    @staticmethod
    def _look(objective: Objective, choice: np.ndarray, initial: int) -> Look:
        return objective.look(_one_hot(choice, objective.architecture.num_choices), _one_hot(np.array([initial]), objective.architecture.num_nodes)[0])

    def init(self, objective: Objective, start: Policy, *, rng: np.random.Generator | None = None, clock: Callable[[], float] = no_clock) -> State:
        arch = objective.architecture
        choice, initial = _rounded(arch, start)
        look = self._look(objective, choice, initial)
        slots = {"choice": choice, "initial": initial, "best": (look, choice.copy(), initial), "moves": None, "rng": rng}
        return State(point=look, step=1, seconds=clock(), slots=slots)

    def update(self, objective: Objective, state: State, clock: Callable[[], float] = no_clock) -> State | None:
        arch, look, slots = objective.architecture, state.point, state.slots
        choice, initial = slots["choice"], slots["initial"]
        moves = slots["moves"]
        if moves is None:
            moves = _switches(look, choice, initial, arch.allowed, arch.reset_mask, objective.reward_scale)[: self.tries]
        if not moves:  # a local optimum: kick
            return self._kicked(objective, state, clock)
        (n, c), new_choice, new_initial = moves[0], choice.copy(), initial
        if n < 0:
            new_initial = c
        else:
            new_choice[n] = c
        C, N = arch.num_choices, arch.num_nodes
        if _better(objective.value(_one_hot(new_choice, C), _one_hot(np.array([new_initial]), N)[0]), look.value, objective.reward_scale):
            return _looked(state, self._look(objective, new_choice, new_initial), clock, choice=new_choice, initial=new_initial, moves=None)
        return _looked(state, look, clock, moves=moves[1:])

    def _kicked(self, objective: Objective, state: State, clock: Callable[[], float]) -> State:
        """Keep the local optimum if best, and kick the best one at one to three nodes it visits."""
        slots, look, rng, allowed = state.slots, state.point, state.slots["rng"], objective.architecture.allowed
        best = slots["best"]
        if _better(look.value, best[0].value, objective.reward_scale):
            best = (look, slots["choice"].copy(), slots["initial"])
        choice, initial = best[1].copy(), best[2]
        visited = np.flatnonzero(best[0].occupancy > 0)
        for n in rng.choice(visited, size=min(len(visited), 1 + int(rng.integers(3))), replace=False):
            choice[n] = rng.choice(np.flatnonzero(allowed[n]))
        return _looked(state, self._look(objective, choice, initial), clock, choice=choice, initial=initial, best=best, moves=None)

    def result(self, objective: Objective, start: Policy, state: State) -> Policy:
        best = state.slots["best"][0]
        return _keep_best(objective, start, state.point if _better(state.point.value, best.value, objective.reward_scale) else best)


@attrs.frozen(kw_only=True)
class PointBased(Method):
    """Belief-guided starts (:mod:`fsc.solver.pointbased`): Perseus on beliefs the world reaches, its vectors
    turned into a policy graph and that graph into a controller on the objective's ``RAM(K)``: the best the search
    has made for that memory, returned if it beats the start (another memory: the start).  The search is kept with
    the world, so each call continues it.  When a new graph is due (:meth:`fsc.solver.pointbased.Search.due`), the
    stages stop while the time the last graph took is left of the slice, so the graph is made whole within it.
    ``State.step`` counts the Perseus stages.

    Args:
        beliefs: the most beliefs the search samples.
        steps: the most Perseus stages in one round of the portfolio.
    """

    name: ClassVar[str] = "pointbased"
    beliefs: int = _count(SOLVER_METHODS["pointbased"]["beliefs"])
    steps: int = _count(SOLVER_METHODS["pointbased"]["steps"])

    def init(self, objective: Objective, start: Policy, *, rng: np.random.Generator | None = None, clock: Callable[[], float] = no_clock) -> State:
        search = search_for(objective, self.beliefs, np.random.default_rng() if rng is None else rng)
        return State(point=None, evaluations=0, seconds=clock(), slots={"search": search})

    def update(self, objective: Objective, state: State, clock: Callable[[], float] = no_clock) -> State | None:
        search, deadline = state.slots["search"], state.slots.get("deadline", math.inf)
        if search.done:
            return None
        if state.step and search.due(objective) and time.monotonic() + search.graph_seconds >= deadline:
            return None  # the graph due at the end gets the time the last one took, inside the slice (else it runs past it, cut short)
        search.advance(deadline)  # a stage in flight stops at the round's deadline
        return State(point=None, step=state.step + 1, evaluations=0, seconds=clock(), slots=state.slots)

    def result(self, objective: Objective, start: Policy, state: State) -> Policy:
        if type(objective.architecture) is not RAM:
            return start
        policy = state.slots["search"].controller(objective, state.slots.get("deadline", math.inf))
        return policy if policy is not None and objective.value_of(policy) > objective.value_of(start) else start

    def within(self, state: State, budget: Budget) -> None:
        """The policy graph's backups also stop at the budget's deadline (the graph then made of the vectors' own successors)."""
        state.slots["deadline"] = budget.deadline


@attrs.frozen(kw_only=True)
class Polish(Method):
    """Iterated local search on the policy graph of a deterministic controller on ``RAM(K)``
    (:func:`fsc.solver.graph.polish` step by step, on the graph :func:`fsc.solver.graph.from_policy` reads off the
    controller): the first step improves its nodes (:func:`fsc.solver.graph.improve`: each node backed up at the
    belief it is reached in) until no round gains; each later step kicks the best graph (``kicks`` nodes, drawn by
    their visits, each moved after one observation to a node drawn at random) and improves that, kept when its exact
    value beats the best; it ends after ``patience`` kicks in a row that gain nothing.  Its evaluations are the
    graph's (nodes x states), not the controller's chain.  A stochastic controller is rounded first (each node's most
    likely choice); the result is returned when it beats the start, the start otherwise and on another memory.
    ``State.step`` counts the first improvement and the kicks.

    Args:
        kicks: the nodes one kick moves.
        patience: the kicks in a row without a better graph after which it ends.
        steps: the most kicks (and the first improvement) in one round of the portfolio.
    """

    name: ClassVar[str] = "polish"
    kicks: int = _count(SOLVER_METHODS["polish"]["kicks"])
    patience: int = _count(SOLVER_METHODS["polish"]["patience"])
    steps: int = _count(SOLVER_METHODS["polish"]["steps"])

    def init(self, objective: Objective, start: Policy, *, rng: np.random.Generator | None = None, clock: Callable[[], float] = no_clock) -> State:
        world, found, given, arch = None, None, None, objective.architecture
        if type(arch) is RAM:
            world = model_of(objective.world, objective.reset)
            with contextlib.suppress(TimeUp):  # the graph's evaluation cut short (fsc.solver.graph.until): the start returned
                found = given = from_policy(world, start)
                if found is None:  # stochastic: its most likely choices
                    choice, initial = _rounded(arch, start)
                    found = from_policy(world, objective.policy(_one_hot(choice, arch.num_choices), _one_hot(np.array([initial]), arch.num_nodes)[0]))
        slots = {"world": world, "start": given, "best": found, "rng": np.random.default_rng() if rng is None else rng}
        return State(point=None, seconds=clock(), slots=slots)

    def update(self, objective: Objective, state: State, clock: Callable[[], float] = no_clock) -> State | None:
        slots = state.slots
        if slots["best"] is None or slots.get("stale", 0) >= self.patience:
            return None
        best, memories = slots["best"], objective.architecture.M
        with contextlib.suppress(TimeUp), until(slots.get("deadline", math.inf)):  # cut short: the best before
            best = improve(slots["world"], best, memories, POLISH_ROUNDS) if state.step == 0 else kick(slots["world"], best, memories, slots["rng"], self.kicks)
        stale = 0 if best is not slots["best"] else slots.get("stale", 0) + int(state.step > 0)
        return State(point=None, step=state.step + 1, seconds=clock(), slots={**slots, "best": best, "stale": stale})

    def result(self, objective: Objective, start: Policy, state: State) -> Policy:
        best = state.slots["best"]
        if best is None or best is state.slots["start"]:  # nothing better than a deterministic start
            return start
        policy = as_policy(best, objective.architecture)
        return policy if objective.value_of(policy) > objective.value_of(start) else start

    def within(self, state: State, budget: Budget) -> None:
        """The graph's evaluations also stop at the budget's deadline (the best before is kept)."""
        state.slots["deadline"] = budget.deadline


@attrs.frozen(kw_only=True)
class BPI(Method):
    """Bounded policy iteration (:mod:`fsc.solver.bpi`): a step is a sweep (every choice's linear program against
    the same values, then an exact evaluation: the value never falls at any state), or, after a sweep that gains
    nothing, an escape (backed-up nodes at the beliefs the controller meets, kept when the exact value rises).
    It ends when an escape finds nothing, and returns its start on a memory whose next node depends on more than
    the choice and the observation.  ``State.step`` counts the sweeps and the escapes.

    Args:
        tries: the sets of backed-up nodes one escape tries.
        steps: the most sweeps and escapes in one round of the portfolio.
    """

    name: ClassVar[str] = "bpi"
    tries: int = _count(SOLVER_METHODS["bpi"]["tries"])
    steps: int = _count(SOLVER_METHODS["bpi"]["steps"])

    def init(self, objective: Objective, start: Policy, *, rng: np.random.Generator | None = None, clock: Callable[[], float] = no_clock) -> State:
        return bpi.start_state(objective, start, clock)

    def update(self, objective: Objective, state: State, clock: Callable[[], float] = no_clock) -> State | None:
        return bpi.step(objective, state, tries=self.tries, deadline=state.slots.get("deadline", math.inf), clock=clock)

    def within(self, state: State, budget: Budget) -> None:
        """A sweep also stops at the budget's deadline between two programs."""
        state.slots["deadline"] = budget.deadline


@attrs.frozen(kw_only=True)
class NodeSplit(Method):
    """Node splitting (:mod:`fsc.solver.nodesplit`): a step installs the first of the ``tries`` best splits (a
    node whose edges' beliefs want different keys becomes two) that raises the exact value; from a flat start, the
    first step tries the controller of point-based backups along QMDP runs.  It ends when no split raises the value.
    ``State.step`` counts the splits kept (and that first step).

    Args:
        tries: the splits tried, best estimated gain first, before the method ends.
        steps: the most splits in one round of the portfolio.
    """

    name: ClassVar[str] = "nodesplit"
    tries: int = _count(SOLVER_METHODS["nodesplit"]["tries"])
    steps: int = _count(SOLVER_METHODS["nodesplit"]["steps"])

    def init(self, objective: Objective, start: Policy, *, rng: np.random.Generator | None = None, clock: Callable[[], float] = no_clock) -> State:
        state = nodesplit.start_state(objective, start, clock=clock)
        state.slots["rng"] = rng
        return state

    def update(self, objective: Objective, state: State, clock: Callable[[], float] = no_clock) -> State | None:
        slots = state.slots
        return nodesplit.step(objective, state, tries=self.tries, rng=slots.get("rng"), deadline=slots.get("deadline", math.inf), clock=clock)

    def within(self, state: State, budget: Budget) -> None:
        """The splits tried in a step also stop at the budget's deadline."""
        state.slots["deadline"] = budget.deadline


#: The methods by name, each with its default settings, in the order the portfolio runs them
#: (:data:`fsc.choices.SOLVER_METHODS` holds their names and settings without torch).
METHODS: dict[str, Method] = {
    "pointbased": PointBased(), "polish": Polish(), "mirror": Mirror(), "adam": Restarts(), "em": EM(), "greedy": Greedy(), "bpi": BPI(),
    "nodesplit": NodeSplit(),
}  # fmt: skip


@attrs.frozen(kw_only=True)
class Shaped:
    """Leave a flat region by continuation: the methods in turn on the objectives whose negative rewards are
    weighted by each of ``weights`` (:meth:`fsc.objective.Objective.shaped`), then on the true one.

    At a controller that collects no reward on a world with rewards of both signs (tiger-grid: avoiding the
    trap and the goal alike), the gradient vanishes.  With the penalties switched off the goal pulls, and
    raising their weight step by step keeps what was learnt where it pays; the controller returned is the
    best by the true value, never worse than ``start``.

    Args:
        weights: the weights of the negative rewards, in turn, before the true objective (weight 1).
        steps: the most steps of each method on each objective.
    """

    name: ClassVar[str] = "shaped"
    weights: tuple[float, ...] = attrs.field(default=SHAPED["weights"], converter=tuple)
    steps: int = _count(SHAPED["steps"])

    def __attrs_post_init__(self) -> None:
        for weight in self.weights:
            real("weights", weight, 0.0, 1.0)

    def solve(self, objective: Objective, start: Policy, budget: Budget, rng: np.random.Generator, *, methods: tuple[Method, ...]) -> Policy:
        """The methods in turn on each objective, each for an equal share of the time left (``budget.steps`` steps each)."""
        current, objectives = start, [objective.shaped(weight) for weight in self.weights] + [objective]
        for index, shaped in enumerate(objectives):
            left = (budget.deadline - time.monotonic()) / (len(objectives) - index)
            for method in methods:
                current = method.solve(shaped, current, Budget(steps=budget.steps, deadline=time.monotonic() + left / len(methods)), rng)
        return current if objective.value_of(current) > objective.value_of(start) else start


def settings(value: object) -> dict[str, object]:
    """The settings of a method (or of :class:`Shaped`) by name, with their values: its fields, and for a
    field that is itself a settings value (:attr:`Restarts.rule`), that value's fields in its place."""
    found = {}
    for field in attrs.fields(type(value)):
        inner = getattr(value, field.name)
        found.update(settings(inner) if attrs.has(type(inner)) else {field.name: inner})
    return found


def configured(value: object, **changes: object) -> object:
    """``value`` with some of its :func:`settings` changed (names as :func:`settings` gives them).

    Raises:
        TypeError: a name that is not one of its settings; ValueError, TypeError: a bad value (the class's checks).
    """
    own = {field.name for field in attrs.fields(type(value))}
    nested = {name: getattr(value, name) for name in own if attrs.has(type(getattr(value, name)))}
    direct = {name: change for name, change in changes.items() if name in own and name not in nested}
    left = {name: change for name, change in changes.items() if name not in direct}
    for name, inner in nested.items():
        mine = {key: left.pop(key) for key in list(left) if key in settings(inner)}
        if mine:
            direct[name] = configured(inner, **mine)
    if left:
        whose = getattr(value, "name", type(value).__name__)
        raise InputTypeError(f"the {whose} method has no setting {', '.join(sorted(left))} (it has {', '.join(settings(value))})")
    return attrs.evolve(value, **direct)
