"""Initialisations for training (paper section 5 and the caption of Figure 4).

Names: ``random``, ``linear``, ``columns``, ``near-ccp`` (RAM-like
memories), ``cycles``, ``near-necklace`` (Memento).  Except ``random``,
each is given as probabilities ``pi`` and turned into logits
``log(pi + 1e-4)`` (docs/model.md), so that nothing starts at exactly
zero probability and gradient flow can move every weight; under the
``native`` convention the architecture's mask still holds.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from fsc.errors import InputError, InputTypeError
from fsc.memory import RAM, Chain, Column, Memento, MemoryArchitecture
from fsc.policy import Policy

from .ccp import _check_eps, ccp_probs
from .necklace import default_eps, necklace_probs

__all__ = ["INITIALISATIONS", "NOISE", "from_weights", "initial_policy", "paper_necklace_weights"]

INITIALISATIONS = ("random", "linear", "columns", "near-ccp", "near-star", "cycles", "near-necklace")

#: Added to every probability before taking the log (the published code's 1e-4).
NOISE = 1e-4

#: Exit nodes of the published code's near-necklace start: history -> (arm, "eps0" | "eps1").
PAPER_NECKLACE_EXITS = {
    3: {"AAA---": ("B", "eps0"), "BAA-++": ("A", "eps1"), "ABA-+-": ("B", "eps1"),
        "BAB-+-": ("A", "eps1"), "ABB-++": ("B", "eps1"), "BBB---": ("A", "eps0")},
    4: {"AAAA----": ("B", "eps0"), "BAAA-+++": ("A", "eps1"), "ABAA-+--": ("B", "eps1"), "BAAB-++-": ("A", "eps1"),
        "ABBA-++-": ("B", "eps1"), "BABB-+--": ("A", "eps1"), "ABBB-+++": ("B", "eps1"), "BBBB----": ("A", "eps0")},
}  # fmt: skip


def from_weights(arch: MemoryArchitecture, weights: np.ndarray, init_weights: np.ndarray) -> Policy:
    """``logits = log(weights + 1e-4)`` (and the same for the initial nodes).

    Weights need not be normalised: the softmax normalises them.
    """
    return Policy(architecture=arch, logits=np.log(weights + NOISE), init_logits=np.log(init_weights + NOISE))


def _ram_like(arch: MemoryArchitecture, name: str) -> None:
    if not isinstance(arch, (RAM, Chain, Column)):
        raise InputError(f"the {name!r} initialisation needs a RAM, Chain or Column memory, got {arch!r}")


def _memento(arch: MemoryArchitecture, name: str) -> None:
    if not isinstance(arch, Memento) or arch.arms != 2 or arch.observations != 2:
        raise InputError(f"the {name!r} initialisation needs a two-arm Memento memory, got {arch!r}")


def _random_on(arch: MemoryArchitecture, structure: np.ndarray, generator: torch.Generator) -> Policy:
    """Gaussian logits (std 1) softmaxed over ``structure & allowed``, then ``+ 1e-4`` and log."""
    mask = structure & arch.allowed
    logits = torch.randn(arch.num_nodes, arch.num_choices, generator=generator, dtype=torch.float64).numpy()
    weights = np.where(mask, np.exp(logits - np.where(mask, logits, -np.inf).max(axis=1, keepdims=True)), 0.0)
    weights /= weights.sum(axis=1, keepdims=True)
    init = torch.randn(arch.num_nodes, generator=generator, dtype=torch.float64).numpy()
    init_weights = np.where(arch.reset_mask, np.exp(init - init[arch.reset_mask].max()), 0.0)
    return from_weights(arch, weights, init_weights / init_weights.sum())


def paper_necklace_weights(arch: Memento, eps0: float, eps1: float) -> tuple[np.ndarray, np.ndarray]:
    """Weights of the published near-necklace start for m = 3 and 4.

    Every full history gives its oldest arm weight 1; the exit nodes of
    :data:`PAPER_NECKLACE_EXITS` give the arm named weight ``eps0`` or
    ``eps1``; partial histories give each arm 1/2; the empty history is the
    reset node.
    """
    m = arch.m
    exits = PAPER_NECKLACE_EXITS[m]
    weights = np.full((arch.num_nodes, 2), 0.5)
    for n, label in enumerate(arch.node_labels):
        if len(label) == 2 * m:
            weights[n] = 0.0
            weights[n, "AB".index(label[0])] = 1.0
            if label in exits:
                arm, which = exits[label]
                weights[n, "AB".index(arm)] = eps0 if which == "eps0" else eps1
    init = np.zeros(arch.num_nodes)
    init[0] = 1.0
    return weights, init


def _cycles_weights(arch: Memento) -> tuple[np.ndarray, np.ndarray]:
    """Play the oldest arm, except where every reward is maximally informative (then 1/2 each)."""
    m = arch.m
    weights = np.full((arch.num_nodes, 2), 0.5)
    for n, label in enumerate(arch.node_labels):
        if len(label) != 2 * m:
            continue
        arms, rewards = label[:m], label[m:]
        for_a = all((x == "A") == (o == "+") for x, o in zip(arms, rewards, strict=True))
        for_b = all((x == "B") == (o == "+") for x, o in zip(arms, rewards, strict=True))
        if not (for_a or for_b):
            weights[n] = 0.0
            weights[n, "AB".index(arms[0])] = 1.0
    init = np.zeros(arch.num_nodes)
    init[0] = 1.0
    return weights, init


def _check_reset(reset: object) -> float:
    if isinstance(reset, bool) or not isinstance(reset, (int, float)) or not (math.isfinite(reset) and 0 < reset <= 1):
        raise InputError(f"reset must be in (0, 1], got {reset!r}")
    return float(reset)


def initial_policy(
    name: str,
    arch: MemoryArchitecture,
    *,
    mu: float = 0.1,
    reset: float = 1e-3,
    seed: int = 0,
    convention: str = "native",
    eps: float | None = None,
    eps0: float | None = None,
    eps1: float | None = None,
) -> Policy:
    """The initialisation ``name`` on ``arch`` (paper section 5, Figure 4).

    - ``random``: Gaussian logits, std 1 (seeded).
    - ``linear``: random probabilities on the chain-shaped choices (memory
      ``i -> i-1, i, i+1``), ``+ 1e-4``, log.
    - ``columns``: the same on the column-shaped choices (same arm above memory 1).
    - ``near-ccp``: the column of confidence policy with ``eps`` (default:
      the closed-form optimum at ``reset``, capped at 1), ``+ 1e-4``, log.
    - ``near-star``: the star policy (the CCP for ``k`` arms,
      :mod:`policies.star`) with ``eps`` (default: its optimum at ``reset``),
      ``+ 1e-4``, log.
    - ``cycles``: play the oldest arm except where every reward is
      maximally informative (there 1/2 each): the paths between necklaces
      are left to training.
    - ``near-necklace``: the necklace policy with ``eps0 = r^(1/2)``,
      ``eps1 = r^(1/4)`` (defaults), ``+ 1e-4``, log; with the ``paper``
      convention and m = 3 or 4, exactly the published exit nodes.
    """
    if name not in INITIALISATIONS:
        raise InputError(f"initialisation must be one of {INITIALISATIONS}, got {name!r}")
    if convention not in ("native", "paper"):
        raise InputError(f"convention must be 'native' or 'paper', got {convention!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputTypeError(f"seed must be an int, got {seed!r}")
    reset = _check_reset(reset)
    generator = torch.Generator().manual_seed(seed)
    if name == "random":
        return Policy.random(arch, generator)
    if name in ("linear", "columns"):
        _ram_like(arch, name)
        shape = (Chain if name == "linear" else Column)(arch.M, arms=arch.arms, observations=arch.observations)
        return _random_on(arch, shape.allowed, generator)
    if name == "near-ccp":
        _ram_like(arch, name)
        if eps is None:
            from .closed_form import ccp_eps_opt

            eps = min(1.0, ccp_eps_opt(mu, arch.M, reset))
        weights, init = ccp_probs(arch, _check_eps(eps))
        return from_weights(arch, weights, init)
    if name == "near-star":
        _ram_like(arch, name)
        from .star import star_eps_opt, star_probs

        if eps is None:
            eps = star_eps_opt(mu, arch.M, reset, arch.arms)
        return from_weights(arch, *star_probs(arch, _check_eps(eps)))
    _memento(arch, name)
    if name == "cycles":
        return from_weights(arch, *_cycles_weights(arch))
    default0, default1 = default_eps(reset)
    eps0 = _check_eps(default0 if eps0 is None else eps0, "eps0")
    eps1 = _check_eps(default1 if eps1 is None else eps1, "eps1")
    if convention == "paper" and arch.m in PAPER_NECKLACE_EXITS:
        return from_weights(arch, *paper_necklace_weights(arch, eps0, eps1))
    if arch.m < 2:
        raise InputError(f"the near-necklace initialisation needs m >= 2, got {arch!r}")
    return from_weights(arch, *necklace_probs(arch, eps0, eps1))
