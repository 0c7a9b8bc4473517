"""Policies by name (:func:`named_policy`): ``uniform``, the explicit ``ccp``, ``star`` and ``necklace``, and
the initialisations for training (:func:`initial_policy`; paper section 5 and the caption of Figure 4).

Initialisations: ``random``, ``linear``, ``columns``, ``near-ccp`` (RAM-like
memories), ``cycles``, ``near-necklace`` (Memento).  Except ``random``,
each is given as probabilities ``pi`` and turned into logits
``log(pi + 1e-4)`` (docs/model.md), so that nothing starts at exactly
zero probability and gradient flow can move every weight; under the
``native`` convention the architecture's mask still holds.
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

from fsc.checks import check_reset
from fsc.errors import InputError, InputTypeError
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import RAM, Chain, Column, Memento
from fsc.model.policy import Policy

from .ccp import _check_eps, ccp_probs
from .names import INITIALISATIONS, POLICY_NAMES
from .necklace import default_eps, necklace_probs

__all__ = ["INITIALISATIONS", "NOISE", "POLICY_NAMES", "from_weights", "initial_policy", "named_policy", "paper_necklace_weights", "published_order"]

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


def _ram_like(arch: MemoryArchitecture, name: str) -> int:
    """The size ``M`` of ``arch``, a RAM, Chain or Column memory (which the policy ``name`` needs)."""
    if not isinstance(arch, (RAM, Chain, Column)):
        what = "initialisation" if name in INITIALISATIONS else "policy"
        raise InputError(f"the {name!r} {what} needs a RAM, Chain or Column memory, got {arch!r}")
    return arch.M


def _memento(arch: MemoryArchitecture, name: str) -> None:
    if not isinstance(arch, Memento) or arch.arms != 2 or arch.observations != 2:
        raise InputError(f"the {name!r} initialisation needs a two-arm Memento memory, got {arch!r}")


def published_order(arch: MemoryArchitecture) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the published code's tensors sit in ours, for a two-arm RAM-like or Memento memory.

    The published code names RAM states ``"ii  "`` (memory ``ii`` from 00, no
    observation yet: the reset states, first) then ``"iiX+"``, actions
    ``"iiX"``, and Memento states by the arms then the rewards, newest last
    (``"AB+-"``, blank-padded when shorter), in its own order.  Returns
    ``(node, choice, reset_node)``: our node of each published state, our
    choice of each published action, our node of each published initial state.
    """
    arms, signs = ("A", "B"), ("+", "-")
    if isinstance(arch, (RAM, Chain, Column)) and arch.arms == 2 and arch.observations == 2:
        M = arch.M
        states = [f"{i + 1}_" for i in range(M)] + [f"{i + 1}{x}{o}" for i in range(M) for x in arms for o in signs]
        actions = [f"{i + 1}{x}" for i in range(M) for x in arms]
        initial = states[:M]
    elif isinstance(arch, Memento) and arch.arms == 2 and arch.observations == 2:
        states = []
        for n in range(arch.m + 1):
            states += ["".join(h) + "".join(o) or "_" for h in itertools.product(arms, repeat=n) for o in itertools.product(signs, repeat=n)]
        actions, initial = list(arms), ["_"]
    else:
        raise InputError(f"the published code has no {arch!r}")
    nodes = {label: n for n, label in enumerate(arch.node_labels)}
    choices = {label: c for c, label in enumerate(arch.choice_labels)}
    return (np.array([nodes[s] for s in states]), np.array([choices[a] for a in actions]), np.array([nodes[s] for s in initial]))


