"""The report's sections on the paper: exact against Monte Carlo, the closed forms of the column of
confidence, the necklaces, drawings, training from each initialisation, and the full-size figures."""

from __future__ import annotations

import html
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from fsc.report import beyond, page
from fsc.report.page import Section, table


def _write_figure(fig, path: Path) -> None:
    """Lay ``fig`` out, write it atomically as PNG (:func:`viz.save_figure`) and close it."""
    import matplotlib.pyplot as plt

    import viz

    fig.tight_layout()
    viz.save_figure(fig, path, dpi=110)
    plt.close(fig)


def section_exact_vs_monte_carlo(out: Path, log: Callable[[str], None]) -> Section:
    """Exact evaluation next to Monte Carlo for every architecture."""
    import fsc
    import tasks

    world = tasks.TwoHypothesis(0.2)
    reset = 0.01
    rows, numbers = [], {}
    for spec in ("ram:3", "chain:3", "column:3", "memento:2", "memento:3"):
        arch = fsc.parse_memory(spec)
        policy = fsc.Policy.random(arch, 0)
        exact = fsc.evaluate(world, policy, reset=reset)
        sim = fsc.simulate(world, policy, reset=reset, steps=400_000, seed=1)
        q, q_mc, se = float(exact.metrics["q"]), sim.metrics["q"], sim.stderrs["q"]
        rows.append([spec, arch.num_nodes, q, q_mc, se, (q_mc - q) / se, exact.engine])
        numbers[spec] = {"q": q, "q_mc": q_mc, "q_stderr": se}
        log(f"  {spec}: exact q = {q:.6f}, Monte Carlo {q_mc:.6f} +- {se:.1g}")
    body = (
        f"<p>Random policies (Gaussian logits, seed 0), mu = 0.2, r = {reset}. "
        "Exact: the stationary distribution of the joint chain. Monte Carlo: 400,000 sampled steps, "
        "regenerative estimator with delta-method standard error.</p>"
        + table(["memory", "nodes", "q exact", "q Monte Carlo", "std. error", "z", "engine"], rows, digits=[6, 6, 6, 4, 2, 2, 6])
    )
    commands = tuple(
        f"fsc evaluate --mu 0.2 --memory {spec} --policy random --reset {reset} && "
        f"fsc simulate --mu 0.2 --memory {spec} --policy random --reset {reset} --steps 10000000"
        for spec in ("ram:3", "memento:3")
    )
    return Section("Exact evaluation and Monte Carlo", body, commands, numbers)


