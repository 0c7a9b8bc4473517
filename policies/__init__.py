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

from fsc.lazy import export

# Imported on first use (fsc.lazy): `fsc closed-form` reads policies.closed_form without waiting for torch.
__all__ = export(
    __name__,
    {
        "policies.ccp": ("ccp", "ccp_probs"),
        "policies.initial": ("initial_policy", "named_policy"),
        "policies.names": ("INITIALISATIONS", "POLICY_NAMES"),
        "policies.necklace": ("default_eps", "necklace_exits", "necklace_policy", "necklace_probs"),
        "policies.star": ("star_architecture", "star_eps_opt", "star_probs", "star_q"),
    },
    submodules=("closed_form", "necklaces", "star"),
)
