"""The necklace policy on the Memento memory (paper Definition 4.1, Figure 3).

The agent mostly plays the oldest arm it remembers, so its word of arms
turns around a binary necklace.  The necklaces on a Gray-ordered chain from
``A^m`` to ``B^m`` are linked by *exit words*: a word ``w`` of necklace ``i``
whose oldest letter, flipped and played, gives a word of necklace ``i +- 1``.
The agent takes that exit with probability ``eps1`` only when every
remembered reward favours the side it moves to (``+`` after A and ``-``
after B to move toward ``A^m``; the opposite toward ``B^m``), and leaves
the end necklaces with probability ``eps0`` when every reward is ``-``.

Necklaces off the chain (from m = 4: ``ABAB`` for m = 4) have no exit in
Definition 4.1. Two variants, by name (:data:`VARIANTS`):

- ``"literal"``: Definition 4.1 as written, and the published code: an
  off-chain necklace plays its oldest arm like any other, so the agent never
  leaves it. For m = 4, 1/8 of the resets end there (after four steps of
  1/2 each, the words ``ABAB`` and ``BABA``), playing the worse arm half the
  time: q stays above 1/16 however small r is, and Theorem 4.3's limit ``q*``
  is not reached.
- ``"exits-off-chain"`` (the default): each off-chain necklace has a word
  that leaves it deterministically toward the chain (``feeders``), so no
  probability is trapped there. For m = 2, 3 (no necklace off the chain) the
  two are the same policy.
"""

from __future__ import annotations

import math
from collections import deque

import attrs
import numpy as np

from fsc.errors import InputError
from fsc.model.memory import Memento
from fsc.model.policy import Policy

from .ccp import _check_eps
from .necklaces import exits, gray_chain, necklace, necklaces

__all__ = ["VARIANTS", "NecklaceExits", "default_eps", "necklace_exits", "necklace_policy", "necklace_probs"]

#: The necklace policy's two readings of the necklaces off the chain (see the module).
VARIANTS = ("exits-off-chain", "literal")

_FLIP = {"A": "B", "B": "A"}


def _candidates(word: str, target: str) -> list[str]:
    """Rotations ``w`` of ``word`` whose move ``w[1:] + flip(w[0])`` lands in necklace ``target``."""
    m = len(word)
    rotations = {word[k:] + word[:k] for k in range(m)}
    return sorted(w for w in rotations if necklace(w[1:] + _FLIP[w[0]]) == target)


@attrs.frozen
class NecklaceExits:
    """Where the necklace policy leaves each necklace.

    Attributes:
        chain: the Gray-ordered chain, ``A^m`` first and ``B^m`` last.
        toward_a: necklace index -> exit word toward ``A^m`` (arm played: flip of its oldest letter).
        toward_b: necklace index -> exit word toward ``B^m``.
        feeders: exit word -> arm, for the necklaces off the chain (deterministic moves toward it).
    """

    chain: tuple[str, ...]
    toward_a: dict[int, str]
    toward_b: dict[int, str]
    feeders: dict[str, str]


def necklace_exits(m: int, chain: tuple[str, ...] | None = None) -> NecklaceExits:
    """Exit words of the necklace policy with memory ``m`` (default chain: the longest Gray chain)."""
    if isinstance(m, bool) or not isinstance(m, int) or m < 2:
        raise InputError(f"the necklace policy needs m >= 2, got {m!r}")
    chain = tuple(gray_chain(m).chain if chain is None else chain)
    if chain[0] != "A" * m or chain[-1] != "B" * m:
        raise InputError(f"a necklace chain runs from {'A' * m} to {'B' * m}, got {chain[0]!r} .. {chain[-1]!r}")
    table = exits(chain)  # one rule for the exit words, shared with policies.necklaces
    toward_a = {item.index: item.left_exit.word for item in table if item.left_exit is not None and item.index > 0}
    toward_b = {item.index: item.right_exit.word for item in table if item.right_exit is not None and item.index < len(chain) - 1}
    # Off-chain necklaces: breadth-first search from the chain over the
    # one-letter moves; each leads to a necklace nearer to the chain.
    distance = {w: 0 for w in chain}
    queue = deque(chain)
    feeders: dict[str, str] = {}
    everything = necklaces(m)
    while queue:
        current = queue.popleft()
        for other in everything:
            if other in distance:
                continue
            moves = _candidates(other, current)
            if moves:
                word = moves[0]
                feeders[word] = _FLIP[word[0]]
                distance[other] = distance[current] + 1
                queue.append(other)
    missing = [w for w in everything if w not in distance]
    if missing:  # cannot happen: one-letter moves connect every necklace to A^m
        raise RuntimeError(f"necklaces not connected to the chain: {missing}")
    return NecklaceExits(chain=chain, toward_a=toward_a, toward_b=toward_b, feeders=feeders)


