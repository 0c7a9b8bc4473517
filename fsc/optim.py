"""Training a controller: gradient flow with an adaptive step, Adam, plain ascent.

All optimisers climb the gain of :func:`fsc.evaluate` (the expected reward per
step, as docs/model.md specifies), or with ``target="return"`` the
discounted return ``G = gain / r`` that paper eq. (4) writes (the same flow,
with time running ``1 / r`` times more slowly), on both sets of free
parameters of a :class:`fsc.Policy`: the
policy logits ``w_pi`` (shape ``(N, C)``) and the initial-node logits ``w_0``
(shape ``(N,)``).  They share one interface: :func:`optimize` (and its
shorthand :func:`flow`) is a generator of :class:`Record` objects, one per
accepted step, starting with the record of the initial point (step 0).

Gradient flow (paper eq. (4), docs/model.md) integrates

.. math::

    \\frac{dw}{dt} = \\frac{\\partial\\, \\mathrm{gain}}{\\partial w}

by explicit Euler steps ``w' = w + dt g(w)`` with the adaptive step of the
paper's published code: start with ``dt = 1``; a tentative step is rejected,
and ``dt`` divided by 10, when ``gain(w') < gain(w)`` or when
``dpi + dp0 >= max_dgrad``, where ``dpi = max |g_pi(w') - g_pi(w)|`` and
``dp0 = max |g_0(w') - g_0(w)|``; after an accepted step with
``dpi + dp0 < max_dgrad / 2``, ``dt`` is multiplied by 1.1.  The time ``t`` is
the sum of the accepted ``dt``; the gradient computed at an accepted ``w'`` is
the next step's gradient, so each tentative step costs one evaluation with its
backward pass.  A run stops at the first accepted step with ``t >= until_t``
(the last step is not shortened to land on ``until_t``, so a longer run
passes through exactly the same states).

Adam and plain gradient ascent take one step per evaluation; their "time" is
the sum of the learning rates used (for ascent ``w' = w + lr g`` is an Euler
step of the same flow, so its ``t`` is comparable with the flow's; for Adam it
is only a step counter in those units).

Time scale.  Paper eq. (4) writes the flow on the discounted return
``G = gain / r``; we flow, like the published code, on the gain
(docs/model.md).  On ``G`` the same curve q(t) is traversed with ``t`` smaller by the
factor ``r`` (near-CCP, RAM M = 8, r = 1e-3: q = 0.10952 at t = 1e5 here and
at t = 1e2 on ``G``).  We follow the published code, and the range where the curves are
compared with the published ones (t = 1e2 .. 1e6) agrees: on the gain, q(t)
moves over that range (0.162 to 0.1083 from near-CCP) and near-CCP is still
above the optimal CCP at t = 1e5, while on ``G`` it is nearly flat there and
already 1.9e-5 below that CCP (0.1081262) at t = 1e4.  ``target="return"``
flows on ``G`` for whoever needs eq. (4) literally.

Everything is float64.  With the same engine, the same torch thread count
and the same starting state, a run is deterministic bit for bit, which is what
lets :mod:`fsc.train` resume a killed run exactly.
"""

from __future__ import annotations

import abc
import math
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import attrs
import numpy as np
import torch

from . import kernels
from .errors import InputError, InputTypeError
from .evaluate import CONVENTIONS, Evaluator, check_reset, read_out
from .memory import MemoryArchitecture
from .policy import Policy
from .pomdp import POMDP, Task, as_pomdp

__all__ = [
    "OPTIMIZERS",
    "TARGETS",
    "Adam",
    "Ascent",
    "GradientFlow",
    "Objective",
    "Optimizer",
    "Point",
    "Record",
    "State",
    "StopRule",
    "flow",
    "make_optimizer",
    "optimize",
]


# ---------------------------------------------------------------------------
# The objective: gain and its gradient at a point.

#: What the optimisers climb: the gain per step, or the discounted return ``gain / r``.
TARGETS = ("gain", "return")