def _published_start(arch: MemoryArchitecture, name: str, seed: int) -> Policy:
    """The published code's ``randn``, ``randn_lin``, ``randn_u`` or ``randn_cycles`` start for seed ``seed``.

    The same draws in the same order (``torch.manual_seed(seed)``, then the
    policy's ``(states, actions)`` Gaussian logits, then the initial states'),
    the same arithmetic in the same order, laid onto our node and choice order.
    """
    node, choice, reset_node = published_order(arch)
    generator = torch.Generator().manual_seed(seed)
    pi = torch.randn(len(node), len(choice), generator=generator, dtype=torch.float64)
    if name in ("linear", "columns"):  # random probabilities on the chain- or column-shaped choices
        shape = (Chain if name == "linear" else Column)(arch.M)
        keep = torch.from_numpy(shape.allowed[np.ix_(node, choice)])
        pi = pi.softmax(1).masked_fill(~keep, 0.0)
        pi = (pi / pi.sum(1, True) + NOISE).log()
    elif name == "cycles":  # the oldest arm, except where the history is maximally informative
        pi = pi.softmax(1)
        labels = [arch.node_labels[n] for n in node]
        for i, label in enumerate(labels):
            if len(label) == 2 * arch.m and not _maximally_informative(label, arch.m):
                pi[i] = 0.0
                pi[i, choice.tolist().index(arch.choice_labels.index(label[0]))] = 1.0
        pi = (pi + NOISE).log()
    p0 = torch.randn(len(reset_node), generator=generator, dtype=torch.float64)
    logits = np.zeros((arch.num_nodes, arch.num_choices))
    logits[np.ix_(node, choice)] = pi.numpy()
    init_logits = np.zeros(arch.num_nodes)
    init_logits[reset_node] = p0.numpy()
    return Policy(architecture=arch, logits=logits, init_logits=init_logits)


def _maximally_informative(label: str, m: int) -> bool:
    """Every remembered play says the same about which arm is better (A won, or B lost, each time; or the reverse)."""
    arms, rewards = label[:m], label[m:]
    return all((x == "A") == (o == "+") for x, o in zip(arms, rewards, strict=True)) or all(
        (x == "B") == (o == "+") for x, o in zip(arms, rewards, strict=True)
    )


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


def named_policy(
    name: str,
    arch: MemoryArchitecture,
    *,
    mu: float = 0.1,
    reset: float = 1e-3,
    seed: int = 0,
    published: bool = False,
    eps: float | None = None,
    eps0: float | None = None,
    eps1: float | None = None,
) -> Policy:
    """A policy by name on ``arch``: ``uniform``, the exact ``ccp``, ``star`` and ``necklace`` policies
    (no ``1e-4`` added), or an initialisation (:func:`initial_policy`).

    Args:
        name: one of :data:`POLICY_NAMES`.
        mu: the two-hypothesis world's gap, for the closed-form defaults of ``eps``.
        reset: the reset probability ``r`` those defaults are optimal at.
        seed: seed of the random initialisations.
        published: take the published code's start where it differs (:func:`initial_policy`).
        eps: exit probability of ``ccp``, ``star``, ``near-ccp`` and ``near-star``; default the closed-form
            optimum at ``reset`` (capped at 1).
        eps0, eps1: exit probabilities of ``necklace`` and ``near-necklace``; default ``r^(1/2)`` and
            ``r^(1/4)``.

    Raises:
        ValueError, TypeError: an unknown name; a memory the policy does not fit; a bad value.
    """
    if name == "uniform":
        return Policy.uniform(arch)
    if name == "ccp":
        if eps is None:
            from .closed_form import ccp_eps_best

            eps = ccp_eps_best(mu, _ram_like(arch, name), reset)
        return Policy.from_probs(arch, *ccp_probs(arch, eps))
    if name == "star":
        from .star import star_eps_opt, star_probs

        if eps is None:
            eps = star_eps_opt(mu, _ram_like(arch, name), reset, arch.num_actions)
        return Policy.from_probs(arch, *star_probs(arch, eps))
    if name == "necklace":
        default0, default1 = default_eps(reset)
        return Policy.from_probs(arch, *necklace_probs(arch, default0 if eps0 is None else eps0, default1 if eps1 is None else eps1))
    if name in INITIALISATIONS:
        return _initialisation(name, arch, mu=mu, reset=reset, seed=seed, published=published, eps=eps, eps0=eps0, eps1=eps1)
    raise InputError(f"policy must be one of {POLICY_NAMES} or a .npz/.json file, got {name!r}")


