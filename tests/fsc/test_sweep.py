"""Sweeps (issue 7): spec checks, a local pool, a real Dask cluster, kill and resume, failing points.

The sweeps here train tiny points with the real ``fsc train`` (a subprocess
per point), so the whole file takes some tens of seconds on two cores.
"""

import csv
import json
import logging
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fsc import sweep as fsweep
from fsc.cli import main as fsc_main
from fsc.sweep import worker
from fsc.train import read_trajectory

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "sweeps"

#: Four small points: two quick ones (t up to 100), then two that train for a second or more (t up to 2e6;
#: at 2e5 they took 0.3 s with the compiled step, close to the 0.25 s the workers' watchdog takes to see
#: a killed driver, so a kill test could find them all finished).
SMALL = {
    "name": "small",
    "fixed": {"mu": 0.1, "reset": 1e-3, "init": "random", "seed": 1, "convention": "paper"},
    "grid": {"until_t": [100, 2_000_000], "memory": ["ram:2", "memento:2"]},
}
NAMES = ["until_t=100/memory=ram-2", "until_t=100/memory=memento-2", "until_t=2000000/memory=ram-2", "until_t=2000000/memory=memento-2"]


def write_spec(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))
    return path


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def without_seconds(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]


def sweep_main(capsys, *argv) -> tuple[int, str, str]:
    status = fsc_main(["sweep", *(str(a) for a in argv)])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The small sweep on the local pool, uninterrupted: (spec path, sweep, out dir, report)."""
    root = tmp_path_factory.mktemp("reference")
    spec = write_spec(root / "small.json", SMALL)
    sweep = fsweep.load_spec(spec)
    report = fsweep.run_sweep(sweep, root / "out", workers=2, quiet=True)
    return spec, sweep, root / "out", report


# ---------------------------------------------------------------------------
# The spec.


TINY = {
    "name": "tiny",
    "fixed": {"mu": 0.1, "reset": 1e-3, "until_t": 100, "convention": "paper"},
    "grid": [
        {"memory": ["ram:2"], "init": ["random", "linear"], "seed": [0]},
        {"memory": ["memento:2"], "init": ["random", "cycles"], "seed": [0]},
    ],
}


def test_grid_expands_in_order_with_readable_directories():
    sweep = fsweep.Sweep.from_dict(TINY)
    assert [p.name for p in sweep.points] == [
        "memory=ram-2/init=random/seed=0",
        "memory=ram-2/init=linear/seed=0",
        "memory=memento-2/init=random/seed=0",
        "memory=memento-2/init=cycles/seed=0",
    ]
    first = sweep.points[0]
    assert first.argv() == ["--mu=0.1", "--memory=ram:2", "--init=random", "--seed=0", "--reset=0.001", "--until-t=100", "--convention=paper"]
    assert first.stop() == {"until_t": 100, "max_seconds": None, "max_steps": None}
    assert sweep.varying_keys() == ["memory", "init"]
    # The last key varies fastest; '-' and '_' spellings are the same argument.
    product = fsweep.Sweep.from_dict({"fixed": {"until-t": 10, "init": "random"}, "grid": {"memory": ["ram:2", "ram:3"], "seed": [0, 1]}})
    assert [p.name for p in product.points] == ["memory=ram-2/seed=0", "memory=ram-2/seed=1", "memory=ram-3/seed=0", "memory=ram-3/seed=1"]
    assert product.points[0].arguments["until_t"] == 10


def test_json_and_toml_specs_agree(tmp_path):
    toml = tmp_path / "tiny.toml"
    toml.write_text(
        'name = "tiny"\n[fixed]\nmu = 0.1\nreset = 1e-3\nuntil_t = 100\nconvention = "paper"\n'
        '[[grid]]\nmemory = ["ram:2"]\ninit = ["random", "linear"]\nseed = [0]\n'
        '[[grid]]\nmemory = ["memento:2"]\ninit = ["random", "cycles"]\nseed = [0]\n'
    )
    a, b = fsweep.load_spec(toml), fsweep.load_spec(write_spec(tmp_path / "tiny.json", TINY))
    assert [(p.name, dict(p.arguments)) for p in a.points] == [(p.name, dict(p.arguments)) for p in b.points]


BAD_SPECS = [
    ([1, 2], TypeError, "must be an object"),
    ({"grid": {"seed": [0]}, "fixd": {}}, ValueError, "unknown key 'fixd'"),
    ({"fixed": {"memory": "ram:2", "init": "random", "until_t": 1}}, ValueError, "missing key 'grid'"),
    ({"fixed": {"memory": "ram:2", "until_t": 1}, "grid": {"init": ["random"], "sed": [0]}}, ValueError, "unknown fsc train argument 'sed'"),
    ({"fixed": {"memory": "ram:2", "until_t": 1}, "grid": {"init": ["random"], "seed": []}}, ValueError, "'seed' in 'grid' has no values"),
    ({"fixed": {"memory": "ram:2", "until_t": 1}, "grid": {}}, ValueError, "'grid' is empty"),
    ({"fixed": {"memory": "ram:2", "until_t": 1}, "grid": []}, ValueError, "'grid' is empty"),
    ({"fixed": {"memory": "ram:2", "until_t": 1}, "grid": [{"init": ["random"]}, {}]}, ValueError, r"'grid\[1\]' is empty"),
    ({"fixed": {"memory": "ram:2", "until_t": 1}, "grid": {"init": "random"}}, TypeError, "'init' in 'grid' must be a list"),
    ({"fixed": {"memory": "ram:2", "until_t": 1}, "grid": {"init": ["random"], "seed": [0.5]}}, TypeError, "'seed' in 'grid' must be an integer, got 0.5"),
    ({"fixed": {"memory": "ram:2", "until_t": "1e3"}, "grid": {"init": ["random"]}}, TypeError, "'until_t' in 'fixed' must be a number, got '1e3'"),
    ({"fixed": {"memory": "ram:2", "until_t": True}, "grid": {"init": ["random"]}}, TypeError, "'until_t' in 'fixed' must be a number, got True"),
    ({"fixed": {"memory": "ram:2", "until_t": 1}, "grid": {"init": [3]}}, TypeError, "'init' in 'grid' must be a non-empty string, got 3"),
    ({"fixed": {"memory": "ram:2", "until_t": 1, "init": "random"}, "grid": {"init": ["linear"]}}, ValueError, "'init' is both in 'fixed' and in 'grid'"),
    ({"fixed": {"memory": "ram:2", "until_t": 1}, "grid": {"init": ["random", "random"]}}, ValueError, "'init' in 'grid' repeats a value"),
    ({"fixed": {"memory": "ram:2", "until_t": 1, "out": "x"}, "grid": {"init": ["random"]}}, ValueError, "'out' in 'fixed' is set by the sweep's --out"),
    ({"fixed": {"memory": "ram:2"}, "grid": {"init": ["random"]}}, ValueError, "every point needs 'until_t'"),
    ({"fixed": {"memory": "ram:2", "until_t": float("nan")}, "grid": {"init": ["random"]}}, ValueError, "must be a finite number"),
    ({"name": 3, "fixed": {"memory": "ram:2", "until_t": 1}, "grid": {"init": ["random"]}}, TypeError, "'name' must be a non-empty string"),
    (
        {"fixed": {"memory": "ram:2", "until_t": 1}, "grid": [{"init": ["random"]}, {"init": ["random"], "mu": [0.2]}]},
        ValueError,
        "would lie inside",
    ),
    (
        {"fixed": {"until_t": 1}, "grid": [{"memory": ["ram:2"], "init": ["random"]}, {"memory": ["ram:2"], "init": ["random"]}]},
        ValueError,
        "share the run directory",
    ),
]


@pytest.mark.parametrize(("doc", "error", "pattern"), BAD_SPECS)
def test_bad_specs_name_the_key(doc, error, pattern):
    with pytest.raises(error, match=pattern):
        fsweep.Sweep.from_dict(doc)


def test_bad_spec_files_and_options(tmp_path, capsys):
    (tmp_path / "broken.json").write_text("{")
    status, _, err = sweep_main(capsys, tmp_path / "broken.json", "--out", tmp_path / "o")
    assert status == 2 and "is not valid JSON" in err and len(err.strip().splitlines()) == 1
    status, _, err = sweep_main(capsys, tmp_path / "missing.json", "--out", tmp_path / "o")
    assert status == 2 and "does not exist" in err
    spec = write_spec(tmp_path / "tiny.json", TINY)
    status, _, err = sweep_main(capsys, spec)
    assert status == 2 and "give --out DIR" in err
    status, _, err = sweep_main(capsys, spec, "--out", tmp_path / "o", "--workers", "0")
    assert status == 2 and "'0'" in err
    status, _, err = sweep_main(capsys, spec, "--out", tmp_path / "nothing", "--summary")
    assert status == 2 and "holds no sweep" in err
    assert not (tmp_path / "o").exists() and not (tmp_path / "nothing").exists()


def test_a_sweep_never_writes_into_a_directory_of_the_users(tmp_path, capsys):
    spec = write_spec(tmp_path / "tiny.json", TINY)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "result.json").write_text("the user's")
    (tmp_path / "link").symlink_to(mine)
    for out in (mine, tmp_path / "link"):
        status, _, err = sweep_main(capsys, spec, "--out", out, "--workers", "1")
        assert status == 2 and "not a sweep's" in err and "result.json" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in mine.iterdir()) == ["result.json"] and (mine / "result.json").read_text() == "the user's"
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    status, _, err = sweep_main(capsys, spec, "--out", tmp_path / "dangling", "--workers", "1")
    assert status == 2 and "dangling" in err and not (tmp_path / "gone").exists()
    # A sweep's own directory (only what a sweep writes) is ours: an empty one and one holding runs/ are taken.
    assert fsweep.check_sweep_directory(tmp_path / "new") == (tmp_path / "new").resolve()
    (tmp_path / "ours" / "runs").mkdir(parents=True)
    (tmp_path / "ours" / "sweep.json").write_text("{}")
    assert fsweep.check_sweep_directory(tmp_path / "ours") == (tmp_path / "ours").resolve()


def test_example_specs():
    names = sorted(p.name for p in EXAMPLES.glob("*.json"))
    assert {"fig2-small.json", "fig2.json", "fig4-small.json", "fig4.json", "tiny.json"} <= set(names)
    assert all(fsweep.load_spec(EXAMPLES / name).points for name in names)  # every example spec loads
    small = fsweep.load_spec(EXAMPLES / "fig4-small.json")
    counts = {}
    for point in small.points:
        key = (point.arguments["memory"], point.arguments["init"])
        counts[key] = counts.get(key, 0) + 1
    # Three seeds where the initialisation draws random numbers, one where it is deterministic.
    assert counts == {
        **{("ram:8", init): 3 for init in ("random", "linear", "columns")},
        ("ram:8", "near-ccp"): 1,
        ("memento:3", "random"): 3,
        ("memento:3", "cycles"): 3,
        ("memento:3", "near-necklace"): 1,
    }
    full = fsweep.load_spec(EXAMPLES / "fig4.json")
    assert {p.arguments["memory"] for p in full.points} == {"ram:8", "ram:20", "ram:16", "ram:64", "memento:3", "memento:4"}
    assert all(p.arguments["max_seconds"] == 3600 and p.arguments["mu"] == 0.1 and p.arguments["until_t"] >= 1e6 for p in full.points)
    for memory in ("ram:8", "ram:20", "memento:3", "memento:4", "ram:16", "ram:64"):
        assert {p.arguments["seed"] for p in full.points if p.arguments["memory"] == memory and p.arguments["init"] == "random"} == set(range(20))
    # The resets and horizons panel by panel: tests/test_published_setup.py.
    for name in ("fig2.json", "fig2-small.json"):
        fig2 = fsweep.load_spec(EXAMPLES / name)
        assert {p.arguments["init"] for p in fig2.points} == {"near-ccp"}
        assert {p.arguments["mu"] for p in fig2.points} == {0.1, 0.2}
        assert len({p.arguments["reset"] for p in fig2.points}) >= 3


# ---------------------------------------------------------------------------
# Running.


def test_local_pool_sweep_and_summary(reference, capsys):
    spec, sweep, out, report = reference
    assert [p.name for p in sweep.points] == NAMES
    assert (report.points, report.trained, report.skipped, report.failed) == (4, 4, 0, 0)
    results = {p.name: json.loads((out / "runs" / p.name / "result.json").read_text()) for p in sweep.points}
    for point in sweep.points:  # ordinary run directories, with the arguments given
        run_json = json.loads((out / "runs" / point.name / "run.json").read_text())
        assert run_json["arguments"]["memory"] == point.arguments["memory"]
        assert results[point.name]["t"] >= point.arguments["until_t"]

    status, table, _ = sweep_main(capsys, spec, "--out", out, "--summary")
    assert status == 0
    lines = table.splitlines()
    assert lines[0].split() == ["memory", "until_t", "status", "q", "t", "steps", "seconds"]
    assert [line.split()[:3] for line in lines[1:5]] == [
        ["ram:2", "100", "done"],
        ["memento:2", "100", "done"],
        ["ram:2", "2000000", "done"],
        ["memento:2", "2000000", "done"],
    ]
    rows = read_csv(out / "summary.csv")
    assert [row["run"] for row in rows] == NAMES
    for row in rows:
        result = results[row["run"]]
        assert float(row["q"]) == result["q"] and float(row["t"]) == result["t"] and int(row["steps"]) == result["steps"]
        assert float(row["seconds"]) == result["seconds"] and row["status"] == "done"
        assert 0 < float(row["q"]) < float(row["q_start"]) < 1  # training lowered q
    png = (out / "summary.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000

    status, text, _ = sweep_main(capsys, spec, "--out", out, "--summary", "--json")
    record = json.loads(text)
    assert status == 0 and [r["q"] for r in record["rows"]] == [results[name]["q"] for name in NAMES]

    # Started again: nothing is recomputed.
    mtimes = {name: (out / "runs" / name / "result.json").stat().st_mtime_ns for name in NAMES}
    status, text, _ = sweep_main(capsys, spec, "--out", out, "--workers", "2", "--json")
    again = json.loads(text)
    assert status == 0 and (again["trained"], again["skipped"], again["failed"]) == (0, 4, 0)
    assert mtimes == {name: (out / "runs" / name / "result.json").stat().st_mtime_ns for name in NAMES}
    status, text, _ = sweep_main(capsys, spec, "--out", out)
    assert status == 0 and text.splitlines()[0].split() == ["points", "4"]


def test_forked_trainers_equal_new_interpreters(reference, tmp_path):
    """The local pool forks its trainers from a warm worker; a new interpreter per point (the trainer
    ``command``) trains the same trajectories to the last bit."""
    _, sweep, out, _ = reference
    report = fsweep.run_sweep(sweep, tmp_path / "exec", workers=2, quiet=True, command=[sys.executable, "-m", "fsc.cli", "train"])
    assert report.trained == 4 and report.failed == 0

    def rows(root):
        return {name: {k: v.tolist() for k, v in read_trajectory(root / "runs" / name).items() if k != "seconds"} for name in NAMES}

    assert rows(tmp_path / "exec") == rows(out)
    assert worker._FORK_READY is False  # this process only drove the pools; their workers forked


_FORK_SCRIPT = """
import json, signal, sys, time
from pathlib import Path
from fsc.sweep import worker
out = Path(sys.argv[1])
worker._warm_trainer()
assert worker._FORK_READY
base = ["--memory", "ram:2", "--init", "random", "--mu", "0.1", "--reset", "1e-3", "--quiet", "--json"]
good = worker._ForkedTrainer([*base, "--until-t", "100", "--out", str(out / "good")], keep_fd=None)
stdout, stderr = good.communicate()
bad = worker._ForkedTrainer([*base, "--until-t", "-1", "--out", str(out / "bad")], keep_fd=None)
_, bad_err = bad.communicate()
long = worker._ForkedTrainer([*base, "--until-t", "1e12", "--checkpoint-seconds", "1000", "--out", str(out / "long")], keep_fd=None)
while not (out / "long" / "checkpoint.json").exists():
    time.sleep(0.01)
