"""The paper's claims about training (Figure 2, and Figure 4 in section 6), checked against final values of q.

Each claim names the groups of runs it compares (its *family*: memory, reset and start, as the paper's panel
draws them); :func:`check_figure4` reads them from a mapping ``(memory, reset, init) -> final q of each seed``
(the ``groups`` of a shipped sweep) and says, per claim, the numbers (median and range over seeds), the test,
the tolerance, the horizon of the runs, and whether the claim holds on them, or that its runs are not there
yet. A claim of two parts says which part fails.

One tolerance serves every verdict: :data:`TOLERANCE`, relative. Two final values of q closer than it count as
the same value; one value is below another only when it is below by more than it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["APART", "FIGURE4_CLAIMS", "SIGNIFICANCE", "TOLERANCE", "check_figure2", "check_figure4", "compare_integrators", "verdict_kind"]

Group = tuple[str, float, str]  # (memory, reset, init)

#: Relative margin under which two final values of q count as the same, in every verdict: far below the spread
#: of seeds that end apart, far above the flow's last steps.
TOLERANCE = 1e-4

#: Level of the one-sided Mann-Whitney U test under which a step from one group of seeds to the next counts as
#: significant.
SIGNIFICANCE = 0.05

#: Two runs of one point by two integrators end elsewhere when their final q differ by more than this (absolute):
#: ten times the largest distance of a true-flow curve to BDF allowed (1e-4), far above the flow's last steps.
APART = 1e-3

#: How each kind of claim is tested, as the claims files state it.
TESTS = {
    "poor": "the first group's median q is at least twice the second's",
    "below": f"each group's median q below the previous one's by more than the tolerance, and significantly (one-sided Mann-Whitney U, p < {SIGNIFICANCE:g})",
    "only": "no seed of the first group ends within the tolerance of the second (one run)",
    "worse, not significantly": "(1) the first group's median q above the second's by more than the tolerance; "
    f"(2) not significantly: one-sided Mann-Whitney U p >= {SIGNIFICANCE:g}",
    "within": "the one run ends below the seeds' median by more than the tolerance, and not below their best by more than the tolerance",
    "steadier": "the second memory's medians over its starts spread less (largest / smallest) than the first memory's",
}  # fmt: skip

Claim = tuple[str, str, tuple[Group, ...], str]  # (panel, the paper's words, the groups compared, how)


def _ram_claims(panel: str, M: int) -> tuple[Claim, ...]:
    """The three claims of panel A (``M = 8``) or B (``M = 20``) about RAM ``M`` at ``r = 1e-3`` and its starts."""

    def ram(init: str) -> Group:
        return (f"ram:{M}", 1e-3, init)

    return (
        (panel, f"RAM M = {M}: random initialisation leads to very poor results", (ram("random"), ram("near-ccp")), "poor"),
        (panel, f"RAM M = {M}: results improve with a linear structure, and more with two columns", (ram("random"), ram("linear"), ram("columns")), "below"),
        (panel, f"RAM M = {M}: training converges to the CCP only from near it", (ram("columns"), ram("near-ccp")), "only"),
    )


#: (panel, the paper's words, the groups compared, how: a key of :data:`TESTS`). Panels C and D of the
#: published figure draw the random starts (blue) and the cycles starts (orange): their claim compares those.
#: The rows marked "beside the paper" compare with a run the paper's panels do not draw.
FIGURE4_CLAIMS: tuple[Claim, ...] = (
    *_ram_claims("A", 8),
    *_ram_claims("B", 20),
    ("C", "Memento m = 3: random starts do not do as well as the cycles starts, but not significantly",
     (("memento:3", 1e-3, "random"), ("memento:3", 1e-3, "cycles")), "worse, not significantly"),
    ("D", "Memento m = 4: random starts do not do as well as the cycles starts, but not significantly",
     (("memento:4", 1e-3, "random"), ("memento:4", 1e-3, "cycles")), "worse, not significantly"),
    ("C, beside the paper", "Memento m = 3: the near-necklace start (not drawn by the paper) ends within the random starts' range, below their median",
     (("memento:3", 1e-3, "random"), ("memento:3", 1e-3, "near-necklace")), "within"),
    ("D, beside the paper", "Memento m = 4: the near-necklace start (not drawn by the paper) ends within the random starts' range, below their median",
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


def _family(compared: Sequence[Group]) -> str:
    """The groups compared, in the claim's order: ``ram:8 r=0.001: random, linear, columns``."""
    by_memory: dict[tuple[str, float], list[str]] = {}
    for memory, reset, init in compared:
        by_memory.setdefault((memory, reset), []).append(init)
    return "; ".join(f"{memory} r={reset:g}: {', '.join(inits)}" for (memory, reset), inits in by_memory.items())