@attrs.frozen(kw_only=True, eq=False)
class Point:
    """Gain, metrics and gradient of the objective at ``w = (logits, init_logits)``.

    Tensors are detached float64 and read-only by convention.

    Attributes:
        logits: ``w_pi``, shape ``(N, C)``.
        init_logits: ``w_0``, shape ``(N,)``.
        gain: the gain at ``w`` (a Python float, exactly the float64 value).
        metrics: name -> value (e.g. ``q``).
        grad_logits: ``d target / d w_pi`` (zero on disallowed choices); the
            target is the gain, or ``gain / r`` (see :class:`Objective`).
        grad_init: ``d target / d w_0`` (zero outside the reset nodes).
    """

    logits: torch.Tensor
    init_logits: torch.Tensor
    gain: float
    metrics: dict[str, float]
    grad_logits: torch.Tensor
    grad_init: torch.Tensor

    @property
    def grad_norm(self) -> float:
        """Euclidean norm of the whole gradient ``(d/dw_pi, d/dw_0)``."""
        return float(kernels.gradient_norm(self.grad_logits.numpy(), self.grad_init.numpy()))

    def policy(self, architecture: MemoryArchitecture) -> Policy:
        """The policy at this point (fresh copies of the logits)."""
        return Policy(architecture=architecture, logits=self.logits.clone(), init_logits=self.init_logits.clone())


