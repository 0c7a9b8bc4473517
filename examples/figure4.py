"""Paper Figure 4: q(t) during training from different initialisations.

Six panels (mu = 0.1), as published: A-B RAM M = 8 and 20 from random,
linear, columns and near-CCP starts (r = 1e-3); C-D Memento m = 3 and 4 from
random, cycles and near-necklace starts (r = 1e-3); E-F random starts on RAM
and Memento memories of the same effective size (M = 16 vs m = 3, M = 64 vs
m = 4; r = 1e-5).  Seed s starts where the published code's seed s started.  Each seed faint, the
median bold; dashed: the reference lines of policies.reference_lines in the
runs' convention (RAM: symmetric and asymmetric CCP at the run's r; Memento:
the necklace policy optimised at r, and q* for r -> 0).  Runs go to OUT/runs/ (resumable: a finished
run is not recomputed) and the numbers to OUT/figure4.csv.

    python examples/figure4.py --seeds 3 --until-t 1e5 --out out/figure4      # under a minute on 2 cores
    python examples/figure4.py --seeds 20                                     # the paper's size: hours
    fsc sweep examples/sweeps/fig4.json                                       # the same, resumable

At t = 1e5 every panel has moved: the near-CCP starts of A and B reach the CCP lines and the column and
linear starts fall from q = 1/2 toward them; the Memento starts of C and D reach the necklace lines; in E and
F the Memento random starts fall from q = 1/2 (46 runs, 55 s of wall time on the 2-core development machine
under load; at t = 1e3 the random and linear starts had not left q = 1/2).
At the paper's size the sweep of the same points, with its step caps, took 11,750 s of CPU
(docs/reproduction.md, results/PROVENANCE.md); this script has no step caps, so it runs longer.
"""

from __future__ import annotations

import argparse
import csv
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

#: The published set-up (examples/sweeps/fig4.json runs the same points with `fsc sweep`): memories,
#: reset, initialisations, and each memory's horizon (the t the published runs reached in their hour).
PANELS = {
    "A": {"title": "RAM M = 8", "reset": 1e-3, "until_t": {"ram:8": 2.4e8},
          "runs": [("ram:8", init) for init in ("random", "linear", "columns", "near-ccp")]},
    "B": {"title": "RAM M = 20", "reset": 1e-3, "until_t": {"ram:20": 3.1e8},
          "runs": [("ram:20", init) for init in ("random", "linear", "columns", "near-ccp")]},
    "C": {"title": "Memento m = 3", "reset": 1e-3, "until_t": {"memento:3": 3.8e7},
          "runs": [("memento:3", init) for init in ("random", "cycles", "near-necklace")]},
    "D": {"title": "Memento m = 4", "reset": 1e-3, "until_t": {"memento:4": 3.7e6},
          "runs": [("memento:4", init) for init in ("random", "cycles", "near-necklace")]},
    "E": {"title": "random starts, M_eff = 64", "reset": 1e-5, "until_t": {"ram:16": 1e9, "memento:3": 3e7},
          "runs": [("ram:16", "random"), ("memento:3", "random")]},
    "F": {"title": "random starts, M_eff = 256", "reset": 1e-5, "until_t": {"ram:64": 1e9, "memento:4": 1.6e6},
          "runs": [("ram:64", "random"), ("memento:4", "random")]},
}  # fmt: skip

#: Initialisations that draw no random numbers: one run, whatever --seeds.
DETERMINISTIC = ("near-ccp", "near-necklace")


def run_one(job: dict) -> dict:
    from fsc.train import read_trajectory, run_training

    result = run_training(quiet=True, **job)
    trajectory = read_trajectory(job["out"], ["t", "q"])
    return {"job": job, "q": result.q, "t": result.t, "steps": result.steps, "seconds": result.seconds,
            "curve": (trajectory["t"], trajectory["q"])}  # fmt: skip


def reference(memory: str, reset: float, mu: float, convention: str) -> dict[str, float]:
    """The dashed lines, in the curves' convention (policies.reference.reference_lines)."""
    from policies.reference import reference_lines

    return reference_lines(memory, mu, reset, convention)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--until-t", type=float, default=None, help="one horizon for every run (default: each memory's published horizon)")
    parser.add_argument("--max-seconds", type=float, default=None, help="wall-time cap per run (the paper: 3600)")
    parser.add_argument("--mu", type=float, default=0.1)
    parser.add_argument("--convention", default="paper", choices=("native", "paper"))
    parser.add_argument("--panels", default="ABCDEF")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=Path("out/figure4"))
    args = parser.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import viz

    jobs = []
    for panel in args.panels:
        spec = PANELS[panel]
        for memory, init in spec["runs"]:
            for seed in range(1 if init in DETERMINISTIC else args.seeds):
                name = f"{memory.replace(':', '')}-{init}-r{spec['reset']:g}-seed{seed}"
                until_t = args.until_t or spec["until_t"][memory]
                jobs.append({"mu": args.mu, "memory": memory, "init": init, "seed": seed, "reset": spec["reset"], "until_t": until_t,
                             "max_seconds": args.max_seconds, "convention": args.convention, "out": str(args.out / "runs" / name)})  # fmt: skip
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(run_one, jobs))
    by_key = {(r["job"]["memory"], r["job"]["init"], r["job"]["reset"]): [] for r in results}
    for r in results:
        by_key[(r["job"]["memory"], r["job"]["init"], r["job"]["reset"])].append(r)

    panels = list(args.panels)
    fig, axes = plt.subplots(1 if len(panels) <= 3 else 2, min(3, len(panels)), figsize=(5.2 * min(3, len(panels)), 4.2 * (1 if len(panels) <= 3 else 2)),
                             squeeze=False)  # fmt: skip
    for ax, panel in zip(axes.flat, panels, strict=False):
        spec = PANELS[panel]
        curves, refs = {}, {}
        for memory, init in spec["runs"]:
            label = init if panel in "ABCD" else f"{memory} {init}"
            curves[label] = [r["curve"] for r in by_key[(memory, init, spec["reset"])]]
            refs.update(reference(memory, spec["reset"], args.mu, args.convention))
        viz.q_curves(curves, ax=ax, reference=refs, title=f"{panel}: {spec['title']}, r = {spec['reset']:g}")
    for ax in list(axes.flat)[len(panels) :]:
        ax.remove()
    fig.tight_layout()
    args.out.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out / "figure4.png", dpi=110)
    with open(args.out / "figure4.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["memory", "init", "seed", "reset", "convention", "t", "steps", "q", "seconds"])
        for r in results:
            j = r["job"]
            writer.writerow([j["memory"], j["init"], j["seed"], j["reset"], j["convention"], r["t"], r["steps"], r["q"], r["seconds"]])
    print(f"{'memory':<10} {'init':<14} {'reset':>7} {'median q':>12} {'min q':>12} {'max q':>12}")
    for (memory, init, reset), runs in by_key.items():
        qs = [r["q"] for r in runs]
        print(f"{memory:<10} {init:<14} {reset:>7g} {np.median(qs):>12.6g} {min(qs):>12.6g} {max(qs):>12.6g}")
    print(f"wrote {args.out / 'figure4.png'} and {args.out / 'figure4.csv'}")


if __name__ == "__main__":
    main()
