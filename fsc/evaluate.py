"""Exact evaluation of a controller: stationary distribution, gain, metrics."""

from __future__ import annotations

import math
import time

import attrs
import torch

from .chain import joint_chain
from .checks import check_reset
from .errors import InputError, InputTypeError
from .policy import Policy, policy_argument
from .pomdp import POMDP, Task, as_pomdp, paper_read
from .solve import ENGINES, ZERO_RESET_ENGINES, choose_engine

__all__ = ["CONVENTIONS", "Evaluation", "check_reset", "evaluate", "resolve_reset"]

CONVENTIONS = ("native", "paper")


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
    """

    gain: torch.Tensor
    value: torch.Tensor | None
    metrics: dict[str, torch.Tensor]
    distribution: torch.Tensor
    part_weights: torch.Tensor
    engine: str
    residual: float
    convention: str
    reset: float
    seconds: float
    info: dict = attrs.field(factory=dict)

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


def resolve_reset(
    world: POMDP | Task, reset: object = None, discount: object = None, *, allow_zero: bool = True, default: float | None = None
) -> float:
    """The reset ``r`` from ``reset``, or ``discount`` (``r = 1 - discount``), or the world's discount, or ``default``.

    ``reset`` and ``discount`` are two names for one parameter: give at most one.

    Raises:
        ValueError: both given; neither, and the world declares no discount; out of range.
    """
    if reset is not None and discount is not None:
        raise InputError(f"give reset or discount, not both (reset={reset!r}, discount={discount!r}): reset = 1 - discount")
    if discount is not None:
        if isinstance(discount, bool) or not isinstance(discount, (int, float)):
            raise InputTypeError(f"discount must be a number in [0, 1], got {discount!r}")
        if not (math.isfinite(discount) and 0 <= discount <= 1):
            raise InputError(f"discount must be in [0, 1], got {discount!r}")
        return check_reset(1.0 - float(discount), allow_zero=allow_zero)
    if reset is None:
        declared = as_pomdp(world).discount
        if declared is not None:
            return 1.0 - declared
        if default is None:
            raise InputError("give reset= or discount=: the world declares no discount")
        reset = default
    return check_reset(reset, allow_zero=allow_zero)


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


def evaluate(
    world: POMDP | Task,
    policy: Policy,
    *deprecated: Policy,
    reset: float | None = None,
    discount: float | None = None,
    engine: str = "auto",
    convention: str = "native",
) -> Evaluation:
    """Stationary distribution with reset and the gain of a controller.

    With ``p = r (I - (1 - r) P)^{-1} p0`` per closed part (Lemma 2.1):

    - ``native``: ``gain = E_p[reward of the step taken]``, and each metric
      the same expectation of its per-step table (``q``: the probability
      that the arm played is the worse one);
    - ``paper``: the reward is carried by the state it leads to and a reset
      state carries 0, so ``gain = (1 - r) E_p[reward of the step]``; a task
      reads its metrics from that gain (two-hypothesis:
      ``q = (1 - gain / mu) / 2``).

    Both are differentiable in ``policy.logits`` and ``policy.init_logits``.
    ``value = gain / r`` is the discounted return: ``p / r = sum_t gamma^t
    P^t p0`` with ``gamma = 1 - r``, so ``sum p R / r = sum_t gamma^t E[R_t]``.

    ``reset`` and ``discount`` (``r = 1 - discount``) name one parameter;
    given neither, the world's declared discount is used.

    Raises:
        ValueError: bad ``reset`` or ``discount`` (or both given, or neither
            for a world without a discount), unknown engine or convention, a policy on
            another architecture, a world the architecture cannot play in.
    """
    start = time.perf_counter()
    policy = policy_argument("evaluate", policy, deprecated)
    reset = resolve_reset(world, reset, discount)
    if convention not in CONVENTIONS:
        raise InputError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    architecture = policy.architecture
    pomdp = as_pomdp(world)
    chain = joint_chain(pomdp, architecture)
    name = choose_engine(chain, reset) if engine == "auto" else engine
    if name not in ENGINES:
        raise InputError(f"engine must be 'auto' or one of {sorted(ENGINES)}, got {engine!r}")
    if reset == 0 and name not in ZERO_RESET_ENGINES:
        raise InputError(f"reset = 0 (a chain with a single recurrent class) needs one of the engines {sorted(ZERO_RESET_ENGINES)}, got {name!r}")

    probs, init_probs = policy.probs(), policy.init_probs()
    solution = ENGINES[name](chain, probs, init_probs, reset)
    # Each part's exact p sums to 1.  Near r = 0, I - (1 - r) P is nearly
    # singular (condition ~ 1/r) and LU's error lies almost entirely along its
    # near-null vector, which is p itself: a scale error, removed here.  The
    # exact gradient is unchanged (the exact sum is identically 1).
    p = solution.distribution
    p = p / p.sum(dim=1, keepdim=True)
    weights = torch.tensor(chain.part_weights)

    def expectation(table) -> torch.Tensor:
        return (weights * (p * chain.expected_step(table, probs)).sum(dim=1)).sum()

    gain = expectation(chain.step_reward)
    metrics = {name_: expectation(table) for name_, table in chain.step_metrics.items()}
    gain, metrics = read_out(world, convention, reset, gain, metrics)
    K, S = chain.num_parts, chain.states_per_part
    return Evaluation(
        gain=gain,
        value=gain / reset if reset > 0 else None,
        metrics=metrics,
        distribution=p.reshape(K, S, architecture.num_nodes),
        part_weights=weights,
        engine=name,
        residual=solution.residual,
        convention=convention,
        reset=reset,
        seconds=time.perf_counter() - start,
        info=solution.info,
    )