def section_ccp_closed_form(out: Path, log: Callable[[str], None]) -> Section:
    """Column of confidence policy: appendix C's closed form against exact evaluation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    import fsc
    import policies
    import tasks
    from policies import closed_form

    mu = 0.1
    rows, worst = [], 0.0
    for M in (2, 4, 8):
        for r in (1e-2, 1e-4, 1e-6):
            eps = closed_form.ccp_eps_best(mu, M, r)
            arch, policy = policies.ccp(M, eps)
            exact = float(fsc.evaluate(tasks.TwoHypothesis(mu), policy, reset=r).metrics["q"])
            closed = closed_form.ccp_q(mu, M, r, eps)
            worst = max(worst, abs(exact / closed - 1))
            rows.append([M, r, eps, closed, exact, exact / closed - 1, closed_form.ccp_q_limit(mu, M)])
    log(f"  CCP: worst relative difference closed form / exact = {worst:.1e}")

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    resets = np.logspace(-7, -1, 25)
    for M in (1, 2, 4, 8, 16):
        line = [closed_form.ccp_q(mu, M, r, closed_form.ccp_eps_best(mu, M, r)) for r in resets]
        (handle,) = left.loglog(resets, line, label=f"M = {M}")
        points = resets[::4]
        exact = [
            float(fsc.evaluate(tasks.TwoHypothesis(mu), policies.ccp(M, closed_form.ccp_eps_best(mu, M, r))[1], reset=r).metrics["q"]) for r in points
        ]
        left.loglog(points, exact, "o", color=handle.get_color(), mfc="none")
    left.set(xlabel="reset probability r", ylabel="q", title=f"optimal CCP, mu = {mu}: closed form (lines), exact (circles)")
    left.legend(fontsize=8)
    sizes = np.arange(1, 21)
    for r in (1e-2, 1e-3, 1e-4, 1e-5):
        right.semilogy(sizes, [closed_form.ccp_q(mu, int(M), r, closed_form.ccp_eps_best(mu, int(M), r)) for M in sizes], label=f"r = {r:g}")
    right.semilogy(sizes, [closed_form.ccp_q_limit(mu, int(M)) for M in sizes], "k--", label="r -> 0")
    right.semilogy(sizes, [closed_form.q_hellman_cover(mu, int(M)) for M in sizes], "k:", label="Hellman-Cover")
    right.set(xlabel="memory size M", ylabel="q", title="q against M")
    right.legend(fontsize=8)
    _write_figure(fig, out / "figures" / "ccp_closed_form.png")
    body = (
        f"<p>mu = {mu}; eps is the closed-form optimum at each r (capped at 1). Worst relative difference between "
        f"appendix C's closed form and the exact evaluation of the explicit policy: <b>{worst:.1e}</b>.</p>"
        + table(["M", "r", "eps*", "q closed form", "q exact", "relative difference", "q (r -> 0)"], rows, digits=[6, 3, 4, 6, 6, 2, 6])
        + page.figure("figures/ccp_closed_form.png", "CCP q against r and M")
    )
    commands = ("fsc closed-form ccp --mu 0.1 --M 8 --reset 1e-4", "fsc evaluate --mu 0.1 --memory column:8 --policy ccp --reset 1e-4")
    return Section("Column of confidence policy: closed form and exact evaluation", body, commands, {"worst_relative_difference": worst})


def section_necklaces(out: Path, log: Callable[[str], None]) -> Section:
    """Necklaces: counts, longest Gray chains, and Theorem 4.3's q* against exact evaluation."""
    import fsc
    import policies
    import tasks
    from policies import closed_form, necklaces

    count_rows = []
    for m in range(2, 10):
        chain = necklaces.gray_chain(m, time_budget=5.0)
        count_rows.append(
            [
                m,
                len(necklaces.necklaces(m)),
                necklaces.count_necklaces(m),
                chain.length,
                "yes" if chain.optimal else "no",
                " ".join(chain.chain) if m <= 5 else "...",
            ]
        )
    mu, theorem_rows, numbers = 0.1, [], {}
    for m in (3, 4, 5):
        q_star = closed_form.necklace_q_star(mu, m)
        for eps1 in (1e-2, 1e-3, 1e-4):
            eps0 = eps1**2
            arch, policy = policies.necklace_policy(m, eps0, eps1)
            q = float(fsc.evaluate(tasks.TwoHypothesis(mu), policy, reset=eps0 * 1e-6).metrics["q"])
            theorem_rows.append([m, eps1, eps0, eps0 * 1e-6, q_star, q, q / q_star])
            numbers[f"m={m},eps1={eps1:g}"] = q / q_star
        log(f"  necklace m = {m}: q / q* = {q / q_star:.5f} at eps1 = 1e-4")
    body = (
        "<p>Binary necklaces of length m: enumerated, counted by Polya's formula, and the longest Gray-ordered chain "
        "from A^m to B^m (optimal = proved by exhaustive search within the time budget).</p>"
        + table(["m", "enumerated", "Polya", "longest chain n(m)", "optimal", "chain"], count_rows)
        + f"<p>Theorem 4.3: q of the necklace policy tends to q* = (1 + alpha^(m(1-n(m))))^-1 when r << eps0 << eps1 -> 0 "
        f"(mu = {mu}, eps0 = eps1^2, r = 1e-6 eps0).</p>"
        + table(["m", "eps1", "eps0", "r", "q*", "q exact", "q / q*"], theorem_rows, digits=[6, 3, 3, 3, 6, 6, 6])
    )
    commands = ("fsc necklace --m 7 --mu 0.1", "fsc evaluate --mu 0.1 --memory memento:5 --policy necklace --eps0 1e-10 --eps1 1e-5 --reset 1e-16")
    return Section("Necklaces and Theorem 4.3", body, commands, numbers)


