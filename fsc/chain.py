"""The joint Markov chain of world x memory under a policy.

States of the joint chain are pairs ``(s, n)``; the world splits into closed
parts (for the two-hypothesis task, one per hypothesis), each solved on its
own and batched along a leading axis ``K``.  Inside a part, the joint index
is ``x = s_local * N + n`` with ``X = S_part * N`` states (parts are padded to
the largest with states that have no mass and loop on themselves).

.. math::

    P[(s_2, n_2), (s, n)] = \\sum_c \\pi[n, c] \\, T[s, a(c), s_2] \\,
        O[a(c), s_2, o] \\, [n_2 = \\mathrm{next}(n, c, o)]

(DESIGN section 3; note the axis order: ``P[x2, x]`` is the probability of
``x -> x2``, so columns sum to 1.)
"""

from __future__ import annotations

import functools

import attrs
import numpy as np
import torch

from .memory import MemoryArchitecture
from .pomdp import POMDP

__all__ = ["JointChain", "joint_chain"]


@attrs.frozen(eq=False)
class JointChain:
    """Index tables of the joint chain (pure structure, no policy).

    Attributes:
        num_parts: ``K``.
        size: ``X``, joint states per part.
        part_states: ``(K, S_part)`` world state of each local state (-1: padding).
        part_weights: ``(K,)`` initial mass of each part (sums to 1).
        rows, cols, parts: COO coordinates of each nonzero of ``P`` (int64).
        node, choice: the ``(n, c)`` whose probability scales each nonzero.
        weight: ``T * O`` of each nonzero (float64).
        step_reward: ``(K, S_part, C)`` expected reward of choice ``c`` in world state s.
        step_metrics: name -> ``(K, S_part, C)`` expected metric of the step.
        initial_world: ``(K, S_part)`` world part of the reset distribution (per part, sums to 1).
    """

    architecture: MemoryArchitecture
    num_parts: int
    states_per_part: int
    part_states: np.ndarray
    part_weights: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    parts: np.ndarray
    node: np.ndarray
    choice: np.ndarray
    weight: np.ndarray
    step_reward: np.ndarray
    step_metrics: dict
    initial_world: np.ndarray
    padding: np.ndarray

    @property
    def size(self) -> int:
        return self.states_per_part * self.architecture.num_nodes

    def values(self, probs: torch.Tensor) -> torch.Tensor:
        """Nonzero values of ``P`` for ``probs[n, c]`` (differentiable)."""
        return probs[torch.as_tensor(self.node), torch.as_tensor(self.choice)] * torch.as_tensor(self.weight)

    def dense(self, probs: torch.Tensor) -> torch.Tensor:
        """``P`` as a dense ``(K, X, X)`` tensor (``P[k, x2, x]``)."""
        K, X = self.num_parts, self.size
        flat = torch.zeros(K * X * X, dtype=torch.float64)
        index = torch.as_tensor((self.parts * X + self.rows) * X + self.cols)
        flat = flat.index_add(0, index, self.values(probs))
        P = flat.reshape(K, X, X)
        if self.padding.any():
            pad = torch.as_tensor(self.padding)
            P = P + torch.diag_embed(pad.to(torch.float64))
        return P

    def initial(self, init_probs: torch.Tensor) -> torch.Tensor:
        """Reset distribution ``p0[k, x]``, shape ``(K, X)``, each row summing to 1."""
        world = torch.as_tensor(self.initial_world)
        return (world[:, :, None] * init_probs[None, None, :]).reshape(self.num_parts, self.size)

    def expected_step(self, table: np.ndarray, probs: torch.Tensor) -> torch.Tensor:
        """``E[f | x]`` for a per-step table ``(K, S_part, C)``: shape ``(K, X)``."""
        per_node = torch.einsum("ksc,nc->ksn", torch.as_tensor(table), probs)
        return per_node.reshape(self.num_parts, self.size)


@functools.lru_cache(maxsize=32)
def _cached(world: POMDP, architecture: MemoryArchitecture) -> JointChain:
    return _build(world, architecture)


def joint_chain(world: POMDP, architecture: MemoryArchitecture) -> JointChain:
    """The index tables of the joint chain of ``world`` and ``architecture`` (cached)."""
    if architecture.num_actions != world.num_actions:
        raise ValueError(f"{architecture!r} plays {architecture.num_actions} actions but the world has {world.num_actions}")
    if architecture.num_observations != world.num_observations:
        raise ValueError(f"{architecture!r} reads {architecture.num_observations} observations but the world has {world.num_observations}")
    return _cached(world, architecture)


def _build(world: POMDP, arch: MemoryArchitecture) -> JointChain:
    parts = world.parts
    K, S_part = len(parts), max(len(p) for p in parts)
    N, C, O = arch.num_nodes, arch.num_choices, arch.num_observations
    part_states = -np.ones((K, S_part), dtype=np.int64)
    for k, members in enumerate(parts):
        part_states[k, : len(members)] = members
    valid = part_states >= 0
    weights = np.array([world.initial[list(p)].sum() for p in parts])

    action = arch.choice_action
    allowed_n, allowed_c = np.nonzero(arch.allowed)  # (E,) pairs
    rows, cols, kk, nn, cc, ww = [], [], [], [], [], []
    for k in range(K):
        for i, s in enumerate(part_states[k]):
            if s < 0:
                continue
            for j, s2 in enumerate(part_states[k]):
                if s2 < 0:
                    continue
                # weight[c, o] = T[s, a(c), s2] O[a(c), s2, o]
                w = world.transition[s, action, s2][:, None] * world.observation[action, s2, :]
                for o in range(O):
                    keep = w[allowed_c, o] != 0
                    n, c = allowed_n[keep], allowed_c[keep]
                    rows.append(j * N + arch.next_node[n, c, o])
                    cols.append(i * N + n)
                    kk.append(np.full(len(n), k))
                    nn.append(n)
                    cc.append(c)
                    ww.append(w[c, o])

    def cat(chunks, dtype):
        return np.concatenate(chunks).astype(dtype) if chunks else np.zeros(0, dtype=dtype)

    # Expected reward (and metrics) of each choice from each world state:
    # rbar[s, a] = sum_{s2, o} T[s, a, s2] O[a, s2, o] reward[s, a, s2, o].
    def per_step(table: np.ndarray) -> np.ndarray:
        rbar = np.einsum("sat,ato,sato->sa", world.transition, world.observation, table)
        out = np.zeros((K, S_part, C))
        out[valid] = rbar[part_states[valid]][:, action]
        return out

    initial_world = np.zeros((K, S_part))
    initial_world[valid] = world.initial[part_states[valid]]
    initial_world /= initial_world.sum(axis=1, keepdims=True)
    padding = np.repeat(~valid, N, axis=1)
    return JointChain(
        architecture=arch,
        num_parts=K,
        states_per_part=S_part,
        part_states=part_states,
        part_weights=weights / weights.sum(),
        rows=cat(rows, np.int64),
        cols=cat(cols, np.int64),
        parts=cat(kk, np.int64),
        node=cat(nn, np.int64),
        choice=cat(cc, np.int64),
        weight=cat(ww, np.float64),
        step_reward=per_step(world.reward),
        step_metrics={name: per_step(table) for name, table in world.metrics.items()},
        initial_world=initial_world,
        padding=padding,
    )