time.sleep(0.3)
long.send_signal(signal.SIGINT)
_, long_err = long.communicate()
print(json.dumps({"good": [good.returncode, json.loads(stdout)["stop"], stderr], "bad": [bad.returncode, bad_err],
                  "long": [long.returncode, long_err]}))
"""


def test_a_forked_trainer_behaves_like_a_subprocess(tmp_path):
    """Exit status, stdout, the one-line error, and SIGINT (checkpoint, then status 130), as with a new interpreter."""
    done = subprocess.run([sys.executable, "-c", _FORK_SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["good"] == [0, "until_t", ""]
    code, err = record["bad"]
    assert code == 2 and len(err.splitlines()) == 1 and "until_t" in err
    code, err = record["long"]
    assert code == 130 and "interrupted" in err
    assert json.loads((tmp_path / "long" / "run.json").read_text())["status"] == "running"
    assert (tmp_path / "long" / "checkpoint.npz").exists() and not (tmp_path / "long" / "result.json").exists()


_AFTER_OPENMP_SCRIPT = """
import sys, torch
from fsc import sweep
torch.set_num_threads(2)
torch.softmax(torch.rand(512, 4096, dtype=torch.float64), dim=1)  # an OpenMP team now exists in this process
spec = sweep.Sweep.from_dict({"fixed": {"mu": 0.1, "memory": "ram:2", "reset": 1e-3, "until_t": 100},
                              "grid": {"init": ["random", "linear"], "threads": [1, 2]}})
