"""Steps, and training a controller with them: gradient flow with an adaptive step, Adam, plain ascent.

A :class:`Step` is one step rule: ``init(objective, start) -> State`` and ``update(objective, state) -> State``
(``None`` when it has no acceptable step left).  ``fsc train``'s optimisers below are steps, and so are the
solver's methods (:mod:`fsc.solver.methods`), which the portfolio drives within its budget.

All optimisers climb an :class:`fsc.objective.Objective` (the gain of :func:`fsc.evaluate`, or with
``target="return"`` the discounted return ``G = gain / r`` of paper eq. (4)) on both sets of free
parameters of a :class:`fsc.Policy`: the policy logits ``w_pi`` (shape ``(N, C)``) and the initial-node
logits ``w_0`` (shape ``(N,)``).  They share one interface: :func:`optimize` (and its shorthand
:func:`flow`) is a generator of :class:`Record` objects, one per accepted step, starting with the record
of the initial point (step 0, or the step of the state a resumed run continues); the last one has
``stop`` set.  Without any stop condition the generator runs until the caller stops iterating (or the flow
stalls).  Nothing is printed.  ``record.policy`` is the policy at a record.

:class:`GradientFlow` integrates ``dw/dt = d gain / dw`` (paper eq. (4)) by explicit Euler steps with the
adaptive step of the paper's published code; docs/model.md ("Training: the adaptive step and its time
scale") states the rule and why time is measured on the gain.  A run stops at the first accepted step
with ``t >= until_t`` (the last step is not shortened, so a longer run passes through exactly the same
states).  Adam and plain ascent take one step per evaluation; their "time" is the sum of the learning
rates used (comparable with the flow's for ascent, a step counter in those units for Adam).

:class:`Rosenbrock` integrates the same flow, in the same ``t``, by a Rosenbrock-W method under a local error
tolerance on the logits, in far fewer steps where the flow is stiff (docs/model.md, "Fewer steps: the Rosenbrock
integrator"); the published step rule stays the default.

Everything is float64.  With the same engine, the same torch thread count and the same starting state, a
run is deterministic bit for bit, which is what lets :mod:`fsc.train` resume a killed run exactly.

The gradient flow and plain ascent also run from a :class:`fsc.model.policy.Weights` (the logits as numpy
arrays): their points then hold numpy arrays and nothing imports torch (``fsc train`` from ``uniform`` or a
policy file), with the same numbers to the last bit (``tests/fsc/test_train_without_torch.py``).  Adam and
:class:`Rosenbrock` keep torch's tensors in their state.
"""

from __future__ import annotations

import abc
import math
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import attrs
import numpy as np

from fsc.checks import flag, integer, nonnegative, one_of, positive
from fsc.choices import FLOW_MAX_DGRAD, ROSENBROCK_TOLERANCE
from fsc.engines import kernels
from fsc.errors import InputError, InputTypeError
from fsc.evaluate import CONVENTIONS, check_reset
from fsc.model.policy import Policy, Weights, check_policy
from fsc.model.pomdp import POMDP, Task, as_pomdp
from fsc.objective import Objective, Point, as_numpy, like

__all__ = [
    "OPTIMIZERS",
    "Adam",
    "Ascent",
    "GradientFlow",
    "Record",
    "Rosenbrock",
    "State",
    "Step",
    "StopRule",
    "flow",
    "checked",
    "make_optimizer",
    "no_clock",
    "optimize",
]


# ---------------------------------------------------------------------------
# Optimiser state and records.


@attrs.frozen(kw_only=True, eq=False)
class State:
    """Everything an optimiser needs to continue: a checkpoint in memory.

    Attributes:
        point: the current point with its gain and gradient (a :class:`fsc.objective.Point`; the solver's steps
            on the probabilities hold a :class:`fsc.objective.Look`).
        t: algorithm time (sum of accepted ``dt``, or of learning rates).
        step: number of accepted steps.
        dt: size of the last accepted step (0 at the start).
        evaluations: evaluations done so far (accepted and rejected).
        rejections: rejected tentative steps so far (gradient flow).
        seconds: wall time spent so far, over every session of a resumed run.
        slots: step-specific floats and tensors (flow: ``next_dt``;
            Adam: the moments of both sets of logits), what a checkpoint saves; the solver's steps keep
            other values there too (never saved).
    """

    point: Point
    t: float = 0.0
    step: int = 0
    dt: float = 0.0
    evaluations: int = 1
    rejections: int = 0
    seconds: float = 0.0
    slots: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True, eq=False)