def initial_policy(name: str, arch: MemoryArchitecture, **options: object) -> Policy:
    """The initialisation ``name`` on ``arch`` (paper section 5, Figure 4): :func:`policies.named_policy`
    restricted to :data:`INITIALISATIONS`, with its keywords (``mu``, ``reset``, ``seed``, ``published``,
    ``eps``, ``eps0``, ``eps1``) and defaults.

    ``published``: where the published code's start differs from the one
    described here, take the published one (today: near-necklace's exit nodes
    for m = 3 and 4).

    - ``random``: Gaussian logits, std 1 (seeded); for two-arm RAM-like and
      Memento memories, seed ``s`` draws exactly the published code's start
      for seed ``s`` (:func:`published_order`), so curves compare seed by seed.
    - ``linear``: random probabilities (a softmax of Gaussian logits) kept on
      the chain-shaped choices (memory ``i -> i-1, i, i+1``) and renormalised,
      ``+ 1e-4``, log; Gaussian logits for the reset nodes (the published ``randn_lin``).
    - ``columns``: the same on the column-shaped choices (same arm above
      memory 1; the published ``randn_u``).
    - ``near-ccp``: the column of confidence policy with ``eps`` (default:
      the closed-form optimum at ``reset``, capped at 1), ``+ 1e-4``, log.
    - ``near-star``: the star policy (the CCP for ``k`` arms,
      :mod:`policies.star`) with ``eps`` (default: its optimum at ``reset``),
      ``+ 1e-4``, log.
    - ``cycles``: play the oldest arm, except where the remembered history is
      maximally informative; there, and in the partial histories, random
      probabilities as for ``random`` (the published ``randn_cycles``): the
      paths between necklaces are left to training.
    - ``near-necklace``: the necklace policy with ``eps0 = r^(1/2)``,
      ``eps1 = r^(1/4)`` (defaults), ``+ 1e-4``, log; with ``published``
      and m = 3 or 4, exactly the published exit nodes.
    """
    if name not in INITIALISATIONS:
        raise InputError(f"initialisation must be one of {INITIALISATIONS}, got {name!r}")
    return named_policy(name, arch, **options)


def _initialisation(name: str, arch: MemoryArchitecture, *, mu, reset, seed, published, eps, eps0, eps1) -> Policy:
    """The body of :func:`initial_policy`: ``name`` one of :data:`INITIALISATIONS`, every keyword given."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputTypeError(f"seed must be an int, got {seed!r}")
    reset = check_reset(reset)
    if name == "random":
        published = isinstance(arch, (RAM, Chain, Column, Memento)) and arch.arms == 2 and arch.observations == 2
        return _published_start(arch, name, seed) if published else Policy.random(arch, seed)
    if name in ("linear", "columns"):
        _ram_like(arch, name)
        if arch.arms != 2 or arch.observations != 2:
            raise InputError(f"the {name!r} initialisation needs a two-arm memory, got {arch!r}")
        return _published_start(arch, name, seed)
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
        return _published_start(arch, name, seed)
    default0, default1 = default_eps(reset)
    eps0 = _check_eps(default0 if eps0 is None else eps0, "eps0")
    eps1 = _check_eps(default1 if eps1 is None else eps1, "eps1")
    if published and arch.m in PAPER_NECKLACE_EXITS:
        return from_weights(arch, *paper_necklace_weights(arch, eps0, eps1))
    if arch.m < 2:
        raise InputError(f"the near-necklace initialisation needs m >= 2, got {arch!r}")
    return from_weights(arch, *necklace_probs(arch, eps0, eps1))