def _lower_p(before: Sequence[float], after: Sequence[float]) -> float:
    """One-sided Mann-Whitney U test that the seeds ``after`` end lower than those ``before``: its p-value."""
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(before, after, alternative="greater").pvalue)


def _below(a: float, b: float) -> bool:
    """``b`` is below ``a`` by more than the tolerance."""
    return b < a * (1 - TOLERANCE)


def _reach_time(curves: Sequence[tuple[np.ndarray, np.ndarray]], target: float) -> float | None:
    """The latest, over the seeds that reach ``target`` (within the tolerance), of the first ``t`` where they do."""
    times = []
    for t, q in curves:
        hit = np.flatnonzero(np.asarray(q) <= target * (1 + TOLERANCE))
        if len(hit):
            times.append(float(np.asarray(t)[hit[0]]))
    return max(times) if times else None


def _verdict(how: str, compared, runs, numbers: str, curves) -> tuple[str, str]:
    """``(numbers, verdict)`` of a claim whose groups have all their runs."""
    medians = [float(np.median(qs)) for qs in runs]
    if how == "steadier":  # the spread of the medians over the starts: largest / smallest, per memory
        spread = {}
        for (memory, _, _), median in zip(compared, medians, strict=True):
            low, high = spread.get(memory, (np.inf, 0.0))
            spread[memory] = (min(low, median), max(high, median))
        (first, (a, b)), (second, (c, d)) = spread.items()
        numbers = f"largest / smallest median over the starts: {first} {b / a:.3g}, {second} {d / c:.3g}"
        return numbers, "holds" if d / c < b / a else "does not hold"
    if how == "only":  # no seed of the first group ends where the second one does
        reach = sum(q <= medians[1] * (1 + TOLERANCE) for q in runs[0])
        if not reach:
            return numbers, "holds"
        when = _reach_time(curves.get(compared[0], ()), medians[1]) if curves else None
        by = f", the last of them by t = {when:.2g} (first shipped trajectory row within the tolerance)" if when is not None else ""
        numbers += f"; {reach} of {len(runs[0])} seeds within {TOLERANCE:g} of it{by}"
        return numbers, f"does not hold: {reach} of {len(runs[0])} seeds from {compared[0][2]} reach it too{by}"
    if how == "poor":
        return numbers, "holds" if medians[0] >= 2 * medians[1] else "does not hold"
    if how == "within":
        holds = _below(medians[0], medians[1]) and not _below(min(runs[0]), medians[1])
        return numbers, "holds" if holds else "does not hold"
    several = [len(a) > 1 and len(b) > 1 for a, b in zip(runs, runs[1:], strict=False)]
    p_values = [_lower_p(a, b) if ok else None for a, b, ok in zip(runs, runs[1:], several, strict=False)]
    if any(p is not None for p in p_values):
        numbers += "; one-sided Mann-Whitney p = " + ", ".join(f"{p:.2g}" for p in p_values if p is not None)
    if how == "worse, not significantly":  # two parts: worse on the medians; not significantly
        worse, p = _below(medians[0], medians[1]), p_values[0]
        quiet = p is None or p >= SIGNIFICANCE
        if worse and quiet:
            return numbers, "holds"
        if worse:
            return numbers, f"does not hold: part (2) fails, the difference is significant (p = {p:.2g} < {SIGNIFICANCE:g}); part (1) holds"
        better = _lower_p(runs[1], runs[0]) if p is not None else 1.0  # the other way round
        tail = f"; it ends better, significantly (p = {better:.2g})" if better < SIGNIFICANCE else ""
        return numbers, "does not hold: part (1) fails, the first group does not end worse" + tail
    # below: each step down, on the medians and significantly; name the steps that fail
    names = [g[2] if len({c[0] for c in compared}) == 1 else f"{g[0]} {g[2]}" for g in compared]
    failed = []
    for k, (a, b) in enumerate(zip(medians, medians[1:], strict=False)):
        step = f"{names[k]} -> {names[k + 1]}"
        if not _below(a, b):
            failed.append(f"{step}: the median does not go down")
        elif p_values[k] is not None and p_values[k] >= SIGNIFICANCE:
            failed.append(f"{step}: on the medians, not significantly (p = {p_values[k]:.2g} >= {SIGNIFICANCE:g})")
    if not failed:
        return numbers, "holds"
    if all("not significantly" in f for f in failed):
        worst = max(p for p in p_values if p is not None)
        where = "" if len(failed) == len(medians) - 1 else " at " + ", ".join(f.split(":")[0] for f in failed)
        return numbers, f"holds on the medians, not significantly (p = {worst:.2g} >= {SIGNIFICANCE:g}){where}"
    return numbers, "does not hold: " + "; ".join(failed)