class Record:
    """One row of a training trajectory (yielded by :func:`optimize`).

    Attributes:
        t, step, dt, gain, grad_norm, seconds, evaluations: as in :class:`State`;
            ``grad_norm`` is the norm of the gradient at this point.
        metrics: name -> value at this point (``q`` for the two-hypothesis task).
        stop: ``None``, or why the run stops here: ``until_t``, ``max_steps``,
            ``max_seconds``, ``min_grad_norm`` or ``stalled`` (the flow found no
            acceptable step down to ``min_dt``, or took a step too small to
            move ``t``: :class:`StopRule`).
        state: the full optimiser state (for checkpoints).
        skipped: ``None``, or (when :func:`optimize` is asked to keep them) the accepted steps taken
            since the previous record and before this one, which it did not yield: columns (lists) ``t,
            step, dt, gain, grad_norm, seconds, evaluations`` and ``metrics`` (name -> column), the numbers
            their records would have held.
    """

    t: float
    step: int
    dt: float
    gain: float
    metrics: dict[str, float]
    grad_norm: float
    seconds: float
    evaluations: int
    stop: str | None
    state: State = attrs.field(repr=False)
    skipped: dict[str, Any] | None = attrs.field(default=None, repr=False)

    @property
    def q(self) -> float:
        """The metric ``q`` (NaN if the world has none)."""
        return self.metrics.get("q", math.nan)

    @property
    def policy(self) -> Policy | Weights:
        """The policy at this record (fresh copies of its logits, on the architecture trained): its
        :class:`fsc.model.policy.Weights` when the run is on numpy arrays (:meth:`fsc.objective.Point.policy`)."""
        return self.state.point.policy()

    @classmethod
    def of(cls, state: State, stop: str | None = None, skipped: dict[str, Any] | None = None) -> Record:
        point, counts = state.point, {name: getattr(state, name) for name in ("t", "step", "dt", "seconds", "evaluations")}
        return cls(**counts, gain=point.gain, metrics=point.metrics, grad_norm=point.grad_norm, stop=stop, state=state, skipped=skipped)


# ---------------------------------------------------------------------------
# Optimisers.


def checked(check: Callable[..., object], *args: object, **options: object) -> Callable[[object, attrs.Attribute, object], None]:
    """An attrs validator of a setting: ``check`` (one of :mod:`fsc.checks`) of its value, named by the field."""
    return lambda _, attribute, value: check(attribute.name, value, *args, **options)


def no_clock() -> float:
    """Zero seconds: the clock of a step whose caller keeps no time."""
    return 0.0


class Step(abc.ABC):
    """One step rule, in the spirit of optax: ``init`` gives the first :class:`State`, ``update`` the next.

    ``fsc train``'s optimisers (:class:`GradientFlow`, :class:`Rosenbrock`, :class:`Adam`, :class:`Ascent`) and
    the solver's methods (:mod:`fsc.solver.methods`: mirror ascent, EM, greedy switches, Adam with restarts)
    are all steps.  Subclasses are final frozen attrs classes holding settings only; everything that moves is
    in the state.
    """

    name: ClassVar[str]

    def init(self, objective: Objective, start: Policy | Weights, *, rng: np.random.Generator | None = None,
             clock: Callable[[], float] = no_clock) -> State:  # fmt: skip
        """The state at ``start`` (one evaluation); ``rng`` is for the steps that draw (the solver's).

        ``clock()`` returns the wall seconds to store in the state.  A :class:`fsc.model.policy.Weights` start
        gives points on numpy arrays (no torch).
        """
        if isinstance(start, Weights):
            return self.at(objective(start.logits.copy(), start.init_logits.copy()), clock())
        point = objective(start.logits.detach().clone(), start.init_logits.detach().clone())
        return self.at(point, clock())

    def at(self, point: Point, seconds: float = 0.0) -> State:
        """The state at an evaluated ``point``, before any step."""
        return State(point=point, seconds=seconds, slots=self.slots(point))

    def slots(self, point: Point) -> dict[str, Any]:
        """The initial ``slots`` of the state at ``point`` (what :attr:`State.slots` holds for this step)."""
        return {}

    @abc.abstractmethod
    def update(self, objective: Objective, state: State, clock: Callable[[], float] = no_clock) -> State | None:
        """The state after one accepted step (``None``: no acceptable step exists, or the rule has converged)."""

    def to_dict(self) -> dict[str, Any]:
        """Name and settings (JSON-able)."""
        return {"name": self.name, **attrs.asdict(self)}


def _moved(state: State, point: Point, dt: float, clock: Callable[[], float], slots: dict[str, Any], *, tried: int = 1, rejected: int = 0,
           t: float | None = None, step: int | None = None) -> State:  # fmt: skip
    """The state after an accepted step of size ``dt`` to ``point`` (``tried`` evaluations, ``rejected`` tries refused)."""
    return State(
        point=point, t=state.t + dt if t is None else t, step=state.step + 1 if step is None else step, dt=dt,
        evaluations=state.evaluations + tried, rejections=state.rejections + rejected, seconds=clock(), slots=slots,
    )  # fmt: skip


#: Most accepted steps :meth:`GradientFlow.run` takes in one compiled call: a call lasts milliseconds, so that
#: the caller checks the wall time, writes checkpoints and sees an interrupt that often.
MOST_STEPS = 1000


