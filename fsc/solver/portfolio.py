"""The portfolio solver: a frozen settings value (:class:`Portfolio`) whose :meth:`Portfolio.solve` finds the best
controller its methods reach within a budget; :func:`solve` is the shorthand.

The portfolio runs rounds.  A round starts from the best controller so far, from a fresh random one, or
(first) from the start it was given, and passes it through the methods in turn (each a
:class:`fsc.solver.methods.Method`, each from the previous one's result, each for at most ``steps`` steps and
a share of the time left in proportion to its recent gains per second, :class:`_Credit`); whatever beats the
best so far by exact value becomes the best, credited to the method that returned it.  The point-based search hands a round its
graph when that beats the round's start, except to a fresh round when the last round that climbed from that graph gained
nothing on it (:meth:`_Run.handed`).  A round that ends at a controller collecting no reward
(:meth:`fsc.objective.Objective.flat`) is followed by the continuation of :class:`fsc.solver.methods.Shaped`.

On ``RAM(M)`` without the point-based search among its methods, it grows the memory: it first solves
``RAM(M // 2^k)``, ..., ``RAM(M // 2)`` for a share of the budget (each size a share proportional to its memory),
each started from the previous size's best split into copies (:func:`fsc.solver.starts.split`: the same value,
copies free to differ), so the value it returns is at least the best of every smaller size it solved.  On a grown
size, the rounds that do not start from the best alternate between a new split of the smaller size's best (other
proportions) and a random controller.  With the search, it solves ``RAM(M)`` alone (:func:`_ladder`): the search
compresses its graphs onto ``M`` itself, and keeps those it made for smaller sizes, which fit ``M`` too.  Given a
``start`` from a smaller RAM, it splits it the same way and solves ``RAM(M)`` alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs
import numpy as np

from fsc.checks import integer, positive, value_scale
from fsc.engines.registry import check_engine, price
from fsc.errors import InputError, InputTypeError
from fsc.evaluate import resolve_reset
from fsc.limits import MAX_WORKERS, Deadline, TimeUp
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import RAM, parse_memory
from fsc.model.policy import Policy
from fsc.model.pomdp import POMDP, Task, as_pomdp
from fsc.objective import Objective
from fsc.solver.bound import uniform_value, upper_bound
from fsc.solver.graph import PolicyGraph, as_policy, polish, until
from fsc.solver.methods import METHODS, Budget, Method, PointBased, Shaped
from fsc.solver.parallel import check_scheduler, graph_only, one_thread, solve_parallel
from fsc.solver.pointbased import Search, forget, made, model_of
from fsc.solver.solution import Solution, larger
from fsc.solver.starts import can_embed, random_start, split

__all__ = ["Portfolio", "solve"]

#: The weight of a method's share of a round when it gained least, relative to the method that gained most per second
#: (:class:`_Credit`): every method keeps at least this much of an equal share's weight.
FLOOR = 0.4

#: What a method's record of gains and seconds keeps of its earlier rounds at each new one (:class:`_Credit`).
DECAY = 0.5

#: Seconds: the most the first round of a size lasts, the default budget; a later round lasts at most as long as the
#: size has run before it, so rounds end near 60, 120, 240 s, ...  A longer solve thus begins with the rounds a solve of
#: the default budget runs and only adds to them: with every round as long as the time left, hallway on ``ram:8`` ended
#: at 0.9724 to 0.9808 in 300 s (eight runs), below its 0.980 at 60 s in five of them.
FIRST_ROUND = 60.0

#: A set-up that cannot be cut is skipped when this many of its estimated seconds (the set-up with one evaluation,
#: :func:`fsc.engines.registry.price`) do not fit the time left: the set-up, the evaluation a size times, the final one.
SETUP_EVALUATIONS = 3

#: The graph-only path (:func:`_graph_within`) stops its search when this many times the last graph's time (per vector)
#: is left: a graph cut by the deadline is dropped and the one before kept, and a graph's time grows faster than its
#: vectors (its plan's nodes grow with them); 1.25 cut RockSample[7,8]'s second ``ram:8`` graph short after 13 s.
GRAPH_RESERVE = 2.0

#: The graph-only path asks every this many stages whether the best vector's plan is outgrowing what a graph may hold
#: (:meth:`fsc.solver.pointbased.Search.plan_outgrowing`: a tenth of a second on RockSample[7,8]), after every stage
#: once it has passed the first warning (:attr:`fsc.solver.pointbased.Search.plan_watched`).
PLAN_CHECKS = 4


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


def _methods(methods: object) -> tuple[Method, ...]:
    """The methods, in order: method values, or names of :data:`fsc.solver.METHODS` (each with its defaults),
    as a sequence or a comma-separated text; ``None``: every method of :data:`fsc.solver.METHODS`."""
    if methods is None:
        return tuple(METHODS.values())
    items = tuple(methods.split(",")) if isinstance(methods, str) else tuple(methods) if isinstance(methods, (list, tuple)) else (methods,)
    found = tuple(METHODS.get(item) if isinstance(item, str) else item for item in items)
    if not found or not all(isinstance(method, Method) for method in found):
        raise InputError(f"methods must be among {', '.join(METHODS)} (names or fsc.solver method values), got {methods!r}")
    return found


@attrs.frozen(kw_only=True)
class Portfolio:
    """The portfolio solver as a value: its budget, its seed and every setting of its methods.

    Args:
        seconds: the budget, for everything (the bound, every size, the final evaluation aside).
        seed: the random starts and kicks; with ``rounds`` and time to spare, the same seed gives the same controller.
        rounds: at most this many rounds per memory size (``None``: until the time runs out).
        patience: rounds without a better controller after which a smaller size of the ladder gives way to the next.
        engine: the evaluator's engine (``auto`` picks one that fits).
        methods: the methods of a round, in order (:mod:`fsc.solver.methods`; names give their defaults).
        shaped: the continuation run after a round that ends in a flat region.
        workers: ``None``: the rounds in this process, one after another; N: independent restarts on N
            processes, the best kept (:mod:`fsc.solver.parallel`; with ``rounds``, the same result for any N).
        scheduler: the address of a Dask scheduler whose cluster runs the restarts instead (``tcp://host:8786``).
        restarts: how many independent runs of the whole portfolio (each its ``rounds``, its own seed) the
            workers share; ``None``: one per worker (per thread of the cluster) with a time limit alone, one with
            ``rounds`` (then ``workers`` only take the restarts asked for, so the result is the same for any N).
    """

    seconds: float = 60.0
    seed: int = 0
    rounds: int | None = None
    patience: int = 3
    engine: str = "auto"
    methods: tuple[Method, ...] = attrs.field(default=tuple(METHODS.values()), converter=_methods)
    shaped: Shaped = attrs.field(factory=Shaped)
    workers: int | None = None
    scheduler: str | None = None
    restarts: int | None = None

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "seconds", positive("seconds", self.seconds))
        object.__setattr__(self, "seed", integer("seed", self.seed, 0))
        object.__setattr__(self, "rounds", integer("rounds", self.rounds, 1, optional=True))
        object.__setattr__(self, "patience", integer("patience", self.patience, 1))
        check_engine(self.engine)
        if not isinstance(self.shaped, Shaped):
            raise InputTypeError(f"shaped must be a fsc.solver.Shaped, got {self.shaped!r}")
        object.__setattr__(self, "workers", integer("workers", self.workers, 1, MAX_WORKERS, optional=True))
        check_scheduler(self.scheduler, self.workers)
        object.__setattr__(self, "restarts", integer("restarts", self.restarts, 1, MAX_WORKERS, optional=True))

    def solve(self, world: POMDP | Task, memory: object = "ram:2", *, reset: float | None = None, discount: float | None = None,
              start: Policy | Solution | None = None, progress: Callable[[dict], None] | None = None,
              deadline: Deadline | None = None) -> Solution:  # fmt: skip
        """The best controller on ``memory`` the methods find in :attr:`seconds`, with its exact value and an upper bound.

        Args:
            world: a ``fsc.POMDP`` or a task.
            memory: ``"ram:M"`` (or any ``--memory`` text) or an architecture; RAM grows through smaller sizes when
                the point-based search is not among the methods.
            reset, discount: ``r = 1 - discount``; default the world's discount (else ``r = 1e-3``).
            start: a policy (or a solution) to start from: on ``memory``, or on a smaller RAM (split into copies).
            progress: called with a record (``seconds``, ``memory``, ``value``, ``method``, ``upper_bound``, ``policy``) at each new best.
            deadline: the time limit as a :class:`fsc.limits.Deadline` started earlier (a command's start, so that
                reading the world counts too); default :attr:`seconds` from now.  Set-up, the bound, every size and
                method consult it; :attr:`Solution.cut_short` names what it stopped early.

        Raises:
            ValueError, TypeError: a bad memory, reset, or a start on another memory.
        """
        deadline = Deadline.after(self.seconds) if deadline is None else deadline
        clock = time.monotonic()
        arch = _architecture(world, memory)
        r = resolve_reset(world, reset, discount, allow_zero=False, default=1e-3)
        given, start = start, _start(start, arch, np.random.default_rng([self.seed, 1 << 20]))
        pomdp = as_pomdp(world)
        value_scale(float(np.abs(pomdp.expected_step(pomdp.reward_table)).max(initial=0.0)) / r, r)  # rewards whose values would overflow, refused first
        if self.workers is not None or self.scheduler is not None or self.restarts is not None:  # each restart splits the start its own way
            return solve_parallel(self, world, arch, reset=r, start=given, progress=progress, deadline=deadline)
        with one_thread():  # no BLAS or torch threads: they gain nothing on these products and spin against other processes
            return self._here(world, arch, r, start, progress, deadline, clock)

    def _here(self, world, arch: MemoryArchitecture, r: float, start: Policy | None, progress, deadline: Deadline, clock: float) -> Solution:
        """:meth:`solve` in this process, its arguments checked."""
        pomdp = as_pomdp(world)
        forget(world)  # the point-based search is this solve's, from its seed
        if graph_only(self, world, arch, r):  # no engine holds the memory: the search's graph, valued on its own pairs
            return _unevaluated(self, world, arch, r, deadline, clock, "the evaluator does not fit the memory", progress)
        need = price(pomdp, arch, r, self.engine).seconds  # the evaluator's set-up and one evaluation, which nothing can cut
        if SETUP_EVALUATIONS * need > deadline.remaining():
            return _unevaluated(self, world, arch, r, deadline, clock, f"set-up and one evaluation about {need:.3g} s, estimate", progress)
        final = Objective(world=world, architecture=arch, reset=r, engine=self.engine, target="return")  # refused here if it cannot be evaluated
        if deadline.expired():
            deadline.note("set-up")
        bound = upper_bound(world, 1 - r, seconds=min(0.1 * deadline.remaining(), 10.0), deadline=deadline)
        run = _Run(self, world, r, deadline, progress, bound, final)
        with until(deadline.end):  # a policy graph still evaluated at the deadline is dropped, not waited for
            run.climb(arch, start)
        value, policy, method = run.best
        if policy.architecture != arch:  # the time ran out on a smaller size: its best, split (the same value)
            policy = split(policy, arch, np.random.default_rng([self.seed, 1 << 21]))
        exact = final.evaluation(policy)  # on the evaluator built already: what fsc evaluate prints, without a second set-up
        value = float(exact.value.detach())
        return Solution(
            policy=policy, value=value, upper_bound=bound, method=method,
            seconds=time.monotonic() - clock, history=run.history, seed=self.seed, reset=r, evaluations=run.evaluations,
            metrics={name: float(v.detach()) for name, v in exact.metrics.items()}, cut_short=tuple(deadline.cut),
            **larger(map(_unfitted(arch), made(world)), value),
        )  # fmt: skip


def _unevaluated(solver: Portfolio, world, arch: MemoryArchitecture, reset: float, deadline: Deadline, clock: float, why: str,
                 progress: Callable[[dict], None] | None) -> Solution:  # fmt: skip
    """The answer when the evaluator cannot be built: its set-up does not fit the time left, or no engine holds the
    memory (:func:`fsc.solver.parallel.graph_only`); ``why`` says which.  The uniform controller, valued exactly on the
    world's states (:func:`fsc.solver.bound.uniform_value`), or on a RAM the point-based search's policy graph (valued
    exactly on its own pairs of node and state, as :func:`fsc.solver.graph.from_policy` values the policy returned)
    when it is better; both within the deadline, the evaluator noted as cut with ``why``."""
    deadline.note(f"the evaluator of {arch!r} ({why})")
    bound = upper_bound(world, 1 - reset, seconds=min(0.1 * deadline.remaining(), 10.0), deadline=deadline)
    best = (uniform_value(world, reset), Policy.uniform(arch), "uniform")
    history = [{"seconds": time.monotonic() - clock, "memory": repr(arch), "value": best[0], "method": "uniform"}]
    graph, top = _graph_within(world, arch, reset, deadline, solver)
    if graph is not None and graph.value > best[0]:
        best = (graph.value, as_policy(graph, arch), "pointbased")
        history.append({"seconds": time.monotonic() - clock, "memory": repr(arch), "value": best[0], "method": "pointbased"})
    if progress is not None:
        progress({**history[-1], "upper_bound": bound, "policy": best[1]})
    value, policy, method = best
    return Solution(policy=policy, value=value, upper_bound=bound, method=method, seconds=time.monotonic() - clock, history=history,
                    seed=solver.seed, reset=reset, evaluations=0, metrics={}, cut_short=tuple(deadline.cut),
                    **larger([_unfitted(arch)(top)], value))  # fmt: skip


def _unfitted(arch: MemoryArchitecture) -> Callable[[PolicyGraph | None], tuple[float, str] | None]:
    """A policy graph's exact value and the smallest RAM that holds it (:func:`fsc.solver.graph.fits`), or None when
    there is no graph or ``arch`` is a RAM that holds it (then it is among the controllers the memory was searched for)."""

    def held(graph: PolicyGraph | None) -> tuple[float, str] | None:
        if graph is None:
            return None
        needed = int(np.bincount(graph.action).max())
        return None if type(arch) is RAM and needed <= arch.M else (graph.value, f"ram:{needed}")

    return held


def _graph_within(world, arch: MemoryArchitecture, reset: float, deadline: Deadline, solver: Portfolio) -> tuple[PolicyGraph | None, PolicyGraph | None]:
    """The best policy graph on ``RAM(M)`` the point-based search gives within the deadline (its ``steps`` stages at
    most), or None: another memory, no point-based method, or no time for the search's start or a graph; and the
    search's best graph uncompressed (:attr:`fsc.solver.pointbased.Search.top`), or None.  Stages run
    until three quarters of what is left remain for the first graph (a graph early, and its price), then until
    :data:`GRAPH_RESERVE` times the last graph's time (per vector) remains, or, when that much is not left, once that
    time itself remains; a graph whose evaluation does not end in time is dropped (:func:`fsc.solver.graph.until`), the
    best before kept; the time no stage and graph can use goes to iterated local search on the best
    (:func:`fsc.solver.graph.polish`)."""
    method = next((m for m in solver.methods if isinstance(m, PointBased)), None)
    if type(arch) is not RAM or method is None or deadline.expired():
        return None, None
    search = Search(model_of(world, reset), method.beliefs, np.random.default_rng([solver.seed, 1 << 22]))
    best, per_vector, stages = None, None, 0
    while not deadline.expired():
        reserve = 0.75 * deadline.remaining() if per_vector is None else GRAPH_RESERVE * per_vector * len(search.vectors)
        if per_vector is not None and deadline.remaining() <= reserve:  # no room at that margin: a last graph at the estimate itself
            reserve = per_vector * len(search.vectors)
        if per_vector is not None and deadline.remaining() <= reserve:  # nor at that: half the time left for stages, half for a
            reserve = 0.5 * deadline.remaining()  # graph that may end in it (one cut short is dropped, the best kept)
        longest, before = 0.0, stages
        while stages < method.steps and not search.done and deadline.remaining() > reserve + 2 * longest:
            stage = time.monotonic()
            search.advance(deadline.end - reserve)
            longest, stages = max(longest, time.monotonic() - stage), stages + 1
            if (stages % PLAN_CHECKS == 0 or search.plan_watched) and search.plan_outgrowing():  # a graph now, while the plan is still one
                break
        if best is not None and stages == before:
            break
        clock, made = time.monotonic(), search.graphs_made
        try:
            with until(deadline.end):  # the backups and the smaller sizes' graphs stop half-way, the evaluations at the end
                graph = search.graph(arch.M, clock + 0.5 * deadline.remaining())
        except TimeUp:
            deadline.note("the point-based search's graph (its evaluation did not end in time)")
            break
        if search.graphs_made > made:  # a graph's price, not that of the last one's plan asked again
            per_vector = (time.monotonic() - clock) / max(len(search.vectors), 1)
        best = graph if best is None or graph.value > best.value else best
        if search.plan_outgrown:  # the graphs to come would all be the best plan that fitted: its improvement instead
            break
    if best is not None and not deadline.expired():  # the time no stage and graph could use: iterated local search on the best
        best = polish(search.world, best, arch.M, np.random.default_rng([solver.seed, 1 << 23]), deadline.end)
    return best, search.top


def _ladder(solver: Portfolio, arch: MemoryArchitecture, start: Policy | None) -> list[MemoryArchitecture]:
    """The sizes solved in turn: ``RAM(M // 2^k), ..., RAM(M)`` without a start and without the point-based search,
    else ``arch`` alone.

    The search's graph compressed onto ``M`` is a better start than a smaller size's best split, and each smaller
    size cost its own compressions of the search's graph: on hallway, 12 s of the 28 the sizes 1 to 4 took, for a
    start (0.907) below the graph compressed onto ``ram:8`` (0.972).  ``benchmarks/bench_sarsop.py fsc FOLDER
    --memory ram:8 --budgets 60 --workers 1``, seed 0, grown against ``ram:8`` alone: mit 0.842 -> 0.858 (seeds 0 to
    4: 0.812 to 0.853 -> 0.857 to 0.865), pentagon 0.768 -> 0.793, sunysb 0.686 -> 0.712, fourth 0 -> 0.273;
    hallway, hallway2, tiger-grid and milos within their seeds' spread.  One sunysb run in ten ended at 0.093: the
    methods did not climb from the search's graph, and every later round started from that graph again, where the
    ladder's rounds started from a smaller size's controller; a fresh round now keeps its own start after a round that
    climbed from that graph in vain (:meth:`_Run.handed`)."""
    if start is not None or type(arch) is not RAM or any(isinstance(method, PointBased) for method in solver.methods):
        return [arch]
    sizes = sorted({arch.M >> k for k in range(arch.M.bit_length())} - {0})
    return [RAM(m, arms=arch.arms, observations=arch.observations) if m != arch.M else arch for m in sizes]


class _Credit:
    """Each method's recent gains per second (a bandit over the methods of a round): the value it added to the
    controller it was handed and the seconds it took, summed over its rounds with the earlier ones weighted by
    :data:`DECAY`, on every size of the ladder (a method that pays on a smaller size is expected to pay on the next).
    A round gives its methods shares of its time in proportion to :meth:`weights`, each at most an equal share (so
    a method that gained little leaves its time to the methods after it); the shares only set deadlines, so with
    time to spare (``rounds``) the result does not depend on them."""

    def __init__(self, count: int):
        self.gain, self.seconds = np.zeros(count), np.zeros(count)

    def record(self, index: int, gain: float, seconds: float) -> None:
        """Method ``index`` added ``gain`` (never negative: a method never returns worse) in ``seconds``."""
        self.gain[index] = DECAY * self.gain[index] + max(gain, 0.0)
        self.seconds[index] = DECAY * self.seconds[index] + max(seconds, 0.0)

    def weights(self) -> np.ndarray:
        """Each method's weight in a round's shares: 1 for a method not yet run and for the best gain per second,
        down to :data:`FLOOR` for no gain; all equal while no method has gained."""
        ran = self.seconds > 0
        rate = np.where(ran, self.gain / np.where(ran, self.seconds, 1.0), 0.0)
        top = rate.max(initial=0.0)
        if not top > 0:
            return np.ones(len(rate))
        return np.where(ran, FLOOR + (1.0 - FLOOR) * rate / top, 1.0)


class _Run:
    """The state of one call of :meth:`Portfolio.solve`: the best so far, the history, the deadline."""

    def __init__(self, solver: Portfolio, world, reset, deadline: Deadline, progress, bound, final: Objective):
        self.solver, self.world, self.reset = solver, world, reset
        self.deadline, self.progress, self.bound, self.clock = deadline, progress, bound, time.monotonic()
        self.scale = final.reward_scale  # the world's value scale: what "better" and "optimal" are relative to
        self.best: tuple[float, Policy, str] | None = None
        self.history: list[dict] = []
        self.evaluations = 0
        self.final = final  # the objective of the memory asked for, built first (it may be refused)
        self.smaller: Policy | None = None  # the best of the size before, on the ladder
        self.credit = _Credit(len(solver.methods))  # each method's recent gains per second: its share of a round
        self.shaped_price: dict[MemoryArchitecture, float] = {}  # the continuation's set-ups, estimated, per size
        self.barren: list[Policy] = []  # the search's graphs the last round that climbed from gained nothing on

    def climb(self, arch: MemoryArchitecture, start: Policy | None) -> None:
        """Every size of the ladder in turn, each from the best of the one before; the smaller sizes the deadline leaves
        no time for are skipped, the memory asked for never (its evaluator is built already)."""
        solver, ladder = self.solver, _ladder(self.solver, arch, start)
        for index, size in enumerate(ladder):
            last = index == len(ladder) - 1
            try:
                if not last:
                    self.deadline.check(f"the size {size!r}")  # noted as cut short when the time is up
            except TimeUp:
                continue
            share = 1.0 if last else size.M / sum(later.M for later in ladder[index:])  # a smaller size: in proportion to its memory
            if not last and SETUP_EVALUATIONS * price(as_pomdp(self.world), size, self.reset, solver.engine).seconds > share * self.deadline.remaining():
                self.deadline.note(f"the size {size!r} (its set-up, estimated, does not fit its share)")
                continue
            if self.best is not None:
                self.smaller = self.best[1]
                start = split(self.smaller, size, np.random.default_rng([solver.seed, index, 1 << 20]))
            self.stage(size, start, share, last, index)

    def offer(self, objective: Objective, policy: Policy, method: str) -> bool:
        """Keep ``policy`` if it beats the best of this size; True if it did."""
        value = objective.value_of(policy)
        if self.best is not None and not value > self.best[0] + 1e-12 * max(self.scale, abs(self.best[0])):
            return False
        self.best = (value, policy, method)
        record = {"seconds": time.monotonic() - self.clock, "memory": repr(objective.architecture), "value": value, "method": method}
        self.history.append(record)
        if self.progress is not None:
            self.progress({**record, "upper_bound": self.bound, "policy": policy})
        return True

    def optimal(self) -> bool:
        """Whether the best reaches the upper bound (to rounding): nothing can beat it."""
        return self.best is not None and self.bound - self.best[0] <= 1e-9 * max(self.scale, abs(self.bound))

    def round_start(self, arch: MemoryArchitecture, n: int, rng: np.random.Generator) -> Policy:
        """Round ``n``'s start: the best (even rounds), else a new split of the smaller size's best or a random controller, in turn."""
        if n % 2 == 0:
            return self.best[1]
        if self.smaller is not None and n % 4 == 1:
            return split(self.smaller, arch, rng)
        return random_start(arch, rng)

    def handed(self, graph: Policy, start: Policy, fresh: bool) -> tuple[Policy, Policy | None]:
        """What a round goes on from once the point-based search has handed it ``graph`` over ``start``, and the graph
        it then climbs from (None: its start): ``graph``, unless the round started ``fresh`` (:meth:`round_start`) and
        the last round that climbed from ``graph`` gained nothing (:meth:`climbed`); that round keeps its own start.
        Without it, every fresh round climbed from the one graph again: one sunysb run in ten stayed at 0.093, where
        the methods did not climb from the graph the search had made."""
        if fresh and any(graph is barren for barren in self.barren):
            return start, None
        return graph, graph

    def climbed(self, objective: Objective, graph: Policy, value: float) -> None:
        """A round that climbed from the search's ``graph`` ended at ``value``: the graph is barren (fresh rounds keep
        their own starts, :meth:`handed`) if that gains nothing on it.  No round climbs from a barren graph again: a
        fresh round is not handed it, and the others start from the best, which it does not beat."""
        base = objective.value_of(graph)
        if not value > base + 1e-12 * max(self.scale, abs(base)):
            self.barren.append(graph)

    def stage(self, arch: MemoryArchitecture, start: Policy | None, share: float, last: bool, index: int) -> None:
        """Solve one size of the ladder for ``share`` of the time left once its chain is built, the solver's
        ``rounds`` rounds, or (not ``last``) until it stops improving."""
        solver = self.solver
        objective = self.final if self.final.architecture is arch else attrs.evolve(self.final, architecture=arch, counter=[0])
        self.best = None
        self.offer(objective, start if start is not None else Policy.uniform(arch), "start" if start is not None else "uniform")
        stage_deadline = time.monotonic() + share * self.deadline.remaining()
        if last:  # leave the final evaluation inside the budget: two of the slowest evaluation measured (the start's, at least)
            stage_deadline -= 2 * objective.seconds
        stale, n, began = 0, 0, time.monotonic()
        while time.monotonic() < stage_deadline and (solver.rounds is None or n < solver.rounds) and (last or stale < solver.patience) and not self.optimal():
            now = time.monotonic()
            round_deadline = min(stage_deadline, now + max(FIRST_ROUND, now - began))  # rounds of doubling length
            with until(stage_deadline):  # a graph still evaluated at the size's end is dropped (the final evaluation's time kept)
                improved = self.round(objective, arch, n, np.random.default_rng([solver.seed, index, n]), round_deadline)
            stale, n = (0 if improved else stale + 1), n + 1
        if n == 0 and not self.optimal():
            self.deadline.note(f"the methods on {arch!r} (no round)")
        self.evaluations += objective.evaluations

    def round(self, objective: Objective, arch: MemoryArchitecture, n: int, rng: np.random.Generator, round_deadline: float) -> bool:
        """Round ``n`` on ``arch``: from its start (:meth:`round_start`) through the methods in turn, each for at most
        its share of what is left of the round (until ``round_deadline``: :data:`FIRST_ROUND`), in proportion to its
        weight among the methods still to run (:meth:`_Credit.weights`, by recent gains per second) and never above an
        equal share, so a method that gained little leaves time to the ones after it; then the continuation from a
        flat region.  True if it found a better controller."""
        solver = self.solver
        current, improved, graph = self.round_start(arch, n, rng), False, None
        value, weights = objective.value_of(current), self.credit.weights()
        for i, method in enumerate(solver.methods):
            began = time.monotonic()
            slice_ = (round_deadline - began) * min(weights[i] / weights[i:].sum(), 1.0 / (len(weights) - i))  # never above an equal share
            # a method ends when its step in flight does, and values its result once more (offered here): priced as two
            # evaluations, but never more than half its slice (a slice shorter than that would be none at all: on Tag,
            # whose evaluations take seconds, the point-based search, which evaluates nothing, then never ran)
            ends = began + max(slice_ - 2 * objective.seconds, 0.5 * slice_)
            before = current
            try:
                current = method.solve(objective, current, Budget(steps=method.steps, deadline=ends), rng)
            except TimeUp as cut:  # a policy graph evaluated at the deadline (fsc.solver.graph.until): dropped
                self.deadline.note(f"{method.name} ({cut.what})")
                break
            if isinstance(method, PointBased) and current is not before:  # the search handed its graph over the start
                current, graph = self.handed(current, before, fresh=n % 2 == 1)
            improved |= self.offer(objective, current, method.name)
            after = objective.value_of(current)  # valued by the offer already
            self.credit.record(i, after - value, time.monotonic() - began)
            value = after
            if graph is not None and i == len(solver.methods) - 1:  # every method ran from the search's graph
                self.climbed(objective, graph, value)
            if time.monotonic() >= round_deadline or self.optimal():
                break
        if objective.flat(self.best[0]) and time.monotonic() < round_deadline:
            budget = Budget(steps=solver.shaped.steps, deadline=time.monotonic() + 0.5 * (round_deadline - time.monotonic()))
            # each shaped world's evaluator is set up when the continuation starts: priced as the set-ups and an evaluation
            # each, by the estimate or four of this size's slowest evaluation measured, the lower (the estimate errs high:
            # on sunysb it skipped every continuation, and the solve stayed at the controller worth 0)
            if arch not in self.shaped_price:
                setup = min(price(as_pomdp(self.world), arch, self.reset, solver.engine).seconds, 4 * objective.seconds)
                self.shaped_price[arch] = len(solver.shaped.weights) * setup
            if time.monotonic() + self.shaped_price[arch] > budget.deadline:
                self.deadline.note(f"the continuation on {arch!r} (the shaped worlds' set-ups, estimated, do not fit)")
                return improved
            improved |= self.offer(objective, solver.shaped.solve(objective, self.best[1], budget, rng, methods=solver.methods), solver.shaped.name)
        return improved


def solve(world: POMDP | Task, memory: object = "ram:2", *, solver: Portfolio | None = None, reset: float | None = None,
          discount: float | None = None, start: Policy | Solution | None = None, progress: Callable[[dict], None] | None = None,
          **settings: object) -> Solution:  # fmt: skip
    """``solver.solve(world, memory, ...)`` (:meth:`Portfolio.solve`); ``solver`` defaults to ``Portfolio()``.

    ``settings`` are :class:`Portfolio` fields given here instead (``fsc.solve(world, "ram:3", seconds=30, seed=0)``):
    they replace the solver's.

    Raises:
        ValueError, TypeError: a bad setting, memory, reset, or a start on another memory.
    """
    solver = Portfolio() if solver is None else solver
    if not isinstance(solver, Portfolio):
        raise InputTypeError(f"solver must be a fsc.solver.Portfolio, got {solver!r}")
    unknown = sorted(set(settings) - {field.name for field in attrs.fields(Portfolio)})
    if unknown:
        raise InputTypeError(f"solve takes no {', '.join(unknown)} (the solver's settings: {', '.join(field.name for field in attrs.fields(Portfolio))})")
    solver = attrs.evolve(solver, **settings) if settings else solver
    return solver.solve(world, memory, reset=reset, discount=discount, start=start, progress=progress)


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
