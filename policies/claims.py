"""The paper's claims about training (Figure 2, and Figure 4 in section 6), checked against final values of q.

Each claim names the runs it compares; :func:`check_figure4` reads them from a mapping ``(memory, reset,
init) -> final q of each seed`` (the ``groups`` of a shipped sweep) and says, per claim, the numbers
(median and range over seeds) and whether the claim holds on them, or that its runs are not there yet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["FIGURE4_CLAIMS", "check_figure2", "check_figure4"]

Group = tuple[str, float, str]  # (memory, reset, init)

#: Relative margin under which a final q counts as the same value as another (``only``): far below the spread
#: of seeds that do not reach it, far above the flow's last steps.
REACHED = 1e-4

#: Level of the one-sided Mann-Whitney U test under which a ``below`` claim's step from one group of seeds to
#: the next counts as significant.
SIGNIFICANCE = 0.05

#: (panel, the paper's words, the groups compared, how): ``below`` means each group's median q is below the
#: previous one's (and, between groups of several seeds, significantly so: :data:`SIGNIFICANCE`); ``within``
#: means the second (one deterministic run) is below the first's median but inside the range of its seeds
#: (better, not significantly); ``poor`` means the first group's median is at least twice the second's
#: (random against near-CCP); ``only`` means no seed of the first group ends within ``REACHED`` of the second
#: (one near-CCP run): the CCP is reached only from near it; ``steadier`` means the second memory's medians over
#: its starts (largest / smallest) spread less than the first memory's.
FIGURE4_CLAIMS: tuple[tuple[str, str, tuple[Group, ...], str], ...] = (
    ("A", "RAM M = 8: random initialisation leads to very poor results",
     (("ram:8", 1e-3, "random"), ("ram:8", 1e-3, "near-ccp")), "poor"),
    ("A", "RAM M = 8: results improve with a linear structure, and more with two columns",
     (("ram:8", 1e-3, "random"), ("ram:8", 1e-3, "linear"), ("ram:8", 1e-3, "columns")), "below"),
    ("A", "RAM M = 8: training converges to the CCP only from near it",
     (("ram:8", 1e-3, "columns"), ("ram:8", 1e-3, "near-ccp")), "only"),
    ("B", "RAM M = 20: random initialisation leads to very poor results",
     (("ram:20", 1e-3, "random"), ("ram:20", 1e-3, "near-ccp")), "poor"),
    ("B", "RAM M = 20: results improve with a linear structure, and more with two columns",
     (("ram:20", 1e-3, "random"), ("ram:20", 1e-3, "linear"), ("ram:20", 1e-3, "columns")), "below"),
    ("B", "RAM M = 20: training converges to the CCP only from near it",
     (("ram:20", 1e-3, "columns"), ("ram:20", 1e-3, "near-ccp")), "only"),
    ("C", "Memento m = 3: random does not do as well as the necklace start, but not significantly",
     (("memento:3", 1e-3, "random"), ("memento:3", 1e-3, "near-necklace")), "within"),
    ("D", "Memento m = 4: random does not do as well as the necklace start, but not significantly",
     (("memento:4", 1e-3, "random"), ("memento:4", 1e-3, "near-necklace")), "within"),
    ("A, C", "Memento m = 3 is less sensitive to its start than RAM M = 8",
     (("ram:8", 1e-3, "random"), ("ram:8", 1e-3, "linear"), ("ram:8", 1e-3, "columns"), ("ram:8", 1e-3, "near-ccp"),
      ("memento:3", 1e-3, "random"), ("memento:3", 1e-3, "cycles"), ("memento:3", 1e-3, "near-necklace")), "steadier"),
    ("B, D", "Memento m = 4 is less sensitive to its start than RAM M = 20",
     (("ram:20", 1e-3, "random"), ("ram:20", 1e-3, "linear"), ("ram:20", 1e-3, "columns"), ("ram:20", 1e-3, "near-ccp"),
      ("memento:4", 1e-3, "random"), ("memento:4", 1e-3, "cycles"), ("memento:4", 1e-3, "near-necklace")), "steadier"),
    ("E", "random starts: Memento m = 3 ends better than RAM M = 16 (the same effective memory)",
     (("ram:16", 1e-5, "random"), ("memento:3", 1e-5, "random")), "below"),
    ("F", "random starts: Memento m = 4 ends better than RAM M = 64 (the same effective memory)",
     (("ram:64", 1e-5, "random"), ("memento:4", 1e-5, "random")), "below"),
)  # fmt: skip


def _describe(group: Group, qs: Sequence[float]) -> str:
    memory, reset, init = group
    if len(qs) == 1:
        return f"{memory} {init}: q = {qs[0]:.4g}"
    return f"{memory} {init}: median {np.median(qs):.4g} [{min(qs):.4g}, {max(qs):.4g}] over {len(qs)}"


def _lower_p(before: Sequence[float], after: Sequence[float]) -> float:
    """One-sided Mann-Whitney U test that the seeds ``after`` end lower than those ``before``: its p-value."""
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(before, after, alternative="greater").pvalue)


def check_figure4(groups: Mapping[Group, Sequence[float]], expected: Mapping[Group, int] | None = None) -> list[dict]:
    """One record per claim: ``panel``, ``claim``, ``numbers`` (text), ``verdict``.

    ``verdict`` is ``holds``, ``does not hold``, ``not run yet`` when a compared group has no finished
    run, or ``waiting: ...`` naming the groups with fewer than ``expected[group]`` runs and how many they
    have (the numbers are shown, and the verdict waits for the rest).
    """
    out = []
    for panel, claim, compared, how in FIGURE4_CLAIMS:
        runs = [list(groups.get(group, ())) for group in compared]
        numbers = "; ".join(_describe(g, qs) for g, qs in zip(compared, runs, strict=True) if qs)
        if not all(runs):
            out.append({"panel": panel, "claim": claim, "numbers": numbers, "verdict": "not run yet"})
            continue
        wanted = [expected.get(g, 1) if expected else 1 for g in compared]
        short = [f"{g[0]} {g[2]} has {len(qs)} of {n} runs" for g, qs, n in zip(compared, runs, wanted, strict=True) if len(qs) < n]
        if short:
            out.append({"panel": panel, "claim": claim, "numbers": numbers, "verdict": f"waiting: {', '.join(short)}"})
            continue
        medians = [float(np.median(qs)) for qs in runs]
        if how == "steadier":  # the spread of the medians over the starts: largest / smallest, per memory
            spread = {}
            for (memory, _, _), median in zip(compared, medians, strict=True):
                low, high = spread.get(memory, (np.inf, 0.0))
                spread[memory] = (min(low, median), max(high, median))
            (first, (a, b)), (second, (c, d)) = spread.items()
            numbers = f"largest / smallest median over the starts: {first} {b / a:.3g}, {second} {d / c:.3g}"
            out.append({"panel": panel, "claim": claim, "numbers": numbers, "verdict": "holds" if d / c < b / a else "does not hold"})
            continue
        if how == "only":  # no seed of the first group ends where the second one does
            reach = sum(q <= medians[1] * (1 + REACHED) for q in runs[0])
            if reach:
                out.append({"panel": panel, "claim": claim, "numbers": f"{numbers}; {reach} of {len(runs[0])} seeds within {REACHED:g} of it",
                            "verdict": f"does not hold: {reach} of {len(runs[0])} seeds from {compared[0][2]} reach it too"})  # fmt: skip
                continue
            holds = True
        elif how == "below":
            holds = all(b < a for a, b in zip(medians, medians[1:], strict=False))
            # Medians in order may still be chance: the rank test says how likely each step down is under
            # the hypothesis that both groups end alike.
            p_values = [_lower_p(a, b) for a, b in zip(runs, runs[1:], strict=False) if len(a) > 1 and len(b) > 1]
            if p_values:
                numbers += "; one-sided Mann-Whitney p = " + ", ".join(f"{p:.2g}" for p in p_values)
            if holds and p_values and max(p_values) >= SIGNIFICANCE:
                out.append({"panel": panel, "claim": claim, "numbers": numbers,
                            "verdict": f"holds on the medians, not significantly (p = {max(p_values):.2g} >= {SIGNIFICANCE:g})"})  # fmt: skip
                continue
        elif how == "within":
            holds = medians[1] < medians[0] and min(runs[0]) <= medians[1]
        else:  # poor
            holds = medians[0] >= 2 * medians[1]
        out.append({"panel": panel, "claim": claim, "numbers": numbers, "verdict": "holds" if holds else "does not hold"})
    return out


def check_figure2(points: Sequence[tuple[float, int, float, float]], convention: str = "paper", *, rtol: float = 1e-9) -> list[dict]:
    """Figure 2's claim, "training from near the CCP does not beat the CCP", on final values of q.

    ``points``: ``(mu, M, reset, final q)`` of each finished run, q in ``convention``. Each is compared with
    the symmetric CCP at its optimal eps and with the asymmetric CCP (:mod:`policies.asymmetric`), both from
    their closed forms; ``rtol`` is the relative margin under which two values count as equal. One record
    (``panel``, ``claim``, ``numbers``, ``verdict``) like :func:`check_figure4`'s.
    """
    from policies.asymmetric import asymmetric_ccp_optimum
    from policies.reference import ccp_line

    claim = "training from near the CCP does not beat the CCP"
    if not points:
        return [{"panel": "Figure 2", "claim": claim, "numbers": "", "verdict": "not run yet"}]
    below, under_asymmetric = [], 0
    for mu, M, reset, q in points:
        symmetric = ccp_line(mu, M, reset, convention)
        asymmetric = asymmetric_ccp_optimum(mu, M, reset, convention=convention).q
        if q < symmetric * (1 - rtol):
            below.append((symmetric - q) / symmetric)
            under_asymmetric += q < asymmetric * (1 - rtol)
    numbers = f"{len(below)} of {len(points)} runs end below the symmetric CCP"
    if below:
        numbers += f", by at most {max(below):.3g} of it (median {float(np.median(below)):.3g}); {under_asymmetric} below the asymmetric CCP"
    if not below:
        verdict = "holds"
    elif under_asymmetric == 0:
        verdict = "does not hold: those runs end between the symmetric and the asymmetric CCP, a better policy of the same memory"
    else:
        verdict = "does not hold: some runs end below the asymmetric CCP too"
    return [{"panel": "Figure 2", "claim": claim, "numbers": numbers, "verdict": verdict}]
