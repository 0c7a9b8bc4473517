"""The report section "Beyond the paper" (:func:`fsc.report.paper.section_beyond_the_paper`).

The asymmetric column of confidence against the symmetric CCP (computed
here, a second or two), the anatomy of the best learned RAM 8 and Memento 3
policies and the Memento table (read from the committed ``results/``: training
them takes minutes, see results/PROVENANCE.md).
"""

from __future__ import annotations

import csv
import html
import json
from collections.abc import Callable
from pathlib import Path

from fsc.report import page
from fsc.report.page import Section, table


def _diagram(path: Path, reset: float, out: Path, title: str) -> str:
    """The memory diagram of the policy file ``path`` (edges of probability >= 0.01, mass at ``reset``), drawn
    now so that it follows the drawing code, as an SVG that opens at full size."""
    import tasks
    import viz
    from fsc.evaluate import evaluate
    from fsc.model.policy import Policy

    policy = Policy.load(path)
    graph = viz.memory_graph(policy, threshold=0.01, occupancy=evaluate(tasks.TwoHypothesis(0.1), policy, reset=reset), title=title)
    name = path.with_suffix(".svg").name
    viz.render(graph, out / "figures" / name)
    return page.figure(f"figures/{name}", f"diagram of the {title} policy")


#: The learned policies whose anatomy the section shows: title, policy file (in ``results/``), reset.
_ANATOMIES = (
    ("RAM 8 trained from near-CCP (r = 1e-3, native)", page.SHIPPED / "ram8" / "policy.npz", 1e-3),
    ("best learned Memento 3 (r = 1e-5)", page.SHIPPED / "memento" / "best-m3-r1e-05.npz", 1e-5),
    ("best learned Memento 3 (r = 1e-3)", page.SHIPPED / "memento" / "best-m3-r0.001.npz", 1e-3),
)


def section(out: Path, log: Callable[[str], None]):
    numbers: dict = {}
    body = _asymmetric(numbers, log) + _anatomies(out, numbers, log) + _memento(numbers)
    commands = (
        "fsc closed-form asymmetric-ccp --mu 0.1 --M 8 --reset 1e-3 --json",
        "python examples/asymmetric_ccp.py --out results/asymmetric",
        "fsc train --memory ram:8 --init near-ccp --reset 1e-3 --until-t 3e7 --out results/ram8 && fsc inspect results/ram8/policy.npz --reset 1e-3",
        "fsc sweep examples/memento_question.json --workers 1 && python examples/memento_question.py --out results/memento",
    )
    return Section("Beyond the paper: asymmetric CCP, policy anatomy, the Memento question", "".join(body), commands, json.loads(json.dumps(numbers)))


def _asymmetric(numbers: dict, log: Callable[[str], None]) -> list[str]:
    """The asymmetric CCP's optimum against the symmetric one (mu = 0.1) over a grid of M and r: the HTML, its
    gains added to ``numbers``."""
    from policies.asymmetric import asymmetric_ccp_optimum

    rows = []
    for M in (4, 8, 20):
        for r in (1e-2, 1e-3, 1e-4, 1e-6):
            o = asymmetric_ccp_optimum(0.1, M, r)
            p = asymmetric_ccp_optimum(0.1, M, r, convention="paper")
            rows.append([M, r, o.q_symmetric, o.q, o.gain, o.gain / o.q_symmetric, o.eps_A, o.eps_B, o.split, p.q_symmetric, p.q])
            numbers[f"gain M={M} r={r:g}"] = o.gain
    log(f"  asymmetric CCP: {len(rows)} optima")
    return [
        "<p>The symmetric CCP is a saddle of q: with the reset sent to one column (split j = 1) and a larger exit on that "
        "column's top, q drops to first order. The asymmetric optimum below (mu = 0.1; closed form, policies.asymmetric) "
        "is below the symmetric CCP wherever the symmetric exit is below 1.</p>",
        table(["M", "r", "q symmetric", "q asymmetric", "gain", "relative gain", "eps_A", "eps_B", "split", "q sym (paper)", "q asym (paper)"], rows,
              digits=[6, 3, 6, 6, 3, 3, 4, 4, 4, 6, 6]),  # fmt: skip
    ]