def section_drawings(out: Path, log: Callable[[str], None]) -> Section:
    """Policy diagrams: the CCP's two columns (Figure 1C) and the necklace chain (Figure 3)."""
    import fsc
    import policies
    import tasks
    import viz

    items = []
    for name, memory, policy_name, reset in (("ccp", "column:4", "ccp", 1e-4), ("necklace", "memento:4", "necklace", 1e-5)):
        arch = fsc.parse_memory(memory)
        policy = policies.named_policy(policy_name, arch, mu=0.1, reset=reset)
        result = fsc.evaluate(tasks.TwoHypothesis(0.1), policy, reset=reset)
        graph = viz.memory_graph(policy, occupancy=result)
        viz.render(graph, out / "figures" / f"{name}.svg")
        log(f"  {name}: {graph.num_nodes} nodes, {graph.num_edges} edges")
        items.append(f"<h3>{html.escape(policy_name)} on {memory} (r = {reset:g})</h3>" + page.figure(f"figures/{name}.svg", f"{name} diagram"))
    commands = (
        "fsc draw --memory column:8 --policy ccp --reset 1e-4 --out ccp.svg",
        "fsc draw --memory memento:5 --policy necklace --reset 1e-6 --out necklace.svg",
    )
    return Section("Policy diagrams", "".join(items), commands)


def section_training(out: Path, log: Callable[[str], None]) -> Section:
    """Training from each initialisation (Figure 4, small sizes and a few seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    import viz
    from fsc.train import read_trajectory, run_training
    from policies.reference import reference_lines

    panels = (("ram:4", 1e-2, ("random", "linear", "columns", "near-ccp")), ("memento:3", 1e-3, ("random", "cycles", "near-necklace")))
    seeds, until_t, convention = 3, 1e5, "paper"
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    rows, numbers = [], {}
    for ax, (memory, reset, inits) in zip(axes, panels, strict=True):
        curves = {}
        for init in inits:
            finals = []
            for seed in range(1 if init in ("near-ccp", "near-necklace") else seeds):  # cycles draws random numbers too
                run = out / "runs" / f"{memory.replace(':', '')}-{init}-{seed}"
                result = run_training(memory=memory, init=init, seed=seed, reset=reset, until_t=until_t, out=run, convention=convention, quiet=True)
                data = read_trajectory(run, ["t", "q"])
                curves.setdefault(init, []).append((data["t"], data["q"]))
                finals.append(result.q)
            rows.append([memory, reset, init, len(finals), float(np.median(finals)), min(finals), max(finals)])
            numbers[f"{memory} {init}"] = float(np.median(finals))
            log(f"  {memory} {init}: median q = {np.median(finals):.5f} over {len(finals)} run(s)")
        ref = reference_lines(memory, 0.1, reset, convention)  # the curves' convention
        viz.q_curves(curves, ax=ax, reference=ref, title=f"{memory}, r = {reset:g}, mu = 0.1")
    _write_figure(fig, out / "figures" / "training.png")
    body = (
        f"<p>Gradient flow (paper convention, adaptive step of docs/model.md) to t = {until_t:g}; random starts with "
        f"{seeds} seeds, deterministic starts once. Each seed faint, median bold, dashed: the reference lines in the curves' convention "
        "(symmetric and asymmetric CCP at r; necklace policy optimised at r, and q* for r -> 0).</p>"
        + table(["memory", "r", "initialisation", "runs", "median q", "min q", "max q"], rows)
        + page.figure("figures/training.png", "q(t) during training")
    )
    commands = (
        "python examples/figure4.py --seeds 20 --out out/figure4",
        "fsc sweep examples/sweeps/fig4.json --out sweeps/fig4 && fsc sweep examples/sweeps/fig4.json --out sweeps/fig4 --summary",
        "python examples/figure2.py --sizes 1,2,3,4,6,8,12,16,20 --resets 1e-1,1e-2,1e-3,1e-4,1e-5 --until-t 1e6",
    )
    return Section("Training from each initialisation", body, commands, numbers)


def section_beyond_the_paper(out: Path, log: Callable[[str], None]) -> Section:
    """Beyond the paper: asymmetric CCP, anatomy of learned policies, the Memento question."""
    return beyond.section(out, log)


def section_integrator(out: Path, log: Callable[[str], None]) -> Section:
    """What depends on the integrator: Figure 4's claims on the published rule and on the true flow."""
    return beyond.integrator_section(out, log)