@attrs.frozen(kw_only=True)
class GradientFlow(Step):
    """Euler steps of ``dw/dt = d gain / dw`` with the adaptive ``dt`` of the published code (docs/model.md).

    The rule that accepts or rejects a step and sets the next ``dt`` is
    :func:`fsc.engines.kernels.flow_verdict`, the one source of it: the compiled steps of the dense and
    choices engines (:meth:`fsc.objective.Objective.flow_step`) and the Python steps below (every other
    engine, and ``Objective(compiled=False)``, the oracle the compiled path is tested against) both call it.

    Args:
        max_dgrad: a step is rejected when the gradient moves by ``dpi + dp0 >= max_dgrad``.
        dt: the first tentative step.
        min_dt: the flow stops (``stalled``) when ``dt`` falls below it; a
            guard for points where rounding makes every step lower the gain.

    The flow also stops as ``stalled`` where ``max_dgrad`` is below what the gradient resolves: a try refused
    for the change of the gradient alone, whose next, smaller try would leave every weight where it is
    (:func:`fsc.engines.kernels.flow_cannot_move`).
    """

    name: ClassVar[str] = "flow"
    most_steps: ClassVar[int] = MOST_STEPS
    max_dgrad: float = attrs.field(default=FLOW_MAX_DGRAD, validator=checked(positive))
    dt: float = attrs.field(default=1.0, validator=checked(positive))
    min_dt: float = attrs.field(default=1e-30, validator=checked(positive))

    def slots(self, point: Point) -> dict[str, Any]:
        return {"next_dt": float(self.dt)}

    def update(self, objective: Objective, state: State, clock: Callable[[], float] = no_clock) -> State | None:
        fused = objective.flow_step(state.point, state.slots["next_dt"], self)
        found = self._search(objective, state.point, state.slots["next_dt"]) if fused is None else fused
        new, dt, next_dt, tried, rejected = found
        if new is None:
            return None
        return _moved(state, new, dt, clock, {"next_dt": next_dt}, tried=tried, rejected=rejected)

    def _search(self, objective: Objective, point: Point, dt: float) -> tuple[Point | None, float, float, int, int]:
        """The Python path of :meth:`fsc.objective.Objective.flow_step`: the same tries, the same numbers."""
        tried = rejected = 0
        while dt >= self.min_dt:
            # w + dt g in numpy: the same two roundings as torch, a third of the overhead.
            w, w0, g, g0 = _weights(point)
            new = objective(like(point.logits, w + dt * g), like(point.logits, w0 + dt * g0))
            tried += 1
            dpi = float(np.abs(as_numpy(new.grad_logits) - g).max())
            dp0 = float(np.abs(as_numpy(new.grad_init) - g0).max())
            accepted, next_dt = kernels.flow_verdict(new.gain, point.gain, dpi + dp0, dt, self.max_dgrad)
            if accepted:
                return new, dt, next_dt, tried, rejected
            rejected += 1
            if kernels.flow_cannot_move(new.gain, point.gain, dpi + dp0, self.max_dgrad, *_weights(point), next_dt):
                break
            dt = next_dt
        return None, dt, dt, tried, rejected

    def run(self, objective: Objective, state: State, clock: Callable[[], float], *, until_t: float, max_steps: int | None,
            rows: bool = False) -> tuple[State | None, dict | None]:  # fmt: skip
        """The state after accepted steps until ``t >= until_t``, ``step >= max_steps``, a step too small to move
        ``t``, or :attr:`most_steps` steps: the states :meth:`update` would pass through, the last of them only.
        On the dense and choices engines one compiled call takes them all; elsewhere it is one :meth:`update`.

        Returns ``(state, skipped)``; with ``rows``, ``skipped`` holds the steps before the last one as
        :attr:`Record.skipped` does (else, or when there were none, it is ``None``).
        """
        limit = NO_STEP_LIMIT if max_steps is None else max_steps
        run = objective.flow_run(state.point, state.slots["next_dt"], self, state.t, state.step, until_t, limit, rows)
        if run is None:
            return self.update(objective, state, clock), None
        new, dt, next_dt, t, step, tried, rejected, steps = run
        if new is None:
            return None, None
        now = time.clock_gettime(time.CLOCK_MONOTONIC)  # before the run's clock: no step is dated before the start
        new_state = _moved(state, new, dt, clock, {"next_dt": next_dt}, tried=tried, rejected=rejected, t=t, step=step)
        return new_state, _skipped(steps, state.evaluations, new_state.seconds, now)


def _weights(point: Point) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A point's logits, initial logits and their gradients, as the compiled flow takes them."""
    return as_numpy(point.logits), as_numpy(point.init_logits), as_numpy(point.grad_logits), as_numpy(point.grad_init)


def _skipped(steps: dict | None, evaluations: int, seconds: float, now: float) -> dict | None:
    """:attr:`Record.skipped` from the columns of a compiled run: every step but the last, each with its wall
    time from the clock the compiled loop read just after it (``now``: that clock read just before the run's
    clock gave ``seconds``), and its evaluations counted from the run's start."""
    if steps is None or len(steps["t"]) <= 1:
        return None
    steps["seconds"] = [seconds - (now - at) for at in steps.pop("clock")]
    steps["evaluations"] = [evaluations + n for n in steps["evaluations"]]
    skipped = {name: column[:-1] for name, column in steps.items() if name != "metrics"}
    skipped["metrics"] = {name: column[:-1] for name, column in steps["metrics"].items()}
    return skipped