def _anatomies(out: Path, numbers: dict, log: Callable[[str], None]) -> list[str]:
    """The anatomy and the diagram of each shipped learned policy of :data:`_ANATOMIES` (a note for one not
    shipped): the HTML, their numbers added to ``numbers``."""
    from fsc.model.policy import Policy
    from policies.anatomy import anatomy, describe

    body, anatomies = [], []
    for title, path, reset in _ANATOMIES:
        if not path.is_file():
            body.append(f"<p>{html.escape(title)}: no policy in {html.escape(str(path))} (see docs/beyond-the-paper.md to make it).</p>")
            continue
        a = anatomy(Policy.load(path), mu=0.1, reset=reset)
        anatomies.append(title)
        numbers[f"anatomy {title}"] = {"q": a.q, "family": a.family, "nearest": a.nearest, "distance": a.distance, **a.parameters}
        body.append(f"<h3>Anatomy: {html.escape(title)}</h3><pre>{html.escape(describe(a, top=10))}</pre>")
        body.append(_diagram(path, reset, out, title))
    log(f"  anatomy of {len(anatomies)} learned policies")
    return body


def _memento(numbers: dict) -> list[str]:
    """The Memento question's table from ``results/memento`` (nothing when it is not shipped) and its
    provenance: the HTML, its rows added to ``numbers``."""
    memento = page.SHIPPED / "memento" / "table.csv"
    if not memento.is_file():
        return []
    with open(memento) as f:
        records = list(csv.DictReader(f))
    body = [
        "<h3>The Memento question</h3><p>Best q learned from random, cycles and near-necklace starts (native convention) "
        "against the necklace policy optimised over (eps0, eps1) at the same r (results/memento). The learned policies "
        "are the necklace chain on full histories but play deterministically right after a reset (partial histories), "
        "where the necklace policy plays 1/2-1/2; the necklace policy with the learned after-reset rows beats the "
        "optimised necklace policy at every (m, r) below.</p>",
        table(
            ["m", "r", "runs", "best learned q", "from", "necklace q at r", "learned - necklace", "necklace + learned after-reset rows", "family found"],
            [[int(r["m"]), float(r["reset"]), int(r["runs"]), float(r["best_learned_q"]), r["best_init"], float(r["necklace_q_at_r"]),
              float(r["learned_minus_necklace"]), float(r["necklace_with_learned_start_q"]), r["family_found"]] for r in records],  # fmt: skip
            digits=[6, 3, 6, 6, 6, 6, 3, 6, 6],
        ),
    ]
    numbers["memento"] = records
    provenance = page.SHIPPED / "PROVENANCE.md"
    if provenance.is_file():
        text = provenance.read_text()
        start = text.find("## results/memento/")
        body.append(page.markdown(text[start : text.find("## results/ram8/")] if start >= 0 else text[:1500]))
    return body


