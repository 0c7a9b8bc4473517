"""Where the methods start: the uniform controller, random ones, and a smaller controller grown into more memory.

Two ways make the value non-decreasing in the memory, each giving a controller on ``RAM(K')`` (``K' >= K``)
with exactly the value of one on ``RAM(K)``: :func:`embed` never enters the memories ``K+1..K'``;
:func:`split` makes each new memory a copy of an old one and shares the entries of each old memory
between its copies in random proportions.  A copy behaves as its original, so the value is the same;
but its nodes are reached at other beliefs, so the methods can make the copies differ (on ``hallway``
from ``RAM(4)`` to ``RAM(8)`` this climbs from 0.830 to above 0.9, where :func:`embed` stays at 0.838).
"""

from __future__ import annotations

import numpy as np

from fsc.errors import InputError, InputTypeError
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import RAM
from fsc.model.policy import Policy

__all__ = ["can_embed", "embed", "random_start", "split"]


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


def _check_growth(small: MemoryArchitecture, architecture: object) -> None:
    if not isinstance(architecture, MemoryArchitecture):
        raise InputTypeError(f"architecture must be a fsc.MemoryArchitecture, got {architecture!r}")
    if not can_embed(small, architecture):
        raise InputError(
            f"cannot embed a policy on {small!r} into {architecture!r}: both must be RAM of the same actions and observations, the second not smaller"
        )


def embed(policy: Policy, architecture: MemoryArchitecture) -> Policy:
    """The policy on ``RAM(K')`` that plays ``policy`` (on ``RAM(K)``, ``K <= K'``) and never uses the memories above ``K``.

    Node ``(i, a, o)`` and choice ``(i', a')`` keep their labels; the new nodes (never reached) play their
    memory's first action and stay there; the new choices have probability 0.  Same value, exactly the same chain
    on the nodes reached.
    """
    small = policy.architecture
    _check_growth(small, architecture)
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


def split(policy: Policy, architecture: MemoryArchitecture, rng: np.random.Generator) -> Policy:
    """The policy on ``RAM(K')`` whose memory ``m`` is a copy of ``policy``'s memory ``m mod K`` (``K <= K'``), with the same value.

    Every node ``(m, a, o)`` (and blank ``m``) plays the rules of ``(m mod K, a, o)``; where the original
    chooses memory ``j``, the copy chooses among the copies of ``j``, in proportions drawn from ``rng``
    (each at least a fifth of the most likely); the start is shared alike.  Which copy is entered does not
    change what happens next, so the value is exactly the original's, whatever the proportions; they only
    decide where each copy is reached, which is what lets the methods make the copies differ.
    """
    small = policy.architecture
    _check_growth(small, architecture)
    K, M, A = small.M, architecture.M, small.arms
    old, old_init = policy.probs().detach().numpy(), policy.init_probs().detach().numpy()
    source = np.arange(M) % K  # memory m of the large controller copies memory source[m]
    N, per = architecture.num_nodes, A * small.observations  # per: the nodes (a, o) of one memory
    memory, _ = architecture.memory_and_arm
    node = np.arange(N)
    # blank m -> blank source[m]; (m, a, o) -> (source[m], a, o), at the same place among its memory's nodes
    old_node = np.where(node < M, source[memory], K + source[memory] * per + (node - M - memory * per))
    share = rng.uniform(0.2, 1.0, (N + 1, M))  # the last row: the start
    total = np.zeros((N + 1, K))
    np.add.at(total.T, source, share.T)
    fraction = share / total[:, source]  # each row: the copies of each old memory share 1
    # choice (m', a) of node n: the old node's probability of (source[m'], a), times m''s share among the copies
    probs = old[old_node][:, (source[:, None] * A + np.arange(A)).reshape(-1)] * np.repeat(fraction[:-1], A, axis=1)
    init = np.zeros(N)
    init[:M] = old_init[source] * fraction[-1]
    return Policy.from_probs(architecture, probs, init)
