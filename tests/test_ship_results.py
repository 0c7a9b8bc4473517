"""examples/ship_results.py on a sweep of seconds: the shipped files hold what the runs computed, down-sampled."""

from __future__ import annotations

import csv
import gzip
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from fsc.cli import main
from fsc.train import read_trajectory

ROOT = Path(__file__).resolve().parents[1]


def ship_tiny_fig4() -> None:
    """In the current directory: the tiny spec under the name fig4 (``fig4.json``), swept into ``sweep`` and
    shipped into ``results/fig4`` as the full-size Figure 4 is."""
    spec = json.loads((ROOT / "examples" / "sweeps" / "tiny.json").read_text())
    Path("fig4.json").write_text(json.dumps({**spec, "name": "fig4"}))
    assert main(["sweep", "fig4.json", "--out", "sweep", "--workers", "1", "--quiet"]) == 0
    subprocess.run([sys.executable, str(ROOT / "examples" / "ship_results.py"), "fig4.json", "sweep", "results/fig4"], check=True, capture_output=True)


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
    assert not Path("shipped/trajectories.csv").exists()
    with gzip.open("shipped/trajectories.csv.gz", "rt", newline="") as f:
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


def test_the_claims_are_checked_on_hand_made_numbers():
    from policies.claims import check_figure4

    groups = {("ram:8", 1e-3, "random"): [0.4, 0.3, 0.35], ("ram:8", 1e-3, "near-ccp"): [0.11],
              ("ram:8", 1e-3, "linear"): [0.2, 0.25], ("ram:8", 1e-3, "columns"): [0.3, 0.28],
              ("memento:3", 1e-3, "random"): [0.2, 0.1, 0.3], ("memento:3", 1e-3, "near-necklace"): [0.15]}  # fmt: skip
    verdicts = {c["claim"]: c["verdict"] for c in check_figure4(groups)}
    assert verdicts["RAM M = 8: random initialisation leads to very poor results"] == "holds"  # 0.35 >= 2 x 0.11
    assert verdicts["RAM M = 8: results improve with a linear structure, and more with two columns"] == (  # 0.29 > 0.225
        "does not hold: random -> linear: on the medians, not significantly (p = 0.1 >= 0.05); linear -> columns: the median does not go down"
    )
    assert verdicts["RAM M = 8: training converges to the CCP only from near it"] == "holds"
    within = "Memento m = 3: the near-necklace start (not drawn by the paper) ends within the random starts' range, below their median"
    assert verdicts[within] == "holds"  # 0.15 < 0.2, >= 0.1
    assert verdicts["RAM M = 20: random initialisation leads to very poor results"] == "not run yet"
    some_reach = check_figure4({**groups, ("ram:8", 1e-3, "columns"): [0.3, 0.110001, 0.11]})  # within 1e-4 of 0.11: two seeds
    only = next(c for c in some_reach if c["claim"] == "RAM M = 8: training converges to the CCP only from near it")
    assert only["verdict"] == "does not hold: 2 of 3 seeds from columns reach it too" and "2 of 3 seeds within 0.0001" in only["numbers"]
    steadier = {c["claim"]: c for c in check_figure4({**groups, ("memento:3", 1e-3, "cycles"): [0.16]})}
    memento = steadier["Memento m = 3 is less sensitive to its start than RAM M = 8"]
    # RAM 8: medians 0.35, 0.225, 0.29, 0.11 -> 0.35 / 0.11 = 3.18; Memento 3: 0.2, 0.16, 0.15 -> 1.33
    assert memento["verdict"] == "holds" and "ram:8 3.18, memento:3 1.33" in memento["numbers"]
    flipped = check_figure4({**groups, ("memento:3", 1e-3, "cycles"): [0.16], ("memento:3", 1e-3, "random"): [0.6]})
    assert next(c for c in flipped if c["claim"] == memento["claim"])["verdict"] == "does not hold"  # 0.6 / 0.15 = 4 > 3.18
    # Medians in order, but few seeds: with the groups wholly apart, the exact one-sided Mann-Whitney p is
    # 1 / C(n + m, n): 1 / C(5, 2) = 0.1 from random (3) to linear (2), 1 / C(4, 2) = 1/6 to columns (2).
    few = check_figure4({**groups, ("ram:8", 1e-3, "linear"): [0.2, 0.25], ("ram:8", 1e-3, "columns"): [0.1, 0.15]})
    better = next(c for c in few if c["claim"] == "RAM M = 8: results improve with a linear structure, and more with two columns")
    assert better["verdict"] == "holds on the medians, not significantly (p = 0.17 >= 0.05)"
    assert better["numbers"].endswith("one-sided Mann-Whitney p = 0.1, 0.17")
    # Five seeds each, wholly apart: p = 1 / C(10, 5) = 1/252 < 0.05; one seed of RAM 16 below Memento 3's
    # median leaves the medians in order but gives p = 2/252 (two of the 252 splits rank at least as far apart).
    apart = {("ram:16", 1e-5, "random"): [0.3, 0.31, 0.32, 0.33, 0.34], ("memento:3", 1e-5, "random"): [0.1, 0.11, 0.12, 0.13, 0.14]}
    e = next(c for c in check_figure4(apart) if c["panel"] == "E")
    assert e["verdict"] == "holds" and e["numbers"].endswith("p = 0.004")
    mixed = {**apart, ("ram:16", 1e-5, "random"): [0.135, 0.31, 0.32, 0.33, 0.34]}
    e = next(c for c in check_figure4(mixed) if c["panel"] == "E")
    assert e["verdict"] == "holds" and e["numbers"].endswith(f"p = {2 / 252:.2g}")
    partial = check_figure4(groups, expected={("ram:8", 1e-3, "random"): 20})
    assert partial[0]["verdict"] == "waiting: ram:8 random has 3 of 20 runs" and "over 3" in partial[0]["numbers"]
    assert partial[1]["verdict"] == "waiting: ram:8 random has 3 of 20 runs"  # random is one of the three compared
    assert partial[2]["verdict"] == "holds"  # columns and near-CCP: all their runs are in


