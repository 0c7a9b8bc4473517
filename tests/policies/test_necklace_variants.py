"""The necklace policy's two readings of the necklaces off the chain, and the optimum over (eps0, eps1) at its bound."""

from __future__ import annotations

import numpy as np
import pytest

import fsc
from policies import closed_form
from policies.necklace import VARIANTS, necklace_exits, necklace_policy, necklace_probs
from policies.reference import necklace_optimum, reference_lines
from tasks import TwoHypothesis


def _q(m: int, eps0: float, eps1: float, reset: float, variant: str) -> float:
    arch = fsc.Memento(m)
    probs, init = necklace_probs(arch, eps0, eps1, variant=variant)
    return float(fsc.evaluate(TwoHypothesis(0.1), fsc.Policy.from_probs(arch, probs, init), reset=reset).metrics["q"])


@pytest.mark.parametrize("m", [2, 3])
def test_without_necklaces_off_the_chain_the_variants_are_one_policy(m):
    assert not necklace_exits(m).feeders
    arch = fsc.Memento(m)
    literal, variant = (necklace_probs(arch, 0.01, 0.1, variant=v) for v in ("literal", "exits-off-chain"))
    assert np.array_equal(literal[0], variant[0]) and np.array_equal(literal[1], variant[1])


def test_the_literal_m4_policy_traps_an_eighth_of_the_resets():
    """ABAB has no exit in Definition 4.1. After a reset four steps of 1/2 each write a uniform word of four arms,
    and 2 of the 16 (ABAB, BABA) are the trap, where the worse arm is played half the time. As r -> 0 at fixed
    eps, the other 7/8 behave as the variant does: q_literal -> 1/16 + (7/8) q_variant."""
    assert set(necklace_exits(4).feeders) and {"ABAB", "BABA"} & set(necklace_exits(4).feeders)
    _, literal = necklace_policy(4, 0.003, 0.05, variant="literal")
    arch, variant = necklace_policy(4, 0.003, 0.05)
    trap = [n for n, label in enumerate(arch.node_labels) if label[:4] in ("ABAB", "BABA")]
    assert np.allclose(literal.probs().detach().numpy()[trap].max(axis=1), 1.0)  # never leaves
    assert np.allclose(variant.probs().detach().numpy()[[n for n in trap if arch.node_labels[n][:4] in necklace_exits(4).feeders]].max(axis=1), 1.0)
    q_literal, q_variant = _q(4, 0.003, 0.05, 1e-9, "literal"), _q(4, 0.003, 0.05, 1e-9, "exits-off-chain")
    assert abs(q_literal - (1 / 16 + 7 / 8 * q_variant)) < 1e-7
    # So the literal policy never approaches Theorem 4.3's q* (0.0388 for m = 4, mu = 0.1): it stays above 1/16.
    assert q_literal > 1 / 16 > closed_form.necklace_q_star(0.1, 4) == pytest.approx(0.0388, abs=1e-4)


def test_the_variants_are_named_and_others_refused():
    assert VARIANTS == ("exits-off-chain", "literal")
    with pytest.raises(ValueError, match="variant"):
        necklace_policy(4, 0.01, 0.1, variant="published")


def test_the_optimum_reports_its_bound_and_is_not_cut_by_it():
    """m = 3, r = 1e-3: the best eps1 is just below 1 (the old optimiser clipped it to 1 and reported 0.2388033);
    m = 4, r = 1e-3: the best eps1 is the bound 1 itself, and q still falls as eps1 rises to it."""
    inside = necklace_optimum(0.1, 3, 1e-3)
    assert inside.on_bound == () and 0.98 < inside.eps1 < 1
    assert inside.q < _q(3, inside.eps0, 1.0, 1e-3, "exits-off-chain") - 1e-6  # the clipped point is worse
    assert inside.q <= _q(3, inside.eps0, inside.eps1 * 0.99, 1e-3, "exits-off-chain")
    at_bound = necklace_optimum(0.1, 4, 1e-3)
    assert at_bound.on_bound == ("eps1",) and at_bound.eps1 == 1.0
    assert at_bound.q < _q(4, at_bound.eps0, 0.99, 1e-3, "exits-off-chain")


@pytest.mark.slow
def test_the_figure_draws_both_readings_where_they_differ():
    lines = reference_lines("memento:4", 0.1, 1e-3, "paper")
    assert lines["necklace (Definition 4.1), m=4, r=0.001 (paper)"] == necklace_optimum(0.1, 4, 1e-3, "paper", "literal").q
    assert lines["necklace, exits off the chain, m=4, r=0.001 (paper)"] == necklace_optimum(0.1, 4, 1e-3, "paper").q
    assert list(reference_lines("memento:3", 0.1, 1e-3, "paper"))[0] == "necklace, m=3, r=0.001 (paper)"
