"""Benchmark: what the full reproduction (Figures 2 and 4, the published step rule) would cost with today's kernels, estimated.

For each memory of ``results/fig2/summary.csv`` and ``results/fig4/summary.csv``, the compiled flow's time per value
and gradient (:func:`fsc.engines.kernels.flow_run`, ``--steps`` accepted steps from the published random start of
seed 0, mu = 0.1, r = 1e-3, paper convention, one thread) with today's kernels and with those of
``previous.PREVIOUS``, alternating in one process, best of ``--repeats`` rounds (the two must end on the same bits:
the runs are the same runs, only faster).  Each group of shipped runs (figure, memory) then costs an estimated
``seconds * today / previous``: its run time with every evaluation made faster by the factor measured at its size.

This is an ESTIMATE, not a run: it assumes a run's time is its evaluations.  What is not (Python between the
compiled calls, the trajectory rows, and the CSV line per step of the Figure 4 runs that keep every step: RAM 8
and Memento 3 and 4 at r = 1e-3) does not get faster, so the saving there is somewhat smaller.  The cost of an
evaluation hardly depends on r, mu or the start; it is measured at one point per size.

Two baselines: ``shipped`` is ``summary.csv``'s run time (the re-runs of 2026-11-25, on a machine shared with
other jobs); ``idle`` the first runs on an idle machine (results/PROVENANCE.md: Figure 4 per group, 11,644 s in
all; Figure 2 4444 s of CPU time in all, split here in the proportions of ``shipped``).

With ``--measured DIR [DIR ...]`` it estimates nothing: it reads sweeps of the published grid run by
``fsc sweep examples/sweeps/fig4.json --out DIR`` (and ``fig2.json``), each run's ``result.json`` (its
seconds and evaluations), and prints per group and in all the run time, the microseconds per evaluation
(rejected tries included) and their ratio to the floor: ``dgetrf`` and two ``dgetrs`` on each part of that
memory's ``B``, called from compiled code, measured in this process (``previous.compiled_floor``).  The run
time is each run's own wall clock; the sweep's CPU time is what ``/usr/bin/time`` gives around it.

Usage: ``.venv/bin/python benchmarks/bench_reproduction_cost.py [--steps 200] [--repeats 5]``, or
``... --measured DIR [DIR ...]``
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import previous  # noqa: E402

import fsc  # noqa: E402
import policies  # noqa: E402
import tasks  # noqa: E402
from fsc.engines import kernels  # noqa: E402
from fsc.engines.kernels import after_choice_system_t  # noqa: E402
from fsc.evaluate import Evaluator  # noqa: E402
from fsc.objective import Objective  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"
#: Run time per group of the first Figure 4 sweep, on an idle machine (results/PROVENANCE.md), seconds.
IDLE_FIG4 = {"ram:20": 4961, "ram:8": 3013, "ram:16": 1570, "memento:3": 1144, "ram:64": 654, "memento:4": 302}
#: CPU time of the first Figure 2 sweep, on an idle machine (results/PROVENANCE.md), seconds.
IDLE_FIG2 = 4444


def groups() -> dict[tuple[str, str], dict]:
    """``(figure, memory) -> {runs, steps, seconds, idle}`` from the shipped summaries."""
    out: dict[tuple[str, str], dict] = defaultdict(lambda: {"runs": 0, "steps": 0, "seconds": 0.0})
    for figure in ("fig2", "fig4"):
        with open(RESULTS / figure / "summary.csv", newline="") as handle:
            for row in csv.DictReader(handle):
                group = out[(figure, row["memory"])]
                group["runs"] += 1
                group["steps"] += int(row["steps"])
                group["seconds"] += float(row["seconds"])
    fig2_shipped = sum(g["seconds"] for (figure, _), g in out.items() if figure == "fig2")
    for (figure, memory), group in out.items():
        group["idle"] = IDLE_FIG4[memory] if figure == "fig4" else IDLE_FIG2 * group["seconds"] / fig2_shipped
    return dict(out)


def per_evaluation(memory: str, old, steps: int, repeats: int) -> tuple[float, float]:
    """Seconds per value and gradient of today's compiled flow and of the previous one, at ``memory``."""
    arch = fsc.parse_memory(memory)
    start = policies.initial_policy("random", arch, seed=0, published=True)
    objective = Objective(world=tasks.TwoHypothesis(0.1), architecture=arch, reset=1e-3, convention="paper")
    point = objective(start.logits.detach().clone(), start.init_logits.detach().clone())
    c = objective._fused
    flows = {"today": (kernels.flow_run, c), "previous": (old.flow_run, c[: previous.PREVIOUS_CONSTANTS])}
    timed = previous.time_flows(objective, point, flows, steps, repeats)
    return timed["today"][0], timed["previous"][0]


def measured_groups(directories: list[Path]) -> dict[tuple[str, str], dict]:
    """``(figure, memory) -> {runs, steps, evaluations, seconds}`` from the finished runs of sweep directories."""
    out: dict[tuple[str, str], dict] = defaultdict(lambda: {"runs": 0, "steps": 0, "evaluations": 0, "seconds": 0.0})
    for directory in directories:
        figure = json.loads((directory / "sweep.json").read_text())["name"]
        for result_file in sorted((directory / "runs").rglob("result.json")):
            result = json.loads(result_file.read_text())
            memory = json.loads((result_file.parent / "run.json").read_text())["arguments"]["memory"]
            group = out[(figure, memory)]
            group["runs"] += 1
            group["steps"] += result["steps"]
            group["evaluations"] += result["evaluations"]
            group["seconds"] += result["seconds"]
    return dict(out)


