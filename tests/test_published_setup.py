"""The full-size specs equal the published set-up, point by point.

The table below is written from the published plotting script's facts (panels, memories, resets,
initialisations, 20 seeds, mu, the Figure 2 grids), not from the specs; the horizons are the ones the specs
document: the t the published runs reached in their hour, and the evaluations an hour of the published
method holds at its starting rate (benchmarks/bench_training.py published-rate on this machine: 0.87 ms per
evaluation at RAM 8, 2.55 at RAM 20, 2.04 at Memento 3, 43.9 and 43.3 at Memento 4, 1.72 at RAM 16, 53.4 at RAM 64),
rounded up, as the cap on accepted steps.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import fsc.sweep as sweep

SPECS = Path(__file__).resolve().parents[1] / "examples" / "sweeps"
SEEDS = range(20)

#: Figure 4: panel -> (memory, reset, horizon in t, most steps, random initialisations (20 seeds), deterministic
#: ones (1 seed)).
FIGURE4 = {
    "A": [("ram:8", 1e-3, 2.4e8, 4_200_000, ("random", "linear", "columns"), ("near-ccp",))],
    "B": [("ram:20", 1e-3, 3.1e8, 1_500_000, ("random", "linear", "columns"), ("near-ccp",))],
    "C": [("memento:3", 1e-3, 3.8e7, 1_800_000, ("random", "cycles"), ("near-necklace",))],  # near-necklace: the paper's caption
    "D": [("memento:4", 1e-3, 3.7e6, 83_000, ("random", "cycles"), ("near-necklace",))],
    "E": [("memento:3", 1e-5, 3e7, 1_800_000, ("random",), ()), ("ram:16", 1e-5, 1e9, 2_100_000, ("random",), ())],
    "F": [("memento:4", 1e-5, 1.6e6, 84_000, ("random",), ()), ("ram:64", 1e-5, 1e9, 68_000, ("random",), ())],
}


def _points(name: str) -> list[dict]:
    return [dict(p.arguments) for p in sweep.load_spec(SPECS / f"{name}.json").points]


def test_figure4_is_the_published_set_up():
    expected = set()
    for rows in FIGURE4.values():
        for memory, reset, horizon, steps, random, deterministic in rows:
            expected |= {(memory, reset, horizon, steps, init, seed) for init in random for seed in SEEDS}
            expected |= {(memory, reset, horizon, steps, init, 0) for init in deterministic}
    points = _points("fig4")
    assert len(points) == len(expected) == 284
    assert {(p["memory"], p["reset"], p["until_t"], p["max_steps"], p["init"], p["seed"]) for p in points} == expected
    assert all(p["mu"] == 0.1 and p["convention"] == "paper" and p["max_seconds"] == 3600 for p in points)


def test_figure2_is_the_published_set_up():
    left = {(mu, f"ram:{M}", 2.0**-k) for mu in (0.1, 0.2) for M in (5, 10, 20) for k in range(1, 21)}
    sizes = (2, 3, 4, 5, 7, 9, 11, 14, 17, 20, 23, 26, 29, 33, 37)
    right = {(mu, f"ram:{M}", r) for mu in (0.1, 0.2) for r in (1e-6, 1e-4, 1e-2) for M in sizes}
    points = _points("fig2")
    assert len(points) == len(left | right) == 210
    assert {(p["mu"], p["memory"], p["reset"]) for p in points} == left | right
    assert all(p["init"] == "near-ccp" and p["convention"] == "paper" and p["until_t"] == 1e9 for p in points)


def test_a_horizon_does_not_name_the_run_directory():
    """A panel's horizon can be raised later: the point keeps its directory and continues from its checkpoint."""
    names = [p.name for p in sweep.load_spec(SPECS / "fig4.json").points]
    assert names[0] == "memory=ram-8/reset=0.001/init=random/seed=0" and not any("until_t" in n for n in names)


def test_the_runs_keep_their_directories_whatever_they_store():
    """rows_per_decade and max_steps name no directory: every point is memory/reset/init/seed."""
    points = sweep.load_spec(SPECS / "fig4.json").points
    assert all([part.split("=")[0] for part in p.name.split("/")] == ["memory", "reset", "init", "seed"] for p in points)
    stored = {(p.arguments["memory"], p.arguments["reset"]) for p in points if p.arguments.get("rows_per_decade") == 100}
    assert stored == {("ram:20", 1e-3), ("memento:3", 1e-5), ("ram:16", 1e-5), ("memento:4", 1e-5), ("ram:64", 1e-5)}
    fixed = {"memory": "ram:2", "reset": 0.1, "init": "random", "until_t": 10}
    twin = {"name": "x", "fixed": fixed, "grid": [{"seed": [0, 1]}, {"seed": [1], "rows_per_decade": [10]}]}
    with pytest.raises(ValueError, match="share the run directory"):
        sweep.Sweep.from_dict(twin)


def test_the_true_flow_grid_is_figure4_at_a_tolerance_per_family():
    """fig4-rosenbrock.json is fig4.json's points, in order and by the same run names (so each run is set beside
    the published run of its point), integrated by the Rosenbrock integrator at RAM 8's tolerance 1e-8 and 1e-5
    elsewhere; a block's single tolerance names no directory, two tolerances in one block do, and two blocks
    that differ only by their tolerance are refused (they would share a run directory)."""
    published = sweep.load_spec(SPECS / "fig4.json").points
    flow = sweep.load_spec(SPECS / "fig4-rosenbrock.json").points
    assert [p.name for p in flow] == [p.name for p in published]
    assert all(p.arguments["optimizer"] == "rosenbrock" and "max_steps" not in p.arguments for p in flow)
    assert {p.name: p.arguments["tolerance"] for p in flow} == {p.name: 1e-8 if p.arguments["memory"] == "ram:8" else 1e-5 for p in flow}
    fixed = {"memory": "ram:2", "reset": 0.1, "init": "random", "until_t": 10, "optimizer": "rosenbrock"}
    both = sweep.Sweep.from_dict({"fixed": fixed, "grid": {"tolerance": [1e-5, 1e-8], "seed": [0]}})
    assert [p.name for p in both.points] == ["tolerance=1e-05/seed=0", "tolerance=1e-08/seed=0"]
    twin = {"fixed": fixed, "grid": [{"seed": [0], "tolerance": [1e-5]}, {"seed": [0], "tolerance": [1e-8]}]}
    with pytest.raises(ValueError, match="share the run directory"):
        sweep.Sweep.from_dict(twin)