def _favours(arms: str, rewards: str) -> str | None:
    """``A`` if every reward favours H_A (A+ and B-), ``B`` if every one favours H_B, else None."""
    if all((x == "A") == (o == "+") for x, o in zip(arms, rewards, strict=True)):
        return "A"
    if all((x == "B") == (o == "+") for x, o in zip(arms, rewards, strict=True)):
        return "B"
    return None


def _check_variant(variant: object) -> str:
    if variant not in VARIANTS:
        raise InputError(f"the necklace policy's variant is one of {VARIANTS}, got {variant!r}")
    return variant


def necklace_probs(
    arch: Memento, eps0: float, eps1: float, exits: NecklaceExits | None = None, *, variant: str = "exits-off-chain"
) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities ``(probs, init_probs)`` of the necklace policy on ``arch``.

    Full histories play their oldest arm, except at exit words (``eps1``,
    rewards permitting), at the end necklaces (``eps0`` when every reward is
    ``-``) and, in the variant ``"exits-off-chain"``, at the exit words of the
    necklaces off the chain (leave at once; ``"literal"``: never).  Partial
    histories play each arm with probability 1/2; the reset starts in the empty
    history.
    """
    if not isinstance(arch, Memento) or arch.arms != 2 or arch.observations != 2:
        raise InputError(f"the necklace policy needs a two-arm Memento architecture, got {arch!r}")
    literal = _check_variant(variant) == "literal"
    eps0, eps1 = _check_eps(eps0, "eps0"), _check_eps(eps1, "eps1")
    m = arch.m
    exits = necklace_exits(m) if exits is None else exits
    index = {w: i for i, w in enumerate(exits.chain)}
    probs = np.full((arch.num_nodes, 2), 0.5)
    for n, label in enumerate(arch.node_labels):
        if len(label) != 2 * m:
            continue
        arms, rewards = label[:m], label[m:]
        oldest, other = arms[0], _FLIP[arms[0]]
        leave = 0.0
        if arms in exits.feeders:
            leave = 0.0 if literal else 1.0
        elif arms == "A" * m or arms == "B" * m:
            leave = eps0 if set(rewards) == {"-"} else 0.0
        else:
            i = index.get(necklace(arms))
            side = _favours(arms, rewards)
            if i is not None and side == "A" and exits.toward_a.get(i) == arms:
                leave = eps1
            elif i is not None and side == "B" and exits.toward_b.get(i) == arms:
                leave = eps1
        probs[n, "AB".index(oldest)] = 1 - leave
        probs[n, "AB".index(other)] = leave
    init = np.zeros(arch.num_nodes)
    init[0] = 1.0
    return probs, init


def necklace_policy(m: int, eps0: float, eps1: float, *, variant: str = "exits-off-chain") -> tuple[Memento, Policy]:
    """The necklace policy with memory ``m`` (Definition 4.1; ``variant``: see the module) and its architecture.

    Theorem 4.3: its ``q`` tends to ``q* = (1 + alpha^(m (1 - n(m))))^-1``
    when ``r << eps0 << eps1 << 1`` (for the variant ``"exits-off-chain"``;
    the literal policy of m = 4 keeps 1/8 of its resets in ``ABAB``).
    """
    arch = Memento(m)
    probs, init = necklace_probs(arch, eps0, eps1, variant=variant)
    return arch, Policy.from_probs(arch, probs, init)


def default_eps(reset: float) -> tuple[float, float]:
    """``eps0 = r^(1/2)``, ``eps1 = r^(1/4)``: the near-necklace start of the paper."""
    return math.sqrt(reset), reset**0.25