def _shipped_section(name: str, title: str, out: Path, log: Callable[[str], None]) -> Section:
    """A full-size figure drawn from ``results/name`` (:mod:`fsc.report.results`), with its claims checked."""
    import csv

    shipped = page.SHIPPED / name
    commands = (
        "fsc report --full   # runs what results/ lacks, resumable, then this page",
        f"fsc sweep examples/sweeps/{name}.json --out sweeps/{name}",
        f"python examples/ship_results.py examples/sweeps/{name}.json sweeps/{name} results/{name}",
    )
    if not (shipped / "provenance.json").is_file():
        return Section(title, f"<p>No results shipped with this copy (results/{name}); <code>fsc report --full</code> computes them.</p>", commands)
    provenance = json.loads((shipped / "provenance.json").read_text())
    claims = json.loads((shipped / "claims.json").read_text()) if (shipped / "claims.json").is_file() else []
    with open(shipped / "groups.csv", newline="") as f:
        records = list(csv.DictReader(f))
    keys = [k for k in (records[0] if records else {}) if k not in ("finished", "of", "median_q", "q1", "q3", "min_q", "max_q")]
    shown = [k for k in keys if k == "memory" or len({r[k] for r in records}) > 1]  # what tells the groups apart
    log(f"  {name}: {provenance['done']} of {provenance['points']} runs shipped")
    body = (
        f"<p>The published set-up (examples/sweeps/{name}.json), run with this project (shipped at commit "
        f"{html.escape(str(provenance['commit'])[:10])}; each run's commit is in results/{name}/summary.csv) on "
        f"{html.escape(provenance['machine']['cpu'])} ({provenance['machine']['cores']} cores): {provenance['done']} of "
        f"{provenance['points']} runs finished so far (the sweep resumes where it stopped). Final q per group, then the "
        "paper's claims about training on them.</p>"
    )
    if name == "fig2":
        body += _figure2_grids(records, _spec_convention(name))
    else:
        groups = [[*(_value(r[k]) for k in shown), f"{r['finished']} of {r['of']}", *(_value(r[k]) or "-" for k in ("median_q", "min_q", "max_q"))]
                  for r in records]  # fmt: skip
        body += table([*shown, "runs", "median q", "min q", "max q"], groups)
    if claims:
        rows = [[c["panel"], c["claim"], c["numbers"] or "-", c["verdict"]] for c in claims]
        body += table(["panel", "the paper says", "numbers (final q)", "verdict"], rows)
    if (shipped / "figure.png").is_file():
        shutil.copyfile(shipped / "figure.png", out / "figures" / f"full-size-{name}.png")
        body += page.figure(f"figures/full-size-{name}.png", title)
    return Section(title, body, commands, {"done": provenance["done"], "verdicts": {c["claim"]: c["verdict"] for c in claims}})


