"""Explicit policies, their closed forms, and initialisations for training.

- :func:`ccp`: the column of confidence policy (paper Definition 3.3);
  closed forms in :mod:`policies.closed_form`.
- :func:`necklace_policy`: the necklace policy on the Memento memory
  (Definition 4.1); necklace combinatorics in :mod:`policies.necklaces`.
- :mod:`policies.star`: the star, the CCP for ``k`` hypotheses, with its
  closed form.
- :func:`named_policy`: every policy above and every initialisation by name
  (:data:`POLICY_NAMES`); :func:`initial_policy`: the initialisations of the
  paper's Figure 4 (and ``near-star``).
"""

from __future__ import annotations

from . import closed_form, necklaces, star
from .ccp import ccp, ccp_probs
from .initial import INITIALISATIONS, POLICY_NAMES, initial_policy, named_policy
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