@attrs.frozen(kw_only=True, eq=False)
class Objective:
    """``w -> (gain(w), grad gain(w))`` for a world, an architecture and a reset.

    It runs :class:`fsc.evaluate.Evaluator`, the computation of
    :func:`fsc.evaluate` and its backward pass, without autograd's
    bookkeeping: one forward pass and one adjoint solve per call.
    ``engine``: ``auto`` or an engine of :func:`fsc.evaluate` (``dense``,
    ``sparse``, ``power``, ...); ``adjoint`` is an older name of ``dense``.

    ``target``: what is climbed, hence the gradient returned: ``gain`` (the
    expected reward per step, docs/model.md) or ``return``, the expected
    discounted return ``G = gain / r`` of paper eq. (4) (the same landscape,
    gradients ``1 / r`` times larger: the same flow with ``t`` measured ``1 / r``
    times more slowly, but a different adaptive path, since ``max_dgrad``
    then bounds changes of the larger gradient).  ``Point.gain`` is the gain
    per step either way.

    ``compiled``: on the dense engine, each evaluation, and each step of the
    gradient flow with its rejected tries, runs as one compiled call
    (:func:`fsc.kernels.dense_value_gradient`, :func:`fsc.kernels.dense_flow_step`)
    that calls LAPACK itself: the same numbers to the last bit, without the
    Python between the solves.  ``False`` runs the evaluator's Python path,
    the reference the compiled one is tested against.
    """

    world: POMDP | Task
    architecture: MemoryArchitecture
    reset: float
    engine: str = "auto"
    convention: str = "native"
    target: str = "gain"
    compiled: bool = True
    _evaluator: Evaluator = attrs.field(init=False, default=None, repr=False)
    _fused: tuple | None = attrs.field(init=False, default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.engine, str):
            raise InputTypeError(f"engine must be a string, got {self.engine!r}")
        if self.target not in TARGETS:
            raise InputError(f"target must be one of {TARGETS}, got {self.target!r}")
        engine = "dense" if self.engine == "adjoint" else self.engine
        evaluator = Evaluator(self.world, self.architecture, self.reset, engine, self.convention)
        object.__setattr__(self, "_evaluator", evaluator)
        if self.compiled:
            object.__setattr__(self, "_fused", evaluator.fused_constants(**{"gain" if self.target == "gain" else "value": 1.0}))

    @property
    def method(self) -> str:
        """The engine that runs (what ``auto`` chose)."""
        return self._evaluator.engine

    def __call__(self, logits: torch.Tensor, init_logits: torch.Tensor) -> Point:
        logits, init_logits = logits.detach(), init_logits.detach()
        evaluator = self._evaluator
        w_pi, w_0 = logits.numpy(), init_logits.numpy()
        top = max(w_pi.max(), w_0.max())  # NaN propagates through max
        if not top < np.inf:
            raise InputError(f"logits must not contain NaN or +inf, got a maximum of {top!r}")
        if self._fused is not None:
            expected, grad_logits, grad_init, ok = kernels.dense_value_gradient(w_pi, w_0, self._fused)
            if not ok:
                raise np.linalg.LinAlgError("I - (1 - r) P is singular")
            return self._point(logits, init_logits, expected, grad_logits, grad_init)
        run = evaluator.forward(w_pi, w_0)
        grad_logits, grad_init = evaluator.backward(run, **{"gain" if self.target == "gain" else "value": 1.0})
        return Point(
            logits=logits,
            init_logits=init_logits,
            gain=run.gain,
            metrics=run.metrics,
            grad_logits=torch.from_numpy(grad_logits),
            grad_init=torch.from_numpy(grad_init),
        )

    def _point(self, logits, init_logits, expected: np.ndarray, grad_logits: np.ndarray, grad_init: np.ndarray) -> Point:
        """The point of a compiled evaluation: ``expected`` holds the native expectations of the evaluator's tables."""
        evaluator = self._evaluator
        native = dict(zip(evaluator.table_names[1:], expected[1:].tolist(), strict=True))
        gain, metrics = read_out(evaluator.world, evaluator.convention, evaluator.reset, float(expected[0]), native)
        as_tensor = lambda x: x if isinstance(x, torch.Tensor) else torch.from_numpy(x)  # noqa: E731
        return Point(
            logits=as_tensor(logits),
            init_logits=as_tensor(init_logits),
            gain=gain,
            metrics={name: float(value) for name, value in metrics.items()},
            grad_logits=torch.from_numpy(grad_logits),
            grad_init=torch.from_numpy(grad_init),
        )

    def flow_step(self, point: Point, dt: float, max_dgrad: float, min_dt: float) -> tuple[Point | None, float, float, int, int] | None:
        """:meth:`GradientFlow.advance`'s search for an accepted step, in one compiled call.

        ``None`` when the engine has no compiled step (only ``dense`` has); else ``(point, dt,
        next_dt, evaluations, rejections)``, with ``point`` ``None`` when no step down to ``min_dt``
        is accepted.  The numbers are those of the step written in Python, to the last bit.
        """
        if self._fused is None:
            return None
        evaluator = self._evaluator
        status, logits, init_logits, grad_logits, grad_init, expected, dt, next_dt, evaluations, rejections = kernels.dense_flow_step(
            point.logits.numpy(), point.init_logits.numpy(), point.grad_logits.numpy(), point.grad_init.numpy(),
            point.gain, dt, max_dgrad, min_dt, evaluator.factor, self._fused,
        )  # fmt: skip
        if status == kernels.STEP_STALLED:
            return None, dt, next_dt, evaluations, rejections
        if status == kernels.STEP_NOT_FINITE:
            raise InputError(f"logits must not contain NaN or +inf, got a maximum of {max(logits.max(), init_logits.max())!r}")
        if status == kernels.STEP_SINGULAR:
            raise np.linalg.LinAlgError("I - (1 - r) P is singular")
        new = self._point(logits, init_logits, expected, grad_logits, grad_init)
        return new, dt, next_dt, evaluations, rejections


# ---------------------------------------------------------------------------
# Optimiser state and records.


