"""The names of the policies and of the initialisations, without torch: the command line's help lists them,
and ``fsc evaluate``/``fsc train`` read their world and memory (refusing one too large) before torch is
imported.  :mod:`policies.initial` builds the policies these names name, and re-exports them."""

from __future__ import annotations

__all__ = ["INITIALISATIONS", "POLICY_NAMES"]

#: The initialisations for training (:func:`policies.initial.initial_policy`).
INITIALISATIONS = ("random", "linear", "columns", "near-ccp", "near-star", "cycles", "near-necklace")

#: Names accepted by :func:`policies.initial.named_policy`: ``--policy`` and ``fsc train --init`` on the command line.
POLICY_NAMES = ("uniform", "ccp", "star", "necklace", *INITIALISATIONS)
