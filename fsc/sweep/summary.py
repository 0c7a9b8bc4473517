"""A sweep's summary: one row per point in ``OUT/summary.csv``, the curves in ``OUT/summary.png``."""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fsc.files import write_text
from fsc.sweep.spec import RESULT_COLUMNS, Point, Sweep, value_text


def summarize(sweep: Sweep, out: str | os.PathLike) -> list[dict[str, Any]]:
    """One row per point, in the spec's order: ``run``, its arguments, and :data:`RESULT_COLUMNS`.

    ``status`` is ``done`` (``result.json`` exists), ``failed`` (listed in
    ``failures.json`` by the last sweep) or ``pending``; the numbers are
    ``None`` unless done.  ``q_start`` is the first ``q`` of the run's trajectory.
    """
    out = Path(out)
    failed = set()
    if (out / "failures.json").is_file():
        try:
            failed = {f["run"] for f in json.loads((out / "failures.json").read_text())}
        except (OSError, ValueError, KeyError, TypeError):
            failed = set()
    keys = sweep.keys()
    rows = []
    for point in sweep.points:
        run_dir = out / "runs" / point.name
        row: dict[str, Any] = {"run": point.name, **{key: point.arguments.get(key) for key in keys}}
        row.update(dict.fromkeys(RESULT_COLUMNS))
        result = None
        if (run_dir / "result.json").is_file():
            try:
                result = json.loads((run_dir / "result.json").read_text())
            except (OSError, ValueError):
                result = None
        if isinstance(result, dict):
            row["status"] = "done"
            for key in ("q", "t", "steps", "seconds", "stop", "value"):
                row[key] = result.get(key)
            trajectory = _read_trajectory(run_dir)
            if trajectory is not None and len(trajectory[1]) and math.isfinite(trajectory[1][0]):
                row["q_start"] = float(trajectory[1][0])
        else:
            row["status"] = "failed" if point.name in failed else "pending"
        rows.append(row)
    return rows


def write_summary(sweep: Sweep, out: str | os.PathLike) -> list[dict[str, Any]]:
    """:func:`summarize`, written to ``out/summary.csv`` and drawn in ``out/summary.png``; returns the rows."""
    out = Path(out)
    rows = summarize(sweep, out)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    columns = list(rows[0]) if rows else ["run", *RESULT_COLUMNS]
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row[c] is None else value_text(row[c]) for c in columns])
    write_text(out / "summary.csv", buffer.getvalue())
    _plot_summary(sweep, out, out / "summary.png")
    return rows


def _read_trajectory(run_dir: Path) -> tuple[list[float], list[float]] | None:
    """``(t, q)`` of a run's trajectory (``trajectory.npz`` or ``.csv``), or ``None`` when it has none (or the
    world has no ``q``)."""
    from fsc.train import read_trajectory

    try:
        columns = read_trajectory(run_dir)
    except (OSError, ValueError):
        return None
    return (columns["t"].tolist(), columns["q"].tolist()) if "q" in columns else None