@attrs.frozen(kw_only=True, eq=False)
class State:
    """Everything an optimiser needs to continue: a checkpoint in memory.

    Attributes:
        point: the current point with its gain and gradient.
        t: algorithm time (sum of accepted ``dt``, or of learning rates).
        step: number of accepted steps.
        dt: size of the last accepted step (0 at the start).
        evaluations: evaluations done so far (accepted and rejected).
        rejections: rejected tentative steps so far (gradient flow).
        seconds: wall time spent so far, over every session of a resumed run.
        slots: optimiser-specific floats and tensors (flow: ``next_dt``;
            Adam: the moments of both sets of logits).
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
            acceptable step down to ``min_dt``).
        state: the full optimiser state (for checkpoints).
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

    @property
    def q(self) -> float:
        """The metric ``q`` (NaN if the world has none)."""
        return self.metrics.get("q", math.nan)

    @classmethod
    def of(cls, state: State, stop: str | None = None) -> Record:
        point = state.point
        return cls(
            t=state.t,
            step=state.step,
            dt=state.dt,
            gain=point.gain,
            metrics=point.metrics,
            grad_norm=point.grad_norm,
            seconds=state.seconds,
            evaluations=state.evaluations,
            stop=stop,
            state=state,
        )


# ---------------------------------------------------------------------------
# Optimisers.


def _positive(name: str, value: object, *, upper: float = math.inf, closed_upper: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputTypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value > 0 and (value <= upper if closed_upper else value < upper)):
        bound = f"{upper}]" if closed_upper else (f"{upper})" if math.isfinite(upper) else "inf)")
        raise InputError(f"{name} must be in (0, {bound}, got {value!r}")
    return value


class Optimizer(abc.ABC):
    """A rule that moves a :class:`State` forward by one accepted step.

    Subclasses are final frozen attrs classes holding hyperparameters only.
    """

    name: ClassVar[str]

    def start(self, point: Point) -> dict[str, Any]:
        """Initial ``slots`` of the state at ``point``."""
        return {}

    @abc.abstractmethod
    def advance(self, objective: Objective, state: State, clock) -> State | None:
        """The state after one accepted step (``None``: no acceptable step exists).

        ``clock()`` returns the wall seconds to store in the new state.
        """

    def to_dict(self) -> dict[str, Any]:
        """Name and hyperparameters (JSON-able)."""
        return {"name": self.name, **attrs.asdict(self)}


@attrs.frozen(kw_only=True)
class GradientFlow(Optimizer):
    """Euler steps with the adaptive ``dt`` of the published code (docs/model.md).

    Args:
        max_dgrad: a step is rejected when ``dpi + dp0 >= max_dgrad``.
        dt: the first tentative step.
        min_dt: the flow stops (``stalled``) when ``dt`` falls below it; a
            guard for points where rounding makes every step lower the gain.
    """

    name: ClassVar[str] = "flow"
    max_dgrad: float = attrs.field(default=1e-4)
    dt: float = attrs.field(default=1.0)
    min_dt: float = attrs.field(default=1e-30)

    def __attrs_post_init__(self) -> None:
        _positive("max_dgrad", self.max_dgrad)
        _positive("dt", self.dt)
        _positive("min_dt", self.min_dt)

    def start(self, point: Point) -> dict[str, Any]:
        return {"next_dt": float(self.dt)}

    def advance(self, objective: Objective, state: State, clock) -> State | None:
        point = state.point
        dt = state.slots["next_dt"]
        evaluations, rejections = state.evaluations, state.rejections
        fused = objective.flow_step(point, dt, self.max_dgrad, self.min_dt)
        if fused is not None:
            new, dt, next_dt, tried, rejected = fused
            if new is None:
                return None
            return State(
                point=new,
                t=state.t + dt,
                step=state.step + 1,
                dt=dt,
                evaluations=evaluations + tried,
                rejections=rejections + rejected,
                seconds=clock(),
                slots={"next_dt": next_dt},
            )
        while dt >= self.min_dt:
            # w + dt g in numpy: the same two roundings as torch, a third of the overhead.
            logits = torch.from_numpy(point.logits.numpy() + dt * point.grad_logits.numpy())
            init_logits = torch.from_numpy(point.init_logits.numpy() + dt * point.grad_init.numpy())
            new = objective(logits, init_logits)
            evaluations += 1
            # (numpy on the same buffers: the same exact numbers, less overhead.)
            dpi = float(np.abs(new.grad_logits.numpy() - point.grad_logits.numpy()).max())
            dp0 = float(np.abs(new.grad_init.numpy() - point.grad_init.numpy()).max())
            # `not >=` also rejects a NaN gain.
            if not (new.gain >= point.gain) or dpi + dp0 >= self.max_dgrad:
                dt /= 10
                rejections += 1
                continue
            t = state.t + dt
            next_dt = dt * 1.1 if dpi + dp0 < self.max_dgrad / 2 else dt
            return State(
                point=new,
                t=t,
                step=state.step + 1,
                dt=dt,
                evaluations=evaluations,
                rejections=rejections,
                seconds=clock(),
                slots={"next_dt": next_dt},
            )
        return None


@attrs.frozen(kw_only=True)
class Adam(Optimizer):
    """Adam (Kingma and Ba) climbing the gain; ``t`` is the sum of ``lr``.

    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``,
    ``w += lr (m / (1 - b1^k)) / (sqrt(v / (1 - b2^k)) + eps)``.
    """

    name: ClassVar[str] = "adam"
    lr: float = attrs.field(default=1e-2)
    beta1: float = attrs.field(default=0.9)
    beta2: float = attrs.field(default=0.999)
    eps: float = attrs.field(default=1e-8)

    def __attrs_post_init__(self) -> None:
        _positive("lr", self.lr)
        _positive("beta1", self.beta1, upper=1.0)
        _positive("beta2", self.beta2, upper=1.0)
        _positive("eps", self.eps)

    def start(self, point: Point) -> dict[str, Any]:
        zeros = torch.zeros_like
        return {
            "m_logits": zeros(point.logits),
            "v_logits": zeros(point.logits),
            "m_init": zeros(point.init_logits),
            "v_init": zeros(point.init_logits),
        }

    def advance(self, objective: Objective, state: State, clock) -> State | None:
        point, slots = state.point, state.slots
        k = state.step + 1
        b1, b2 = self.beta1, self.beta2
        new_slots = {}
        moved = {}
        for key, w, g in (("logits", point.logits, point.grad_logits), ("init", point.init_logits, point.grad_init)):
            m = b1 * slots[f"m_{key}"] + (1 - b1) * g
            v = b2 * slots[f"v_{key}"] + (1 - b2) * g * g
            new_slots[f"m_{key}"], new_slots[f"v_{key}"] = m, v
            update = (m / (1 - b1**k)) / ((v / (1 - b2**k)).sqrt() + self.eps)
            # -inf logits (probability exactly 0) stay where they are.
            moved[key] = torch.where(torch.isfinite(w), w + self.lr * update, w)
        new = objective(moved["logits"], moved["init"])
        return State(
            point=new,
            t=state.t + self.lr,
            step=k,
            dt=self.lr,
            evaluations=state.evaluations + 1,
            rejections=state.rejections,
            seconds=clock(),
            slots=new_slots,
        )


@attrs.frozen(kw_only=True)
class Ascent(Optimizer):
    """Plain gradient ascent ``w' = w + lr g`` (Euler steps of fixed size ``lr``)."""

    name: ClassVar[str] = "ascent"
    lr: float = attrs.field(default=1.0)

    def __attrs_post_init__(self) -> None:
        _positive("lr", self.lr)

    def advance(self, objective: Objective, state: State, clock) -> State | None:
        point = state.point
        new = objective(point.logits + self.lr * point.grad_logits, point.init_logits + self.lr * point.grad_init)
        return State(
            point=new,
            t=state.t + self.lr,
            step=state.step + 1,
            dt=self.lr,
            evaluations=state.evaluations + 1,
            rejections=state.rejections,
            seconds=clock(),
            slots={},
        )