def test_the_report_shows_shipped_results(tmp_path, monkeypatch):
    from fsc.report import page, paper

    monkeypatch.chdir(tmp_path)
    ship_tiny_fig4()
    monkeypatch.setattr(page, "SHIPPED", tmp_path / "results")
    (tmp_path / "out" / "figures").mkdir(parents=True)
    section = paper.section_full_size(tmp_path / "out", lambda message: None)
    assert section.numbers["done"] == 4 and set(section.numbers["verdicts"].values()) == {"not run yet"}
    assert "ram:2" in section.body and (tmp_path / "out" / "figures" / "full-size-fig4.png").is_file()
    monkeypatch.setattr(page, "SHIPPED", tmp_path / "nothing")
    assert "No results shipped" in paper.section_full_size(tmp_path / "out", lambda message: None).body


RESULTS = ROOT / "results"


def test_every_policy_file_under_results_follows_the_format_doc():
    """docs/formats.md: keys architecture (JSON with a kind), logits (N, C) float64 with -inf on disallowed
    choices, init_logits (N,) float64, -inf on the nodes a reset never starts in: a reader who follows the doc
    gets the values the project computes."""
    from fsc import Policy

    files = sorted(RESULTS.rglob("*.npz"))
    assert len(files) >= 9
    for path in files:
        with np.load(path, allow_pickle=False) as f:
            assert sorted(f.files) == ["architecture", "init_logits", "logits"], path
            spec = json.loads(str(f["architecture"]))
            logits, init_logits = f["logits"], f["init_logits"]
        assert isinstance(spec, dict) and "kind" in spec, path
        arch = Policy.load(path).architecture
        assert logits.dtype == init_logits.dtype == np.float64, path
        assert logits.shape == (arch.num_nodes, arch.num_choices) and init_logits.shape == (arch.num_nodes,), path
        assert not np.isnan(logits).any() and not np.isposinf(logits).any() and not np.isnan(init_logits).any(), path
        assert np.all(np.isneginf(logits[~arch.allowed])), path
        assert np.all(np.isneginf(init_logits[~arch.reset_mask])) and np.isfinite(init_logits[arch.reset_mask]).any(), path


