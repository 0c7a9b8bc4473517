"""Explicit policies, their closed forms, and initialisations for training.

- :func:`ccp`: the column of confidence policy (paper Definition 3.3);
  closed forms in :mod:`policies.closed_form`.
- :func:`necklace_policy`: the necklace policy on the Memento memory
  (Definition 4.1); necklace combinatorics in :mod:`policies.necklaces`.
- :mod:`policies.star`: the star, the CCP for ``k`` hypotheses, with its
  closed form.
- :func:`initial_policy`: the initialisations of the paper's Figure 4
  (and ``near-star``).
"""

from __future__ import annotations

from fsc.errors import InputError
from fsc.model.architecture import MemoryArchitecture
from fsc.model.policy import Policy

from . import closed_form, necklaces, star
from .ccp import ccp, ccp_probs
from .initial import INITIALISATIONS, _initialisation, initial_policy
from .necklace import default_eps, necklace_exits, necklace_policy, necklace_probs
from .star import star_architecture, star_eps_opt, star_probs, star_q

__all__ = [
    "INITIALISATIONS",
    "POLICY_NAMES",
    "ccp",
    "ccp_probs",
    "closed_form",
    "default_eps",
    "initial_policy",
    "named_policy",
    "necklace_exits",
    "necklace_policy",
    "necklace_probs",
    "necklaces",
    "star",
    "star_architecture",
    "star_eps_opt",
    "star_probs",
    "star_q",
]

#: Names accepted by :func:`named_policy`: ``--policy`` and ``fsc train --init`` on the command line.
POLICY_NAMES = ("uniform", "ccp", "star", "necklace", *INITIALISATIONS)


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
            eps = closed_form.ccp_eps_best(mu, _size(arch, "ccp"), reset)
        return Policy.from_probs(arch, *ccp_probs(arch, eps))
    if name == "star":
        if eps is None:
            eps = star_eps_opt(mu, _size(arch, "star"), reset, arch.num_actions)
        return Policy.from_probs(arch, *star_probs(arch, eps))
    if name == "necklace":
        default0, default1 = default_eps(reset)
        return Policy.from_probs(arch, *necklace_probs(arch, default0 if eps0 is None else eps0, default1 if eps1 is None else eps1))
    if name in INITIALISATIONS:
        return _initialisation(name, arch, mu=mu, reset=reset, seed=seed, published=published, eps=eps, eps0=eps0, eps1=eps1)
    raise InputError(f"policy must be one of {POLICY_NAMES} or a .npz/.json file, got {name!r}")


def _size(arch: MemoryArchitecture, name: str) -> int:
    from fsc.model.memory import RAM, Chain, Column

    if not isinstance(arch, (RAM, Chain, Column)):
        raise InputError(f"the {name!r} policy needs a RAM, Chain or Column memory, got {arch!r}")
    return arch.M
