"""Where the methods start: the uniform controller, random ones, and a smaller controller grown into more memory.

:func:`embed` is what makes the value non-decreasing in the memory: a controller on ``RAM(K)`` is a
controller on ``RAM(K')`` (``K' >= K``) that never enters the nodes of memories ``K+1..K'``, with the
same value.
"""

from __future__ import annotations

import numpy as np

from fsc.errors import InputError, InputTypeError
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import RAM
from fsc.model.policy import Policy

__all__ = ["can_embed", "embed", "random_start"]


def random_start(architecture: MemoryArchitecture, rng: np.random.Generator, std: float = 1.0) -> Policy:
    """Gaussian logits of standard deviation ``std``, drawn from ``rng``."""
    N, C = architecture.num_nodes, architecture.num_choices
    return Policy(architecture=architecture, logits=rng.normal(0.0, std, (N, C)), init_logits=rng.normal(0.0, std, N))


def can_embed(small: MemoryArchitecture, large: MemoryArchitecture) -> bool:
    """Whether :func:`embed` maps policies on ``small`` to ``large``: both RAM, the same actions and observations, ``M`` not smaller."""
    return (
        type(small) is RAM and type(large) is RAM and small.arms == large.arms
        and small.observations == large.observations and small.M <= large.M
    )  # fmt: skip


def embed(policy: Policy, architecture: MemoryArchitecture) -> Policy:
    """The policy on ``RAM(K')`` that plays ``policy`` (on ``RAM(K)``, ``K <= K'``) and never uses the memories above ``K``.

    Node ``(i, a, o)`` and choice ``(i', a')`` keep their labels; the new nodes (never reached) play their
    memory's first action and stay there; the new choices have probability 0.  Same value, exactly the same chain
    on the nodes reached.
    """
    small = policy.architecture
    if not isinstance(architecture, MemoryArchitecture):
        raise InputTypeError(f"architecture must be a fsc.MemoryArchitecture, got {architecture!r}")
    if not can_embed(small, architecture):
        raise InputError(
            f"cannot embed a policy on {small!r} into {architecture!r}: both must be RAM of the same actions and observations, the second not smaller"
        )
    K, M, A, O = small.M, architecture.M, small.arms, small.observations
    old, old_init = policy.probs().detach().numpy(), policy.init_probs().detach().numpy()
    probs = np.zeros((architecture.num_nodes, architecture.num_choices))
    probs[np.arange(architecture.num_nodes), np.repeat(np.concatenate([np.arange(M), np.repeat(np.arange(M), A * O)]) * A, 1)] = 1.0
    # Old nodes: blanks 0..K-1 and (i, a, o) for i < K sit at the same labels; choices (i', a') for i' < K too.
    rows = np.concatenate([np.arange(K), M + np.arange(K * A * O)])
    probs[rows] = 0.0
    probs[rows, : K * A] = old
    init = np.zeros(architecture.num_nodes)
    init[:K] = old_init[:K]
    return Policy.from_probs(architecture, probs, init)