def test_the_shipped_trajectories_are_compressed_csv_of_every_run():
    """results/fig2, results/fig4 and results/fig4-flow ship their curves as trajectories.csv.gz (docs/formats.md):
    gzip with no time or file name in its header, decompressing to run,t,q with every run of summary.csv, in its
    order, and no other; each curve starts at t = 0 and ends on its run's final t and q. Written again from the
    rows it holds, it is the same file to the byte; no plain trajectories.csv is left beside it."""
    from fsc.report.results import read_shipped, write_trajectories

    for figure in ("fig2", "fig4", "fig4-flow"):
        path = RESULTS / figure / "trajectories.csv.gz"
        data = path.read_bytes()
        assert data[:4] == b"\x1f\x8b\x08\x00" and data[4:8] == b"\0\0\0\0", path  # deflate, no file name, modification time 0
        text = gzip.decompress(data).decode()
        assert text.startswith("run,t,q\n") and text.endswith("\n"), path
        with open(RESULTS / figure / "summary.csv", newline="") as f:
            rows = {r["run"]: r for r in csv.DictReader(f)}
        curves: dict[str, list] = {}
        for row in csv.DictReader(io.StringIO(text)):
            curves.setdefault(row["run"], []).append((float(row["t"]), float(row["q"])))
        assert list(curves) == list(rows) and len(rows) == {"fig2": 210, "fig4": 284, "fig4-flow": 284}[figure], path
        for run, curve in curves.items():  # each ends on its run's final row
            t, q = np.array(curve).T
            assert t[0] == 0 and np.all(np.diff(t) >= 0) and np.all((q > 0) & (q < 1)), run
            assert (t[-1], q[-1]) == (float(rows[run]["t"]), float(rows[run]["q"])), run
        _, read = read_shipped(RESULTS / figure)
        assert write_trajectories(Path(tempfile.mkdtemp()), read).read_bytes() == data, path
    assert not list(RESULTS.rglob("trajectories.csv"))


def test_results_stay_under_20_mb():
    """Everything shipped in results/ (the files' sizes, as git stores them) stays under 20 MB."""
    size = sum(p.stat().st_size for p in RESULTS.rglob("*") if p.is_file())
    assert 10_000_000 < size < 20_000_000, size


def _shipped_policies() -> list[tuple[Path, float, float, str, float]]:
    """(file, mu, reset, convention, the shipped q) of every policy shipped with a q beside it."""
    cases = []
    for figure in ("fig2", "fig4", "fig4-flow"):
        folder = RESULTS / figure
        with open(folder / "summary.csv", newline="") as f:
            rows = {r["run"].replace("/", "__"): r for r in csv.DictReader(f)}
        for path in sorted((folder / "policies").glob("*.npz")):
            row = rows[path.stem]  # a policy file names a run of the summary, and that run is finished
            assert row["status"] == "done", path
            cases.append((path, float(row["mu"]), float(row["reset"]), row["convention"], float(row["q"])))
    ram8 = json.loads((RESULTS / "ram8" / "result.json").read_text())
    cases.append((RESULTS / "ram8" / "policy.npz", 0.1, 1e-3, "native", ram8["q"]))
    with open(RESULTS / "memento" / "table.csv", newline="") as f:
        for row in csv.DictReader(f):
            path = RESULTS / "memento" / f"best-m{row['m']}-r{float(row['reset']):g}.npz"
            cases.append((path, 0.1, float(row["reset"]), "native", float(row["best_learned_q"])))
    return cases


@pytest.mark.slow
def test_every_shipped_policy_re_evaluates_to_the_shipped_q():
    """By fsc's evaluator and by a chain built here with numpy from the file alone (tests/independent_chain.py)."""
    from fsc import Policy, evaluate
    from tasks import TwoHypothesis
    from tests.independent_chain import independent_q

    cases = _shipped_policies()
    assert len(cases) >= 7
    worst = 0.0
    for path, mu, reset, convention, q in cases:
        by_fsc = float(evaluate(TwoHypothesis(mu), Policy.load(path), reset=reset, convention=convention).metrics["q"])
        by_numpy = independent_q(path, mu, reset, convention)
        worst = max(worst, abs(by_fsc - q), abs(by_numpy - q))
        assert abs(by_fsc - q) <= 1e-9 and abs(by_numpy - q) <= 1e-9, (path, q, by_fsc, by_numpy)
    print(f"{len(cases)} shipped policies re-evaluate to their shipped q within {worst:.2g}")
    # The command a referee runs, on one policy of each folder: fsc evaluate --policy FILE ... --json
    for path, mu, reset, convention, q in {case[0].parent: case for case in cases}.values():
        out = subprocess.run([sys.executable, "-m", "fsc.cli", "evaluate", "--policy", str(path), "--mu", repr(mu), "--reset", repr(reset),
                              "--convention", convention, "--json"], capture_output=True, text=True, check=True, cwd=ROOT)  # fmt: skip
        assert abs(json.loads(out.stdout)["q"] - q) <= 1e-9, path


