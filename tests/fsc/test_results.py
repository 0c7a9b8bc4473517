"""fsc.report.results: shipping sweeps into results/, merging what was shipped before, running what it lacks."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import attrs
import numpy as np
import pytest

from fsc.report import page, paper
from fsc.report.results import complete, lacking, log_spaced, read_shipped, ship
from fsc.sweep import Sweep, load_spec, run_sweep
from fsc.train import read_trajectory
from policies.asymmetric import asymmetric_ccp_optimum
from policies.claims import check_figure2
from policies.reference import ccp_line

TINY = {
    "name": "tiny",
    "fixed": {"mu": 0.1, "reset": 0.01, "until_t": 3e3},
    "grid": {"memory": ["ram:2"], "init": ["random", "linear"], "seed": [0, 1]},
}


def _spec(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "specs" / f"{doc['name']}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def _run(sweep: Sweep, indices, out: Path) -> None:
    report = run_sweep(attrs.evolve(sweep, points=tuple(sweep.points[i] for i in indices)), out, workers=1, quiet=True)
    assert not report.failures


def _rows(folder: Path) -> list[dict]:
    with open(folder / "summary.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_log_spaced_keeps_the_ends_and_at_most_the_count():
    t = np.concatenate([[0.0], np.cumsum(np.linspace(1, 50, 999))])
    keep = log_spaced(t, 20)
    assert keep[0] == 0 and keep[-1] == len(t) - 1 and len(keep) <= 20 and np.all(np.diff(keep) > 0)
    assert np.array_equal(log_spaced(t[:10], 20), np.arange(10))


def test_a_later_shipping_adds_to_what_was_shipped(tmp_path):
    sweep = load_spec(_spec(tmp_path, TINY))
    _run(sweep, [0, 1], tmp_path / "a")
    ship(sweep, [tmp_path / "a"], tmp_path / "shipped", points=20)
    first = _rows(tmp_path / "shipped")
    assert [r["status"] for r in first] == ["done", "done", "absent", "absent"]
    _, curves_before = read_shipped(tmp_path / "shipped")

    _run(sweep, [2, 3], tmp_path / "b")  # elsewhere, later: a sweep directory without points 0 and 1
    provenance = ship(sweep, [tmp_path / "b"], tmp_path / "shipped", points=20)
    rows = _rows(tmp_path / "shipped")
    assert provenance["done"] == 4 and [r["status"] for r in rows] == ["done"] * 4
    assert [r["stop"] for r in rows] == ["until_t"] * 4 and provenance["stops"] == {"until_t": 4}
    assert rows[:2] == first[:2]  # kept as shipped
    rows_after, curves = read_shipped(tmp_path / "shipped")
    for point in sweep.points[:2]:
        assert np.array_equal(curves[point.name][0], curves_before[point.name][0])
        assert np.array_equal(curves[point.name][1], curves_before[point.name][1])
    for point in sweep.points[2:]:
        result = json.loads((tmp_path / "b" / "runs" / point.name / "result.json").read_text())
        full = read_trajectory(tmp_path / "b" / "runs" / point.name)
        assert float(rows_after[point.name]["q"]) == result["q"]
        assert curves[point.name][1][-1] == full["q"][-1] and curves[point.name][0][0] == full["t"][0]
    with open(tmp_path / "shipped" / "groups.csv", newline="") as f:
        groups = {g["init"]: g for g in csv.DictReader(f)}
    for init in ("random", "linear"):
        qs = [float(r["q"]) for r in rows if r["init"] == init]
        assert float(groups[init]["median_q"]) == float(np.median(qs)) and groups[init]["finished"] == groups[init]["of"] == "2"


def test_complete_runs_only_what_results_lack(tmp_path):
    specs = _spec(tmp_path, TINY).parent
    sweep = load_spec(specs / "tiny.json")
    _run(sweep, [1, 3], tmp_path / "earlier")
    ship(sweep, [tmp_path / "earlier"], tmp_path / "results" / "tiny")
    assert [p.name for p in lacking(sweep, tmp_path / "results" / "tiny")] == [sweep.points[0].name, sweep.points[2].name]

    provenance = complete("tiny", sweeps=tmp_path / "sweeps", results=tmp_path / "results", specs=specs, workers=1, quiet=True)
    assert provenance["done"] == 4 and lacking(sweep, tmp_path / "results" / "tiny") == []
    ran = sorted(str(p.parent.relative_to(tmp_path / "sweeps" / "tiny" / "runs")) for p in (tmp_path / "sweeps").rglob("result.json"))
    assert ran == sorted([sweep.points[0].name, sweep.points[2].name])  # the shipped two were not run again
    again = complete("tiny", sweeps=tmp_path / "sweeps", results=tmp_path / "results", specs=specs, workers=1, quiet=True)
    result = json.loads((tmp_path / "sweeps" / "tiny" / "runs" / sweep.points[0].name / "result.json").read_text())
    assert again["done"] == 4 and float(_rows(tmp_path / "results" / "tiny")[0]["q"]) == result["q"]
    with pytest.raises(ValueError, match="nothing.json"):
        complete("nothing", sweeps=tmp_path / "sweeps", results=tmp_path / "results", specs=specs)


def test_the_figure2_claim_against_the_closed_forms():
    mu, M, r = 0.1, 8, 1e-3
    symmetric = ccp_line(mu, M, r, "paper")
    asymmetric = asymmetric_ccp_optimum(mu, M, r, convention="paper").q
    assert asymmetric < symmetric  # the referee's finding, which the verdicts below rest on
    assert check_figure2([(mu, M, r, symmetric * (1 + 1e-6))])[0]["verdict"] == "holds"
    toward = check_figure2([(mu, M, r, symmetric), (mu, M, r, asymmetric)])[0]
    assert toward["verdict"].startswith("does not hold: those runs end between the symmetric and the asymmetric CCP")
    assert toward["numbers"].startswith("1 of 2 runs end below the symmetric CCP")
    assert f"{(symmetric - asymmetric) / symmetric:.3g}" in toward["numbers"]
    assert check_figure2([(mu, M, r, asymmetric * 0.99)])[0]["verdict"] == "does not hold: some runs end below the asymmetric CCP too"
    assert check_figure2([])[0]["verdict"] == "not run yet"


def test_a_figure2_sweep_is_shipped_and_shown(tmp_path, monkeypatch):
    doc = {
        "name": "fig2",
        "fixed": {"init": "near-ccp", "seed": 0, "until_t": 1e3, "convention": "paper"},
        "grid": [
            {"mu": [0.2], "memory": ["ram:2"], "reset": [0.5, 0.25, 0.125, 0.0625]},
            {"mu": [0.2], "reset": [0.01], "memory": ["ram:2", "ram:3", "ram:4", "ram:5"]},
        ],
    }
    sweep = load_spec(_spec(tmp_path, doc))
    _run(sweep, range(len(sweep.points)), tmp_path / "sweep")
    ship(sweep, [tmp_path / "sweep"], tmp_path / "results" / "fig2")
    claims = json.loads((tmp_path / "results" / "fig2" / "claims.json").read_text())
    assert len(claims) == 2 and all(c["horizon"].startswith("until_t 1000") for c in claims)
    below = sum(
        float(r["q"]) < ccp_line(0.2, int(r["memory"].split(":")[1]), float(r["reset"]), "paper") * (1 - 1e-9)
        for r in _rows(tmp_path / "results" / "fig2")
    )
    assert claims[0]["numbers"].startswith(f"{below} of {len(sweep.points)} runs end below the symmetric CCP")
    assert (tmp_path / "results" / "fig2" / "figure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    monkeypatch.setattr(page, "SHIPPED", tmp_path / "results")
    (tmp_path / "out" / "figures").mkdir(parents=True)
    section = paper.section_figure2_full_size(tmp_path / "out", lambda message: None)
    assert section.numbers["done"] == len(sweep.points)
    # The paper's two panels as grids: final q over resets (left) and over sizes (right), mu = 0.2 only.
    assert "mu = 0.2: " in section.body and "left panel" in section.body and "right panel" in section.body
    assert (tmp_path / "out" / "figures" / "full-size-fig2.png").is_file()


def test_figure4_panels_draw_every_point_of_the_published_spec():
    from fsc.report.results import FIGURE4_PANELS, SPECS

    sweep = load_spec(SPECS / "fig4.json")
    pairs = [pair for _, panel in FIGURE4_PANELS for pair in panel]
    assert len(pairs) == len(set(pairs)) == 8
    assert set(pairs) == {(p.arguments["memory"], p.arguments["reset"]) for p in sweep.points}


def _fake_running(run: Path) -> None:
    """Make a finished run look interrupted after being continued: run.json says running, result.json is stale."""
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**meta, "status": "running"}))


def test_sources_are_never_mixed_and_the_furthest_run_wins(tmp_path):
    sweep = load_spec(_spec(tmp_path, TINY))
    _run(sweep, range(4), tmp_path / "a")
    ship(sweep, [tmp_path / "a"], tmp_path / "shipped")
    rows = _rows(tmp_path / "shipped")
    # The shipped folder holds point 0 as running far ahead (as if shipped from another machine).
    rows[0].update(status="running", t="1000000000.0", steps="7", q="0.5")
    with open(tmp_path / "shipped" / "summary.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    _, curves_before = read_shipped(tmp_path / "shipped")
    _fake_running(tmp_path / "a" / "runs" / sweep.points[0].name)  # here: a stale result.json, not finished
    ship(sweep, [tmp_path / "a"], tmp_path / "shipped")
    first, _ = read_shipped(tmp_path / "shipped")
    row = first[sweep.points[0].name]
    assert (row["status"], row["t"], row["steps"], row["q"]) == ("running", "1000000000.0", "7", "0.5")
    _, curves = read_shipped(tmp_path / "shipped")
    assert np.array_equal(curves[sweep.points[0].name][0], curves_before[sweep.points[0].name][0])
    assert lacking(sweep, tmp_path / "shipped") == [sweep.points[0]]


def test_a_raised_horizon_makes_finished_runs_lacking(tmp_path):
    sweep = load_spec(_spec(tmp_path, TINY))
    _run(sweep, range(4), tmp_path / "a")
    ship(sweep, [tmp_path / "a"], tmp_path / "shipped")
    longer = load_spec(_spec(tmp_path, {**TINY, "fixed": {**TINY["fixed"], "until_t": 6e3}}))
    assert [p.name for p in longer.points] == [p.name for p in sweep.points]  # the same runs, continued
    assert lacking(longer, tmp_path / "shipped") == list(longer.points)
    ship(longer, [tmp_path / "a"], tmp_path / "shipped")  # the runs stopped at 3e3: in progress for 6e3
    assert {r["status"] for r in _rows(tmp_path / "shipped")} == {"running"}


def test_a_cap_the_shipped_runs_never_reached_keeps_them_finished(tmp_path):
    """A max_steps added to the spec above every shipped run's steps changes no run's end; one below some of
    them makes those lacking (they went past it) and leaves the others finished."""
    sweep = load_spec(_spec(tmp_path, TINY))
    _run(sweep, range(4), tmp_path / "a")
    ship(sweep, [tmp_path / "a"], tmp_path / "shipped")
    steps = {r["run"]: int(r["steps"]) for r in _rows(tmp_path / "shipped")}
    assert all(r["stop"] == "until_t" for r in _rows(tmp_path / "shipped")) and len(set(steps.values())) > 1
    capped = lambda cap: load_spec(_spec(tmp_path, {**TINY, "fixed": {**TINY["fixed"], "max_steps": cap}}))  # noqa: E731
    assert lacking(capped(max(steps.values())), tmp_path / "shipped") == []
    cut = sorted(steps.values())[1]
    assert [p.name for p in lacking(capped(cut), tmp_path / "shipped")] == [p.name for p in sweep.points if steps[p.name] > cut]


def test_storage_settings_do_not_split_a_group(tmp_path):
    doc = {
        "name": "split",
        "fixed": {"mu": 0.1, "reset": 0.01, "until_t": 1e3, "memory": "ram:2", "init": "random"},
        "grid": [{"seed": [0, 1]}, {"seed": [2, 3], "rows_per_decade": [10]}],
    }
    sweep = load_spec(_spec(tmp_path, doc))
    _run(sweep, range(4), tmp_path / "a")
    ship(sweep, [tmp_path / "a"], tmp_path / "shipped")
    with open(tmp_path / "shipped" / "groups.csv", newline="") as f:
        groups = list(csv.DictReader(f))
    assert len(groups) == 1 and groups[0]["finished"] == groups[0]["of"] == "4" and "rows_per_decade" not in groups[0]


def test_log_spaced_stays_within_the_count_when_t_stops_growing():
    t = np.concatenate([[0.0], np.geomspace(1, 1e8, 100_000), np.full(10, 1e8)])
    keep = log_spaced(t, 200)
    assert len(keep) <= 200 and keep[0] == 0 and keep[-1] == len(t) - 1


def test_fsc_report_full_runs_what_results_lack_then_builds_the_page(tmp_path, monkeypatch):
    from fsc.cli import main
    from fsc.report import results

    specs = _spec(tmp_path, TINY).parent
    sweep = load_spec(specs / "tiny.json")
    _run(sweep, [0], tmp_path / "earlier")
    ship(sweep, [tmp_path / "earlier"], tmp_path / "results" / "tiny")
    monkeypatch.setattr(page, "SHIPPED", tmp_path / "results")
    monkeypatch.setattr(results, "SPECS", specs)
    monkeypatch.setattr(results, "FULL_SIZE", ("tiny",))
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--full", "--sweeps", "sw", "--workers", "1", "--quiet", "--out", "page"]) == 0
    assert [r["status"] for r in _rows(tmp_path / "results" / "tiny")] == ["done"] * 4
    ran = sorted(p.parent.relative_to(tmp_path / "sw" / "tiny" / "runs").as_posix() for p in (tmp_path / "sw").rglob("result.json"))
    assert ran == sorted(p.name for p in sweep.points[1:])  # the shipped point was not run again
    assert (tmp_path / "page" / "index.html").is_file()


def test_each_finished_run_ships_its_final_policy_as_the_format_says(tmp_path):
    from fsc import Policy, evaluate
    from fsc.report.results import policy_file
    from tasks import TwoHypothesis
    from tests.independent_chain import independent_q

    sweep = load_spec(_spec(tmp_path, TINY))
    _run(sweep, [0, 1, 2], tmp_path / "a")
    ship(sweep, [tmp_path / "a"], tmp_path / "shipped", points=20)
    shipped = {r["run"]: r for r in _rows(tmp_path / "shipped")}
    files = sorted(p.name for p in (tmp_path / "shipped" / "policies").iterdir())
    assert files == sorted(p.name.replace("/", "__") + ".npz" for p in sweep.points[:3])  # the unfinished one has none
    for point in sweep.points[:3]:
        path = policy_file(tmp_path / "shipped", point.name)
        assert path.name == point.name.replace("/", "__") + ".npz"
        with np.load(path, allow_pickle=False) as f:
            assert sorted(f.files) == ["architecture", "init_logits", "logits"] and f["logits"].dtype == np.float64
            reset_nodes = Policy.load(path).architecture.reset_mask
            assert np.all(np.isneginf(f["init_logits"][~reset_nodes])) and np.all(np.isfinite(f["init_logits"][reset_nodes]))
        run = Policy.load(tmp_path / "a" / "runs" / point.name / "policy.npz")
        assert np.array_equal(Policy.load(path).logits.numpy(), run.logits.numpy())
        q = float(shipped[point.name]["q"])
        assert abs(float(evaluate(TwoHypothesis(0.1), Policy.load(path), reset=0.01).metrics["q"]) - q) < 1e-12
        assert abs(independent_q(path, 0.1, 0.01, "native") - q) < 1e-12
    ship(sweep, [], tmp_path / "shipped", points=20)  # shipped again without the run directories: kept
    assert sorted(p.name for p in (tmp_path / "shipped" / "policies").iterdir()) == files


def test_fsc_report_full_on_complete_results_changes_no_file(tmp_path, monkeypatch):
    from fsc.cli import main
    from fsc.report import results

    specs = _spec(tmp_path, TINY).parent
    sweep = load_spec(specs / "tiny.json")
    _run(sweep, [0, 1, 2, 3], tmp_path / "earlier")
    ship(sweep, [tmp_path / "earlier"], tmp_path / "results" / "tiny", commit="abc1234", commands=["by hand"], wall=12.5)
    before = {p: p.read_bytes() for p in (tmp_path / "results").rglob("*") if p.is_file()}
    assert len(before) == 9  # summary, trajectories, groups, figure, provenance and four policies
    monkeypatch.setattr(page, "SHIPPED", tmp_path / "results")
    monkeypatch.setattr(results, "SPECS", specs)
    monkeypatch.setattr(results, "FULL_SIZE", ("tiny",))
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--full", "--sweeps", "sw", "--workers", "1", "--quiet", "--out", "page"]) == 0
    after = {p: p.read_bytes() for p in (tmp_path / "results").rglob("*") if p.is_file()}
    assert after.keys() == before.keys() and all(after[p] == before[p] for p in before)
    assert json.loads((tmp_path / "results" / "tiny" / "provenance.json").read_text())["commands"] == ["by hand"]
    assert not (tmp_path / "sw").exists()  # nothing ran


def test_the_same_curves_give_the_same_trajectories_bytes(tmp_path):
    """trajectories.csv.gz depends on the curves alone: shipping the same runs again, into another folder, gives
    the same bytes (no time or file name in the gzip header), and they decompress to the run,t,q text."""
    import gzip

    from fsc.report.results import write_trajectories

    sweep = load_spec(_spec(tmp_path, TINY))
    _run(sweep, range(4), tmp_path / "a")
    ship(sweep, [tmp_path / "a"], tmp_path / "first", points=20)
    ship(sweep, [tmp_path / "a"], tmp_path / "second, elsewhere", points=20)
    first = (tmp_path / "first" / "trajectories.csv.gz").read_bytes()
    assert (tmp_path / "second, elsewhere" / "trajectories.csv.gz").read_bytes() == first
    assert not (tmp_path / "first" / "trajectories.csv").exists()
    assert first[3] == 0 and first[4:8] == b"\0\0\0\0"  # no flags (no file name), modification time 0
    _, curves = read_shipped(tmp_path / "first")
    assert write_trajectories(tmp_path / "third", curves).read_bytes() == first  # the rows read back, written again
    text = gzip.decompress(first).decode()
    assert text.startswith("run,t,q\n") and len(text.splitlines()) == 1 + sum(len(t) for t, _ in curves.values())
    for name, (t, q) in curves.items():
        full = read_trajectory(tmp_path / "a" / "runs" / name)
        assert t[0] == full["t"][0] and q[-1] == full["q"][-1] and 2 <= len(t) <= 20


def test_a_folder_shipped_with_a_plain_trajectories_csv_still_reads(tmp_path):
    """A results folder made before the compressed file holds trajectories.csv: it reads as before, the claims
    and lacking points come from it, and the next shipping replaces it by the same trajectories.csv.gz."""
    import gzip

    from fsc.report.results import trajectories_file, write_claims

    sweep = load_spec(_spec(tmp_path, {**TINY, "name": "fig4"}))
    _run(sweep, [0, 1, 2], tmp_path / "a")
    ship(sweep, [tmp_path / "a"], tmp_path / "shipped", points=20)
    folder = tmp_path / "shipped"
    compressed = (folder / "trajectories.csv.gz").read_bytes()
    rows, curves = read_shipped(folder)
    claims = write_claims(sweep, folder)
    (folder / "trajectories.csv").write_bytes(gzip.decompress(compressed))
    (folder / "trajectories.csv.gz").unlink()

    assert trajectories_file(folder) == folder / "trajectories.csv"
    rows_plain, curves_plain = read_shipped(folder)
    assert rows_plain == rows and list(curves_plain) == list(curves) == [p.name for p in sweep.points[:3]]
    assert all(np.array_equal(curves_plain[n][0], curves[n][0]) and np.array_equal(curves_plain[n][1], curves[n][1]) for n in curves)
    assert write_claims(sweep, folder) == claims and lacking(sweep, folder) == [sweep.points[3]]

    ship(sweep, [], folder, points=20)  # shipped again, nothing new: the same curves, now compressed
    assert trajectories_file(folder) == folder / "trajectories.csv.gz" and not (folder / "trajectories.csv").exists()
    assert (folder / "trajectories.csv.gz").read_bytes() == compressed


def test_bad_trajectories_are_refused_naming_the_file_and_line(tmp_path):
    import gzip

    from fsc.errors import InputError

    folder = tmp_path / "shipped"
    folder.mkdir()
    (folder / "trajectories.csv").write_text("run,t,q\nmemory=ram-2/seed=0,0.0,0.5\nmemory=ram-2/seed=0,1.0,half\n")
    with pytest.raises(InputError, match=r"trajectories\.csv', line 3: expected run,t,q numbers, got \['memory=ram-2/seed=0', '1.0', 'half'\]"):
        read_shipped(folder)
    (folder / "trajectories.csv.gz").write_bytes(gzip.compress(b"run,t,q\nx,0.0,0.5\nx,1.0\n", mtime=0))  # read first
    with pytest.raises(InputError, match=r"trajectories\.csv\.gz', line 3: expected run,t,q numbers, got \['x', '1.0'\]"):
        read_shipped(folder)
    (folder / "trajectories.csv.gz").write_bytes(gzip.compress(b"run,t\nx,0.0\n", mtime=0))
    with pytest.raises(InputError, match=r"trajectories\.csv\.gz', line 1: expected the header run,t,q, got \['run', 't'\]"):
        read_shipped(folder)
    whole = gzip.compress(b"run,t,q\n" + b"x,1.0,0.5\n" * 10_000, mtime=0)
    (folder / "trajectories.csv.gz").write_bytes(whole[: len(whole) // 2])  # cut short
    with pytest.raises(InputError, match=r"trajectories\.csv\.gz', line \d+: cannot be read as gzip-compressed CSV text \(Compressed file ended"):
        read_shipped(folder)
    (folder / "trajectories.csv.gz").write_text("run,t,q\nx,1.0,0.5\n")  # not compressed
    with pytest.raises(InputError, match=r"trajectories\.csv\.gz', line 1: cannot be read as gzip-compressed CSV text \(Not a gzipped file"):
        read_shipped(folder)


def test_a_memory_shipped_without_policies_and_curves_end_on_the_final_row(tmp_path):
    """ship(without_policies=...) leaves out (and removes) the final policies of those memories, and counts the
    shipped ones in provenance.json; a curve that stops before its run's final t (a run thinned before the final
    step was kept) gets the run's final t and q, and end_on_final_rows does the same to a shipped folder."""
    from fsc.report.results import end_on_final_rows, policy_file, write_trajectories

    doc = {**TINY, "grid": {"memory": ["ram:2", "ram:3"], "init": ["random"], "seed": [0]}}
    sweep = load_spec(_spec(tmp_path, doc))
    _run(sweep, [0, 1], tmp_path / "a")
    ship(sweep, [tmp_path / "a"], tmp_path / "shipped", points=20)
    assert all(policy_file(tmp_path / "shipped", p.name).is_file() for p in sweep.points)
    provenance = ship(sweep, [tmp_path / "a"], tmp_path / "shipped", points=20, without_policies=["ram:3"])
    assert [policy_file(tmp_path / "shipped", p.name).is_file() for p in sweep.points] == [True, False] and provenance["policies"] == 1
    rows, curves = read_shipped(tmp_path / "shipped")
    for name, (t, q) in curves.items():  # every run's trajectory ends on its final step: so does its curve
        assert (t[-1], q[-1]) == (float(rows[name]["t"]), float(rows[name]["q"]))
    write_trajectories(tmp_path / "shipped", {name: (t[:-1], q[:-1]) for name, (t, q) in curves.items()})  # as a thinned run's were
    assert end_on_final_rows(tmp_path / "shipped") == 2 and end_on_final_rows(tmp_path / "shipped") == 0
    assert {name: (t.tolist(), q.tolist()) for name, (t, q) in read_shipped(tmp_path / "shipped")[1].items()} == {
        name: (t.tolist(), q.tolist()) for name, (t, q) in curves.items()
    }
