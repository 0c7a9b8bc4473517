"""Exact evaluation of a controller: stationary distribution, gain, metrics.

:func:`evaluate` hands back tensors (differentiable, through torch's autograd); :func:`evaluate_weights` the same
numbers as floats and arrays from a policy's numpy logits, without importing torch (the commands that compute
no gradient: ``fsc evaluate``, ``draw``).  torch is imported by the functions that make a tensor.
"""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, ClassVar

import attrs
import numpy as np

from fsc.checks import CONVENTIONS, check_reset, flag
from fsc.engines import small
from fsc.engines.estimate import check_sizes
from fsc.engines.registry import ENGINES, check_engine, choose_engine, registry_version
from fsc.errors import InputError
from fsc.lazy import module
from fsc.model.architecture import MemoryArchitecture
from fsc.model.policy import Policy, Weights, check_policy
from fsc.model.pomdp import POMDP, Task, as_pomdp, paper_read, resolve_reset

if TYPE_CHECKING:
    import torch

    from fsc.engines.sparse import Backend

#: The compiled loops (numba), loaded by the first evaluation that runs them: a tiny chain evaluated once by
#: numpy (:mod:`fsc.engines.small`) never loads them.
kernels = module("fsc.engines.kernels")

__all__ = [
    "CONVENTIONS", "Evaluation", "Evaluator", "Light", "Pass", "Values", "check_reset", "evaluate", "evaluate_weights", "read_out", "resolve_reset",
]  # fmt: skip


@attrs.frozen(kw_only=True, eq=False)
class Evaluation:
    """The result of :func:`evaluate`; tensors keep their autograd graph.

    Attributes:
        gain: expected reward per step (a 0-d tensor).
        value: ``gain / reset``, the expected discounted return with discount
            ``1 - reset`` from the initial belief and initial node (native
            convention; paper Lemma 2.1); in the ``paper`` convention each
            reward is discounted once more (``gamma`` times the return).
            None at ``reset = 0``.
        metrics: name -> 0-d tensor, e.g. ``q`` for the two-hypothesis task.
        distribution: ``p[k, s, n]``, stationary distribution of each closed
            part ``k`` of the world (local world state ``s``, node ``n``);
            each part sums to 1.
        part_weights: ``(K,)`` initial mass of each part.
        engine: the engine that ran; residual: its ``max |p - (1-r) P p - r p0|``.
        convention: ``native`` or ``paper`` (docs/model.md).
        seconds: wall time of the evaluation.
        grad_logits, grad_init_logits: with ``evaluate(..., gradient=True)``,
            ``d gain / d policy.logits`` ``(N, C)`` and ``d gain / d policy.init_logits``
            ``(N,)``, the bits ``gain.backward()`` would leave in ``.grad``
            (then nothing carries a graph); else None.
    """

    gain: torch.Tensor
    metrics: dict[str, torch.Tensor]
    distribution: torch.Tensor
    part_weights: torch.Tensor
    engine: str
    convention: str
    reset: float
    seconds: float
    info: dict = attrs.field(factory=dict)
    grad_logits: torch.Tensor | None = attrs.field(default=None, repr=False)
    grad_init_logits: torch.Tensor | None = attrs.field(default=None, repr=False)
    _run: Pass | Light = attrs.field(repr=False, alias="run")

    @functools.cached_property
    def value(self) -> torch.Tensor | None:
        """``gain / reset`` (differentiable), or None at ``reset = 0``."""
        return self.gain / self.reset if self.reset > 0 else None

    @property
    def residual(self) -> float:
        """The engine's ``max |p - (1-r) P p - r p0|``, computed on first use."""
        return self._run.residual

    def summary(self) -> dict:
        """Plain numbers (JSON-able)."""
        return {
            "gain": float(self.gain.detach()),
            "value": None if self.value is None else float(self.value.detach()),
            **{name: float(value.detach()) for name, value in self.metrics.items()},
            "engine": self.engine,
            "residual": self.residual,
            "info": dict(self.info),  # e.g. iterations, or a fallback to sparse LU
            "convention": self.convention,
            "reset": self.reset,
            "seconds": self.seconds,
        }


