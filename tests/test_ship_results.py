"""examples/ship_results.py on a sweep of seconds: the shipped files hold what the runs computed, down-sampled."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from fsc.cli import main
from fsc.train import read_trajectory

ROOT = Path(__file__).resolve().parents[1]


def test_ship_a_small_sweep(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = ROOT / "examples" / "sweeps" / "tiny.json"
    assert main(["sweep", str(spec), "--out", "sweep", "--workers", "1", "--quiet"]) == 0
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "ship_results.py"), str(spec), "sweep", "shipped", "--points", "20"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert "4 of 4 points done" in done.stdout
    with open("shipped/summary.csv") as f:
        rows = list(csv.DictReader(f))
    runs = sorted(Path("sweep/runs").glob("*/*/*/result.json"))
    assert len(rows) == len(runs) == 4 and {r["status"] for r in rows} == {"done"}
    for row in rows:
        result = json.loads((Path("sweep/runs") / row["run"] / "result.json").read_text())
        assert float(row["q"]) == result["q"] and int(row["steps"]) == result["steps"]
    with open("shipped/trajectories.csv") as f:
        kept = list(csv.DictReader(f))
    for row in rows:
        full = read_trajectory(Path("sweep/runs") / row["run"])
        mine = [(float(k["t"]), float(k["q"])) for k in kept if k["run"] == row["run"]]
        assert 2 <= len(mine) <= 20 and mine[0] == (full["t"][0], full["q"][0]) and mine[-1] == (full["t"][-1], full["q"][-1])
        assert all((t, q) in set(zip(full["t"].tolist(), full["q"].tolist(), strict=True)) for t, q in mine)  # rows, not interpolations
    with open("shipped/groups.csv") as f:
        groups = list(csv.DictReader(f))
    for group in groups:
        qs = [float(r["q"]) for r in rows if r["init"] == group["init"]]
        assert float(group["median_q"]) == float(np.median(qs)) and int(group["finished"]) == 2
    provenance = json.loads(Path("shipped/provenance.json").read_text())
    assert provenance["done"] == 4 and len(provenance["commit"]) == 40 and Path("shipped/figure.png").stat().st_size > 1000
