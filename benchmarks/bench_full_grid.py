"""Benchmark: the Rosenbrock integrator on the whole of Figures 2 and 4, against the shipped runs of the published rule.

Reads two things made elsewhere, and computes nothing itself:

- the shipped runs of the published step rule (``results/fig2``, ``results/fig4``: ``summary.csv`` with each
  run's steps, seconds, final ``t`` and ``q``; ``trajectories.csv(.gz)``, each run's ``q(t)`` at log-spaced
  rows);
- a sweep of the same grid by the Rosenbrock integrator (``examples/sweeps/fig2-rosenbrock.json`` and
  ``fig4-rosenbrock.json``: the same points, starts and horizons, no ``max_steps``), run by
  ``fsc sweep SPEC --out DIR``; each run directory holds its ``result.json`` and ``trajectory.npz`` (every
  accepted step).

Per group of runs (Figure 4: memory, reset and start; Figure 2: memory and mu), and over each figure and the
whole grid, it prints: the runs both hold; the accepted steps of each (the published runs up to where they
stopped, the Rosenbrock runs to their horizon, which is as far or farther) and their ratio; the seconds of
each run summed (each run's own clock, one run per process: CPU seconds where a run had a core to itself);
``|dq| end``, the largest distance between the two final ``q`` at the published run's final ``t`` (the
Rosenbrock curve interpolated there, linearly in ``log t``); ``|dq| curve``, the largest distance at every
shipped row within both runs' span (the Rosenbrock curve interpolated likewise); how many runs stay within
1e-4 all along; and the median of each group's final ``q`` by each rule.

The two integrate one flow, ``dw/dt = grad gain``; where they part, the published rule's own error is the
larger one (``benchmarks/bench_rosenbrock.py --reference`` measures both against scipy's BDF).

Usage: ``.venv/bin/python benchmarks/bench_full_grid.py --fig2 DIR --fig4 DIR [--json FILE]``, DIR the
Rosenbrock sweep directory of that figure (either may be left out).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fsc.io.trajectory import read_trajectory  # noqa: E402
from fsc.report.results import read_shipped  # noqa: E402

AGREE = 1e-4  # the tolerance of the published curves


def group_of(row: dict, figure: str) -> str:
    """Figure 4's panels: memory, reset and start; Figure 2's curves: memory and mu (every reset)."""
    if figure == "fig2":
        return f"{row['memory']} mu={float(row['mu']):g} (every r)"
    return f"{row['memory']} r={float(row['reset']):g} {row['init']}"


def at(t_query: np.ndarray, t: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``q`` interpolated at ``t_query`` linearly in ``log t`` (``t = 0`` kept as the first point)."""
    positive = t > 0
    if positive.sum() < 2:
        return np.interp(t_query, t, q)
    lt, lq = np.log(t[positive]), q[positive]
    out = np.interp(np.log(np.maximum(t_query, t[positive][0])), lt, lq)
    return np.where(t_query <= 0, q[0], out)


def compare(run: str, row: dict, curve, directory: Path, figure: str) -> dict | None:
    """One run's figures, or None when the Rosenbrock run has not finished."""
    folder = directory / "runs" / run
    result_file = folder / "result.json"
    if not result_file.is_file():
        return None
    result = json.loads(result_file.read_text())
    mine = read_trajectory(folder, ["t", "q"])
    t_mine, q_mine = mine["t"], mine["q"]
    t_end, q_end = float(row["t"]), float(row["q"])
    # at the published run's final t, or at the Rosenbrock run's own where it stopped first (both past the
    # horizon, each at its first step beyond it, or stalled)
    q_mine_end = float(at(np.array([min(t_end, t_mine[-1])]), t_mine, q_mine)[0])
    end = abs(q_mine_end - q_end)
    curve_dq = math.nan
    if curve is not None:
        t_pub, q_pub = curve
        inside = t_pub <= min(t_pub[-1], t_mine[-1])
        if inside.any():
            curve_dq = float(np.abs(at(t_pub[inside], t_mine, q_mine) - q_pub[inside]).max())
    return {
        "run": run,
        "group": group_of(row, figure),
        "published_steps": int(row["steps"]),
        "published_seconds": float(row["seconds"]),
        "published_stop": row["stop"],
        "steps": int(result["steps"]),
        "evaluations": int(result["evaluations"]),
        "seconds": float(result["seconds"]),
        "stop": result["stop"],
        "q_published": q_end,
        "q": q_mine_end,
        "dq_end": end,
        "dq_curve": curve_dq,
    }


def table(name: str, found: list[dict]) -> list[str]:
    def line(label: str, rows: list[dict]) -> str:
        steps_pub = sum(r["published_steps"] for r in rows)
        steps = sum(r["steps"] for r in rows)
        sec_pub = sum(r["published_seconds"] for r in rows)
        sec = sum(r["seconds"] for r in rows)
        ends = [r["dq_end"] for r in rows if not math.isnan(r["dq_end"])]
        curves = [r["dq_curve"] for r in rows if not math.isnan(r["dq_curve"])]
        within = sum(1 for r in rows if not math.isnan(r["dq_curve"]) and r["dq_curve"] <= AGREE and (math.isnan(r["dq_end"]) or r["dq_end"] <= AGREE))
        medians = f"{np.median([r['q_published'] for r in rows]):>9.5f} {np.median([r['q'] for r in rows]):>9.5f}"
        return (
            f"{label:<38} {len(rows):>5} {steps_pub:>12,} {steps:>10,} {steps_pub / max(steps, 1):>8.1f} {sec_pub:>10.0f} {sec:>9.0f} "
            f"{sec_pub / max(sec, 1e-9):>7.1f} {max(ends, default=math.nan):>9.1e} {max(curves, default=math.nan):>9.1e} {within:>5}/{len(rows)} {medians}"
        )

    lines = [
        f"{name}: {len(found)} runs",
        f"{'group':<38} {'runs':>5} {'pub. steps':>12} {'steps':>10} {'ratio':>8} {'pub. s':>10} {'s':>9} {'ratio':>7} "
        f"{'|dq| end':>9} {'|dq| curve':>9} {'within 1e-4':>11} {'median q, pub.':>9} {'median q':>9}",
    ]
    for group in sorted({r["group"] for r in found}, key=lambda g: (int(g.split()[0].split(":")[1]), g)):
        lines.append(line(group, [r for r in found if r["group"] == group]))
    lines.append(line("all", found))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fig2", type=Path, help="the Rosenbrock sweep directory of Figure 2")
    parser.add_argument("--fig4", type=Path, help="the Rosenbrock sweep directory of Figure 4")
    parser.add_argument("--json", type=Path, help="also write every run's figures here")
    args = parser.parse_args()
    everything: list[dict] = []
    for figure, directory in (("fig2", args.fig2), ("fig4", args.fig4)):
        if directory is None:
            continue
        rows, curves = read_shipped(ROOT / "results" / figure)
        found = [c for run, row in rows.items() if (c := compare(run, row, curves.get(run), directory, figure)) is not None]
        for c in found:
            c["figure"] = figure
        print("\n".join(table(figure, found)), end="\n\n")
        everything += found
    if args.fig2 is not None and args.fig4 is not None:
        print(table("all", everything)[-1].replace("all", "Figures 2 and 4", 1))
        total = sum(r["seconds"] for r in everything)
        print(f"Rosenbrock: {total:,.0f} s ({total / 3600:.2f} h) of run time over {len(everything)} runs")
    if args.json is not None:
        args.json.write_text(json.dumps(everything, indent=1))


if __name__ == "__main__":
    main()