def read_out(world: object, convention: str, reset: float, gain, metrics: dict):
    """The gain and metrics a convention reports, from their native stationary expectations.

    ``native``: as they are.  ``paper``: the gain times ``1 - r`` (each state
    carries the reward of the step that led to it, and a reset state carries
    none: docs/model.md); the metrics read from that gain by the world's own
    ``paper_metrics`` when it has one, else each times ``1 - r``.  Floats and
    tensors alike; used by :func:`evaluate` and by training.
    """
    if convention == "native":
        return gain, dict(metrics)
    gain = (1 - reset) * gain
    read = paper_read(world, gain)
    return gain, (dict(read) if read is not None else {name: (1 - reset) * value for name, value in metrics.items()})


class Evaluator:
    """Value, metrics and exact gradient of any policy on one world, architecture, reset, engine and convention.

    The one place where they are computed: :func:`evaluate` runs it under
    autograd (its backward pass is :meth:`backward`), training calls
    :meth:`forward` and :meth:`backward` directly.  Per closed part ``k``,
    with ``A = I - (1 - r) P`` (``P[x2, x]``: probability of ``x -> x2``) and
    the engine's solver for ``A`` and ``A^T`` (:meth:`fsc.engines.engine.Engine.factor`):

    .. math::

        p = r A^{-1} p_0, \\quad \\hat p = p / \\textstyle\\sum p, \\quad
        E[T] = \\sum_k w_k \\, f_k \\cdot \\hat p_k, \\quad
        f_k[(s, n)] = \\sum_c \\pi[n, c] \\, T_k[s, c]

    for the reward and each metric table ``T``, read out by :func:`read_out`;
    for a loss ``L`` of those, with ``lambda = A^{-T} dL/dp``:
    ``dL/dP = (1 - r) lambda p^T``, ``dL/dp0 = r lambda``, then through the
    softmaxes to the logits.  Everything outside the engine's solves runs in
    a few compiled loops (:mod:`fsc.engines.kernels`) on tables the chain lays out
    once, so that a call on a small chain (RAM M = 8: two parts of 40 states)
    costs a few microseconds more than its LU.  On an engine with a compiled path
    (:meth:`fsc.engines.engine.Engine.fused_constants`: dense and choices)
    :meth:`forward_compiled` is the training path's compiled forward pass, whose
    factors :meth:`backward` reuses in one compiled adjoint pass.

    The engine is an object of :data:`fsc.engines.registry.ENGINES`, picked by
    :func:`fsc.engines.registry.choose_engine`; :attr:`engine` is its name.
    """

    _last: ClassVar[Evaluator | None] = None

    def __init__(self, world: POMDP | Task, architecture: MemoryArchitecture, reset: float, engine: str = "auto", convention: str = "native"):
        if convention not in CONVENTIONS:
            raise InputError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
        check_engine(engine)
        pomdp = as_pomdp(world)
        check_sizes(pomdp, architecture)
        chosen = choose_engine(pomdp, architecture, reset, engine)
        if reset == 0 and not chosen.zero_reset:
            zero = sorted(name for name, e in ENGINES.items() if e.zero_reset)
            raise InputError(f"reset = 0 (a chain with a single recurrent class) needs one of the engines {zero}, got {chosen.name!r}")
        self.operator = chosen.operator(pomdp, architecture)  # the joint chain, or the large engine's tables
        chain = chosen.frame(self.operator)
        self.world, self.architecture, self.chain, self.reset, self.engine, self.convention = world, architecture, chain, reset, chosen.name, convention
        self.kind = chosen  # the engine object (fsc.engines.engine.Engine), whose methods run the solves
        self.key = (reset, engine, convention, registry_version())
        K, S, N, C = chain.num_parts, chain.states_per_part, architecture.num_nodes, architecture.num_choices
        self.shape = (K, S, N, C)
        self.step_reward = np.ascontiguousarray(chain.step_reward, dtype=np.float64).reshape(K * S, C)
        self.step_metrics = {name_: np.ascontiguousarray(table, dtype=np.float64).reshape(K * S, C) for name_, table in chain.step_metrics.items()}
        # The read-out's slope: the gain reported is ``factor`` times the native one; a world with
        # its own paper read-out derives its metrics from that gain, the others scale theirs alike.
        self.factor = 1.0 if convention == "native" else 1 - reset
        self.derived_metrics = convention == "paper" and callable(getattr(world, "paper_metrics", None))
        # The tables whose expectations the forward pass reads: the reward, then the metrics it reports natively.
        self.table_names = ("", *(() if self.derived_metrics else self.step_metrics))
        self.compiled_constants = None  # fused_constants of forward_compiled, laid out on its first call
        self.tables = np.stack([self.step_reward, *(self.step_metrics[name_] for name_ in self.table_names[1:])])

    @classmethod
    def of(cls, world: POMDP | Task, architecture: MemoryArchitecture, reset: float, engine: str = "auto", convention: str = "native") -> Evaluator:
        """The evaluator for these arguments: the previous one when they are the same objects (a loop of
        evaluations does not lay out its tables each time); only the latest is kept, so it holds at
        most one chain alive, the one the chain cache keeps anyway."""
        last = cls._last
        if last is not None and last.world is world and last.architecture is architecture and last.key == (reset, engine, convention, registry_version()):
            return last
        evaluator = cls(world, architecture, reset, engine, convention)
        cls._last = evaluator
        return evaluator

    @classmethod
    def keep(cls, evaluator: Evaluator) -> None:
        """Make ``evaluator`` the one :meth:`of` gives next for its own arguments (a caller that built it already
        and wants :func:`evaluate`'s read-out without paying the set-up again)."""
        cls._last = evaluator

    def forward(self, w_pi: np.ndarray, w_0: np.ndarray) -> Pass:
        """Value and metrics at ``(w_pi, w_0)`` (logits ``(N, C)`` and ``(N,)``, no NaN or ``+inf``), and what :meth:`backward` needs."""
        arch = self.architecture
        probs, init_probs = kernels.policy_probs(w_pi, arch.allowed, w_0, arch.reset_mask)
        return self.forward_probs(probs, init_probs)

    def forward_compiled(self, w_pi: np.ndarray, w_0: np.ndarray, gradient: bool = False) -> Pass:
        """:meth:`forward` in one compiled call on the dense and choices engines (:func:`fsc.engines.kernels.fused_forward`,
        the training path's own kernel: the same numbers to the last bit), keeping the LU factors for
        :meth:`backward`'s transposed solve; the other engines run :meth:`forward`.

        ``gradient``: in the same call, :meth:`backward` with ``gain = 1`` (the training path's gradient), kept
        as :attr:`Pass.gradient`, for a caller that will most likely ask for it (``fsc.evaluate`` under autograd).
        """
        if self.compiled_constants is None:
            self.compiled_constants = self.fused_constants(gain=1.0)
        if self.compiled_constants is None:  # an engine without a compiled path
            return self.forward(w_pi, w_0)
        if gradient:
            probs, init_probs, lu, pivots, p, p_hat, total, expected, ok, *found = kernels.fused_forward_gradient(w_pi, w_0, self.compiled_constants)
        else:
            probs, init_probs, lu, pivots, p, p_hat, total, expected, ok = kernels.fused_forward(w_pi, w_0, self.compiled_constants)
            found = None
        if not ok:
            raise np.linalg.LinAlgError("I - (1 - r) P is singular")
        gain, metrics = self._read_out(expected)
        return Pass(
            probs=probs,
            init_probs=init_probs,
            backend=_Factors(self, lu, pivots, probs, init_probs),
            p=p,
            total=total,
            p_hat=p_hat,
            gain=gain,
            metrics=metrics,
            gradient=found,
        )

    def forward_gradient(self, w_pi: np.ndarray, w_0: np.ndarray) -> Pass | Light:
        """The forward pass of ``fsc.evaluate`` under autograd, with the gain's gradient.

        On the dense and choices engines one compiled call (:func:`fsc.engines.kernels.fused_value_gradient_distribution`,
        the training path's numbers) that hands back only the read-out, ``p_hat`` and the gradient: a
        :class:`Light` pass, which computes the rest again (the factors another backward pass needs, the
        residual) from copies of the logits if it is ever asked.  The other engines: :meth:`forward`.
        """
        if self.compiled_constants is None:
            self.compiled_constants = self.fused_constants(gain=1.0)
        if self.compiled_constants is None:  # an engine without a compiled path
            return self.forward(w_pi, w_0)
        expected, p_hat, grad_logits, grad_init, ok = kernels.fused_value_gradient_distribution(w_pi, w_0, self.compiled_constants)
        if not ok:
            raise np.linalg.LinAlgError("I - (1 - r) P is singular")
        gain, metrics = self._read_out(expected)
        return Light(self, w_pi.copy(), w_0.copy(), gain, metrics, p_hat, (grad_logits, grad_init))

    def _read_out(self, expected: np.ndarray) -> tuple[float, dict[str, float]]:
        """Gain and metrics (:func:`read_out`) from the native expectations of :attr:`tables`."""
        expected = expected.tolist()
        native = dict(zip(self.table_names[1:], expected[1:], strict=True))
        gain, metrics = read_out(self.world, self.convention, self.reset, expected[0], native)
        return gain, {name: float(value) for name, value in metrics.items()}

    def forward_probs(self, probs: np.ndarray, init_probs: np.ndarray) -> Pass:
        """:meth:`forward` from the probabilities ``(N, C)`` and ``(N,)`` themselves (checked by the caller)."""
        chain, r = self.chain, self.reset
        K, S, N, C = self.shape
        p0 = (chain.initial_world[:, :, None] * init_probs).reshape(K, S * N)
        backend = self.kind.factor(self.operator, probs, p0, r)
        p = backend.solve()
        # Each part's exact p sums to 1.  Near r = 0, A is nearly singular (condition ~ 1/r) and LU's
        # error lies almost entirely along its near-null vector, which is p itself: a scale error,
        # removed by p_hat = p / sum p.  The exact gradient is unchanged (the exact sum is identically 1).
        p_hat, total, expected = kernels.expectations(p, chain.part_weights, probs, self.tables, S, N)
        gain, metrics = self._read_out(expected)
        return Pass(probs=probs, init_probs=init_probs, backend=backend, p=p, total=total, p_hat=p_hat, gain=gain, metrics=metrics)

    def backward(
        self,
        run: Pass,
        *,
        gain: float = 0.0,
        value: float = 0.0,
        metrics: dict[str, float] | None = None,
        distribution: np.ndarray | None = None,
        on: str = "logits",
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(dL/dw_pi, dL/dw_0)`` for ``L = gain * G + value * V + sum metrics[m] * m + distribution . p_hat``.

        The weights are those of the read-out quantities of :meth:`forward`
        (``p_hat`` of shape ``(K, X)``); by the adjoint method, one solve with ``A^T``.
        ``on="probs"``: the gradient with respect to the probabilities ``(pi, pi_0)``
        instead, each entry moved alone (before the softmax).
        """
        if isinstance(run, Light):
            run = run.full
        chain, r = self.chain, self.reset
        K, S, N, C = self.shape
        metrics = {name: weight for name, weight in (metrics or {}).items() if weight}
        seed = gain + (value / r if value else 0.0)  # on the gain read out
        if metrics and self.derived_metrics:  # metrics read from the gain: their slope by autograd on one scalar
            import torch

            with torch.enable_grad():  # also inside autograd's own backward pass
                read = torch.tensor(run.gain, dtype=torch.float64, requires_grad=True)
                derived = paper_read(self.world, read)
                outputs = [derived[name] for name in metrics]
                (slope,) = torch.autograd.grad(outputs, [read], [torch.tensor(w, dtype=torch.float64) for w in metrics.values()])
            seed, metrics = seed + float(slope), {}
        if metrics or distribution is not None:
            table = self.factor * seed * self.step_reward
            for name, weight in metrics.items():
                table = table + self.factor * weight * self.step_metrics[name]
            scale = 1.0
        else:  # the gain alone: scale the result, not the tables (training's case)
            table, scale = self.step_reward, self.factor * seed
        none = _NO_SEED if distribution is None else np.ascontiguousarray(distribution, dtype=np.float64).reshape(K, S * N)
        if isinstance(run.backend, _Factors):  # the compiled adjoint pass on the compiled forward pass's factors
            backend = run.backend
            return kernels.fused_backward(
                self.compiled_constants, run.probs, run.init_probs, backend.lu, backend.pivots, run.p, run.p_hat, run.total, table, none, scale, on == "probs"
            )
        lam = run.backend.solve_adjoint(kernels.adjoint_seed(run.p_hat, run.total, chain.part_weights, run.probs, table, none, S, N))
        d_probs = self.kind.transition_gradient(self.operator, run.backend, lam, run.p, r)
        return kernels.policy_gradient_from(
            d_probs, lam, run.p_hat, chain.part_weights, run.probs, run.init_probs, table, r, chain.initial_world, S, N, scale, on == "probs"
        )

    def fused_constants(self, *, gain: float = 0.0, value: float = 0.0) -> tuple | None:
        """The tables of :func:`fsc.engines.kernels.fused_value_gradient` for the loss ``gain * G + value * V``: the
        engine's :class:`fsc.engines.kernels.Fused` as the plain tuple the kernels take fastest
        (:func:`fsc.engines.kernels.plain`; they name its fields again on entry).

        ``None`` when the engine has no compiled path (:meth:`fsc.engines.engine.Engine.fused_constants`: all but dense and choices).
        """
        seed = gain + (value / self.reset if value else 0.0)  # as in backward
        fused = self.kind.fused_constants(self.operator, self.architecture, self.tables, self.step_reward, self.reset, self.factor * seed)
        return None if fused is None else kernels.plain(fused)


_NO_SEED = np.zeros((0, 0))


class _Factors:
    """The backend of :meth:`Evaluator.forward_compiled`: the LU factors its adjoint pass reuses, and the residual when asked."""

    def __init__(self, evaluator: Evaluator, lu: np.ndarray, pivots: np.ndarray, probs: np.ndarray, init_probs: np.ndarray):
        self.evaluator, self.lu, self.pivots, self.probs, self.init_probs = evaluator, lu, pivots, probs, init_probs
        self.info = {}

    def residual(self, p: np.ndarray) -> float:
        evaluator = self.evaluator
        chain, (K, S, N, _) = evaluator.chain, evaluator.shape
        values = self.probs.reshape(-1)[chain.node_choice] * chain.weight
        p0 = (chain.initial_world[:, :, None] * self.init_probs).reshape(K, S * N)
        from fsc.engines.sparse import stationary_residual

        return stationary_residual(chain, values, p, p0, evaluator.reset)


@attrs.frozen(kw_only=True, eq=False)
class Pass:
    """One forward pass of :class:`Evaluator`: the read-out and what the backward pass reuses."""

    probs: np.ndarray
    init_probs: np.ndarray
    backend: Backend
    p: np.ndarray
    total: np.ndarray
    p_hat: np.ndarray
    gain: float
    metrics: dict[str, float]
    #: ``(dG/dw_pi, dG/dw_0)`` of the gain read out, when the forward pass computed it (:meth:`Evaluator.forward_compiled`).
    gradient: tuple[np.ndarray, np.ndarray] | None = None

    @functools.cached_property
    def residual(self) -> float:
        """``max |p - (1 - r) P p - r p0|`` (computed when asked)."""
        return self.backend.residual(self.p)

    @property
    def info(self) -> dict:
        """What the engine reports beyond the numbers (iterations, a fallback)."""
        return self.backend.info


class Light:
    """A forward pass of :meth:`Evaluator.forward_gradient`: the read-out, ``p_hat`` and the gain's gradient.

    What else a :class:`Pass` holds (the LU factors for another backward pass, the residual) is in :attr:`full`,
    the same pass computed again (:meth:`Evaluator.forward_compiled`, the same bits) from copies of the logits,
    when first asked.
    """

    __slots__ = ("_full", "evaluator", "gain", "gradient", "metrics", "p_hat", "w_0", "w_pi")

    def __init__(self, evaluator: Evaluator, w_pi: np.ndarray, w_0: np.ndarray, gain: float, metrics: dict[str, float], p_hat: np.ndarray,
                 gradient: tuple[np.ndarray, np.ndarray]) -> None:  # fmt: skip
        self.evaluator, self.w_pi, self.w_0, self.gain, self.metrics, self.p_hat, self.gradient = evaluator, w_pi, w_0, gain, metrics, p_hat, gradient
        self._full = None

    @property
    def full(self) -> Pass:
        if self._full is None:
            self._full = self.evaluator.forward_compiled(self.w_pi, self.w_0)
        return self._full

    @property
    def residual(self) -> float:
        return self.full.residual

    @property
    def info(self) -> dict:
        return {}  # the compiled engines report nothing more


def _scalar(x: float) -> torch.Tensor:
    import torch

    return torch.from_numpy(np.array(x, dtype=np.float64))  # 4x faster than torch.tensor(x)


def _outputs(run: Pass | Light, evaluator: Evaluator) -> tuple[torch.Tensor, ...]:
    """The gain, each metric and ``p_hat`` ``(K, S, N)`` of a forward pass, as tensors (what :func:`_autograd`'s function outputs)."""
    import torch

    return (_scalar(run.gain), *map(_scalar, run.metrics.values()), torch.from_numpy(run.p_hat.reshape(evaluator.shape[:3])))


@functools.cache
def _autograd() -> type:
    """Autograd around :class:`Evaluator` (a ``torch.autograd.Function``, made when first asked: torch is
    imported then): outputs the gain, each metric and ``p_hat``."""
    import torch

    class _Evaluate(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, init_logits, evaluator, box):
            ctx.set_materialize_grads(False)
            w_pi, w_0 = logits.detach().numpy(), init_logits.detach().numpy()
            run = evaluator.forward_gradient(w_pi, w_0) if box["gradient"] else evaluator.forward_compiled(w_pi, w_0)
            box["run"] = ctx.run = run
            ctx.evaluator, ctx.gradient = evaluator, run.gradient
            return _outputs(run, evaluator)

        @staticmethod
        def backward(ctx, grad_gain, *grads):
            if ctx.gradient is not None and grads.count(None) == len(grads) and grad_gain is not None and not torch.is_grad_enabled():
                if grad_gain.item() == 1.0:
                    # gain.backward(): the forward pass's gradient, the same bits; handed out once, since the leaves
                    # may keep these arrays as their .grad and add to them in place.  (Grad mode is on only for
                    # create_graph=True: then the general path, which refuses a second derivative.)
                    (grad_logits, grad_init), ctx.gradient = ctx.gradient, None
                    return torch.from_numpy(grad_logits), torch.from_numpy(grad_init), None, None
            return _Evaluate.adjoint(ctx, grad_gain, *grads)

        @staticmethod
        @torch.autograd.function.once_differentiable
        def adjoint(ctx, grad_gain, *grads):
            """The backward pass for any weights of the outputs: one adjoint solve (:meth:`Evaluator.backward`)."""
            evaluator, run = ctx.evaluator, ctx.run
            grad_metrics, grad_distribution = grads[:-1], grads[-1]
            grad_logits, grad_init = evaluator.backward(
                run,
                gain=_number(grad_gain),
                metrics={name: _number(g) for name, g in zip(run.metrics, grad_metrics, strict=True)},
                distribution=None if grad_distribution is None else grad_distribution.numpy(),
            )
            return torch.from_numpy(grad_logits), torch.from_numpy(grad_init), None, None

    return _Evaluate


def _number(g) -> float:
    return 0.0 if g is None else float(g)


def evaluate(
    world: POMDP | Task,
    policy: Policy,
    *,
    reset: float | None = None,
    discount: float | None = None,
    engine: str = "auto",
    convention: str = "native",
    gradient: bool = False,
) -> Evaluation:
    """Stationary distribution with reset and the gain of a controller.

    With ``p = r (I - (1 - r) P)^{-1} p0`` per closed part (Lemma 2.1):

    - ``native``: ``gain = E_p[reward of the step taken]``, and each metric the same expectation of its per-step
      table (``q``: the probability that the arm played is the worse one);
    - ``paper``: the reward is carried by the state it leads to and a reset state carries 0, so
      ``gain = (1 - r) E_p[reward of the step]``; a task reads its metrics from that gain (two-hypothesis:
      ``q = (1 - gain / mu) / 2``).

    Everything it returns is differentiable in ``policy.logits`` and ``policy.init_logits``; the backward pass is
    the adjoint method of :class:`Evaluator` (one more solve with the factors of the forward pass), the same
    computation training runs.  ``value = gain / r`` is the discounted return: ``p / r = sum_t gamma^t P^t p0``
    with ``gamma = 1 - r``, so ``sum p R / r = sum_t gamma^t E[R_t]``.  ``reset`` and ``discount``
    (``r = 1 - discount``) name one parameter; given neither, the world's declared discount is used.

    ``gradient=True``: the gradient of the gain alone, without autograd, as :attr:`Evaluation.grad_logits` and
    :attr:`Evaluation.grad_init_logits` (the same bits ``gain.backward()`` gives), and no output carries a graph;
    it spares the cost of torch's autograd (about 20-30 µs a call, as much as the whole value and gradient of
    RAM M = 8).  On the dense and choices engines both passes are the training path's compiled kernel
    (:meth:`Evaluator.forward_compiled`); when the logits require a gradient, or with ``gradient=True``, the
    forward pass is the training path's very call (:meth:`Evaluator.forward_gradient`), whose gradient of the
    gain ``gain.backward()`` hands over.

    Raises:
        ValueError: bad ``reset`` or ``discount`` (or both given, or neither for a world without a discount),
            unknown engine or convention, a policy on another architecture, a world the architecture cannot play in.
    """
    start = time.perf_counter()
    check_policy(policy)
    flag("gradient", gradient)
    reset = resolve_reset(world, reset, discount)
    evaluator = Evaluator.of(world, policy.architecture, reset, engine, convention)
    run, (gain, *outputs, distribution), gradients = _run(evaluator, policy, gradient)
    import torch

    return Evaluation(
        gain=gain,
        metrics=dict(zip(run.metrics, outputs, strict=True)),
        distribution=distribution,
        part_weights=torch.from_numpy(evaluator.chain.part_weights.astype(np.float64)),
        engine=evaluator.engine,
        run=run,
        convention=convention,
        reset=reset,
        seconds=time.perf_counter() - start,
        info=run.info,
        **gradients,
    )


def _run(evaluator: Evaluator, policy: Policy, gradient: bool) -> tuple[Pass | Light, tuple[torch.Tensor, ...], dict[str, torch.Tensor]]:
    """The pass of :func:`evaluate`: the run, its outputs (:func:`_outputs`) and, with ``gradient``, the gain's gradient."""
    import torch

    if not gradient:  # under autograd the gradient of the gain comes with the forward pass, in the same compiled call
        box: dict = {"gradient": torch.is_grad_enabled() and (policy.logits.requires_grad or policy.init_logits.requires_grad)}
        outputs = _autograd().apply(policy.logits, policy.init_logits, evaluator, box)
        return box["run"], outputs, {}
    # outside autograd: the gain's gradient from the same pass, no graph
    run = evaluator.forward_gradient(policy.logits.detach().numpy(), policy.init_logits.detach().numpy())
    found = run.gradient
    if found is None:  # an engine without the compiled pass: its adjoint solve, as gain.backward() calls it
        found = evaluator.backward(run, gain=1.0, metrics=dict.fromkeys(run.metrics, 0.0))
    return run, _outputs(run, evaluator), {"grad_logits": torch.from_numpy(found[0]), "grad_init_logits": torch.from_numpy(found[1])}


@attrs.frozen(kw_only=True, eq=False)
class Values:
    """The result of :func:`evaluate_weights`: :class:`Evaluation`'s numbers as floats and arrays, no graph.

    Attributes:
        gain, value, metrics, engine, convention, reset, seconds, info: as in :class:`Evaluation`.
        distribution: ``p_hat[k, s, n]`` (each part sums to 1); part_weights: ``(K,)``.
    """

    gain: float
    value: float | None
    metrics: dict[str, float]
    distribution: np.ndarray
    part_weights: np.ndarray
    engine: str
    convention: str
    reset: float
    seconds: float
    info: dict = attrs.field(factory=dict)
    _run: Pass | small.NumpyPass = attrs.field(repr=False, alias="run")

    @property
    def residual(self) -> float:
        """The engine's ``max |p - (1-r) P p - r p0|``, computed on first use."""
        return self._run.residual

    def occupancy(self) -> np.ndarray:
        """Stationary mass of each memory node, ``(N,)``: the parts' distributions weighted and summed."""
        return np.einsum("ksn,k->n", self.distribution, self.part_weights)


def evaluate_weights(
    world: POMDP | Task,
    weights: Weights,
    *,
    reset: float | None = None,
    discount: float | None = None,
    engine: str = "auto",
    convention: str = "native",
) -> Values:
    """:func:`evaluate` of a policy given by its numpy logits (:class:`fsc.model.policy.Weights`, e.g. from
    :func:`fsc.model.policy.read_policy_file`), without torch: the same forward pass, the same numbers as floats.

    ``engine="auto"`` on a tiny chain (:func:`fsc.engines.small.fits`) evaluates with numpy alone (engine
    ``numpy``), loading no compiled kernel; the same numbers as the compiled engines to rounding.

    Raises:
        ValueError, TypeError: as :func:`evaluate`.
    """
    start = time.perf_counter()
    reset = resolve_reset(world, reset, discount)
    architecture, logits, init_logits = weights
    check_engine(engine)
    tiny = engine == "auto" and small.fits(as_pomdp(world), architecture, reset)  # numpy: no compiled kernels to load
    evaluator = Evaluator.of(world, architecture, reset, "dense" if tiny else engine, convention)
    if tiny:
        run = small.forward(evaluator.chain, weights.probs(), weights.init_probs(), reset, evaluator.tables)
        gain, metrics = evaluator._read_out(run.expected)
    else:
        run = evaluator.forward_compiled(np.ascontiguousarray(logits, dtype=np.float64), np.ascontiguousarray(init_logits, dtype=np.float64))
        gain, metrics = run.gain, run.metrics
    return Values(
        gain=gain,
        value=gain / reset if reset > 0 else None,
        metrics=dict(metrics),
        distribution=run.p_hat.reshape(evaluator.shape[:3]),
        part_weights=evaluator.chain.part_weights.astype(np.float64),
        engine=small.NAME if tiny else evaluator.engine,
        convention=convention,
        reset=reset,
        seconds=time.perf_counter() - start,
        info=run.info,
        run=run,
    )