def _horizon(compared: Sequence[Group], horizons: Mapping[Group, tuple[str, str]]) -> str:
    """``memory r=...: bounds (init: stops; ...)`` per memory and reset of the compared groups."""
    parts: dict[tuple[str, float], tuple[str, list[str]]] = {}
    for group in compared:
        if group in horizons:
            bounds, stops = horizons[group]
            parts.setdefault(group[:2], (bounds, []))[1].append(f"{group[2]}: {stops}" if stops else group[2])
    return " / ".join(f"{memory} r={reset:g}: {bounds} (stopped: {'; '.join(stops)})" for (memory, reset), (bounds, stops) in parts.items())


def check_figure4(
    groups: Mapping[Group, Sequence[float]],
    expected: Mapping[Group, int] | None = None,
    *,
    horizons: Mapping[Group, tuple[str, str]] | None = None,
    curves: Mapping[Group, Sequence[tuple[np.ndarray, np.ndarray]]] | None = None,
) -> list[dict]:
    """One record per claim: ``panel``, ``claim``, ``family`` (the groups compared), ``test``, ``tolerance``,
    ``horizon``, ``numbers`` (text), ``verdict``.

    ``verdict`` is ``holds``, ``does not hold`` (saying which part fails), ``not run yet`` when a compared
    group has no finished run, or ``waiting: ...`` naming the groups with fewer than ``expected[group]`` runs
    and how many they have. ``horizons``: per group, its bounds and why its finished runs stopped (two texts); ``curves``: per group, the
    ``(t, q)`` of each seed, to say when seeds reach a value.
    """
    out = []
    for panel, claim, compared, how in FIGURE4_CLAIMS:
        runs = [list(groups.get(group, ())) for group in compared]
        numbers = "; ".join(_describe(g, qs) for g, qs in zip(compared, runs, strict=True) if qs)
        horizon = _horizon(compared, horizons or {})
        record = {"panel": panel, "claim": claim, "family": _family(compared), "test": TESTS[how], "tolerance": TOLERANCE,
                  "horizon": horizon}  # fmt: skip
        wanted = [expected.get(g, 1) if expected else 1 for g in compared]
        short = [f"{g[0]} {g[2]} has {len(qs)} of {n} runs" for g, qs, n in zip(compared, runs, wanted, strict=True) if len(qs) < n]
        if not all(runs):
            verdict = "not run yet"
        elif short:
            verdict = f"waiting: {', '.join(short)}"
        else:
            numbers, verdict = _verdict(how, compared, runs, numbers, curves)
        out.append({**record, "numbers": numbers, "verdict": verdict})
    return out


