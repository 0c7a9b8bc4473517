"""Classic finite-state controllers as policies on RAM.

A classic ``N``-node controller has an action rule ``psi(a | q)`` and a node
rule ``eta(q2 | q, a, o)``: in node ``q`` it plays ``a ~ psi(q)``, sees
``o``, and moves to ``q2 ~ eta(q, a, o)``.  On ``RAM(N, arms=A,
observations=O)`` the memory of a node ``(i, a, o)`` is the controller's
previous node ``i``, with the action it played and the observation that
followed; a choice ``(q, a')`` picks the controller's next node and the
action it plays there.  So the policy is

.. math::

    \\pi[(i, a, o) \\to (q, a')] = \\eta(q \\mid i, a, o) \\, \\psi(a' \\mid q),
    \\qquad \\pi[(q, \\_) \\to (q, a')] = \\psi(a' \\mid q),

and a reset starts in the blank node ``(q0, _)`` of the initial node.
"""

from __future__ import annotations

import attrs
import numpy as np

from fsc.errors import InputError, InputTypeError
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import RAM

__all__ = ["Skeleton", "controller_probs", "skeleton"]


def _ram(arch: MemoryArchitecture) -> tuple[int, int, int]:
    if not isinstance(arch, RAM):
        raise InputTypeError(f"a classic controller lives on RAM(N, arms=A, observations=O), got {arch!r}")
    return arch.M, arch.arms, arch.observations


def _rule(name: str, value: object, shape: tuple[int, ...], size: int) -> np.ndarray:
    """An index table of ``shape`` (values in ``range(size)``) or a probability table of ``shape + (size,)``."""
    array = np.asarray(value)
    if array.shape == shape and np.issubdtype(array.dtype, np.integer):
        if array.size and (array.min() < 0 or array.max() >= size):
            raise InputError(f"{name} must hold indices in [0, {size}), got {int(array.min())}..{int(array.max())}")
        return np.eye(size)[array]
    if array.shape != shape + (size,):
        raise InputError(f"{name} must be integers of shape {shape} or probabilities of shape {shape + (size,)}, got shape {array.shape}")
    array = array.astype(np.float64)
    if not np.all(np.isfinite(array)) or array.min() < 0 or not np.allclose(array.sum(axis=-1), 1, rtol=0, atol=1e-12):
        raise InputError(f"{name} must be probabilities summing to 1 over its last axis")
    return array


def controller_probs(arch: MemoryArchitecture, action, next_node, initial=0) -> tuple[np.ndarray, np.ndarray]:
    """``(probs, init_probs)`` of the classic controller ``(action, next_node, initial)`` on RAM.

    Args:
        arch: ``RAM(N, arms=A, observations=O)``.
        action: ``psi``: node -> action, integers ``(N,)`` or probabilities ``(N, A)``.
        next_node: ``eta``: (node, action, observation) -> node, integers
            ``(N, A, O)`` or probabilities ``(N, A, O, N)``.
        initial: the initial node, an integer or probabilities ``(N,)``.
    """
    N, A, O = _ram(arch)
    psi = _rule("action", action, (N,), A)  # (N, A)
    eta = _rule("next_node", next_node, (N, A, O), N)  # (N, A, O, N)
    start = _rule("initial", initial, (), N)  # (N,)
    # Nodes: blanks q, then (i, a, o); choices (q, a') at index q * A + a'.
    probs = np.concatenate([np.einsum("qr,qa->qra", np.eye(N), psi).reshape(N, N * A), np.einsum("iaoq,qb->iaoqb", eta, psi).reshape(N * A * O, N * A)])
    init = np.zeros(arch.num_nodes)
    init[:N] = start
    return probs, init


@attrs.frozen(kw_only=True, eq=False)
class Skeleton:
    """The deterministic controller closest to a policy on RAM, with the probabilities it drops.

    Attributes:
        action: ``(N,)`` the most likely action in each node; ``action_prob`` its probability.
        next_node: ``(N, A, O)`` the most likely next node; ``next_prob`` its probability.
        initial: the most likely initial node; ``initial_prob`` its probability.
    """

    action: np.ndarray
    action_prob: np.ndarray
    next_node: np.ndarray
    next_prob: np.ndarray
    initial: int
    initial_prob: float

    @property
    def min_prob(self) -> float:
        """The smallest probability kept: 1 for a deterministic controller."""
        return float(min(self.action_prob.min(), self.next_prob.min(), self.initial_prob))


def skeleton(policy) -> Skeleton:
    """Read a classic controller back from a policy on ``RAM(N, arms=A, observations=O)``.

    ``next_node[i, a, o]`` is the node most likely chosen after ``(i, a, o)``,
    with its probability ``sum_a' pi[(i, a, o) -> (q, a')]``.  ``action[q]``
    is the action most likely played on entering ``q``: the conditional
    ``psi(a' | q)`` averaged over the nodes ``(i, a, o)`` whose most likely
    next node is ``q`` (the blank node ``(q, _)`` when none is).
    """
    arch = policy.architecture
    N, A, O = _ram(arch)
    probs = policy.probs().detach().numpy().reshape(-1, N, A)  # (nodes, q, a')
    rows = probs[N:].reshape(N, A, O, N, A)
    to_node = rows.sum(axis=-1)  # (N, A, O, N)
    next_node = to_node.argmax(axis=-1)
    next_prob = np.take_along_axis(to_node, next_node[..., None], axis=-1)[..., 0]
    action_prob = np.empty(N)
    action = np.empty(N, dtype=np.int64)
    for q in range(N):
        sources = rows[next_node == q][:, q, :]  # (k, A): joint probabilities of (q, a')
        if len(sources):
            conditional = sources / np.maximum(sources.sum(axis=1, keepdims=True), 1e-300)
            psi = conditional.mean(axis=0)
        else:
            psi = probs[q, q] / max(probs[q, q].sum(), 1e-300)
        action[q] = int(psi.argmax())
        action_prob[q] = float(psi[action[q]])
    init = policy.init_probs().detach().numpy()[:N]
    initial = int(init.argmax())
    return Skeleton(action=action, action_prob=action_prob, next_node=next_node, next_prob=next_prob, initial=initial, initial_prob=float(init[initial]))