OPTIMIZERS: dict[str, type[Optimizer]] = {"flow": GradientFlow, "adam": Adam, "ascent": Ascent}


def make_optimizer(name: str, *, lr: float | None = None, max_dgrad: float | None = None) -> Optimizer:
    """The optimiser called ``name`` (``flow``, ``adam``, ``ascent``).

    ``max_dgrad`` belongs to the flow, ``lr`` to Adam and ascent; ``None``
    keeps the default (flow: ``max_dgrad = 1e-4``; Adam: ``lr = 1e-2``;
    ascent: ``lr = 1``).

    Raises:
        ValueError: unknown name, or an option the optimiser does not have.
    """
    if name not in OPTIMIZERS:
        raise InputError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {name!r}")
    if name == "flow":
        if lr is not None:
            raise InputError(f"the flow optimizer has an adaptive step and takes no lr, got lr={lr!r}")
        return GradientFlow() if max_dgrad is None else GradientFlow(max_dgrad=max_dgrad)
    if max_dgrad is not None:
        raise InputError(f"max_dgrad belongs to the flow optimizer, not {name!r}, got max_dgrad={max_dgrad!r}")
    return OPTIMIZERS[name]() if lr is None else OPTIMIZERS[name](lr=lr)


# ---------------------------------------------------------------------------
# Stop conditions and the generators.