def check_figure2(
    points: Sequence[tuple[float, int, float, float]],
    convention: str = "paper",
    *,
    tolerance: float = TOLERANCE,
    stops: Sequence[str | None] | None = None,
    horizon: str = "",
) -> list[dict]:
    """Figure 2's claim, "training from near the CCP does not beat the CCP", on final values of q, and what
    the runs that end above the CCP say.

    ``points``: ``(mu, M, reset, final q)`` of each finished run, q in ``convention``. Each is compared with
    the symmetric CCP at its optimal eps and with the asymmetric CCP (:mod:`policies.asymmetric`), both from
    their closed forms; ``tolerance`` is the relative margin under which two values count as equal.
    ``stops``: why each run stopped (``until_t``: at the horizon, still moving; ``stalled``), if known. Two
    records (``panel``, ``claim``, ``family``, ``test``, ``tolerance``, ``horizon``, ``numbers``, ``verdict``).
    """
    from policies.asymmetric import asymmetric_ccp_optimum
    from policies.reference import ccp_line

    claim = "training from near the CCP does not beat the CCP"
    above_claim = "training from near the CCP ends on the CCP (the paper's symbols sit on its lines)"
    family = f"RAM from near-CCP (one run per point), {convention} convention, against the closed forms of the symmetric and asymmetric CCP"
    common = {"panel": "Figure 2", "family": family, "tolerance": tolerance, "horizon": horizon}
    test = "no run ends below the symmetric CCP by more than the tolerance"
    test_above = "no run ends above the symmetric CCP by more than the tolerance"
    if not points:
        return [{**common, "claim": claim, "test": test, "numbers": "", "verdict": "not run yet"},
                {**common, "claim": above_claim, "test": test_above, "numbers": "", "verdict": "not run yet"}]  # fmt: skip
    stops = list(stops) if stops is not None else [None] * len(points)
    below, beyond, under_asymmetric, above = 0, [], 0, []
    for (mu, M, reset, q), stop in zip(points, stops, strict=True):
        symmetric = ccp_line(mu, M, reset, convention)
        asymmetric = asymmetric_ccp_optimum(mu, M, reset, convention=convention).q
        if q < symmetric:
            below += 1
        if q < symmetric * (1 - tolerance):
            beyond.append((symmetric - q) / symmetric)
            under_asymmetric += q < asymmetric * (1 - tolerance)
        if q > symmetric * (1 + tolerance):
            above.append(((q - symmetric) / symmetric, mu, M, reset, stop))
    numbers = f"{below} of {len(points)} runs end below the symmetric CCP, {len(beyond)} by more than the tolerance"
    if beyond:
        numbers += f" (by at most {max(beyond):.3g} of it, median {float(np.median(beyond)):.3g}); {under_asymmetric} below the asymmetric CCP"
    if not beyond:
        verdict = "holds"
    elif under_asymmetric == 0:
        verdict = "does not hold: those runs end between the symmetric and the asymmetric CCP, a better policy of the same memory"
    else:
        verdict = "does not hold: some runs end below the asymmetric CCP too"
    records = [{**common, "claim": claim, "test": test, "numbers": numbers, "verdict": verdict}]
    if not above:
        return [*records, {**common, "claim": above_claim, "test": test_above, "numbers": f"0 of {len(points)} runs", "verdict": "holds"}]
    above.sort(reverse=True)
    counts = {s: sum(a[4] == s for a in above) for s in dict.fromkeys(a[4] for a in above)}
    stopped = ", ".join(f"{n} {s or 'stop unknown'}" for s, n in counts.items())
    listed = ", ".join(f"mu={mu:g} M={M} r={reset:.2g}: {100 * x:.2g}%" for x, mu, M, reset, _ in above)
    numbers = (f"{len(above)} of {len(points)} runs end above it by more than the tolerance, by {100 * above[-1][0]:.2g}% to "
               f"{100 * above[0][0]:.2g}% ({sum(a[0] > 1e-3 for a in above)} by more than 0.1%); stopped: {stopped}. Largest first: {listed}")  # fmt: skip
    unconverged = "at the horizon, still moving (until_t)" if set(counts) == {"until_t"} else "by the stops listed"
    verdict = f"does not hold: {len(above)} runs have not reached the CCP, stopped {unconverged}"
    return [*records, {**common, "claim": above_claim, "test": test_above, "numbers": numbers, "verdict": verdict}]


