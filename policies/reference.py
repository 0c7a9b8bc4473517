"""Reference lines: the known policy a training curve is compared with, in the curve's convention.

One function, :func:`reference_lines`, decides the dashed lines drawn beside
curves of ``q(t)`` (examples/figure2.py, examples/figure4.py, the report's
training panel, the sweep summary), so that every line is computed at the
curves' ``mu``, reset ``r`` and convention:

- RAM, Column, Chain: the symmetric column of confidence at its optimal eps
  (appendix C) and the asymmetric CCP at its optimum
  (:mod:`policies.asymmetric`), which training from near-CCP reaches;
- Memento ``m``: the necklace policy optimised over ``(eps0, eps1)`` at this
  ``r`` (:func:`necklace_optimum`; exact evaluation), and Theorem 4.3's
  ``q*`` (the ``r -> 0`` limit, the same in both conventions). From m = 4,
  where necklaces lie off the chain, two lines: Definition 4.1 read literally
  (as the published code and its figure do) and the variant with exits off
  the chain (:mod:`policies.necklace`).

``native`` is the stationary worse-arm probability; ``paper`` reads ``q``
from the gain carried by the next state: ``q_paper = (1 - r) q + r / 2``
(:func:`policies.asymmetric.to_convention`).
"""

from __future__ import annotations

import functools
import math
import typing

import numpy as np

from fsc.errors import InputError

from .asymmetric import asymmetric_ccp_optimum, to_convention
from .closed_form import ccp_eps_best, ccp_q, necklace_q_star

__all__ = ["NecklaceOptimum", "ccp_line", "necklace_optimum", "parse_memory", "reference_lines"]

_CONVENTIONS = ("native", "paper")


def parse_memory(memory: str) -> tuple[str, int]:
    """``"ram:8"`` -> ``("ram", 8)``; raises ValueError naming the text otherwise."""
    kind, _, size = str(memory).lower().partition(":")
    if not size.isdigit() or int(size) < 1:
        raise InputError(f"memory must look like ram:M, column:M, chain:M or memento:m, got {memory!r}")
    return kind, int(size)


def ccp_line(mu: float, M: int, reset: float, convention: str) -> float:
    """``q`` of the symmetric CCP at its optimal eps (capped at 1), in ``convention``: the first line of :func:`reference_lines`."""
    if convention not in _CONVENTIONS:
        raise InputError(f"convention must be one of {_CONVENTIONS}, got {convention!r}")
    return to_convention(ccp_q(mu, M, reset, ccp_eps_best(mu, M, reset)), reset, convention)


class NecklaceOptimum(typing.NamedTuple):
    """The necklace policy's best ``q`` over ``(eps0, eps1)`` at one reset, and where it is.

    ``on_bound`` names the exit probabilities the optimum sits on the bound 1 of (``()`` inside): there
    the optimiser stopped at the edge of what a probability allows, not at a stationary point.
    """

    q: float
    eps0: float
    eps1: float

    @property
    def on_bound(self) -> tuple[str, ...]:
        return tuple(name for name, eps in (("eps0", self.eps0), ("eps1", self.eps1)) if eps >= 1.0)


@functools.lru_cache(maxsize=64)
def necklace_optimum(mu: float, m: int, r: float, convention: str = "native", variant: str = "exits-off-chain") -> NecklaceOptimum:
    """The necklace policy on Memento ``m`` (``variant``: :data:`policies.necklace.VARIANTS`) optimised over
    ``(eps0, eps1)`` at reset ``r``: ``(q, eps0, eps1)`` (:class:`NecklaceOptimum`, which says when an eps
    ends on its bound 1).

    Exact evaluation (:func:`fsc.evaluate`) minimised over ``(log eps0, log eps1) <= 0`` by bounded
    Nelder-Mead from the paper's start ``(r^(1/2), r^(1/4))`` and from a few other starts, then polished by
    bounded L-BFGS-B from the best.
    """
    import torch
    from scipy import optimize

    import fsc
    from tasks import TwoHypothesis

    from .necklace import _check_variant, necklace_probs

    if convention not in _CONVENTIONS:
        raise InputError(f"convention must be one of {_CONVENTIONS}, got {convention!r}")
    _check_variant(variant)
    arch = fsc.Memento(m)
    world = TwoHypothesis(mu)

    def q_of(z) -> float:
        e0, e1 = (math.exp(min(0.0, v)) for v in z)
        probs, init = necklace_probs(arch, e0, e1, variant=variant)
        with torch.no_grad():
            return float(fsc.evaluate(world, fsc.Policy.from_probs(arch, probs, init), reset=r, convention=convention).metrics["q"])

    bounds = [(None, 0.0), (None, 0.0)]
    best_z, best = None, math.inf
    for a, b in ((0.5, 0.25), (0.5, 0.5), (0.35, 0.15), (0.7, 0.35)):
        z0 = np.array([a * math.log(r), b * math.log(r)])
        res = optimize.minimize(q_of, z0, method="Nelder-Mead", bounds=bounds, options={"xatol": 1e-4, "fatol": 1e-14, "maxiter": 400})
        if res.fun < best:
            best, best_z = float(res.fun), np.minimum(res.x, 0.0)
    polish = optimize.minimize(q_of, best_z, method="L-BFGS-B", bounds=bounds, options={"ftol": 1e-15, "gtol": 1e-12})
    if polish.fun < best:
        best, best_z = float(polish.fun), np.minimum(polish.x, 0.0)
    return NecklaceOptimum(best, math.exp(best_z[0]), math.exp(best_z[1]))


def reference_lines(memory: str, mu: float, reset: float, convention: str, *, necklace_at_r: bool = True) -> dict[str, float]:
    """The reference lines for curves trained on ``memory`` at ``(mu, reset)`` in ``convention``: label -> q.

    Every value is in ``convention``.  Memento sizes above 5 get only what
    costs little (no Theorem 4.3 chain search, no optimisation);
    ``necklace_at_r=False`` skips the (seconds-long) optimisation of the
    necklace policy at ``r``.  Architectures without a known family get no line.
    """
    if convention not in _CONVENTIONS:
        raise InputError(f"convention must be one of {_CONVENTIONS}, got {convention!r}")
    kind, size = parse_memory(memory)
    if kind in ("ram", "column", "chain"):
        optimum = asymmetric_ccp_optimum(mu, size, reset, convention=convention)
        return {
            f"CCP, M={size}, r={reset:g} ({convention})": ccp_line(mu, size, reset, convention),
            f"asymmetric CCP, M={size}, r={reset:g} ({convention})": optimum.q,
        }
    if kind == "memento" and size <= 5:
        lines = {}
        if necklace_at_r and size <= 4:
            from .necklace import necklace_exits

            if necklace_exits(size).feeders:  # necklaces off the chain: the two variants differ
                lines[f"necklace (Definition 4.1), m={size}, r={reset:g} ({convention})"] = necklace_optimum(mu, size, reset, convention, "literal").q
                lines[f"necklace, exits off the chain, m={size}, r={reset:g} ({convention})"] = necklace_optimum(mu, size, reset, convention).q
            else:
                lines[f"necklace, m={size}, r={reset:g} ({convention})"] = necklace_optimum(mu, size, reset, convention).q
        lines[f"necklace q*, m={size} (r -> 0)"] = necklace_q_star(mu, size)
        return lines
    return {}