def _optional_positive(name: str, value: object) -> float | None:
    return None if value is None else _positive(name, value)


@attrs.frozen(kw_only=True)
class StopRule:
    """When a run stops; ``None`` disables a condition.

    The run stops at the first state with ``t >= until_t``,
    ``step >= max_steps``, ``seconds >= max_seconds`` or
    ``grad_norm <= min_grad_norm`` (checked in this order).  Stopping never
    changes the path: a longer run passes through the same states.
    """

    until_t: float | None = None
    max_steps: int | None = None
    max_seconds: float | None = None
    min_grad_norm: float | None = None

    def __attrs_post_init__(self) -> None:
        if self.until_t is not None:
            if isinstance(self.until_t, bool) or not isinstance(self.until_t, (int, float)):
                raise InputTypeError(f"until_t must be a number, got {self.until_t!r}")
            if not (math.isfinite(self.until_t) and self.until_t >= 0):
                raise InputError(f"until_t must be a finite number >= 0, got {self.until_t!r}")
        if self.max_steps is not None and (isinstance(self.max_steps, bool) or not isinstance(self.max_steps, int)):
            raise InputTypeError(f"max_steps must be an int, got {self.max_steps!r}")
        if self.max_steps is not None and self.max_steps < 0:
            raise InputError(f"max_steps must be >= 0, got {self.max_steps!r}")
        _optional_positive("max_seconds", self.max_seconds)
        _optional_positive("min_grad_norm", self.min_grad_norm)

    def reason(self, state: State) -> str | None:
        if self.until_t is not None and state.t >= self.until_t:
            return "until_t"
        if self.max_steps is not None and state.step >= self.max_steps:
            return "max_steps"
        if self.max_seconds is not None and state.seconds >= self.max_seconds:
            return "max_seconds"
        if self.min_grad_norm is not None and state.point.grad_norm <= self.min_grad_norm:
            return "min_grad_norm"
        return None