def verdict_kind(verdict: str) -> str:
    """A verdict without its numbers: ``holds``, ``holds on the medians, not significantly``, ``does not hold``
    (whichever part fails), ``waiting`` or ``not run yet``."""
    for kind in ("holds on the medians, not significantly", "does not hold", "waiting", "not run yet"):
        if verdict.startswith(kind):
            return kind
    return verdict


def _run_line(run: Mapping) -> str:
    """One seed of a group run by two integrators: final q of each, where the curves part, where each stopped."""
    line = f"seed {run['seed']}: {run['q_published']:.4g} published, {run['q_flow']:.4g} on the true flow"
    if run.get("parted") is not None:
        line += f", apart by more than {APART:g} from t = {run['parted']:.2g} on"
    line += f"; stopped on {run['stop_published']} at t = {run['t_published']:.2g} (published), {run['stop_flow']} at t = {run['t_flow']:.2g}"
    if run.get("q_flow_at_published_end") is not None:
        line += f" (true flow at t = {run['t_published']:.2g}: {run['q_flow_at_published_end']:.4g})"
    return line


def _evidence(compared: Sequence[Group], runs: Mapping[Group, Sequence[Mapping]]) -> str:
    """The seeds of the compared groups whose final q differ by more than :data:`APART` between the integrators."""
    parts = []
    for group in compared:
        seeds = runs.get(group, ())
        apart = sorted((r for r in seeds if abs(r["q_flow"] - r["q_published"]) > APART), key=lambda r: -abs(r["q_flow"] - r["q_published"]))
        head = f"{group[0]} r={group[1]:g} {group[2]}: {len(apart)} of {len(seeds)} seeds end more than {APART:g} apart"
        parts.append(head + ("" if not apart else " (largest first): " + "; ".join(_run_line(r) for r in apart)))
    return ". ".join(parts)


def compare_integrators(published: Sequence[Mapping], flow: Sequence[Mapping], runs: Mapping[Group, Sequence[Mapping]]) -> tuple[list[dict], dict]:
    """Figure 4's claims on the published rule's runs and on the true flow's, side by side.

    ``published``, ``flow``: the records of :func:`check_figure4` on each; ``runs``: per group, one mapping per
    seed with ``seed``, ``q_published``, ``q_flow``, ``stop_published``, ``t_published``, ``stop_flow``,
    ``t_flow``, ``parted`` (the first shipped ``t`` from which the two curves stay more than :data:`APART`
    apart, or None) and ``q_flow_at_published_end`` (the true flow's q where the published run stopped, when
    it stopped short of its horizon in t, or None). Returns the flow's records, each with ``published`` (its numbers and verdict),
    ``same_verdict`` (the same :func:`verdict_kind`) and ``evidence`` (the seeds of its groups that end apart,
    for a verdict that changes; else None), and the count ``{"apart", "differ", "runs", "groups"}``.
    """
    compared = {(c["panel"], c["claim"]): groups for c, (_, _, groups, _) in zip(flow, FIGURE4_CLAIMS, strict=True)}
    before = {(c["panel"], c["claim"]): c for c in published}
    records = []
    for claim in flow:
        key = (claim["panel"], claim["claim"])
        old = before[key]
        same = verdict_kind(old["verdict"]) == verdict_kind(claim["verdict"])
        records.append({**claim, "published": {"numbers": old["numbers"], "verdict": old["verdict"]}, "same_verdict": same,
                        "evidence": None if same else _evidence(compared[key], runs)})  # fmt: skip
    every = [r for seeds in runs.values() for r in seeds]
    groups = {f"{g[0]} r={g[1]:g} {g[2]}": [sum(abs(r["q_flow"] - r["q_published"]) > APART for r in seeds), len(seeds)] for g, seeds in runs.items()}
    differ = sum(abs(r["q_flow"] - r["q_published"]) > APART for r in every)
    return records, {"apart": APART, "differ": differ, "runs": len(every), "groups": groups}
