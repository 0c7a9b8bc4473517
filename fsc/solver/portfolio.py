"""``solve(world, memory)``: the best controller the methods find within a budget.

The portfolio runs rounds.  A round starts from the best controller so far, from a fresh random one, or
(first) from the start it was given, and passes it through the methods in turn (each a
:data:`fsc.solver.methods.METHODS` entry, each from the previous one's result, each for at most an equal
share of the time left); whatever beats the best so far by exact value becomes the best, credited to the
method that returned it.  A round that ends at a controller collecting no reward (:meth:`Problem.flat`)
is followed by :func:`fsc.solver.methods.shaped`.

On ``RAM(M)`` it grows the memory: it first solves ``RAM(M // 2^k)``, ..., ``RAM(M // 2)`` for a share of
the budget (each size a share proportional to its memory), each started from the previous size's best
split into copies (:func:`fsc.solver.starts.split`: the same value, copies free to differ), so the value it
returns is at least the best of every smaller size it solved; given a ``start`` from a smaller RAM, it
splits it the same way and skips the ladder.  On a grown size, the rounds that do not start from the best
alternate between a new split of the smaller size's best (other proportions) and a random controller.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from fsc.errors import InputError, InputTypeError
from fsc.evaluate import evaluate, resolve_reset
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import RAM, parse_memory
from fsc.model.policy import Policy
from fsc.model.pomdp import POMDP, Task, as_pomdp
from fsc.solver.bound import upper_bound
from fsc.solver.methods import METHODS, shaped
from fsc.solver.problem import Budget, Problem
from fsc.solver.solution import Solution
from fsc.solver.starts import can_embed, random_start, split

__all__ = ["solve"]

#: Steps of each method per round (each step one or two solves); the deadline cuts a round short.
STEPS = {"ascent": 300, "mirror": 2000, "em": 200, "greedy": 300, "shaped": 300}
#: Rounds without a better controller after which a smaller size of the ladder gives way to the next.
PATIENCE = 3


def _architecture(world: POMDP | Task, memory: object) -> MemoryArchitecture:
    pomdp = as_pomdp(world)
    if isinstance(memory, str):
        arch = parse_memory(memory, arms=pomdp.num_actions, observations=pomdp.num_observations)
    elif isinstance(memory, MemoryArchitecture):
        arch = memory
    else:
        raise InputTypeError(f"memory must be a string like 'ram:4' or a fsc.MemoryArchitecture, got {memory!r}")
    if arch.num_actions != pomdp.num_actions or arch.num_observations != pomdp.num_observations:
        raise InputError(
            f"memory {memory!r} has {arch.num_actions} actions and {arch.num_observations} observations, "
            f"the world {pomdp.num_actions} and {pomdp.num_observations}"
        )
    return arch


def _methods(methods: object) -> tuple[str, ...]:
    if methods is None:
        return tuple(METHODS)
    names = tuple(methods.split(",")) if isinstance(methods, str) else tuple(methods)
    unknown = [name for name in names if name not in METHODS]
    if not names or unknown:
        raise InputError(f"methods must be among {', '.join(METHODS)}, got {methods!r}")
    return names


def _ladder(arch: MemoryArchitecture, start: Policy | None) -> list[MemoryArchitecture]:
    """The sizes solved in turn: ``RAM(M // 2^k), ..., RAM(M)`` without a start, else ``arch`` alone."""
    if start is not None or type(arch) is not RAM:
        return [arch]
    sizes = sorted({arch.M >> k for k in range(arch.M.bit_length())} - {0})
    return [RAM(m, arms=arch.arms, observations=arch.observations) if m != arch.M else arch for m in sizes]


class _Run:
    """The state of one call of :func:`solve`: the best so far, the history, the clock."""

    def __init__(self, world, reset, engine, methods, seed, deadline, progress, bound):
        self.world, self.reset, self.engine, self.methods, self.seed = world, reset, engine, methods, seed
        self.deadline, self.progress, self.bound, self.clock = deadline, progress, bound, time.monotonic()
        self.best: tuple[float, Policy, str] | None = None
        self.history: list[dict] = []
        self.evaluations = 0
        self.final: Problem | None = None  # the problem of the memory asked for, built first (it may be refused)
        self.smaller: Policy | None = None  # the best of the size before, on the ladder

    def offer(self, problem: Problem, policy: Policy, method: str) -> bool:
        """Keep ``policy`` if it beats the best of this size; True if it did."""
        value = problem.value(policy.probs().detach().numpy(), policy.init_probs().detach().numpy())
        if self.best is not None and not value > self.best[0] + 1e-12 * max(1.0, abs(self.best[0])):
            return False
        self.best = (value, policy, method)
        record = {"seconds": time.monotonic() - self.clock, "memory": repr(problem.architecture), "value": value, "method": method}
        self.history.append(record)
        if self.progress is not None:
            self.progress({**record, "upper_bound": self.bound})
        return True

    def optimal(self) -> bool:
        """Whether the best reaches the upper bound (to rounding): nothing can beat it."""
        return self.best is not None and self.bound - self.best[0] <= 1e-9 * max(1.0, abs(self.bound))

    def round_start(self, arch: MemoryArchitecture, n: int, rng: np.random.Generator) -> Policy:
        """Round ``n``'s start: the best (even rounds), else a new split of the smaller size's best or a random controller, in turn."""
        if n % 2 == 0:
            return self.best[1]
        if self.smaller is not None and n % 4 == 1:
            return split(self.smaller, arch, rng)
        return random_start(arch, rng)

    def stage(self, arch: MemoryArchitecture, start: Policy | None, share: float, rounds: int | None, last: bool, index: int) -> None:
        """Solve one size of the ladder for ``share`` of the time left once its chain is built, ``rounds`` rounds,
        or (not ``last``) until it stops improving."""
        problem = self.final if self.final.architecture is arch else Problem(world=self.world, architecture=arch, reset=self.reset, engine=self.engine)
        self.best = None
        self.offer(problem, start if start is not None else Policy.uniform(arch), "start" if start is not None else "uniform")
        stage_deadline = time.monotonic() + share * (self.deadline - time.monotonic())
        if last:  # leave the time of the final evaluation (about one solve, timed once compiled) inside the budget
            clock = time.monotonic()
            problem.value(self.best[1].probs().detach().numpy(), self.best[1].init_probs().detach().numpy())
            stage_deadline -= 2 * (time.monotonic() - clock)
        stale, n = 0, 0
        while time.monotonic() < stage_deadline and (rounds is None or n < rounds) and (last or stale < PATIENCE) and not self.optimal():
            rng = np.random.default_rng([self.seed, index, n])
            current = self.round_start(arch, n, rng)
            improved = False
            for i, name in enumerate(self.methods):  # each method at most an equal share of what is left of the stage
                slice_ = (stage_deadline - time.monotonic()) / (len(self.methods) - i)
                current = METHODS[name](problem, current, Budget(steps=STEPS[name], deadline=time.monotonic() + slice_), rng)
                improved |= self.offer(problem, current, name)
                if time.monotonic() >= stage_deadline or self.optimal():
                    break
            if problem.flat(self.best[0]) and time.monotonic() < stage_deadline:
                budget = Budget(steps=STEPS["shaped"], deadline=time.monotonic() + 0.5 * (stage_deadline - time.monotonic()))
                improved |= self.offer(problem, shaped(problem, self.best[1], budget, rng, methods=self.methods), "shaped")
            stale, n = (0 if improved else stale + 1), n + 1
        self.evaluations += problem.evaluations[0]


def solve(
    world: POMDP | Task,
    memory: object = "ram:2",
    *,
    seconds: float = 60.0,
    seed: int = 0,
    reset: float | None = None,
    discount: float | None = None,
    methods: object = None,
    start: Policy | Solution | None = None,
    engine: str = "auto",
    rounds: int | None = None,
    progress: Callable[[dict], None] | None = None,
) -> Solution:
    """The best controller on ``memory`` the methods find in ``seconds``, with its exact value and an upper bound.

    Args:
        world: a ``fsc.POMDP`` or a task.
        memory: ``"ram:M"`` (or any ``--memory`` text) or an architecture; RAM grows through smaller sizes.
        seconds: the budget, for everything (the bound, every size, the final evaluation aside).
        seed: the random starts and kicks; with ``rounds`` and time to spare, the same seed gives the same controller.
        reset, discount: ``r = 1 - discount``; default the world's discount (else ``r = 1e-3``).
        methods: names of :data:`fsc.solver.METHODS` (a list or ``"em,greedy"``); default all, in that order.
        start: a policy (or a solution) to start from: on ``memory``, or on a smaller RAM (embedded).
        engine: the evaluator's engine (``auto`` picks one that fits).
        rounds: at most this many rounds per size.
        progress: called with a record (``seconds``, ``memory``, ``value``, ``method``, ``upper_bound``) at each new best.

    Raises:
        ValueError, TypeError: a bad memory, reset, method name, budget, or a start on another memory.
    """
    clock = time.monotonic()
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not (math.isfinite(seconds) and seconds > 0):
        raise InputError(f"seconds must be a number > 0, got {seconds!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"seed must be an int >= 0, got {seed!r}")
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1):
        raise InputError(f"rounds must be an int >= 1, got {rounds!r}")
    arch = _architecture(world, memory)
    r = resolve_reset(world, reset, discount, allow_zero=False, default=1e-3)
    names = _methods(methods)
    start = _start(start, arch, np.random.default_rng([seed, 1 << 20]))
    problem = Problem(world=world, architecture=arch, reset=r, engine=engine)
    problem.evaluator  # noqa: B018 - refuse a memory that cannot be evaluated, before the ladder
    deadline = clock + seconds
    bound = upper_bound(world, 1 - r, seconds=min(0.1 * seconds, 10.0))
    run = _Run(world, r, engine, names, seed, deadline, progress, bound)
    run.final = problem
    ladder = _ladder(arch, start)
    for index, size in enumerate(ladder):
        last = index == len(ladder) - 1
        share = 1.0 if last else size.M / sum(later.M for later in ladder[index:])  # a smaller size: in proportion to its memory
        if run.best is not None:
            run.smaller = run.best[1]
            start = split(run.smaller, size, np.random.default_rng([seed, index, 1 << 20]))
        run.stage(size, start, share, rounds, last, index)
    value, policy, method = run.best
    exact = evaluate(world, policy, reset=r, engine=engine)
    return Solution(
        policy=policy, value=float(exact.value.detach()), upper_bound=bound, method=method,
        seconds=time.monotonic() - clock, history=run.history, seed=seed, reset=r, evaluations=run.evaluations,
        metrics={name: float(v.detach()) for name, v in exact.metrics.items()},
    )  # fmt: skip


def _start(start: object, arch: MemoryArchitecture, rng: np.random.Generator) -> Policy | None:
    """The start on ``arch``: as given, or a smaller RAM's policy split into copies (:func:`fsc.solver.starts.split`)."""
    if start is None:
        return None
    policy = start.policy if isinstance(start, Solution) else start
    if not isinstance(policy, Policy):
        raise InputTypeError(f"start must be a fsc.Policy or a Solution, got {type(start).__name__}")
    if policy.architecture == arch:
        return policy
    if can_embed(policy.architecture, arch):
        return split(policy, arch, rng)
    raise InputError(f"start is on {policy.architecture!r}, which is neither the memory {arch!r} nor a smaller RAM of the same world")