def optimize(
    world: POMDP | Task,
    policy: Policy,
    *,
    reset: float,
    optimizer: str | Optimizer = "flow",
    convention: str = "native",
    engine: str = "auto",
    until_t: float | None = None,
    max_steps: int | None = None,
    max_seconds: float | None = None,
    min_grad_norm: float | None = None,
    lr: float | None = None,
    max_dgrad: float | None = None,
    target: str = "gain",
    state: State | None = None,
) -> Iterator[Record]:
    """Climb the gain from ``policy``; yield a :class:`Record` per accepted step.

    The first record is the starting point (step 0, or the step of
    ``state``); the last one has ``stop`` set.  Without any stop condition
    the generator runs until the caller stops iterating (or the flow
    stalls).  Nothing is printed.

    Args:
        world: a :class:`fsc.POMDP` or :class:`fsc.Task`.
        policy: the starting policy; its architecture is the one trained.
        reset: reset probability ``r`` (in (0, 1]).
        optimizer: ``flow``, ``adam``, ``ascent`` or an :class:`Optimizer`.
        convention: ``native`` or ``paper`` (:func:`fsc.evaluate`).
        engine: ``auto`` or an engine of :func:`fsc.evaluate`
            (see :class:`Objective`).
        target: ``gain`` (default, docs/model.md) or ``return`` (``gain / r``,
            paper eq. (4)); see :class:`Objective`.
        until_t, max_steps, max_seconds, min_grad_norm: see :class:`StopRule`.
        lr, max_dgrad: hyperparameters when ``optimizer`` is a name
            (see :func:`make_optimizer`).
        state: continue from this state (a resumed run) instead of ``policy``'s
            logits; ``policy`` still gives the architecture.

    Raises:
        ValueError, TypeError: bad arguments, before any evaluation.
    """
    if not isinstance(policy, Policy):
        raise InputTypeError(f"policy must be a fsc.Policy, got {type(policy).__name__}")
    as_pomdp(world)  # a POMDP, or an object whose .pomdp is one
    reset = check_reset(reset)
    if convention not in CONVENTIONS:
        raise InputError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    if isinstance(optimizer, str):
        optimizer = make_optimizer(optimizer, lr=lr, max_dgrad=max_dgrad)
    elif not isinstance(optimizer, Optimizer):
        raise InputTypeError(f"optimizer must be a name in {sorted(OPTIMIZERS)} or a fsc.optim.Optimizer, got {optimizer!r}")
    elif lr is not None or max_dgrad is not None:
        raise InputError("give lr and max_dgrad through the Optimizer instance, not as arguments")
    rule = StopRule(until_t=until_t, max_steps=max_steps, max_seconds=max_seconds, min_grad_norm=min_grad_norm)
    arch = policy.architecture
    if state is not None:
        if not isinstance(state, State):
            raise InputTypeError(f"state must be a fsc.optim.State, got {type(state).__name__}")
        if tuple(state.point.logits.shape) != (arch.num_nodes, arch.num_choices):
            raise InputError(f"state has logits of shape {tuple(state.point.logits.shape)}, not those of {arch!r}")
    objective = Objective(world=world, architecture=arch, reset=reset, engine=engine, convention=convention, target=target)
    return _run(objective, optimizer, rule, policy, state)


def _run(objective: Objective, optimizer: Optimizer, rule: StopRule, policy: Policy, state: State | None) -> Iterator[Record]:
    started = time.perf_counter()
    offset = 0.0 if state is None else state.seconds

    def clock() -> float:
        return offset + (time.perf_counter() - started)

    if state is None:
        point = objective(policy.logits.detach().clone(), policy.init_logits.detach().clone())
        state = State(point=point, seconds=clock(), slots=optimizer.start(point))
    while True:
        stop = rule.reason(state)
        yield Record.of(state, stop)
        if stop is not None:
            return
        new = optimizer.advance(objective, state, clock)
        if new is None:
            yield Record.of(attrs.evolve(state, seconds=clock()), "stalled")
            return
        state = new


def flow(
    world: POMDP | Task,
    policy: Policy,
    *,
    reset: float,
    convention: str = "native",
    engine: str = "auto",
    max_dgrad: float = 1e-4,
    until_t: float | None = None,
    max_steps: int | None = None,
    max_seconds: float | None = None,
    min_grad_norm: float | None = None,
    target: str = "gain",
    state: State | None = None,
) -> Iterator[Record]:
    """Gradient flow ``dw/dt = d gain / dw`` with the adaptive step (docs/model.md).

    Shorthand for ``optimize(..., optimizer="flow", max_dgrad=max_dgrad)``;
    yields the trajectory ``(t, step, dt, gain, q, grad_norm, seconds)`` as
    :class:`Record` objects.
    """
    return optimize(
        world,
        policy,
        reset=reset,
        optimizer="flow",
        convention=convention,
        engine=engine,
        max_dgrad=max_dgrad,
        until_t=until_t,
        max_steps=max_steps,
        max_seconds=max_seconds,
        min_grad_norm=min_grad_norm,
        target=target,
        state=state,
    )