report = sweep.run_sweep(spec, sys.argv[1], workers=1, quiet=True)
print(report.trained, report.failed)
"""


def test_a_sweep_driven_from_a_process_that_ran_openmp_finishes(tmp_path):
    """The pool's workers are forks of a driver that ran an OpenMP team, and they fork the trainers: with one
    torch thread (the default) a forked trainer never starts a team, which would deadlock; a point with more
    threads gets a new interpreter."""
    done = subprocess.run([sys.executable, "-c", _AFTER_OPENMP_SCRIPT, str(tmp_path / "out")], capture_output=True, text=True, timeout=240,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert done.returncode == 0 and done.stdout.split() == ["4", "0"], done.stderr


def test_dask_cluster_gives_the_local_results(reference, tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    spec, sweep, local_out, _ = reference
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None, silence_logs=logging.ERROR, host="127.0.0.1")
    try:
        status, text, err = sweep_main(capsys, spec, "--out", tmp_path / "dask", "--scheduler", cluster.scheduler_address, "--json", "--quiet")
        assert status == 0, err
        assert json.loads(text)["trained"] == 4
    finally:
        cluster.close()
    for point in sweep.points:
        local = json.loads((local_out / "runs" / point.name / "result.json").read_text())
        remote = json.loads((tmp_path / "dask" / "runs" / point.name / "result.json").read_text())
        assert (remote["q"], remote["t"], remote["steps"]) == (local["q"], local["t"], local["steps"])
    fsweep.write_summary(sweep, tmp_path / "dask")
    assert without_seconds(read_csv(tmp_path / "dask" / "summary.csv")) == without_seconds(read_csv(local_out / "summary.csv"))


def test_failing_points_are_reported_and_the_others_finish(tmp_path, capsys):
    doc = {
        "name": "bad",
        "fixed": {"mu": 0.1, "reset": 1e-3, "until_t": 100, "seed": 0},
        "grid": [{"memory": ["ram:0"], "init": ["random"]}, {"memory": ["ram:2"], "init": ["warm", "random"]}],
    }
    spec = write_spec(tmp_path / "bad.json", doc)
    status, out, err = sweep_main(capsys, spec, "--out", tmp_path / "o", "--workers", "3", "--quiet")
    assert status == 1
    failures = json.loads((tmp_path / "o" / "failures.json").read_text())
    assert [f["run"] for f in failures] == ["memory=ram-0/init=random", "memory=ram-2/init=warm"]
    assert [(f["arguments"]["memory"], f["arguments"]["init"]) for f in failures] == [("ram:0", "random"), ("ram:2", "warm")]
    assert all(f["exit"] == 2 for f in failures)
    assert "ram:0" in failures[0]["error"] and "warm" in failures[1]["error"]
    for failure in failures:  # on stderr too, with the arguments and the trainer's one line
        assert f"failed: mu=0.1 memory={failure['arguments']['memory']} init={failure['arguments']['init']} seed=0" in err
        assert failure["error"] in err
        assert not (tmp_path / "o" / "runs" / failure["run"] / "result.json").exists()
    assert "2 of 3 points failed" in err
    assert json.loads((tmp_path / "o" / "runs" / "memory=ram-2" / "init=random" / "result.json").read_text())["t"] >= 100
    status, table, _ = sweep_main(capsys, spec, "--out", tmp_path / "o", "--summary")
    assert status == 0
    assert [line.split()[2] for line in table.splitlines()[1:4]] == ["failed", "failed", "done"]


# ---------------------------------------------------------------------------
# Kill the driver, start it again.


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
            except OSError:
                continue
            if text in cmdline and state != "Z":
                pids.append(int(entry.name))
    return pids


def test_sigkill_the_driver_then_resume(reference, tmp_path):
    spec, sweep, whole, _ = reference  # the uninterrupted sweep
    fsweep.write_summary(sweep, whole)
    quick, slow = NAMES[:2], NAMES[2:]

    # Killed once a quick point finished and a slow one is training.
    out = tmp_path / "killed"
    driver = subprocess.Popen(
        [sys.executable, "-m", "fsc", "sweep", str(spec), "--out", str(out), "--workers", "2", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not (any((out / "runs" / n / "result.json").exists() for n in quick) and any((out / "runs" / n / "run.json").exists() for n in slow)):
            assert driver.poll() is None, driver.stderr.read().decode()
            assert time.monotonic() < deadline, "the sweep made no progress"
            time.sleep(0.02)
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        driver.stderr.close()
    # The pool's workers and their trainers stop by themselves (the trainers checkpoint first).
    deadline = time.monotonic() + 60
    while _processes_mentioning(str(out)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_mentioning(str(out)) == []
    # Counted only now: a trainer may finish its point between the driver's death and its own.
    finished = {n: (out / "runs" / n / "result.json").stat().st_mtime_ns for n in quick + slow if (out / "runs" / n / "result.json").exists()}
    assert 1 <= len(finished) < len(sweep.points)

    report = fsweep.run_sweep(sweep, out, workers=2, quiet=True)
    assert (report.failed, report.skipped, report.trained) == (0, len(finished), len(sweep.points) - len(finished))
    assert {n: (out / "runs" / n / "result.json").stat().st_mtime_ns for n in finished} == finished
    for point in sweep.points:  # every point once: one result, one trajectory row per step
        run_dir = out / "runs" / point.name
        steps = read_trajectory(run_dir)["step"].tolist()
        assert steps == list(range(len(steps)))
        assert steps[-1] == json.loads((run_dir / "result.json").read_text())["steps"]
    assert sorted(str(p.relative_to(out / "runs").parent) for p in (out / "runs").rglob("result.json")) == sorted(p.name for p in sweep.points)
    fsweep.write_summary(sweep, out)
    assert without_seconds(read_csv(out / "summary.csv")) == without_seconds(read_csv(whole / "summary.csv"))


def owned_point(tmp_path: Path) -> tuple[Path, Path, int]:
    """A point's run directory and lock file, and a descriptor of that lock held here (the other owner)."""
    fcntl = pytest.importorskip("fcntl")
    run_dir, lock = tmp_path / "runs" / "seed=0", tmp_path / "locks" / "seed=0.lock"
    lock.parent.mkdir(parents=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return run_dir, lock, fd


def test_a_point_owned_by_another_process_is_waited_for_then_skipped(tmp_path):
    """What a second driver (or a restarted one, while an orphaned trainer runs) does: wait on the lock, write nothing."""
    run_dir, lock, fd = owned_point(tmp_path)
    try:
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(fsweep.run_point, ["--memory=ram:2", "--init=random", "--until-t=100"], str(run_dir), str(lock), {"until_t": 100})
            time.sleep(0.5)
            assert not future.done()
            run_dir.mkdir(parents=True)  # the other owner finishes the point
            (run_dir / "result.json").write_text('{"q": 0.5, "t": 100, "steps": 1, "seconds": 0}')
            os.close(fd)
            fd = None
            assert future.result(timeout=30)["status"] == "skipped"
    finally:
        if fd is not None:
            os.close(fd)
    assert sorted(p.name for p in run_dir.iterdir()) == ["result.json"]


def test_a_locked_point_is_not_waited_for_when_asked_not_to(tmp_path):
    run_dir, lock, fd = owned_point(tmp_path)
    try:
        record = fsweep.run_point(["--memory=ram:2", "--init=random", "--until-t=100"], str(run_dir), str(lock), {"until_t": 100}, wait=False)
    finally:
        os.close(fd)
    assert record["status"] == "busy"
    assert not run_dir.exists()


#: Another driver holding a point's lock: a process of its own (a pool worker forked from the test would
#: inherit a lock taken in the test's process, and wait on itself), released when it is killed.
HOLD_LOCK = "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX); print(flush=True); time.sleep(600)"


def test_two_drivers_split_a_sweep_a_locked_point_goes_last(tmp_path):
    """A driver with one worker, whose first point another driver holds, trains the second point meanwhile,
    then waits for the first and skips it once its owner has finished it."""
    pytest.importorskip("fcntl")
    fixed = {"mu": 0.1, "reset": 1e-3, "memory": "ram:2", "init": "random", "until_t": 100, "convention": "paper"}
    spec = {"name": "two", "fixed": fixed, "grid": {"seed": [0, 1]}}
    sweep = fsweep.load_spec(write_spec(tmp_path / "two.json", spec))
    first, second = (tmp_path / "out" / "runs" / point.name for point in sweep.points)
    lock = tmp_path / "out" / "locks" / f"{sweep.points[0].name}.lock"
    lock.parent.mkdir(parents=True)
    other = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lock)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    with ThreadPoolExecutor(1) as pool:
        try:
            assert other.stdout.readline() == "\n"  # it holds the lock
            future = pool.submit(fsweep.run_sweep, sweep, tmp_path / "out", workers=1, quiet=True)
            deadline = time.monotonic() + 120
            while not (second / "result.json").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert (second / "result.json").exists(), "the second point did not run while the first was locked"
            time.sleep(1.0)  # the driver now waits on the first point's lock
            assert not first.exists() and not future.done()
            first.mkdir(parents=True)  # the other driver finishes the first point
            (first / "result.json").write_text('{"q": 0.5, "t": 100, "steps": 1, "seconds": 0}')
        finally:
            other.kill()  # releases the lock
            other.communicate(timeout=30)
        report = future.result(timeout=60)
    assert (report.trained, report.skipped, report.failed) == (1, 1, 0)
    assert sorted(p.name for p in first.iterdir()) == ["result.json"]