def integrator_section(out: Path, log: Callable[[str], None]) -> Section:
    """What depends on the integrator: Figure 4's claims on the published rule's runs and on the true flow's
    (``results/fig4-flow``, :mod:`fsc.report.results`), the check against BDF and the three curves overlaid."""
    from fsc.report.results import BDF_CHECK, draw_integrators

    title = "What depends on the integrator: Figure 4 on the true gradient flow"
    folder = page.SHIPPED / "fig4-flow"
    commands = (
        "fsc sweep examples/sweeps/fig4-rosenbrock.json --out sweeps/fig4-flow --workers 1",
        "python examples/ship_results.py examples/sweeps/fig4-rosenbrock.json sweeps/fig4-flow results/fig4-flow "
        "--no-policies ram:8 --no-policies ram:20 --no-policies ram:16 --no-policies ram:64 --no-policies memento:3 --no-policies memento:4",
        "python benchmarks/bench_training.py bdf-check --sweep sweeps/fig4-flow --json results/fig4-flow/bdf-check.json",
    )
    if not (folder / "claims.json").is_file() or not (folder / "provenance.json").is_file():
        return Section(title, "<p>No results/fig4-flow shipped with this copy; the commands below make it.</p>", commands)
    claims = json.loads((folder / "claims.json").read_text())
    provenance = json.loads((folder / "provenance.json").read_text())
    compared = provenance.get("compared_with") or {}
    bdf = json.loads((folder / BDF_CHECK).read_text()) if (folder / BDF_CHECK).is_file() else []
    worst = max(bdf, key=lambda r: r["max_dq"], default=None)
    body = [
        "<p>The published step rule follows the gradient flow only as closely as its step allows: in Figure 4's transients its "
        "curves are 1e-2 to 4e-2 off the flow (docs/model.md). The same grid (examples/sweeps/fig4-rosenbrock.json: the same "
        "points, starts, seeds and horizons) integrated by the Rosenbrock integrator at a tolerance per family, 1e-8 for RAM 8 and 1e-5 "
        "for the others (RAM 8's runs cross late steep falls of q that 1e-5 places up to 1.8e-2 off the flow): "
        f"{provenance['done']} of {provenance['points']} runs, {provenance['run_seconds_of_finished_runs'] / 3600:.2f} hours of run time.",
        _bdf_sentence(bdf, worst) + "</p>",
        f"<p>Runs whose final q differ by more than {compared.get('apart', 1e-3):g} between the two integrators: "
        f"<b>{compared.get('differ', '?')} of {compared.get('runs', '?')}</b>. Each claim of Figure 4 on both (the tests of results/fig4/claims.md; "
        "the numbers and the run-level evidence in results/fig4-flow/claims.md):</p>",
        table(["panel", "the paper says", "published rule", "true flow", "same verdict"],
              [[c["panel"], c["claim"], c["published"]["verdict"], c["verdict"], "yes" if c["same_verdict"] else "no"]
               for c in claims if "published" in c]),  # fmt: skip
    ]
    drawn = draw_integrators(folder, out / "figures" / "integrators.png")
    if drawn:
        body.append(page.figure("figures/integrators.png", "the published curve, the true flow and BDF's"))
    log(f"  integrator: {compared.get('differ')} of {compared.get('runs')} runs apart; {len(drawn)} curves overlaid")
    numbers = {"runs apart": compared.get("differ"), "bdf largest |dq|": worst and worst["max_dq"],
               "verdicts": {c["claim"]: [c["published"]["verdict"], c["verdict"]] for c in claims if "published" in c}}  # fmt: skip
    return Section(title, "".join(body), commands, numbers)


def _bdf_sentence(bdf: list[dict], worst: dict | None) -> str:
    """What the check against BDF (``bdf-check.json``) found, in a sentence."""
    if worst is None:
        return ""
    within = sum(r["max_dq"] <= 1e-4 for r in bdf)
    text = (f" A sample of {len(bdf)} of its runs integrated again by scipy's BDF at a relative 1e-10 (results/fig4-flow/bdf-check.json): "
            f"{within} within 1e-4 in q at every logged t; the largest distance {page.number(worst['max_dq'], 2)} "
            f"({html.escape(worst['run'])}, at t = {page.number(worst['at_t'], 2)}); the final q within "
            f"{page.number(max(r['final_dq'] for r in bdf), 2)} of BDF's on every one.")
    others = [(r["run"], tol, x["max_dq"]) for r in bdf for tol, x in r.get("tolerances", {}).items()]
    if others:
        text += " The same runs at another tolerance: "
        text += "; ".join(f"{html.escape(run)} at {float(tol):g}: {page.number(dq, 2)}" for run, tol, dq in others) + "."
    return text
