"""``fsc report``: the main job, a small but real run of the whole framework.

Each section computes its numbers, writes its figures and returns an HTML
fragment; :func:`build_report` assembles them into ``DIR/index.html`` with
the commands that reproduce each part at full size.  The report is built in a
temporary folder and moved into place at the end, so a failed run never
leaves a half-written report.
"""

from __future__ import annotations

import html
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import attrs

__all__ = ["Section", "build_report"]


@attrs.frozen
class Section:
    """A finished part of the report."""

    title: str
    body: str
    commands: tuple[str, ...] = ()
    numbers: dict = attrs.field(factory=dict)


def table(header: list[str], rows: list[list], *, digits: int = 6) -> str:
    """An HTML table; floats printed with ``digits`` significant digits."""

    def cell(value) -> str:
        if isinstance(value, float):
            return f"{value:.{digits}g}"
        return html.escape(str(value))

    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


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
        exact = fsc.evaluate(world, arch, policy, reset=reset)
        sim = fsc.simulate(world, arch, policy, reset=reset, steps=400_000, seed=1)
        q, q_mc, se = float(exact.metrics["q"]), sim.metrics["q"], sim.stderrs["q"]
        rows.append([spec, arch.num_nodes, q, q_mc, se, (q_mc - q) / se, exact.engine])
        numbers[spec] = {"q": q, "q_mc": q_mc, "q_stderr": se}
        log(f"  {spec}: exact q = {q:.6f}, Monte Carlo {q_mc:.6f} +- {se:.1g}")
    body = (
        f"<p>Random policies (Gaussian logits, seed 0), mu = 0.2, r = {reset}. "
        "Exact: the stationary distribution of the joint chain. Monte Carlo: 400,000 sampled steps, "
        "regenerative estimator with delta-method standard error.</p>"
        + table(["memory", "nodes", "q exact", "q Monte Carlo", "std. error", "z", "engine"], rows)
    )
    commands = tuple(
        f"fsc evaluate --mu 0.2 --memory {spec} --policy random --reset {reset} && "
        f"fsc simulate --mu 0.2 --memory {spec} --policy random --reset {reset} --steps 10000000"
        for spec in ("ram:3", "memento:3")
    )
    return Section("Exact evaluation and Monte Carlo", body, commands, numbers)


SECTIONS: list[Callable[[Path, Callable[[str], None]], Section]] = [section_exact_vs_monte_carlo]

_STYLE = """
body { font-family: sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; }
"""


def build_report(out: str | Path, *, quiet: bool = False) -> dict:
    """Run every section and write ``out/index.html`` (and ``out/report.json``).

    Returns the numbers of every section (also in ``report.json``).
    """
    import fsc

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out must be a directory, got the file {str(out)!r}")
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()

    def log(message: str) -> None:
        if not quiet:
            print(message, file=sys.stderr, flush=True)

    work = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        (work / "figures").mkdir()
        sections = []
        for make in SECTIONS:
            log(f"[{time.perf_counter() - start:6.1f}s] {make.__doc__.splitlines()[0]}")
            sections.append(make(work, log))
        seconds = time.perf_counter() - start
        parts = []
        for section in sections:
            commands = "".join(f"<pre>{html.escape(c)}</pre>" for c in section.commands)
            reproduce = f"<h3>Reproduce at full size</h3>{commands}" if commands else ""
            parts.append(f"<h2>{html.escape(section.title)}</h2>{section.body}{reproduce}")
        page = (
            "<!doctype html><html><head><meta charset='utf-8'><title>fsc report</title>"
            f"<style>{_STYLE}</style></head><body><h1>fsc report</h1>"
            f"<p>fsc {fsc.__version__}; built in {seconds:.0f} s. Paper: <i>How memory architecture affects learning "
            "in a simple POMDP: the two-hypothesis testing problem</i>.</p>" + "".join(parts) + "</body></html>"
        )
        (work / "index.html").write_text(page)
        numbers = {s.title: s.numbers for s in sections}
        (work / "report.json").write_text(json.dumps({"seconds": seconds, "sections": numbers}, indent=1))
        if out.exists():
            shutil.rmtree(out)
        work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    log(f"report written to {out / 'index.html'} in {seconds:.0f} s")
    return numbers
