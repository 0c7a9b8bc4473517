"""What every step climbs: the gain (or the discounted return), its gradient in the logits or in the
probabilities, the occupancy of each node, and the same on a shaped world.

:class:`Objective` runs :class:`fsc.evaluate.Evaluator`, the computation of :func:`fsc.evaluate` and its
backward pass, without autograd's bookkeeping: one forward pass and one adjoint solve per call, or one
compiled call on the dense and choices engines.  :class:`Point` holds the value and the gradient in the
logits it returns (what ``fsc train``'s steps climb), :class:`Look` the value, the gradient in the
probabilities and the occupancy (what the solver's mirror, EM and greedy steps climb).

A point's arrays are of the kind its logits come in: torch tensors (a :class:`fsc.Policy`'s), or numpy arrays
(a :class:`fsc.model.policy.Weights`'s), with which the gradient flow runs without importing torch (``fsc
train`` from ``uniform`` or a policy file, :mod:`fsc.train.command`): the same calls make the same numbers.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol, Union

import attrs
import numpy as np

from fsc.checks import one_of
from fsc.choices import TARGETS  # what the optimisers climb: the gain per step, or the return gain / r
from fsc.engines import kernels
from fsc.errors import InputError, InputTypeError
from fsc.evaluate import Evaluation, Evaluator, evaluate, read_out
from fsc.model.architecture import MemoryArchitecture
from fsc.model.policy import Policy, Weights
from fsc.model.pomdp import POMDP, Task, as_pomdp

if TYPE_CHECKING:
    import torch

__all__ = ["TARGETS", "Array", "FlowSettings", "Look", "Objective", "Point", "as_numpy", "like"]

#: A point's float64 arrays: torch tensors, or numpy arrays where the run imports no torch.
Array = Union["torch.Tensor", np.ndarray]


def as_numpy(array: Array) -> np.ndarray:
    """The numpy array of a point's array (the tensor's own memory, or the array itself)."""
    return array if isinstance(array, np.ndarray) else array.numpy()


def like(kind: Array, array: np.ndarray) -> Array:
    """``array`` as the kind of ``kind``: itself beside a numpy array, wrapped (no copy) beside a tensor."""
    if isinstance(kind, np.ndarray):
        return array
    import torch

    return torch.from_numpy(array)


#: Policies whose value :meth:`Objective.value_of` remembers (the latest).
KNOWN = 8


class FlowSettings(Protocol):
    """What the compiled flow reads of :class:`fsc.optim.GradientFlow`: its settings, passed as one object."""

    max_dgrad: float
    min_dt: float
    most_steps: int


@attrs.frozen(kw_only=True, eq=False)
class Point:
    """Gain, metrics and gradient of the objective at ``w = (logits, init_logits)``.

    The arrays are detached float64 and read-only by convention: torch tensors, or numpy arrays when the
    logits came as numpy arrays (module docstring).

    Attributes:
        architecture: the memory the logits are on.
        logits: ``w_pi``, shape ``(N, C)``.
        init_logits: ``w_0``, shape ``(N,)``.
        gain: the gain at ``w`` (a Python float, exactly the float64 value).
        metrics: name -> value (e.g. ``q``).
        grad_logits: ``d target / d w_pi`` (zero on disallowed choices); the
            target is the gain, or ``gain / r`` (see :class:`Objective`).
        grad_init: ``d target / d w_0`` (zero outside the reset nodes).
    """

    architecture: MemoryArchitecture = attrs.field(repr=False)
    logits: Array
    init_logits: Array
    gain: float
    metrics: dict[str, float]
    grad_logits: Array
    grad_init: Array

    @property
    def grad_norm(self) -> float:
        """Euclidean norm of the whole gradient ``(d/dw_pi, d/dw_0)``."""
        return float(kernels.gradient_norm(as_numpy(self.grad_logits), as_numpy(self.grad_init)))

    def policy(self) -> Policy | Weights:
        """The policy at this point (fresh copies of the logits): a :class:`fsc.Policy`, or its
        :class:`fsc.model.policy.Weights` when the point's arrays are numpy's."""
        if isinstance(self.logits, np.ndarray):
            return Weights(self.architecture, self.logits.copy(), as_numpy(self.init_logits).copy())
        return Policy(architecture=self.architecture, logits=self.logits.clone(), init_logits=self.init_logits.clone())


@attrs.frozen(kw_only=True, eq=False)
class Look:
    """A policy seen through the evaluator in its probabilities: its value and what the solver's steps use.

    Attributes:
        probs, init_probs: the policy's probabilities ``(N, C)`` and ``(N,)``.
        value: the discounted return from the start belief (``gain / r``).
        grad: ``dV/dpi[n, c]``, each probability moved alone: ``sum_s rho(s, n) Q(s, n, c)``.
        grad_init: ``dV/dpi_0[n]``: ``sum_s b0(s) V(s, n)``.
        occupancy: ``rho(n) = sum_s rho(s, n)``, the discounted visits of each node (they sum to ``1 / r``).
        metrics: the world's metrics (``q`` on the two-hypothesis world).
    """

    probs: np.ndarray
    init_probs: np.ndarray
    value: float
    grad: np.ndarray
    grad_init: np.ndarray
    occupancy: np.ndarray
    metrics: dict


@attrs.frozen(kw_only=True, eq=False)
class Objective:
    """``w -> (gain(w), grad gain(w))`` for a world, an architecture and a reset.

    It runs :class:`fsc.evaluate.Evaluator`, the computation of
    :func:`fsc.evaluate` and its backward pass, without autograd's
    bookkeeping: one forward pass and one adjoint solve per call.
    ``engine``: ``auto`` or an engine of :func:`fsc.evaluate` (``dense``,
    ``sparse``, ``power``, ...).

    ``target``: what is climbed, hence the gradient returned: ``gain`` (the
    expected reward per step, docs/model.md) or ``return``, the expected
    discounted return ``G = gain / r`` of paper eq. (4) (the same landscape,
    gradients ``1 / r`` times larger: the same flow with ``t`` measured ``1 / r``
    times more slowly, but a different adaptive path, since ``max_dgrad``
    then bounds changes of the larger gradient).  ``Point.gain`` is the gain
    per step either way.

    ``compiled``: on the dense and choices engines, each evaluation, and each step of the
    gradient flow with its rejected tries, runs as one compiled call
    (:func:`fsc.engines.kernels.fused_value_gradient`, :func:`fsc.engines.kernels.flow_step`)
    that calls LAPACK itself: the same numbers to the last bit, without the
    Python between the solves.  ``False`` runs the evaluator's Python path,
    the reference the compiled one is tested against.

    ``counter``: a one-element list counting the evaluations (points, gradients, looks, values and the compiled
    flow's tries); the shaped objectives of :meth:`shaped` share it (:attr:`evaluations`).
    """

    world: POMDP | Task
    architecture: MemoryArchitecture
    reset: float
    engine: str = "auto"
    convention: str = "native"
    target: str = "gain"
    compiled: bool = True
    counter: list = attrs.field(factory=lambda: [0], repr=False)
    _evaluator: Evaluator = attrs.field(init=False, default=None, repr=False)
    _fused: tuple | None = attrs.field(init=False, default=None, repr=False)
    _variants: dict = attrs.field(init=False, factory=dict, repr=False)
    _known: dict = attrs.field(init=False, factory=dict, repr=False)  # id(policy) -> (policy, value): the last few valued
    _slowest: list = attrs.field(init=False, factory=lambda: [0.0], repr=False)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.engine, str):
            raise InputTypeError(f"engine must be a string, got {self.engine!r}")
        one_of("target", self.target, TARGETS)
        evaluator = Evaluator(self.world, self.architecture, self.reset, self.engine, self.convention)
        object.__setattr__(self, "_evaluator", evaluator)
        if self.compiled:
            object.__setattr__(self, "_fused", evaluator.fused_constants(**{"gain" if self.target == "gain" else "value": 1.0}))

    @property
    def method(self) -> str:
        """The engine that runs (what ``auto`` chose)."""
        return self._evaluator.engine

    @property
    def evaluations(self) -> int:
        """Evaluations so far, of this objective and of its shaped variants (:attr:`counter`)."""
        return self.counter[0]

    @property
    def lowest_reward(self) -> float:
        """The smallest reward of any step: every ``Q`` is at least this over ``r``."""
        return float(self._evaluator.step_reward.min())

    @property
    def reward_scale(self) -> float:
        """The largest ``|reward|`` of a step over ``r``: no value is larger in size."""
        return float(np.abs(self._evaluator.step_reward).max()) / self.reset

    def flat(self, value: float) -> bool:
        """Whether ``value`` is that of a controller that collects (almost) no reward, on a world whose rewards
        have both signs: the flat region where avoiding every reward is a local optimum and the gradient vanishes."""
        rewards = self._evaluator.step_reward
        return bool(rewards.min() < 0 < rewards.max()) and abs(value) <= 1e-6 * self.reward_scale

    def shaped(self, weight: float) -> Objective:
        """The same objective on the world whose negative rewards are multiplied by ``weight`` (built once per
        weight; it shares :attr:`counter`)."""
        if weight not in self._variants:
            pomdp = as_pomdp(self.world)
            world = attrs.evolve(pomdp, reward=np.where(pomdp.reward < 0, weight * pomdp.reward, pomdp.reward), metrics={})
            self._variants[weight] = attrs.evolve(self, world=world, counter=self.counter)
        return self._variants[weight]

    def look(self, probs: np.ndarray, init_probs: np.ndarray) -> Look:
        """Value, gradient in the probabilities and node occupancy of the policy ``(probs, init_probs)``."""
        ev, r = self._evaluator, self.reset
        run = ev.forward_probs(np.ascontiguousarray(probs, dtype=np.float64), np.ascontiguousarray(init_probs, dtype=np.float64))
        grad, grad_init = ev.backward(run, value=1.0, on="probs")
        K, S, N, _ = ev.shape
        occupancy = (run.p.reshape(K, S, N) * ev.chain.part_weights[:, None, None]).sum(axis=(0, 1)) / r
        self.counter[0] += 1
        return Look(probs=probs, init_probs=init_probs, value=run.gain / r, grad=grad, grad_init=grad_init, occupancy=occupancy, metrics=run.metrics)

    def value(self, probs: np.ndarray, init_probs: np.ndarray) -> float:
        """The discounted return ``gain / r`` of the policy ``(probs, init_probs)`` alone (one forward solve)."""
        run = self._evaluator.forward_probs(np.ascontiguousarray(probs, dtype=np.float64), np.ascontiguousarray(init_probs, dtype=np.float64))
        self.counter[0] += 1
        return run.gain / self.reset

    def value_of(self, policy: Policy) -> float:
        """:meth:`value` of a policy; the last :data:`KNOWN` policies valued are not evaluated again (a method's result,
        offered to the portfolio, is the policy it compared with its start)."""
        known = self._known.get(id(policy))
        if known is not None and known[0] is policy:
            return known[1]
        clock = time.monotonic()
        value = self.value(policy.probs().detach().numpy(), policy.init_probs().detach().numpy())
        self._slowest[0] = max(self._slowest[0], time.monotonic() - clock)
        if len(self._known) >= KNOWN:
            self._known.pop(next(iter(self._known)))
        self._known[id(policy)] = (policy, value)
        return value

    @property
    def seconds(self) -> float:
        """The longest :meth:`value_of` measured so far (0 before the first): what one more evaluation is priced at."""
        return self._slowest[0]

    def evaluation(self, policy: Policy) -> Evaluation:
        """:func:`fsc.evaluate` of ``policy`` (the value ``fsc evaluate`` prints, to the bit), on this objective's
        evaluator: its set-up (the chain, the engine's tables) is not paid a second time."""
        if policy.architecture is not self.architecture:
            policy = Policy(architecture=self.architecture, logits=policy.logits, init_logits=policy.init_logits)
        Evaluator.keep(self._evaluator)  # what Evaluator.of gives for these very objects
        return evaluate(self.world, policy, reset=self.reset, engine=self.engine, convention=self.convention)

    def policy(self, probs: np.ndarray, init_probs: np.ndarray) -> Policy:
        """The policy with these probabilities, normalised (zeros become ``-inf`` logits)."""
        probs = probs / probs.sum(axis=1, keepdims=True)
        init_probs = init_probs / init_probs.sum()
        return Policy.from_probs(self.architecture, probs, init_probs)

    def __call__(self, logits: Array, init_logits: Array) -> Point:
        if not isinstance(logits, np.ndarray):
            logits, init_logits = logits.detach(), init_logits.detach()
        self.counter[0] += 1
        evaluator = self._evaluator
        w_pi, w_0 = as_numpy(logits), as_numpy(init_logits)
        top = max(w_pi.max(), w_0.max())  # NaN propagates through max
        if not top < np.inf:
            raise InputError(f"logits must not contain NaN or +inf, got a maximum of {top!r}")
        if self._fused is not None:
            expected, grad_logits, grad_init, ok = kernels.fused_value_gradient(w_pi, w_0, self._fused)
            if not ok:
                raise np.linalg.LinAlgError("I - (1 - r) P is singular")
            return self._point(logits, logits, init_logits, expected, grad_logits, grad_init)
        run = evaluator.forward(w_pi, w_0)
        grad_logits, grad_init = evaluator.backward(run, **{"gain" if self.target == "gain" else "value": 1.0})
        return Point(
            architecture=self.architecture,
            logits=logits,
            init_logits=init_logits,
            gain=run.gain,
            metrics=run.metrics,
            grad_logits=like(logits, grad_logits),
            grad_init=like(logits, grad_init),
        )

    def gradient(self, logits: np.ndarray, init_logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The gradient alone at finite logits, as numpy arrays ``(grad_logits, grad_init)``: the numbers of
        :meth:`__call__`'s point without building it (on the dense and choices engines, one compiled call)."""
        if self._fused is None:
            point = self(logits, init_logits)
            return point.grad_logits, point.grad_init
        _, grad_logits, grad_init, ok = kernels.fused_value_gradient(logits, init_logits, self._fused)
        self.counter[0] += 1
        if not ok:
            raise np.linalg.LinAlgError("I - (1 - r) P is singular")
        return grad_logits, grad_init

    def _point(self, kind: Array, logits, init_logits, expected: np.ndarray, grad_logits: np.ndarray, grad_init: np.ndarray) -> Point:
        """The point of a compiled evaluation, its arrays of the kind of ``kind`` (the logits it started from):
        ``expected`` holds the native expectations of the evaluator's tables."""
        gain, metrics = self._read_out(expected.tolist())
        as_kind = lambda x: x if not isinstance(x, np.ndarray) else like(kind, x)  # noqa: E731
        return Point(
            architecture=self.architecture,
            logits=as_kind(logits),
            init_logits=as_kind(init_logits),
            gain=gain,
            metrics=metrics,
            grad_logits=like(kind, grad_logits),
            grad_init=like(kind, grad_init),
        )

    def _read_out(self, expected: list[float]) -> tuple[float, dict[str, float]]:
        """Gain and metrics from the native expectations of the evaluator's tables (:func:`fsc.evaluate.read_out`)."""
        evaluator = self._evaluator
        native = dict(zip(evaluator.table_names[1:], expected[1:], strict=True))
        gain, metrics = read_out(evaluator.world, evaluator.convention, evaluator.reset, expected[0], native)
        return gain, {name: float(value) for name, value in metrics.items()}

    def flow_step(self, point: Point, dt: float, flow: FlowSettings) -> tuple[Point | None, float, float, int, int] | None:
        """:meth:`fsc.optim.GradientFlow.update`'s search for an accepted step, in one compiled call
        (:func:`fsc.engines.kernels.flow_step`).

        ``None`` when the engine has no compiled evaluation (only the dense and choices engines have one);
        else ``(point, dt, next_dt, evaluations, rejections)``, with ``point`` ``None`` when no step down to
        ``flow.min_dt`` is accepted.  The numbers are those of the step written in Python, to the last bit.
        """
        if self._fused is None:
            return None
        status, *found, dt, next_dt, evaluations, rejections = kernels.flow_step(*self._flow_start(point, dt, flow))
        self.counter[0] += evaluations
        return self._accepted(point.logits, status, *found), dt, next_dt, evaluations, rejections

    def flow_run(self, point: Point, dt: float, flow: FlowSettings, t: float, step: int, until_t: float, max_steps: int, rows: bool = False):
        """Accepted steps of :meth:`flow_step` in one compiled call (:func:`fsc.engines.kernels.flow_run`), until
        ``t >= until_t``, ``step >= max_steps``, a step too small to move ``t``, or ``flow.most_steps`` steps.

        ``None`` when the engine has no compiled evaluation; else ``(point, dt, next_dt, t, step, evaluations,
        rejections, steps)`` after the last accepted step, with ``point`` ``None`` when the first step finds
        none.  ``steps`` is ``None``, or with ``rows`` each accepted step's numbers as columns (lists):
        ``t, step, dt, grad_norm``, ``evaluations`` (tries since the call began), ``clock``
        (:func:`time.clock_gettime` of ``CLOCK_MONOTONIC`` just after the step), ``gain`` and ``metrics``
        (name -> column), the last one being ``point``'s.
        """
        if self._fused is None:
            return None
        most = flow.most_steps
        table = np.empty((most, kernels.ROW_EXPECTED + len(self._evaluator.table_names)) if rows else (0, 0))
        status, *found, dt, next_dt, t, new_step, evaluations, rejections = kernels.flow_run(
            *self._flow_start(point, dt, flow), t, step, until_t, max_steps, most, table
        )
        self.counter[0] += evaluations
        new = self._accepted(point.logits, status, *found)
        steps = self._steps(table[: new_step - step]) if rows and new is not None else None
        return new, dt, next_dt, t, new_step, evaluations, rejections, steps

    def _flow_start(self, point: Point, dt: float, flow: FlowSettings) -> tuple:
        """The leading arguments of the compiled flow: the point, its gradient, ``dt`` and the flow's settings."""
        return (
            as_numpy(point.logits), as_numpy(point.init_logits), as_numpy(point.grad_logits), as_numpy(point.grad_init),
            point.gain, dt, flow.max_dgrad, flow.min_dt, self._evaluator.factor, self._fused,
        )  # fmt: skip

    def _accepted(self, kind: Array, status: int, logits, init_logits, grad_logits, grad_init, expected) -> Point | None:
        """The point a compiled flow call ended on (``None``: it stalled), its arrays of the kind of ``kind``; its
        errors raised as an evaluation's."""
        if status == kernels.STEP_STALLED:
            return None
        if status == kernels.STEP_NOT_FINITE:
            raise InputError(f"logits must not contain NaN or +inf, got a maximum of {max(logits.max(), init_logits.max())!r}")
        if status == kernels.STEP_SINGULAR:
            raise np.linalg.LinAlgError("I - (1 - r) P is singular")
        return self._point(kind, logits, init_logits, expected, grad_logits, grad_init)

    def _steps(self, table: np.ndarray) -> dict:
        """The columns of :meth:`flow_run`'s rows, gain and metrics read out as :meth:`_point` reads them."""
        gains, metrics = self._read_out_rows(table[:, kernels.ROW_EXPECTED :])
        column = lambda j: table[:, j].tolist()  # noqa: E731
        return {
            "t": column(kernels.ROW_T),
            "step": [int(step) for step in column(kernels.ROW_STEP)],
            "dt": column(kernels.ROW_DT),
            "grad_norm": column(kernels.ROW_GRAD_NORM),
            "evaluations": [int(n) for n in column(kernels.ROW_EVALUATIONS)],
            "clock": column(kernels.ROW_CLOCK),
            "gain": gains,
            "metrics": metrics,
        }

    def _read_out_rows(self, expected: np.ndarray) -> tuple[list[float], dict[str, list[float]]]:
        """:meth:`_read_out` of each row of ``expected``, as columns.

        The read-out is elementwise arithmetic (a product by ``1 - r``, then the world's ``paper_metrics``),
        so one pass over float64 columns gives each row's numbers to the last bit, ten times faster than a
        pass per row.  A world whose ``paper_metrics`` refuses an array of gains, or reads it otherwise than
        elementwise (its last row differs from :meth:`_read_out`'s), is read row by row.
        """
        evaluator = self._evaluator
        rows = len(expected)
        if rows:
            native = {name: expected[:, j] for j, name in enumerate(evaluator.table_names[1:], 1)}
            try:
                gain, read = read_out(evaluator.world, evaluator.convention, evaluator.reset, expected[:, 0], native)
                gain = np.broadcast_to(np.asarray(gain, dtype=np.float64), (rows,))
                read = {name: np.broadcast_to(np.asarray(value, dtype=np.float64), (rows,)) for name, value in read.items()}
            except Exception:  # noqa: BLE001 - a paper_metrics written for floats only: row by row below
                read = None
            if read is not None:
                last_gain, last = self._read_out(expected[-1].tolist())
                if (gain[-1], {name: column[-1] for name, column in read.items()}) == (last_gain, last):
                    return gain.tolist(), {name: column.tolist() for name, column in read.items()}
        gains, metrics = [], {}
        for row in expected.tolist():
            gain, read = self._read_out(row)
            gains.append(gain)
            for name, value in read.items():
                metrics.setdefault(name, []).append(value)
        return gains, metrics
