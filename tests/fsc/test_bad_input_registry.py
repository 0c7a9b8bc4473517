"""Bad inputs for every command: exit status 2, one line naming the option or file, nothing written or deleted.

Each case runs ``fsc.cli.main(argv)`` in a fresh directory holding the fixture files below; a representative
subset runs again as a subprocess under a 1 GB address-space limit (all of them with ``-m slow``).
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

import fsc
from fsc import cli
from fsc.limits import MAX_NODES, check_memento_nodes, memento_nodes

HUGE = "9" * 23
BIG = "1" + "0" * 400


def _fixtures(root: Path) -> None:
    """Files the cases refer to (all relative to the working directory)."""
    policy = fsc.Policy.uniform(fsc.parse_memory("ram:2"))
    policy.save(root / "good.npz")
    good = (root / "good.npz").read_bytes()
    (root / "empty.npz").write_bytes(b"")
    (root / "truncated.npz").write_bytes(good[: len(good) // 2])
    (root / "notzip.npz").write_bytes(b"this is not a zip file")
    with zipfile.ZipFile(root / "nokey.npz", "w") as z:
        buffer = io.BytesIO()
        np.save(buffer, np.zeros(3))
        z.writestr("logits.npy", buffer.getvalue())
    (root / "empty.json").write_text("")
    (root / "list.json").write_text("[1, 2]")
    (root / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (root / "bigint.json").write_text('{"architecture": {"kind": "ram", "M": ' + BIG + '}, "logits": [], "init_logits": []}')
    (root / "nokey.json").write_text('{"architecture": {"kind": "ram", "M": 2}}')
    (root / "afile").write_text("x")
    (root / "keep").mkdir()
    (root / "keep" / "mine.txt").write_text("not a report")
    (root / "listrun").mkdir()
    (root / "listrun" / "run.json").write_text("[1]")
    (root / "badrun").mkdir()
    (root / "badrun" / "run.json").write_text("{not json")
    os.symlink(root / "nowhere" / "x", root / "dangling")
    grid = {"fixed": {"memory": "ram:2", "until_t": 1, "init": "random"}, "grid": {"seed": [0]}}
    (root / "escape.json").write_text(json.dumps({**grid, "out": "../../etc/fsc"}))
    (root / "absolute.json").write_text(json.dumps({**grid, "out": str(root.parent / "elsewhere")}))


BAD_POLICY_FILES = ["empty.npz", "truncated.npz", "notzip.npz", "nokey.npz", "empty.json", "list.json", "deep.json",
                    "bigint.json", "nokey.json", "missing.npz"]
TRAIN = ["train", "--memory", "ram:2", "--init", "random", "--until-t", "1"]

# (argv, a text the one line must contain)
CASES: list[tuple[list[str], str]] = []
for command in ("evaluate", "simulate", "draw"):
    extra = ["--out", "g.svg"] if command == "draw" else []
    for name in BAD_POLICY_FILES:
        CASES.append(([command, "--policy", name, *extra], name))
    for memory in ("memento:40", "memento:16", "memento:12", "memento:11", "ram:100000", "ram:3000", "chain:5000",
                   "column:5000", f"ram:{HUGE}", f"memento:{HUGE}", "ram:0", "memento:-1", "ram:x", "nothing:3", "ram"):
        CASES.append(([command, "--memory", memory, *extra], "memory" if ":" in memory else memory))
    for seed in (HUGE, "-1", "x", BIG):
        CASES.append(([command, "--seed", seed, *extra], "--seed"))
    for option in ("--mu", "--reset"):
        for value in ("nan", "inf", "x"):
            CASES.append(([command, option, value, *extra], option))
for walkers in ("1000000000000", "0", "-5", "x", BIG):
    CASES.append((["simulate", "--walkers", walkers], "--walkers"))
for steps in ("0", "x"):
    CASES.append((["simulate", "--steps", steps], "--steps"))
for name in BAD_POLICY_FILES:
    CASES.append(([*TRAIN[:4], name, *TRAIN[5:], "--out", "run"], name))
for memory in ("memento:40", "memento:16", "memento:12", "ram:100000", f"ram:{HUGE}", f"memento:{HUGE}"):
    CASES.append((["train", "--memory", memory, "--init", "random", "--until-t", "1", "--out", "run"], "memory"))
for option, values in {
    "--seed": (HUGE, "-1", BIG, "x"),
    "--threads": ("100000", "0", "x", BIG),
    "--max-steps": ("0", "-1", "x"),
    "--rows-per-decade": ("0", "x"),
    "--until-t": ("nan", "inf", "x"),
    "--checkpoint-seconds": ("nan", "x"),
}.items():
    for value in values:
        CASES.append(([*TRAIN, option, value, "--out", "run"], option))
for out in ("/sys/fsc-run", "afile", "afile/run", "dangling"):
    CASES.append(([*TRAIN, "--out", out], out.split("/")[0] if out != "/sys/fsc-run" else "/sys"))
for run in ("listrun", "badrun"):
    CASES.append(([*TRAIN, "--out", run], f"{run}/run.json"))
for out in ("keep", ".", "..", "afile"):
    CASES.append((["report", "--quiet", "--out", out], "--out"))
CASES.append((["report", "--quiet", "--full", "--out", "keep"], "--out"))  # refused before hours of sweeps
CASES.append((["report", "--quiet", "--workers", "2"], "--full"))
CASES.append((["report", "--quiet", "--sweeps", "elsewhere"], "--full"))
CASES.append((["report", "--quiet", "--full", "--workers", "0"], "--workers"))
for workers in ("1000000", "0", "x", BIG):
    CASES.append((["sweep", "spec.json", "--workers", workers], "--workers"))
for spec in ("escape.json", "absolute.json"):
    CASES.append((["sweep", spec], spec))
for spec in ("missing.json", "empty.json", "list.json", "deep.json"):
    CASES.append((["sweep", spec], spec))
for m, budget in (("22", "1"), ("30", "10"), ("100", "10"), ("0", "1"), ("x", "1"), (BIG, "1")):
    CASES.append((["necklace", "--m", m, "--time-budget", budget], "--m"))
for M in ("1000000000", "1e9", "0", "x", BIG, "100000000"):
    CASES.append((["closed-form", "ccp", "--M", M], "--M"))
CASES += [
    (["nosuchcommand"], "nosuchcommand"),
    ([], "COMMAND"),
    (["evaluate", "--nosuchoption"], "--nosuchoption"),
    (["closed-form", "ccp"], "--M"),
    (["train", "--memory", "ram:2"], "--init"),
    (["draw", "--out", "x.pdf"], "--format"),
]


def _listing(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.lstat().st_size for p in sorted(root.rglob("*"))}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    root = tmp_path / "cwd"
    root.mkdir()
    _fixtures(root)
    monkeypatch.chdir(root)
    return root


def test_registry_is_large_enough():
    assert len(CASES) >= 150, len(CASES)


@pytest.mark.parametrize(("argv", "names"), CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_bad_input_in_process(workdir, capsys, argv, names):
    before = _listing(workdir.parent)
    start = time.perf_counter()
    status = cli.main(argv)
    seconds = time.perf_counter() - start
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert status == 2, captured.err
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("fsc: error: ") and "Traceback" not in captured.err
    assert names in lines[0]
    assert captured.out == ""
    assert _listing(workdir.parent) == before  # nothing written, nothing deleted
    assert seconds < 5.0


SUBSET = [c for i, c in enumerate(CASES) if i % 12 == 0] + [c for c in CASES if c[0][:2] in (["report", "--quiet"],)]


def _run_subprocess(workdir: Path, argv: list[str]) -> subprocess.CompletedProcess:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    return subprocess.run([sys.executable, "-m", "fsc.cli", *argv], cwd=workdir, capture_output=True, text=True,
                          timeout=60, preexec_fn=limit)


def _check_subprocess(workdir: Path, argv, names) -> None:
    before = _listing(workdir.parent)
    start = time.perf_counter()
    done = _run_subprocess(workdir, argv)
    seconds = time.perf_counter() - start
    lines = done.stderr.splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and names in lines[0] and "Traceback" not in done.stderr, done.stderr
    assert _listing(workdir.parent) == before
    assert seconds < 10.0  # interpreter and torch start-up included


@pytest.mark.parametrize(("argv", "names"), SUBSET, ids=[" ".join(a)[:60] for a, _ in SUBSET])
def test_bad_input_subprocess(workdir, argv, names):
    _check_subprocess(workdir, argv, names)


@pytest.mark.slow
@pytest.mark.parametrize(("argv", "names"), CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_bad_input_subprocess_all(workdir, argv, names):
    _check_subprocess(workdir, argv, names)


# The API.


def test_memento_node_count_matches_a_direct_sum():
    for m in range(0, 12):
        assert memento_nodes(m, 4) == sum(4**k for k in range(m + 1))
    assert memento_nodes(40, 4) == (4**41 - 1) // 3


@pytest.mark.parametrize("m", [11, 12, 16, 40, 10**20])
def test_memento_too_large_refused_at_construction(m):
    with pytest.raises(ValueError, match=f"memento:{m} would have .* over the limit of {MAX_NODES:,}"):
        fsc.Memento(m)


def test_memento_at_the_limit_constructs():
    fsc.Memento(10)
    check_memento_nodes(10, 2, 2)


@pytest.mark.parametrize("name", BAD_POLICY_FILES)
def test_policy_load_raises_value_error_naming_the_file(workdir, name):
    with pytest.raises(ValueError, match=name.replace(".", r"\.")):
        fsc.Policy.load(workdir / name)


@pytest.mark.parametrize("max_steps", [0, -1, 1.5, True])
def test_run_training_refuses_bad_max_steps(tmp_path, max_steps):
    from fsc.train import run_training

    with pytest.raises(ValueError, match="max_steps"):
        run_training(memory="ram:2", init="random", until_t=1.0, max_steps=max_steps, out=tmp_path / "run", quiet=True)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("seed", [-1, 2**63, 10**30])
def test_run_training_refuses_bad_seed(tmp_path, seed):
    from fsc.train import run_training

    with pytest.raises(ValueError, match="seed"):
        run_training(memory="ram:2", init="random", seed=seed, until_t=1.0, out=tmp_path / "run", quiet=True)
    assert not (tmp_path / "run").exists()


# Ownership and the report directory.


def test_a_held_run_directory_is_refused(tmp_path):
    from fsc.io.rundir import RunLock
    from fsc.train import run_training

    out = tmp_path / "run"
    with RunLock(out), pytest.raises(ValueError, match="in use by another fsc train"):
        run_training(memory="ram:2", init="random", until_t=0.01, out=out, quiet=True)
    assert list(out.iterdir()) == []
    result = run_training(memory="ram:2", init="random", until_t=0.01, out=out, quiet=True)  # free again
    assert (out / "result.json").exists() and result.steps >= 1


def test_a_run_directory_with_other_arguments_is_refused(tmp_path):
    from fsc.train import run_training

    out = tmp_path / "run"
    run_training(memory="ram:2", init="random", seed=1, until_t=0.01, out=out, quiet=True)
    files = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(ValueError, match="other arguments"):
        run_training(memory="ram:2", init="random", seed=2, until_t=0.01, out=out, quiet=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files


def test_report_target_rules(tmp_path, monkeypatch):
    from fsc.report import REPORT_MARKER, check_report_target

    monkeypatch.chdir(tmp_path)
    check_report_target(tmp_path / "new")  # missing: fine
    (tmp_path / "empty").mkdir()
    check_report_target(tmp_path / "empty")  # empty: fine
    (tmp_path / "ours").mkdir()
    (tmp_path / "ours" / REPORT_MARKER).write_text("")
    (tmp_path / "ours" / "index.html").write_text("old")
    check_report_target(tmp_path / "ours")  # a previous report: fine
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "keep").write_text("x")
    for bad in (tmp_path / "theirs", Path("."), Path(".."), tmp_path):
        with pytest.raises(ValueError, match="--out"):
            check_report_target(bad)
    assert (tmp_path / "theirs" / "keep").read_text() == "x"


def test_sweep_spec_loading_errors_name_the_file(workdir):
    assert json.loads((workdir / "list.json").read_text()) == [1, 2]  # the fixture is what the case says


# Checkpoints: consistent when written, validated when read, a corrupt one restarts the run.

RUN = dict(memory="ram:2", init="random", seed=3, until_t=50.0, quiet=True, checkpoint_seconds=0.0)
DETERMINISTIC = ("t", "step", "q", "gain", "dt", "grad_norm", "evaluations")


def _final(out: Path):
    from fsc.train import load_checkpoint

    state, columns, _ = load_checkpoint(out)
    return state.point.logits.numpy().copy(), {k: columns[k] for k in DETERMINISTIC}


def _same(a, b) -> bool:
    return np.array_equal(a[0], b[0]) and all(np.array_equal(a[1][k], b[1][k]) for k in DETERMINISTIC)


def test_snapshot_saves_whole_rows_only():
    from fsc.io.trajectory import COLUMNS, Trajectory

    trajectory = Trajectory()
    trajectory.append(dict.fromkeys([*COLUMNS, "q"], 1))
    first = next(iter(trajectory.columns.values()))
    first.append(2)  # as if interrupted after the first column of the next row
    assert {len(c) for c in trajectory.arrays().values()} == {1}


def _damage(path: Path, damage: str) -> None:
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "garbage":
        path.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    else:
        with np.load(path, allow_pickle=False) as z:
            arrays = dict(z)
        arrays["trajectory_q"] = np.append(arrays["trajectory_q"], 0.5)
        np.savez(path, **arrays)


@pytest.mark.parametrize("damage", ["truncate", "empty", "garbage", "uneven"])
def test_corrupt_checkpoint_falls_back_to_the_previous_one_and_ends_identical(tmp_path, capfd, damage):
    from fsc.train import run_training

    run_training(**RUN, out=tmp_path / "whole")
    reference = _final(tmp_path / "whole")
    out = tmp_path / "cut"
    run_training(**RUN, max_steps=3, out=out)
    previous_step = int(np.load(out / "checkpoint.previous.npz")["step"])
    assert previous_step < int(np.load(out / "checkpoint.npz")["step"])
    _damage(out / "checkpoint.npz", damage)
    capfd.readouterr()
    run_training(**RUN, out=out)
    err = capfd.readouterr().err.splitlines()
    assert len(err) == 1 and "checkpoint.npz" in err[0] and f"resuming from the previous checkpoint (step {previous_step})" in err[0]
    assert _same(_final(out), reference)


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_both_checkpoints_corrupt_restart_to_the_identical_result(tmp_path, capfd, damage):
    from fsc.train import run_training

    run_training(**RUN, out=tmp_path / "whole")
    reference = _final(tmp_path / "whole")
    out = tmp_path / "cut"
    run_training(**RUN, max_steps=3, out=out)
    _damage(out / "checkpoint.npz", damage)
    _damage(out / "checkpoint.previous.npz", damage)
    capfd.readouterr()
    run_training(**RUN, out=out)
    err = capfd.readouterr().err.splitlines()
    assert len(err) == 1 and "checkpoint.npz" in err[0] and "checkpoint.previous.npz" in err[0] and "restarting" in err[0]
    assert _same(_final(out), reference)


def test_a_kill_between_the_two_renames_resumes_from_the_previous_checkpoint(tmp_path, capfd):
    """Only checkpoint.previous.npz is left (the latest was being renamed into place): the run resumes from it."""
    from fsc.train import run_training

    run_training(**RUN, out=tmp_path / "whole")
    out = tmp_path / "cut"
    run_training(**RUN, max_steps=3, out=out)
    (out / "checkpoint.npz").unlink()
    capfd.readouterr()
    run_training(**RUN, out=out)
    assert capfd.readouterr().err == ""
    assert _same(_final(out), _final(tmp_path / "whole"))


def test_resume_after_max_steps_is_bit_identical(tmp_path):
    from fsc.train import run_training

    run_training(**RUN, out=tmp_path / "whole")
    for k in (1, 2, 5):
        run_training(**RUN, max_steps=k, out=tmp_path / f"cut{k}")
        run_training(**RUN, out=tmp_path / f"cut{k}")
        assert _same(_final(tmp_path / f"cut{k}"), _final(tmp_path / "whole"))


# Kills at random moments: every run resumes to the bit-identical result.


def _sigint_in_process(tmp_path: Path, kills: int) -> tuple[int, int]:
    import random
    import signal
    import threading

    from fsc.train import run_training

    run_training(**RUN, out=tmp_path / "whole")
    reference = _final(tmp_path / "whole")
    rng = random.Random(16)
    identical = 0
    for i in range(kills):
        out = tmp_path / f"int{i}"
        timer = threading.Timer(rng.uniform(0.0, 0.25), lambda: os.kill(os.getpid(), signal.SIGINT))
        try:  # a short delay can fire before start() returns
            timer.start()
            run_training(**RUN, out=out)
        except KeyboardInterrupt:
            pass
        try:  # a signal the timer sends, even late on a loaded machine, arrives here, not in the next run
            timer.cancel()
            timer.join()
            time.sleep(0.01)
        except KeyboardInterrupt:
            pass
        run_training(**RUN, out=out)
        identical += _same(_final(out), reference)
    return kills, identical


def _sigkill_cli(tmp_path: Path, kills: int) -> tuple[int, int]:
    import random

    argv = ["--memory", "ram:2", "--init", "random", "--seed", "3", "--until-t", "50", "--quiet",
            "--checkpoint-seconds", "0"]
    whole = tmp_path / "whole"
    subprocess.run([sys.executable, "-m", "fsc.cli", "train", *argv, "--out", str(whole)], check=True, capture_output=True)
    reference = _final(whole)
    rng = random.Random(61)
    identical = 0
    for i in range(kills):
        out = tmp_path / f"kill{i}"
        process = subprocess.Popen([sys.executable, "-m", "fsc.cli", "train", *argv, "--out", str(out)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5, 3.0))
        process.kill()
        process.wait()
        subprocess.run([sys.executable, "-m", "fsc.cli", "train", *argv, "--out", str(out)], check=True, capture_output=True)
        identical += _same(_final(out), reference)
    return kills, identical


def test_sigint_in_process_resumes_bit_identical(tmp_path):
    kills, identical = _sigint_in_process(tmp_path, 8)
    assert identical == kills


def test_sigkill_cli_resumes_bit_identical(tmp_path):
    kills, identical = _sigkill_cli(tmp_path, 3)
    assert identical == kills


@pytest.mark.slow
def test_many_kills_resume_bit_identical(tmp_path):
    a = _sigint_in_process(tmp_path / "a", 300)
    b = _sigkill_cli(tmp_path / "b", 100)
    print(f"SIGINT in-process: {a[1]}/{a[0]} bit-identical; SIGKILL CLI: {b[1]}/{b[0]} bit-identical")
    assert a[0] == a[1] and b[0] == b[1]