def test_a_finished_point_with_other_stop_conditions_is_continued(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "result.json").write_text('{"q": 0.5, "t": 100, "steps": 1, "seconds": 0}')
    (run_dir / "run.json").write_text(json.dumps({"arguments": {"until_t": 100.0, "max_seconds": None}}))
    assert worker.is_finished(run_dir, {"until_t": 100, "max_seconds": None, "max_steps": None})
    assert not worker.is_finished(run_dir, {"until_t": 1000, "max_seconds": None, "max_steps": None})
    assert not worker.is_finished(run_dir, {"until_t": 100, "max_seconds": 60, "max_steps": None})
    # Continued to a larger until_t and interrupted: the old result.json is stale.
    (run_dir / "run.json").write_text(json.dumps({"status": "running", "arguments": {"until_t": 1000.0, "max_seconds": None}}))
    assert not worker.is_finished(run_dir, {"until_t": 1000, "max_seconds": None, "max_steps": None})
    (run_dir / "run.json").write_text(json.dumps({"status": "done", "arguments": {"until_t": 1000.0, "max_seconds": None}}))
    assert worker.is_finished(run_dir, {"until_t": 1000, "max_seconds": None, "max_steps": None})


@pytest.mark.parametrize(
    ("recorded", "result", "asked", "finished"),
    [
        (None, {"steps": 40, "stop": "until_t"}, 50, True),  # a cap the run never reached: the same end
        (None, {"steps": 40, "stop": "until_t"}, 40, True),  # reached with until_t, which is checked first
        (None, {"steps": 40, "stop": "until_t"}, 39, False),  # the run went past it
        (30, {"steps": 30, "stop": "max_steps"}, 50, False),  # stopped by its cap: a larger one continues it
        (30, {"steps": 30, "stop": "max_steps"}, None, False),
        (60, {"steps": 40, "stop": "stalled"}, None, True),
    ],
)
def test_a_finished_point_ends_the_same_under_a_cap_it_never_reached(tmp_path, recorded, result, asked, finished):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "result.json").write_text(json.dumps({"q": 0.5, "t": 100, "seconds": 0, **result}))
    arguments = {"until_t": 100.0, "max_seconds": None, "max_steps": recorded}
    (run_dir / "run.json").write_text(json.dumps({"status": "done", "arguments": arguments, "result": {"q": 0.5, "t": 100, **result}}))
    assert worker.is_finished(run_dir, {"until_t": 100, "max_seconds": None, "max_steps": asked}) == finished