#: ``max_steps`` given to the compiled flow for "no limit" (an int64 no run reaches).
NO_STEP_LIMIT = 2**62


@attrs.frozen(kw_only=True)
class Adam(Step):
    """Adam (Kingma and Ba) climbing the objective; ``t`` is the sum of ``lr``.

    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``, ``k`` the step,
    ``w += lr ((m / (1 - b1^k)) / (sqrt(v / (1 - b2^k)) + eps))``; ``-inf`` logits (probability exactly 0)
    stay where they are.

    Args:
        lr, beta1, beta2, eps: as above.
        relative_eps: ``eps`` is relative to the gradient's scale: the step divides by
            ``sqrt(v) + eps * max|g|`` (the largest entry of the gradient of this step), so that the rule is
            the same whatever the scale of the rewards and of the discount (the solver's ``adam``).
    """

    name: ClassVar[str] = "adam"
    lr: float = attrs.field(default=1e-2, validator=checked(positive))
    beta1: float = attrs.field(default=0.9, validator=checked(positive, 1.0))
    beta2: float = attrs.field(default=0.999, validator=checked(positive, 1.0))
    eps: float = attrs.field(default=1e-8, validator=checked(positive))
    relative_eps: bool = attrs.field(default=False, validator=checked(flag))

    def slots(self, point: Point) -> dict[str, Any]:
        import torch

        zeros = torch.zeros_like
        return {"m_logits": zeros(point.logits), "v_logits": zeros(point.logits), "m_init": zeros(point.init_logits), "v_init": zeros(point.init_logits)}

    def update(self, objective: Objective, state: State, clock: Callable[[], float] = no_clock) -> State | None:
        import torch

        point, slots = state.point, state.slots
        k = state.step + 1
        b1, b2 = self.beta1, self.beta2
        gradients = (point.grad_logits, point.grad_init)
        eps = self.eps * max(float(np.abs(g.numpy()).max(initial=0.0)) for g in gradients) if self.relative_eps else self.eps
        new_slots, moved = {}, {}
        # In torch, whose division by a number rounds as fsc train's Adam always has: a resumed run continues bit for bit.
        for key, w, g in (("logits", point.logits, gradients[0]), ("init", point.init_logits, gradients[1])):
            m = b1 * slots[f"m_{key}"] + (1 - b1) * g
            v = b2 * slots[f"v_{key}"] + (1 - b2) * g * g
            new_slots[f"m_{key}"], new_slots[f"v_{key}"] = m, v
            step = (m / (1 - b1**k)) / ((v / (1 - b2**k)).sqrt() + eps)
            moved[key] = torch.where(torch.isfinite(w), w + self.lr * step, w)
        return _moved(state, objective(moved["logits"], moved["init"]), self.lr, clock, new_slots)


@attrs.frozen(kw_only=True)
class Ascent(Step):
    """Plain gradient ascent ``w' = w + lr g`` (Euler steps of fixed size ``lr``)."""

    name: ClassVar[str] = "ascent"
    lr: float = attrs.field(default=1.0, validator=checked(positive))

    def update(self, objective: Objective, state: State, clock: Callable[[], float] = no_clock) -> State | None:
        point = state.point
        new = objective(point.logits + self.lr * point.grad_logits, point.init_logits + self.lr * point.grad_init)
        return _moved(state, new, self.lr, clock, {})