def test_the_independent_chain_agrees_with_closed_forms():
    """The referee's chain itself, on policies whose q is known in closed form: the CCP (appendix C) on RAM
    and, on Memento 1, a policy that plays A with probability a after A+ / B-, and else B."""
    from fsc import RAM, Policy
    from fsc.report.results import write_policy
    from policies.ccp import ccp_probs
    from policies.closed_form import ccp_q
    from tests.independent_chain import independent_q

    folder = Path(tempfile.mkdtemp())
    for M, reset, eps in ((3, 1e-3, 0.05), (6, 1e-5, 0.01)):
        Policy.from_probs(RAM(M), *ccp_probs(RAM(M), eps)).save(folder / "raw.npz")
        write_policy(folder / "raw.npz", folder / "ccp.npz")
        assert abs(independent_q(folder / "ccp.npz", 0.1, reset, "native") - ccp_q(0.1, M, reset, eps)) < 1e-12
    # Memento 1, no reset: a two-state chain per hypothesis. Stay on an arm after a win, switch after a loss
    # (win-stay, lose-shift): under H_A the agent leaves A with probability (1 - k_A) and B with (1 - k_B), so
    # it plays B a fraction (1 - k_A) / ((1 - k_A) + (1 - k_B)) of the time (the start does not matter as r -> 0).
    k_a, k_b = 0.55, 0.45
    probs = np.array([[0.5, 0.5], [1, 0], [0, 1], [0, 1], [1, 0]], dtype=float)  # _, A+, A-, B+, B-
    path = folder / "wsls.npz"
    with np.errstate(divide="ignore"):
        logits = np.log(probs)
    np.savez(path, architecture=np.array(json.dumps({"kind": "Memento", "m": 1, "arms": 2, "observations": 2})),
             logits=logits, init_logits=np.array([0.0, -np.inf, -np.inf, -np.inf, -np.inf]))  # fmt: skip
    expected = (1 - k_a) / ((1 - k_a) + (1 - k_b))
    assert abs(independent_q(path, 0.1, 1e-12, "native") - expected) < 1e-9
    assert Policy.load(path).architecture.node_labels == ("_", "A+", "A-", "B+", "B-")


def test_a_claim_of_two_parts_says_which_part_fails():
    from policies.claims import check_figure4

    def panel_c(random, cycles):
        groups = {("memento:3", 1e-3, "random"): random, ("memento:3", 1e-3, "cycles"): cycles}
        claim = next(c for c in check_figure4(groups) if c["panel"] == "C")
        assert claim["family"] == "memento:3 r=0.001: random, cycles" and claim["tolerance"] == 1e-4
        return claim["verdict"]

    apart = [0.30, 0.31, 0.32, 0.33, 0.34]
    # Wholly apart, five seeds each: p = 1 / C(10, 5) = 0.004, significant: part (2) fails.
    assert panel_c(apart, [0.10, 0.11, 0.12, 0.13, 0.14]).startswith("does not hold: part (2) fails, the difference is significant (p = 0.004")
    # Interleaved (ranks 1, 3, 5, 7, 9 against 2, 4, 6, 8, 10): worse on the medians, U = 15, p = 0.35.
    assert panel_c([0.20, 0.22, 0.24, 0.26, 0.28], [0.19, 0.21, 0.23, 0.25, 0.27]) == "holds"
    # The same values: not worse (within the tolerance), part (1) fails.
    assert panel_c(apart, [q * (1 + 1e-6) for q in apart]) == "does not hold: part (1) fails, the first group does not end worse"
    # Better, significantly.
    assert panel_c([0.10, 0.11, 0.12, 0.13, 0.14], apart).endswith("it ends better, significantly (p = 0.004)")