def floor_per_evaluation(memory: str) -> float:
    """Seconds of ``dgetrf`` and two ``dgetrs`` on each part of ``B`` at ``memory`` (mu = 0.1, r = 1e-3, the
    published random start of seed 0), from compiled code."""
    arch = fsc.parse_memory(memory)
    start = policies.initial_policy("random", arch, seed=0, published=True)
    evaluator = Evaluator(tasks.TwoHypothesis(0.1), arch, 1e-3, "auto", "paper")
    run = evaluator.forward(start.logits.detach().numpy(), start.init_logits.detach().numpy())
    t = evaluator.chain.after_choice
    B_t = after_choice_system_t(t.b_index_t, t.b_node_choice, t.b_weight, np.ascontiguousarray(run.probs), 1 - 1e-3, t.b_padding)
    return previous.compiled_floor(B_t)


def report_measured(directories: list[Path]) -> None:
    table = measured_groups(directories)
    print("MEASURED: the runs of the sweeps, against the LAPACK floor of each evaluation measured in this process")
    print(f"{'figure':<7} {'memory':<10} {'runs':>5} {'steps':>11} {'evaluations':>12} {'run s':>8} {'us/ev':>7} {'floor us':>9} {'/floor':>7}")
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    floors: dict[str, float] = {}
    for (figure, memory), group in sorted(table.items(), key=lambda kv: (kv[0][0], -kv[1]["seconds"])):
        floor = floors.setdefault(memory, floor_per_evaluation(memory))
        below = group["evaluations"] * floor
        for key in (figure, "total"):
            totals[key] = [totals[key][0] + group["seconds"], totals[key][1] + below]
        print(
            f"{figure:<7} {memory:<10} {group['runs']:>5} {group['steps']:>11} {group['evaluations']:>12} {group['seconds']:>8.0f} "
            f"{1e6 * group['seconds'] / group['evaluations']:>7.1f} {1e6 * floor:>9.1f} {group['seconds'] / below:>7.2f}"
        )
    for key in sorted(totals):
        seconds, below = totals[key]
        print(f"{key:<7} {'all':<10} {'':>5} {'':>11} {'':>12} {seconds:>8.0f} {'':>7} {'':>9} {seconds / below:>7.2f}")
    print(f"\nrun time in all: {totals['total'][0] / 3600:.2f} hours; at the floor: {totals['total'][1] / 3600:.2f} hours")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="accepted steps of each compiled flow per round")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--measured", type=Path, nargs="+", metavar="DIR", help="sweep directories of the published grid to read instead")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.measured:
        report_measured(args.measured)
        return
    old = previous.load()
    table = groups()
    memories = sorted({memory for _, memory in table}, key=lambda m: (m.split(":")[0], int(m.split(":")[1])))
    timing = {}
    for memory in memories:
        timing[memory] = per_evaluation(memory, old, args.steps, args.repeats)
        today, before = timing[memory]
        print(f"# {memory:<10} {before * 1e6:8.1f} us -> {today * 1e6:8.1f} us per value and gradient ({before / today:.2f}x)", flush=True)
    print()
    print("ESTIMATE of the reproduction's cost with today's kernels (run time scaled by the measured speed-up per evaluation)")
    print(f"{'figure':<7} {'memory':<10} {'runs':>5} {'steps':>11} {'us/ev before':>13} {'us/ev now':>10} {'speed-up':>9} "
          f"{'shipped s':>10} {'estimate s':>11} {'idle s':>8} {'estimate s':>11}")  # fmt: skip
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for (figure, memory), group in sorted(table.items(), key=lambda kv: (kv[0][0], -kv[1]["seconds"])):
        today, before = timing[memory]
        ratio = today / before
        row = [group["seconds"], group["seconds"] * ratio, group["idle"], group["idle"] * ratio]
        for key in (figure, "total"):
            totals[key] = [a + b for a, b in zip(totals[key], row, strict=True)]
        print(
            f"{figure:<7} {memory:<10} {group['runs']:>5} {group['steps']:>11} {before * 1e6:>13.1f} {today * 1e6:>10.1f} {before / today:>9.2f} "
            f"{row[0]:>10.0f} {row[1]:>11.0f} {row[2]:>8.0f} {row[3]:>11.0f}"
        )
    for key in ("fig2", "fig4", "total"):
        shipped, estimate, idle, idle_estimate = totals[key]
        print(
            f"{key:<7} {'all':<10} {'':>5} {'':>11} {'':>13} {'':>10} {shipped / estimate:>9.2f} {shipped:>10.0f} {estimate:>11.0f} "
            f"{idle:>8.0f} {idle_estimate:>11.0f}"
        )
    shipped, estimate, idle, idle_estimate = totals["total"]
    print(
        f"\nCPU-hours, estimated: {estimate / 3600:.2f} (shipped run time {shipped / 3600:.2f}); "
        f"from the idle machine's {idle / 3600:.2f}: {idle_estimate / 3600:.2f}"
    )


if __name__ == "__main__":
    main()
