"""The column of confidence policy (paper Definition 3.3, Figure 1C)."""

from __future__ import annotations

import math

import numpy as np

from fsc.errors import InputError, InputTypeError
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import RAM, Chain, Column
from fsc.model.policy import Policy

__all__ = ["ccp", "ccp_probs"]


def _check_eps(eps: object, name: str = "eps") -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise InputTypeError(f"{name} must be a number in (0, 1], got {eps!r}")
    eps = float(eps)
    if not (math.isfinite(eps) and 0 < eps <= 1):
        raise InputError(f"{name} must be in (0, 1], got {eps!r}")
    return eps


def ccp_probs(arch: MemoryArchitecture, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of the CCP on a RAM-like architecture with two arms.

    Memory ``i = 1..M`` and the arm ``X`` being played form column ``X``:

    - after ``+`` in ``(i, X)``: go up to ``(i+1, X)`` (stay at the top ``M``);
    - after ``-`` in ``(i, X)``, ``1 < i < M``: go down to ``(i-1, X)``;
    - after ``-`` at the top: stay with ``1 - eps``, step down with ``eps``
      (for ``M = 1`` stepping down means switching arm);
    - after ``-`` at the bottom ``i = 1``: switch to ``(1, other arm)``;
    - the reset starts in the blank node ``1_``, which plays ``(1, A)`` or
      ``(1, B)`` with probability 1/2; the other blank nodes are never
      reached and play the allowed choices uniformly.

    Returns ``(probs, init_probs)`` of shapes ``(N, C)`` and ``(N,)``.
    """
    eps = _check_eps(eps)
    if not isinstance(arch, (RAM, Chain, Column)) or arch.arms != 2 or arch.observations != 2:
        raise InputError(f"the CCP needs a RAM-like architecture (RAM, Chain, Column) with two arms, got {arch!r}")
    M = arch.M
    probs = np.zeros((arch.num_nodes, arch.num_choices))
    choice = arch.choice_index
    for i in range(1, M + 1):
        for x, other in (("A", "B"), ("B", "A")):
            up = probs[arch.node_index(f"{i}{x}+")]
            up[choice(f"{min(i + 1, M)}{x}")] = 1
            down = probs[arch.node_index(f"{i}{x}-")]
            if i == M:
                step_down = f"{M - 1}{x}" if M > 1 else f"1{other}"
                down[choice(f"{M}{x}")] += 1 - eps
                down[choice(step_down)] += eps
            elif i == 1:
                down[choice(f"1{other}")] = 1
            else:
                down[choice(f"{i - 1}{x}")] = 1
    for i in range(1, M + 1):
        blank = probs[arch.node_index(f"{i}_")]
        if i == 1:
            blank[choice("1A")] = blank[choice("1B")] = 0.5
        else:
            blank[:] = arch.allowed[arch.node_index(f"{i}_")] / arch.allowed[arch.node_index(f"{i}_")].sum()
    not_allowed = (probs > 0) & ~arch.allowed
    if not_allowed.any():
        n, c = np.argwhere(not_allowed)[0]
        raise InputError(f"{arch!r} does not allow the CCP's choice {arch.choice_labels[c]!r} in node {arch.node_labels[n]!r}")
    init = np.zeros(arch.num_nodes)
    init[arch.node_index("1_")] = 1
    return probs, init


def ccp(M: int, eps: float) -> tuple[Column, Policy]:
    """The column of confidence policy with ``M`` memories and exit probability ``eps``.

    Returns the :class:`fsc.Column` architecture and the policy on it; its
    exact ``q`` is :func:`policies.closed_form.ccp_q` (appendix C).
    """
    arch = Column(M)
    probs, init = ccp_probs(arch, eps)
    return arch, Policy.from_probs(arch, probs, init)