def test_one_tolerance_decides_every_verdict():
    """A run 1.2e-7 (relative) below the best random seed is the same value: the necklace run is within the range."""
    from policies.claims import TOLERANCE, check_figure4

    groups = {("memento:3", 1e-3, "random"): [0.2315 * (1 + 1.2e-7), 0.24, 0.25], ("memento:3", 1e-3, "near-necklace"): [0.2315]}
    record = next(c for c in check_figure4(groups) if c["panel"] == "C, beside the paper")
    assert record["verdict"] == "holds" and record["tolerance"] == TOLERANCE == 1e-4
    groups[("memento:3", 1e-3, "random")][0] = 0.2315 * (1 + 2e-4)  # beyond the tolerance: the run is below every seed
    assert next(c for c in check_figure4(groups) if c["panel"] == "C, beside the paper")["verdict"] == "does not hold"


def test_the_claims_say_when_seeds_reach_the_ccp_and_where_runs_stop():
    from policies.claims import check_figure4

    columns = ("ram:8", 1e-3, "columns")
    groups = {columns: [0.3, 0.11, 0.110001], ("ram:8", 1e-3, "near-ccp"): [0.11]}
    t = np.array([0.0, 1e3, 1e5, 1e7])
    curves = {columns: [(t, np.array([0.5, 0.4, 0.35, 0.3])), (t, np.array([0.5, 0.2, 0.11, 0.11])), (t, np.array([0.5, 0.3, 0.2, 0.110001]))]}
    horizons = {columns: ("until_t 2.4e+08", "3 until_t"), ("ram:8", 1e-3, "near-ccp"): ("until_t 2.4e+08", "1 until_t")}
    only = next(c for c in check_figure4(groups, horizons=horizons, curves=curves) if c["claim"].endswith("only from near it"))
    assert only["verdict"].startswith("does not hold: 2 of 3 seeds from columns reach it too, the last of them by t = 1e+07")
    assert only["horizon"] == "ram:8 r=0.001: until_t 2.4e+08 (stopped: columns: 3 until_t; near-ccp: 1 until_t)"


def test_the_figure2_claims_name_the_runs_above_the_ccp():
    from policies.claims import check_figure2
    from policies.reference import ccp_line

    line = ccp_line(0.2, 20, 1e-6, "paper")
    points = [(0.2, 20, 1e-6, line * 1.027), (0.2, 20, 1e-6, line * (1 + 1e-5)), (0.2, 20, 1e-6, line * 1.002)]
    claim, above = check_figure2(points, "paper", stops=["until_t", "stalled", "until_t"], horizon="until_t 1e+09")
    assert claim["verdict"] == "holds" and claim["horizon"] == above["horizon"] == "until_t 1e+09"
    assert above["verdict"] == "does not hold: 2 runs have not reached the CCP, stopped at the horizon, still moving (until_t)"
    assert above["numbers"].startswith("2 of 3 runs end above it by more than the tolerance, by 0.2% to 2.7% (2 by more than 0.1%); stopped: 2 until_t")


def test_the_claims_files_regenerate_from_results_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ship_tiny_fig4()
    shipped = {name: Path("results/fig4", name).read_bytes() for name in ("claims.json", "claims.md", "summary.csv")}
    from fsc.report.results import write_claims
    from fsc.sweep import load_spec

    for name in ("claims.json", "claims.md"):
        Path("results/fig4", name).unlink()
    write_claims(load_spec("fig4.json"), "results/fig4")
    assert {name: Path("results/fig4", name).read_bytes() for name in shipped} == shipped