def _plot_summary(sweep: Sweep, out: Path, path: Path) -> None:
    """The paper's Figure 4 for a sweep: q(t) per seed (faint), median over seeds (bold), log-log.

    One panel per ``memory`` (when it varies), one colour per value of the
    other arguments that vary inside the panel (but ``seed``), and a dashed
    line for the closed form where there is one (:func:`_references`).
    Drawn by :func:`viz.q_curves`.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    import viz

    panel_keys = [key for key in sweep.varying_keys() if key == "memory"]
    panels: dict[str, list[Point]] = {}
    for point in sweep.points:
        panel = ", ".join(f"{k}={value_text(point.arguments.get(k))}" for k in panel_keys) or sweep.name
        panels.setdefault(panel, []).append(point)
    count = len(panels)
    columns = min(count, 2)
    rows = math.ceil(count / columns)
    figure = Figure(figsize=(6.0 * columns, 4.2 * rows), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for ax, (panel, points) in zip(axes, panels.items(), strict=False):
        colour_keys = [key for key in sweep.keys() if key not in ("seed", *panel_keys) and len({value_text(p.arguments.get(key)) for p in points}) > 1]
        curves: dict[str, list[tuple[list[float], list[float]]]] = {}
        for point in points:
            run_dir = out / "runs" / point.name
            trajectory = _read_trajectory(run_dir) if (run_dir / "result.json").is_file() else None
            if trajectory is not None and trajectory[0] and all(map(math.isfinite, trajectory[1])):  # a world without q has no curve
                trajectory = _clip(*trajectory, float(point.arguments["until_t"]))
                label = ", ".join(f"{k}={value_text(point.arguments.get(k))}" for k in colour_keys) or "all"
                curves.setdefault(label, []).append(trajectory)
        viz.q_curves(curves, ax, reference=_references(points), title=panel)
        if not curves:
            text = "no q: see value in summary.csv" if any("pomdp" in p.arguments for p in points) else "no finished point yet"
            ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    for ax in axes[count:]:
        ax.set_visible(False)
    viz.save_figure(figure, path, dpi=110)


def _clip(t: list[float], q: list[float], until_t: float) -> tuple[list[float], list[float]]:
    """The curve up to ``until_t`` exactly (log-log interpolation of the last step), when it got there.

    Runs stop at the first step past ``until_t``, each a bit further; cut at
    ``until_t``, the seeds of a group end together and their median has no
    spurious last jump.
    """
    if until_t <= 0 or t[-1] <= until_t or len(t) < 2:
        return t, q
    k = next(i for i, value in enumerate(t) if value >= until_t)
    if k == 0 or min(t[k - 1], q[k - 1], q[k]) <= 0:
        return t[: k + 1], q[: k + 1]
    t0, q0, t1, q1 = t[k - 1], q[k - 1], t[k], q[k]
    w = math.log(until_t / t0) / math.log(t1 / t0)
    return [*t[:k], until_t], [*q[:k], math.exp((1 - w) * math.log(q0) + w * math.log(q1))]


def _references(points: Sequence[Point]) -> dict[str, float]:
    """Reference lines for a panel whose points share ``memory``, ``mu``, ``reset`` and ``convention``.

    Decided by :func:`policies.reference.reference_lines`, in the points'
    convention (default ``native``, as ``fsc train``): RAM and Column the
    symmetric and asymmetric CCP at ``r``; Memento the necklace policy
    optimised at ``r`` and Theorem 4.3's ``q*``.  None when the values differ
    or there is no known family.
    """
    defaults = (("memory", None), ("mu", 0.1), ("reset", 1e-3), ("convention", "native"))
    shared = {key: {value_text(p.arguments.get(key, default)) for p in points} for key, default in defaults}
    if any(len(values) != 1 for values in shared.values()):
        return {}
    first = points[0].arguments
    mu, reset = float(first.get("mu", 0.1)), float(first.get("reset", 1e-3))
    from policies.reference import reference_lines

    try:
        return reference_lines(str(first["memory"]), mu, reset, str(first.get("convention", "native")))
    except (ValueError, TypeError):  # a size or value the closed forms do not take: no line
        return {}


def median_rows(sweep: Sweep, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Final q over seeds, per group of the other varying arguments: seeds done, median, min, max."""
    import statistics

    keys = [key for key in sweep.varying_keys() if key != "seed"]
    groups: dict[tuple, list[float]] = {}
    for row in rows:
        group = groups.setdefault(tuple(value_text(row[k]) for k in keys), [])
        if row["status"] == "done" and isinstance(row["q"], (int, float)):
            group.append(float(row["q"]))
    table = []
    for group, qs in groups.items():
        record: dict[str, Any] = dict(zip(keys, group, strict=True))
        record.update(
            seeds=len(qs),
            q_median=statistics.median(qs) if qs else None,
            q_min=min(qs) if qs else None,
            q_max=max(qs) if qs else None,
        )
        table.append(record)
    return table


def format_table(records: list[dict[str, Any]], columns: list[str]) -> str:
    def cell(value: object, column: str) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.3f}" if column == "seconds" else f"{value:.6g}" if column in ("t", "until_t") else f"{value:.10g}"
        return str(value)

    cells = [[cell(r.get(c), c) for c in columns] for r in records]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines)
