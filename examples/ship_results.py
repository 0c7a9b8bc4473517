"""Turn a sweep directory (finished or not) into the small set of files we commit under results/.

    python examples/ship_results.py SPEC SWEEP_DIR results/NAME [--points 200]

Writes, from what the runs computed (nothing is trained here):

- ``summary.csv``: one row per point of the spec, in its order: the arguments, ``status`` (done, running:
  a checkpoint and no result yet, or absent), the final ``q``, ``t``, ``steps`` and the run's ``seconds``
  (its wall time over every session; the runs use one thread, so it is also their CPU time);
- ``trajectories.csv``: ``run,t,q``, each run's q(t) down-sampled to at most ``--points`` log-spaced times
  (the first and the last row kept), finished runs and the part done of the others;
- ``groups.csv``: per (memory, reset, initialisation): the finished runs, and the median, quartiles,
  minimum and maximum of their final q;
- ``figure.png``: one panel per (memory, reset), each seed faint and the median bold (``viz.q_curves``), with
  the reference lines of ``policies.reference`` dashed;
- ``claims.json``, ``claims.md`` (the spec named ``fig4``): the paper's claims about training checked on the
  finished runs (:mod:`policies.claims`);
- ``provenance.json``: the spec, the commit the runs were made with (``--commit``), the machine, the points
  done, and the runs' own times summed (one thread each: their CPU time when each had a core).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import subprocess
from pathlib import Path

import numpy as np


def log_spaced(t: np.ndarray, points: int) -> np.ndarray:
    """Indices of at most ``points`` rows of an increasing ``t``, log-spaced in ``t`` (first and last kept)."""
    if len(t) <= points:
        return np.arange(len(t))
    positive = t > 0
    first = int(np.argmax(positive)) if positive.any() else len(t)
    grid = np.geomspace(t[first], t[-1], points - 1) if first < len(t) else np.array([])
    keep = set(np.searchsorted(t, grid).clip(0, len(t) - 1).tolist()) | {0, len(t) - 1}
    return np.array(sorted(keep))


def quantiles(values: list[float]) -> dict[str, float]:
    a = np.array(values)
    return {"median": float(np.median(a)), "q1": float(np.quantile(a, 0.25)), "q3": float(np.quantile(a, 0.75)),
            "min": float(a.min()), "max": float(a.max())}  # fmt: skip


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", type=Path)
    parser.add_argument("sweep", type=Path, help="the sweep directory (holds runs/)")
    parser.add_argument("out", type=Path)
    parser.add_argument("--points", type=int, default=200, help="rows kept per trajectory (default 200)")
    parser.add_argument("--commit", default=None, help="the commit the runs were made with (default: this checkout's HEAD)")
    parser.add_argument("--command", action="append", default=[], help="a command that made the runs (repeatable)")
    parser.add_argument("--wall", type=float, default=None, help="wall time of the whole sweep, seconds, if known")
    args = parser.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import viz
    from fsc.sweep import load_spec
    from fsc.train import read_trajectory
    from policies.reference import reference_lines

    sweep = load_spec(args.spec)
    args.out.mkdir(parents=True, exist_ok=True)
    keys = sweep.keys()
    rows, curves, groups = [], {}, {}
    trajectories = [("run", "t", "q")]
    for point in sweep.points:
        run = args.sweep / "runs" / point.name
        row = {"run": point.name, **{k: point.arguments.get(k) for k in keys}, "status": "absent"}
        row.update(q=None, t=None, steps=None, seconds=None, commit=None)
        if (run / "run.json").is_file():  # the project's commit that made (or last resumed) the run, when it recorded one
            row["commit"] = json.loads((run / "run.json").read_text()).get("versions", {}).get("commit")
        result = json.loads((run / "result.json").read_text()) if (run / "result.json").is_file() else None
        if result is not None:
            row.update(status="done", **{k: result.get(k) for k in ("q", "t", "steps", "seconds")})
        elif (run / "checkpoint.json").is_file():
            meta = json.loads((run / "checkpoint.json").read_text())
            row.update(status="running", t=meta.get("t"), steps=meta.get("step"))
        rows.append(row)
        if (run / "trajectory.csv").is_file():
            columns = read_trajectory(run)
            keep = log_spaced(columns["t"], args.points)
            trajectories += [(point.name, repr(float(columns["t"][i])), repr(float(columns["q"][i]))) for i in keep]
            panel = (point.arguments["memory"], point.arguments["reset"])
            if result is not None:
                curves.setdefault(panel, {}).setdefault(point.arguments["init"], []).append((columns["t"], columns["q"]))
                groups.setdefault((*panel, point.arguments["init"]), []).append(result["q"])

    with open(args.out / "summary.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with open(args.out / "trajectories.csv", "w", newline="") as f:
        csv.writer(f).writerows(trajectories)
    total = {}
    for point in sweep.points:
        key = (point.arguments["memory"], point.arguments["reset"], point.arguments["init"])
        total[key] = total.get(key, 0) + 1
    with open(args.out / "groups.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["memory", "reset", "init", "finished", "of", "median_q", "q1", "q3", "min_q", "max_q"])
        for key, qs in groups.items():
            s = quantiles(qs)
            writer.writerow([*key, len(qs), total[key], s["median"], s["q1"], s["q3"], s["min"], s["max"]])

    if curves:
        panels = list(curves)
        columns = min(3, len(panels))
        lines = math.ceil(len(panels) / columns)
        figure, axes = plt.subplots(lines, columns, figsize=(5.4 * columns, 4.2 * lines), squeeze=False)
        mu, convention = sweep.points[0].arguments.get("mu", 0.1), sweep.points[0].arguments.get("convention", "native")
        for ax, (memory, reset) in zip(axes.flat, panels, strict=False):
            viz.q_curves(curves[(memory, reset)], ax=ax, reference=reference_lines(memory, mu, reset, convention), title=f"{memory}, r = {reset:g}")
        for ax in list(axes.flat)[len(panels) :]:
            ax.remove()
        figure.tight_layout()
        figure.savefig(args.out / "figure.png", dpi=100)

    if sweep.name == "fig4":  # the paper's claims about training, on what has run
        from policies.claims import check_figure4

        claims = check_figure4(groups, expected=total)
        (args.out / "claims.json").write_text(json.dumps(claims, indent=1) + "\n")
        lines = ["| panel | the paper says | numbers (final q) | verdict |", "|---|---|---|---|"]
        lines += [f"| {c['panel']} | {c['claim']} | {c['numbers'] or '-'} | {c['verdict']} |" for c in claims]
        (args.out / "claims.md").write_text("\n".join(lines) + "\n")

    done = [r for r in rows if r["status"] == "done"]
    here = Path(__file__).resolve().parents[1]
    commit = args.commit or subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    provenance = {
        "spec": str(args.spec),
        "commit": commit,
        "commands": args.command,
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(), "system": platform.platform()},
        "points": len(rows),
        "done": len(done),
        "running": sum(r["status"] == "running" for r in rows),
        # Each run's own wall time over its sessions, summed: its CPU time when it had a core to itself (one thread).
        "run_seconds_of_finished_runs": sum(float(r["seconds"]) for r in done),
        "wall_seconds": args.wall,
    }
    (args.out / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")
    print(f"{len(done)} of {len(rows)} points done; wrote {args.out}")


if __name__ == "__main__":
    main()