# ROS34PW2 (Rang and Angermann, BIT 45, 2005): a Rosenbrock-W method of order 3 for any approximation of the
# Jacobian, L-stable and stiffly accurate, with an embedded method of order 2: (gamma, A, C, b, b_embedded).  Stage
# i reads the stages before it through row i of A (the point where f is evaluated) and C (the coupling through J).
ROS34PW2 = (
    0.435866521508459,
    np.array([[0.0, 0.0, 0.0, 0.0], [0.87173304301691801, 0.0, 0.0, 0.0], [0.84457060015369423, -0.11299064236484185, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]),
    np.array([
        [0.0, 0.0, 0.0, 0.0], [-0.87173304301691801, 0.0, 0.0, 0.0], [-0.90338057013044082, 0.054180672388095326, 0.0, 0.0],
        [0.24212380706095346, -1.2232505839045147, 0.54526025533510214, 0.0],
    ]),
    np.array([0.24212380706095346, -1.2232505839045147, 1.5452602553351020, 0.435866521508459]),
    np.array([0.37810903145819369, -0.096042292212423178, 0.5, 0.2179332607542295]),
)  # fmt: skip
#: A rejected step whose error estimate exceeds this many tolerances, taken with a Hessian of an earlier point,
#: computes the Hessian again before the next try (a smaller excess only shrinks the step).
STALE_ERROR = 3.0
#: The largest ``tolerance`` of :class:`Rosenbrock`: above it, accepted steps can leap to a saturated point of
#: another basin where the gain no longer changes, and the run stops there as converged (with tolerance 1 on the
#: two-hypothesis world, ``ram:2``: at a gain of 0.02354 against the optimum's 0.02743, a point that is not
#: stationary). Up to it, a run that converges ends at a stationary point
#: (``tests/fsc/test_rosenbrock_converged.py``).
MAX_ROSENBROCK_TOLERANCE = 1e-2


@attrs.frozen(kw_only=True)
class Rosenbrock(Step):
    """The same flow ``dw/dt = d gain / dw`` by an adaptive Rosenbrock-W method (ROS34PW2, order 3), with far
    fewer steps where the flow is stiff (docs/model.md, "Fewer steps: the Rosenbrock integrator").

    ``y`` is the vector of the finite logits (policy, then initial node; the ``-inf`` ones stay), ``f(y)`` the
    gradient.  A step of size ``h`` solves four linear systems with ``W = I - gamma h J`` (:meth:`_try`), where
    ``J`` is the Hessian's stiff part: the Ritz pairs of negative curvature that ``krylov`` Lanczos steps find
    (Hessian-vector products by differences of gradients), so that ``W`` is inverted in closed form.  The method
    keeps its order for any ``J``, so ``J`` is kept for ``refresh`` accepted steps, and computed again after a
    step rejected by more than ``STALE_ERROR`` tolerances with an older one.

    The local error control: a step is accepted when its error estimate, the difference between the solution and
    the embedded solution of order 2, is at most ``tolerance`` on every logit (absolute); the next ``h`` is
    ``h (tolerance / estimate)^(1/3)`` times 0.9, within ``[h / 5, 5 h]``.  A run stops at the first step with
    ``t >= until_t`` (not shortened), like :class:`GradientFlow`.

    Args:
        tolerance: the largest local error estimate of an accepted step, on each logit; at most
            :data:`MAX_ROSENBROCK_TOLERANCE` (``1e-2``).
        dt: the first tentative step.
        krylov: Lanczos steps per Hessian (at most the number of free logits).
        refresh: accepted steps after which the Hessian is computed again.
        min_dt: the flow stops (``stalled``) when ``h`` falls below it.
    """

    name: ClassVar[str] = "rosenbrock"
    tolerance: float = attrs.field(default=ROSENBROCK_TOLERANCE, validator=checked(positive, MAX_ROSENBROCK_TOLERANCE, closed=True))
    dt: float = attrs.field(default=1.0, validator=checked(positive))
    krylov: int = attrs.field(default=12, validator=checked(integer, 1))
    refresh: int = attrs.field(default=10, validator=checked(integer, 1))
    min_dt: float = attrs.field(default=1e-30, validator=checked(positive))

    def __attrs_post_init__(self) -> None:
        if self.dt < self.min_dt:  # the first step would already be too small: the run would stop at once, as stalled
            raise InputError(f"dt must be at least min_dt = {self.min_dt!r}, got {self.dt!r}")

    def slots(self, point: Point) -> dict[str, Any]:
        return {"next_dt": float(self.dt), "age": float(self.refresh)}

    def update(self, objective: Objective, state: State, clock: Callable[[], float] = no_clock) -> State | None:
        free = _Free(state.point)
        y, g = free.vector(state.point)
        slots, h, age = state.slots, state.slots["next_dt"], state.slots["age"]
        kept = age < self.refresh and "basis" in slots
        curvature, basis = (slots["curvature"].numpy(), slots["basis"].numpy()) if kept else (None, None)
        tried = rejected = 0
        while h >= self.min_dt:
            if curvature is None:
                curvature, basis, used = _stiff_part(free, objective, y, g, self.krylov)
                tried, age = tried + used, 0.0
            new, error, used = self._try(free, objective, y, g, h, curvature, basis)
            tried += used
            if new is not None:
                import torch

                slots = {"next_dt": h * min(5.0, max(0.2, 0.9 * max(error, 1e-10) ** (-1 / 3))), "age": age + 1.0,
                         "curvature": torch.from_numpy(curvature), "basis": torch.from_numpy(basis)}  # fmt: skip
                return _moved(state, new, h, clock, slots, tried=tried, rejected=rejected)
            rejected += 1
            h *= max(0.2, 0.9 * error ** (-1 / 3)) if math.isfinite(error) else 0.2
            if age > 0 and not error <= STALE_ERROR:  # far off, with a Hessian of an earlier point: compute it here
                curvature = None
        return None

    def _try(self, free: _Free, objective: Objective, y, g, h: float, curvature, basis) -> tuple[Point | None, float, int]:
        """One ROS34PW2 step of size ``h``: ``(point, error, evaluations)``, the error estimate relative to the
        tolerance (``inf``, and no point, when a stage leaves the finite numbers).

        Stage ``i``: ``W k_i = h f(y + sum_j A_ij k_j) + h J sum_j C_ij k_j`` with ``W = I - gamma h J``, ``J``
        the stiff part ``U diag(curvature) U^T``, so that ``W^-1 = I + U diag(s) U^T`` with
        ``s = gamma h curvature / (1 - gamma h curvature)``.
        """
        gamma, A, C, b, b_embedded = ROS34PW2
        scale = gamma * h * curvature
        shrink = scale / (1.0 - scale)
        stages = np.zeros((len(b), y.shape[0]))
        for i in range(len(b)):
            rhs = h * g
            if i > 0:
                point = y + A[i, :i] @ stages[:i]
                if not np.isfinite(point).all():
                    return None, math.inf, i - 1
                rhs = h * (free.gradient(objective, point) + basis @ (curvature * (basis.T @ (C[i, :i] @ stages[:i]))))
            stages[i] = rhs + basis @ (shrink * (basis.T @ rhs))
        error = float(np.abs((b - b_embedded) @ stages).max()) / self.tolerance
        new = y + b @ stages
        if not (error <= 1.0 and np.isfinite(new).all()):
            return None, error if error == error else math.inf, len(b) - 1
        return free.point(objective, new), error, len(b)


class _Free:
    """The finite logits of a point as one vector ``y`` (policy logits, then initial-node logits): what the
    Rosenbrock integrator moves; the ``-inf`` ones (probability 0) stay where they are."""

    def __init__(self, point: Point) -> None:
        self.logits, self.init_logits = point.logits.numpy(), point.init_logits.numpy()
        self.mask, self.init_mask = np.isfinite(self.logits), np.isfinite(self.init_logits)
        self.split = int(self.mask.sum())

    def vector(self, point: Point) -> tuple[np.ndarray, np.ndarray]:
        """``(y, gradient)`` of ``point``."""
        y = np.concatenate([point.logits.numpy()[self.mask], point.init_logits.numpy()[self.init_mask]])
        return y, self._gradient(point)

    def _gradient(self, point: Point) -> np.ndarray:
        return np.concatenate([point.grad_logits.numpy()[self.mask], point.grad_init.numpy()[self.init_mask]])

    def _logits(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        logits, init_logits = self.logits.copy(), self.init_logits.copy()
        logits[self.mask], init_logits[self.init_mask] = y[: self.split], y[self.split :]
        return logits, init_logits

    def point(self, objective: Objective, y: np.ndarray) -> Point:
        import torch

        logits, init_logits = self._logits(y)
        return objective(torch.from_numpy(logits), torch.from_numpy(init_logits))

    def gradient(self, objective: Objective, y: np.ndarray) -> np.ndarray:
        """The gradient at ``y`` (:meth:`fsc.objective.Objective.gradient`: no point built)."""
        grad_logits, grad_init = objective.gradient(*self._logits(y))
        return np.concatenate([grad_logits[self.mask], grad_init[self.init_mask]])


def _stiff_part(free: _Free, objective: Objective, y: np.ndarray, g: np.ndarray, krylov: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The Ritz pairs of negative curvature after ``krylov`` Lanczos steps on the Hessian at ``y``:
    ``(curvatures, orthonormal columns, evaluations)``.

    The Hessian-vector products are forward differences of the gradient (one evaluation each); the Lanczos
    vectors are orthogonalised twice against all the previous ones.  The start is the gradient plus a fixed
    random vector of a thousandth of its size, so that the Krylov space holds the directions the flow moves
    along and is never degenerate; the same ``y`` gives the same pairs.
    """
    n = y.shape[0]
    steps = min(krylov, n)
    norm = float(np.linalg.norm(g))
    noise = np.random.default_rng(0).standard_normal(n)
    q = g + (1e-3 * norm if norm > 0 else 1.0) * noise / np.linalg.norm(noise)
    q /= np.linalg.norm(q)
    lanczos = np.zeros((n, steps))
    alpha, beta = np.zeros(steps), np.zeros(steps)
    epsilon = 1e-7 * (1.0 + float(np.abs(y).max()))
    done = 0
    for j in range(steps):
        lanczos[:, j] = q
        w = (free.gradient(objective, y + epsilon * q) - g) / epsilon
        done = j + 1
        alpha[j] = q @ w
        for _ in range(2):
            w -= lanczos[:, :done] @ (lanczos[:, :done].T @ w)
        beta[j] = np.linalg.norm(w)
        if done == steps or beta[j] <= 1e-14 * np.abs(alpha[:done]).max():
            break
        q = w / beta[j]
    ritz, vectors = np.linalg.eigh(np.diag(alpha[:done]) + np.diag(beta[: done - 1], 1) + np.diag(beta[: done - 1], -1))
    keep = ritz < 0
    return np.ascontiguousarray(ritz[keep]), np.ascontiguousarray(lanczos[:, :done] @ vectors[:, keep]), done


#: The optimisers by name (their names, without torch: :data:`fsc.choices.OPTIMIZER_NAMES`).
OPTIMIZERS: dict[str, type[Step]] = {"flow": GradientFlow, "adam": Adam, "ascent": Ascent, "rosenbrock": Rosenbrock}


def make_optimizer(name: str, **hyperparameters: object) -> Step:
    """The optimiser called ``name`` (a key of :data:`OPTIMIZERS`) with these hyperparameters; the others keep
    the defaults its class declares (:class:`GradientFlow`, :class:`Adam`, :class:`Ascent`).

    Raises:
        ValueError: an unknown name, or a hyperparameter the optimiser does not have (naming who has it).
    """
    one_of("optimizer", name, OPTIMIZERS)
    kind = OPTIMIZERS[name]
    own = {field.name for field in attrs.fields(kind)}
    for key, value in hyperparameters.items():
        if key not in own:
            owners = [other for other, cls in OPTIMIZERS.items() if key in {field.name for field in attrs.fields(cls)}]
            whose = f"{key} belongs to the {' and '.join(owners)} optimizer; " if owners else ""
            raise InputError(f"{whose}the {name} optimizer takes no {key}, got {key}={value!r} (it takes {', '.join(sorted(own))})")
    return kind(**hyperparameters)


@attrs.frozen(kw_only=True)
class StopRule:
    """When a run stops; ``None`` disables a condition.

    The run stops at the first state with ``t >= until_t``, ``step >= max_steps``, ``seconds >=
    max_seconds`` or ``grad_norm <= min_grad_norm``, or, always, at the first step too small to move ``t``
    (``t + dt == t`` in float64: ``stalled``), checked in the order until_t, max_steps, stalled, max_seconds,
    min_grad_norm; the first three are :func:`fsc.engines.kernels.flow_stop`, which the compiled flow
    checks too.  Stopping never changes the path: a longer run passes through the same states.

    Why a step too small to move ``t`` ends the run: the flow's ``dt`` has collapsed, ``t`` no longer grows
    and no horizon in ``t`` is reached; docs/model.md ("When the step collapses") gives what was measured.
    """

    until_t: float | None = None
    max_steps: int | None = None
    max_seconds: float | None = None
    min_grad_norm: float | None = None

    def __attrs_post_init__(self) -> None:
        if self.until_t is not None:
            nonnegative("until_t", self.until_t)
        integer("max_steps", self.max_steps, 1, optional=True)
        positive("max_seconds", self.max_seconds, optional=True)
        positive("min_grad_norm", self.min_grad_norm, optional=True)

    def reason(self, state: State) -> str | None:
        """Why the run stops at ``state`` (``None``: it goes on)."""
        until_t = math.inf if self.until_t is None else self.until_t
        max_steps = NO_STEP_LIMIT if self.max_steps is None else self.max_steps
        code = kernels.flow_stop(state.t, state.dt, state.step, until_t, max_steps)
        if code != kernels.FLOW_GOES_ON:
            return _FLOW_STOPS[code]
        if self.max_seconds is not None and state.seconds >= self.max_seconds:
            return "max_seconds"
        if self.min_grad_norm is not None and state.point.grad_norm <= self.min_grad_norm:
            return "min_grad_norm"
        return None


_FLOW_STOPS = {kernels.FLOW_UNTIL_T: "until_t", kernels.FLOW_MAX_STEPS: "max_steps", kernels.FLOW_STALLED: "stalled"}


def optimize(
    world: POMDP | Task,
    policy: Policy | Weights,
    *,
    reset: float,
    optimizer: str | Step = "flow",
    convention: str = "native",
    engine: str = "auto",
    target: str = "gain",
    until_t: float | None = None,
    max_steps: int | None = None,
    max_seconds: float | None = None,
    min_grad_norm: float | None = None,
    state: State | None = None,
    skip_until: Callable[[], float] | None = None,
    keep_skipped: bool = False,
    first_stop: Callable[[dict[str, Any]], int | None] | None = None,
    **hyperparameters: object,
) -> Iterator[Record]:
    """Climb the gain from ``policy``; yield a :class:`Record` per accepted step (module docstring).

    Args:
        world: a :class:`fsc.POMDP` or :class:`fsc.Task`.
        policy: the starting policy; its architecture is the one trained.  Its
            :class:`fsc.model.policy.Weights` (numpy arrays) for the flow or plain ascent: the run then
            imports no torch, and its records' points and policies are on numpy arrays.
        reset: reset probability ``r`` (in (0, 1]).
        optimizer: a name of :data:`OPTIMIZERS`, with its ``hyperparameters`` (:func:`make_optimizer`), or an
            :class:`Step`.
        convention, engine, target: see :class:`fsc.objective.Objective`.
        until_t, max_steps, max_seconds, min_grad_norm: the :class:`StopRule`.
        state: continue from this state (a resumed run) instead of ``policy``'s logits.
        skip_until: after each record, the ``t`` before which the caller needs no record: the flow then
            yields fewer records on the same path, the compiled engines taking the steps between in one call
            (:meth:`GradientFlow.run`), still a record per :data:`MOST_STEPS` steps and at every stop.
        keep_skipped: with ``skip_until``, each record also carries the steps it skipped (:attr:`Record.skipped`).
        first_stop: with ``keep_skipped``, given the steps a compiled run skipped (:attr:`Record.skipped`), the
            index of the first at which the caller will stop, or ``None``; the flow then takes the same steps
            again from the run's start up to that one, which becomes the record.  A caller that stops on a rule
            of its own (``fsc train``'s convergence) thus keeps the compiled runs and stops where it would have
            stopped on the records of every step.

    Raises:
        ValueError, TypeError: bad arguments, before any evaluation.
    """
    if not isinstance(policy, Weights):  # a policy's numpy weights: checked when made
        check_policy(policy)
    as_pomdp(world)  # a POMDP, or an object whose .pomdp is one
    reset = check_reset(reset)
    one_of("convention", convention, CONVENTIONS)
    optimizer = _optimizer(optimizer, hyperparameters, on_arrays=isinstance(policy, Weights))
    rule = StopRule(until_t=until_t, max_steps=max_steps, max_seconds=max_seconds, min_grad_norm=min_grad_norm)
    if state is not None:
        _check_state(state, policy.architecture)
    if skip_until is not None and not callable(skip_until):
        raise InputTypeError(f"skip_until must be a function returning a time t, got {skip_until!r}")
    if first_stop is not None and not (callable(first_stop) and keep_skipped):
        raise InputTypeError(f"first_stop must be a function of the skipped steps, with keep_skipped=True, got {first_stop!r}")
    objective = Objective(world=world, architecture=policy.architecture, reset=reset, engine=engine, convention=convention, target=target)
    return _run(objective, optimizer, rule, policy, state, skip_until, keep_skipped, first_stop)


#: The steps that run on numpy arrays too (from a :class:`fsc.model.policy.Weights`, without torch).
ON_ARRAYS = (GradientFlow, Ascent)


def _optimizer(optimizer: object, hyperparameters: dict[str, object], on_arrays: bool = False) -> Step:
    """The step :func:`optimize` names; ``on_arrays``: it starts from a policy's numpy weights (:data:`ON_ARRAYS`)."""
    if isinstance(optimizer, str):
        optimizer = make_optimizer(optimizer, **hyperparameters)
    elif not isinstance(optimizer, Step):
        raise InputTypeError(f"optimizer must be a name in {sorted(OPTIMIZERS)} or a fsc.optim.Step, got {optimizer!r}")
    elif hyperparameters:
        raise InputError(f"give {', '.join(sorted(hyperparameters))} through the Step instance, not as arguments")
    if on_arrays and not isinstance(optimizer, ON_ARRAYS):
        raise InputTypeError(f"the {optimizer.name} optimizer keeps torch tensors: give it a fsc.Policy, not the policy's Weights")
    return optimizer


def _check_state(state: object, arch) -> None:
    if not isinstance(state, State):
        raise InputTypeError(f"state must be a fsc.optim.State, got {type(state).__name__}")
    if tuple(state.point.logits.shape) != (arch.num_nodes, arch.num_choices):
        raise InputError(f"state has logits of shape {tuple(state.point.logits.shape)}, not those of {arch!r}")


def _run(
    objective: Objective,
    optimizer: Step,
    rule: StopRule,
    policy: Policy,
    state: State | None,
    skip_until: Callable[[], float] | None = None,
    keep_skipped: bool = False,
    first_stop: Callable[[dict[str, Any]], int | None] | None = None,
) -> Iterator[Record]:
    started = time.perf_counter()
    offset = 0.0 if state is None else state.seconds

    def clock() -> float:
        return offset + (time.perf_counter() - started)

    if state is None:
        state = optimizer.init(objective, policy, clock=clock)
    skipped = None
    while True:
        stop = rule.reason(state)
        yield Record.of(state, stop, skipped)
        if stop is not None:
            return
        # (A gradient-norm stop is checked at every step, so it keeps every record.)
        if skip_until is not None and isinstance(optimizer, GradientFlow) and rule.min_grad_norm is None:
            until_t = skip_until() if rule.until_t is None else min(skip_until(), rule.until_t)
            new, skipped = optimizer.run(objective, state, clock, until_t=until_t, max_steps=rule.max_steps, rows=keep_skipped)
            first = None if first_stop is None or skipped is None else first_stop(skipped)
            if first is not None:  # the caller stops at an earlier step: the same steps again, up to that one
                new, skipped = optimizer.run(objective, state, clock, until_t=until_t, max_steps=skipped["step"][first], rows=True)
        else:
            new, skipped = optimizer.update(objective, state, clock), None
        if new is None:
            yield Record.of(attrs.evolve(state, seconds=clock()), "stalled")
            return
        state = new


def flow(world: POMDP | Task, policy: Policy, **options: object) -> Iterator[Record]:
    """Gradient flow ``dw/dt = d gain / dw`` with the adaptive step (docs/model.md): :func:`optimize` with
    ``optimizer="flow"``.  ``options`` are :func:`optimize`'s (``reset`` is required) and the flow's
    settings (``max_dgrad``, ``dt``, ``min_dt``: :class:`GradientFlow`, which holds their defaults).
    """
    return optimize(world, policy, optimizer="flow", **options)