def test_the_memento_table_says_where_the_necklace_optimum_sits():
    """Each optimised necklace q is the necklace policy's exact q at the eps the table gives; an eps at 1 is
    reported as on the bound; distances keep their significant digits."""
    import fsc
    from policies.necklace import necklace_probs
    from tasks import TwoHypothesis

    with open(RESULTS / "memento" / "table.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6
    for row in rows:
        arch = fsc.Memento(int(row["m"]))
        eps0, eps1 = float(row["necklace_eps0"]), float(row["necklace_eps1"])
        policy = fsc.Policy.from_probs(arch, *necklace_probs(arch, eps0, eps1))
        q = float(fsc.evaluate(TwoHypothesis(0.1), policy, reset=float(row["reset"])).metrics["q"])
        assert abs(q - float(row["necklace_q_at_r"])) < 1e-12
        assert row["necklace_on_bound"] == " ".join(name for name, eps in (("eps0", eps0), ("eps1", eps1)) if eps >= 1)
        assert "at 0.00)" not in row["family_found"]
        if row["family_found"].startswith("none"):
            assert f"{float(row['distance_to_necklace']):.2g}" in row["family_found"]
    assert {(r["m"], r["reset"]): r["necklace_on_bound"] for r in rows}[("4", "0.001")] == "eps1"


def test_the_integrators_side_by_side_on_hand_made_numbers():
    """compare_integrators: a verdict that changes kind carries the seeds that end apart (by more than APART),
    where their curves part and where each run stopped; one that keeps its kind carries none; the count."""
    from policies.claims import APART, check_figure4, compare_integrators

    ram, memento = ("ram:16", 1e-5, "random"), ("memento:3", 1e-5, "random")
    published = check_figure4({ram: [0.3, 0.31, 0.32, 0.33, 0.34], memento: [0.1, 0.11, 0.12, 0.13, 0.14]})
    flow = check_figure4({ram: [0.135, 0.31, 0.32, 0.33, 0.34], memento: [0.1, 0.11, 0.12, 0.13, 0.14]})  # p = 2/252: still holds
    # U = 18 of 25: the 39 of the 252 splits with U >= 18 give p = 0.15, not significant; the medians stay in order
    moved = check_figure4({ram: [0.105, 0.115, 0.32, 0.33, 0.34], memento: [0.1, 0.11, 0.12, 0.13, 0.14]})
    runs = {ram: [{"seed": 0, "q_published": 0.3, "q_flow": 0.105, "stop_published": "max_steps", "t_published": 2e8, "stop_flow": "until_t",
                   "t_flow": 1e9, "parted": 3e5, "q_flow_at_published_end": 0.106},
                  {"seed": 1, "q_published": 0.31, "q_flow": 0.115, "stop_published": "until_t", "t_published": 1e9, "stop_flow": "until_t",
                   "t_flow": 1e9, "parted": 4e4, "q_flow_at_published_end": None},
                  *({"seed": s, "q_published": q, "q_flow": q + APART / 2, "stop_published": "until_t", "t_published": 1e9, "stop_flow": "until_t",
                     "t_flow": 1e9, "parted": None, "q_flow_at_published_end": None} for s, q in ((2, 0.32), (3, 0.33), (4, 0.34)))]}  # fmt: skip
    same, count = compare_integrators(published, flow, runs)
    e = next(c for c in same if c["panel"] == "E")
    assert e["same_verdict"] and e["evidence"] is None and e["published"]["verdict"] == "holds"
    assert count == {"apart": 1e-3, "differ": 2, "runs": 5, "groups": {"ram:16 r=1e-05 random": [2, 5]}}
    records, _ = compare_integrators(published, moved, runs)
    e = next(c for c in records if c["panel"] == "E")
    assert e["verdict"].startswith("holds on the medians, not significantly") and not e["same_verdict"]
    assert e["evidence"].startswith("ram:16 r=1e-05 random: 2 of 5 seeds end more than 0.001 apart (largest first): seed 0: 0.3 published, "
                                    "0.105 on the true flow, apart by more than 0.001 from t = 3e+05 on; stopped on max_steps at t = 2e+08 "
                                    "(published), until_t at t = 1e+09 (true flow at t = 2e+08: 0.106); seed 1")  # fmt: skip
    assert e["evidence"].endswith("memento:3 r=1e-05 random: 0 of 0 seeds end more than 0.001 apart")
    assert all(c["same_verdict"] for c in records if c["panel"] != "E")


FLOW = RESULTS / "fig4-flow"


def rows_tolerance(run: str) -> str:
    """The Rosenbrock tolerance of a run of results/fig4-flow, as summary.csv gives it."""
    with open(FLOW / "summary.csv", newline="") as f:
        return next(row["tolerance"] for row in csv.DictReader(f) if row["run"] == run)


def test_the_bdf_check_follows_from_the_shipped_files():
    """results/fig4-flow/bdf.csv.gz holds scipy's BDF (rtol 1e-10) at the rows of the shipped curves of the sampled
    runs (to the t each was compared up to): read from the files alone, each curve's distance to BDF at those rows
    is within what bdf-check.json says of every logged t, and every run ends within 1e-5 of BDF's final q. Every
    sampled run is within 1e-4 of BDF at every logged t (issue 50) but where BDF at 1e-10 is itself more than 1e-4
    from BDF at a finer rtol (a late steep fall of q); a run more than 1e-4 from that finer solution is within it at
    a smaller tolerance of its own. RAM 8 (at its tolerance 1e-8) on seven runs from random, linear and columns
    starts."""
    from fsc.report.results import read_shipped

    checked = json.loads((FLOW / "bdf-check.json").read_text())
    _, curves = read_shipped(FLOW)
    bdf: dict[str, tuple[list, list]] = {}
    with gzip.open(FLOW / "bdf.csv.gz", "rt", newline="") as f:
        for row in csv.DictReader(f):
            bdf.setdefault(row["run"], ([], []))[0].append(float(row["t"]))
            bdf[row["run"]][1].append(float(row["q"]))
    assert len(checked) >= 8 and {r["run"] for r in checked} == set(bdf)
    assert len({r["run"].split("/")[0] for r in checked}) >= 3 and len({r["run"].split("/")[1] for r in checked}) == 2
    assert all(r["max_dq"] <= 1e-4 or r["finer"]["references_apart"] > 1e-4 for r in checked)
    for record in (r for r in checked if r.get("finer", {}).get("max_dq", 0) > 1e-4):
        smaller = [x for tol, x in record["tolerances"].items() if float(tol) < float(rows_tolerance(record["run"]))]
        assert smaller and min(x["max_dq"] for x in smaller) <= 1e-4 and all(x["against_rtol"] == record["finer"]["rtol"] for x in smaller)
    ram8 = [r["run"] for r in checked if r["run"].startswith("memory=ram-8/")]
    assert len(ram8) >= 7 and {n.split("/")[2] for n in ram8} == {"init=random", "init=linear", "init=columns"}
    assert {rows_tolerance(n) for n in ram8} == {"1e-08"}
    for record in checked:
        t, q = curves[record["run"]]
        t_bdf, q_bdf = map(np.array, bdf[record["run"]])
        assert np.array_equal(t[t <= t_bdf[-1]], t_bdf), record["run"]
        assert np.abs(q[: len(t_bdf)] - q_bdf).max() <= record["max_dq"] + 1e-12, record["run"]
        if t_bdf[-1] == t[-1]:
            assert abs(q[-1] - q_bdf[-1]) <= 1e-5 and record["final_dq"] <= 1e-5, record["run"]


def test_the_true_flow_claims_regenerate_side_by_side_from_results_alone(tmp_path):
    """claims.json, claims.md and runs-compared.csv of results/fig4-flow come back byte for byte from its
    summary.csv and curves and those of results/fig4 beside it; each claim has both verdicts."""
    import shutil

    from fsc.report.results import write_claims
    from fsc.sweep import load_spec

    for name in ("fig4", "fig4-flow"):
        shutil.copytree(RESULTS / name, tmp_path / name, ignore=shutil.ignore_patterns("policies", "*.png"))
    for name in ("claims.json", "claims.md", "runs-compared.csv"):
        (tmp_path / "fig4-flow" / name).unlink()
    claims = write_claims(load_spec(ROOT / "examples" / "sweeps" / "fig4-rosenbrock.json"), tmp_path / "fig4-flow")
    for name in ("claims.json", "claims.md", "runs-compared.csv"):
        assert (tmp_path / "fig4-flow" / name).read_bytes() == (FLOW / name).read_bytes(), name
    assert len(claims) == 14 and all(c["published"]["verdict"] and c["verdict"] for c in claims)
    provenance = json.loads((FLOW / "provenance.json").read_text())
    assert provenance["done"] == provenance["points"] == 284 and provenance["compared_with"]["runs"] == 284


def test_the_report_says_what_depends_on_the_integrator(tmp_path):
    """fsc report's section draws the overlay from results/ and sets each claim's two verdicts side by side."""
    from fsc.report import paper

    (tmp_path / "figures").mkdir()
    section = paper.section_integrator(tmp_path, lambda message: None)
    claims = json.loads((FLOW / "claims.json").read_text())
    assert section.numbers["verdicts"] == {c["claim"]: [c["published"]["verdict"], c["verdict"]] for c in claims}
    assert section.numbers["runs apart"] == json.loads((FLOW / "provenance.json").read_text())["compared_with"]["differ"]
    largest = max(r["max_dq"] for r in json.loads((FLOW / "bdf-check.json").read_text()))
    assert section.numbers["bdf largest |dq|"] == largest and (tmp_path / "figures" / "integrators.png").stat().st_size > 1000
    assert "figures/integrators.png" in section.body and "What depends on the integrator" in section.title