def _value(text: str):
    """A field of a shipped CSV: a number as a float (so that the page prints it as :func:`page.number`), else the text."""
    try:
        return float(text)
    except ValueError:
        return text


def _spec_convention(name: str) -> str:
    """The convention the shipped sweep ``name`` trained in (its spec in examples/sweeps/)."""
    spec = page.SHIPPED.parent / "examples" / "sweeps" / f"{name}.json"
    return json.loads(spec.read_text()).get("fixed", {}).get("convention", "native") if spec.is_file() else "native"


def _figure2_grids(records: list[dict], convention: str) -> str:
    """Figure 2 as the paper draws it: for each mu, its two panels as grids of final q, ours beside the paper's
    line (the optimal CCP's closed form, :func:`policies.reference.ccp_line`) and the difference."""
    from policies.reference import ccp_line

    q = {(float(r["mu"]), int(r["memory"].split(":")[1]), float(r["reset"])): (float(r["median_q"]) if r["median_q"] else None) for r in records}

    def cells(mu: float, M: int, r: float) -> list:
        if (mu, M, r) not in q:
            return [None, None, None]
        ours, line = q[mu, M, r], ccp_line(mu, M, r, convention)
        return [ours if ours is not None else "running", line, None if ours is None else float(page.number(ours - line, 2))]

    parts = [
        "<p>Rows: the reset probability r (the paper's left panel, one column per memory size M) or the memory size "
        "(its right panel, one column per reset). Each cell: <b>ours</b>, the final q of gradient flow from near the CCP "
        "(one run per cell); <b>paper</b>, "
        "the line the paper draws and its trained points lie on, the optimal column of confidence policy's closed form "
        f"at that M and r ({html.escape(convention)} convention); <b>difference</b>, ours minus paper (negative: training "
        "ended below the CCP, toward the asymmetric CCP of the claims below).</p>"
    ]
    fields = ["ours", "paper", "difference"]
    for mu in sorted({key[0] for key in q}):
        sizes = sorted({M for m, M, _ in q if m == mu})
        resets = sorted({r for m, _, r in q if m == mu})
        # The paper's left panel: a few sizes over many resets; its right panel: a few resets over many sizes.
        curves_in_r = [M for M in sizes if sum(1 for key in q if key[:2] == (mu, M)) > 3]
        curves_in_M = [r for r in resets if sum(1 for key in q if key[0] == mu and key[2] == r) > 3]
        left = [(page.reset_text(r), [cells(mu, M, r) for M in curves_in_r]) for r in resets]
        right = [(str(M), [cells(mu, M, r) for r in curves_in_M]) for M in sizes]
        for corner, columns, rows, title in (
            ("r", [f"M = {M}" for M in curves_in_r], left, "q against r"),
            ("M", [f"r = {page.number(r, 3)}" for r in curves_in_M], right, "q against M"),
        ):
            rows = [(label, row) for label, row in rows if any(v is not None for cell in row for v in cell)]
            parts.append(page.grid(corner, columns, fields, rows, caption=f"mu = {mu:g}: {title} (the paper's {'left' if corner == 'r' else 'right'} panel)"))
    return "".join(parts)


def section_full_size(out: Path, log: Callable[[str], None]) -> Section:
    """Figure 4 at full size: the shipped results and the paper's claims checked on them."""
    return _shipped_section("fig4", "Figure 4 at full size", out, log)


def section_figure2_full_size(out: Path, log: Callable[[str], None]) -> Section:
    """Figure 2 at full size: the shipped results against the closed forms."""
    return _shipped_section("fig2", "Figure 2 at full size", out, log)


SECTIONS: list[Callable[[Path, Callable[[str], None]], Section]] = [
    section_exact_vs_monte_carlo,
    section_ccp_closed_form,
    section_necklaces,
    section_drawings,
    section_training,
    section_figure2_full_size,
    section_full_size,
    section_integrator,
    section_beyond_the_paper,
]
