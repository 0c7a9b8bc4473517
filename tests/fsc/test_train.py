"""Training runs on disk (fsc.train): files, checkpoints, resume after SIGKILL, bad input."""

import array
import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import attrs
import numpy as np
import pytest
import torch

import fsc
import policies
import tasks
from fsc.cli import main
from fsc.train import csv_header, load_checkpoint, read_trajectory, run_training
from fsc.train.loop import converged, first_converged

ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("one_thread")


def trajectory_without_seconds(out: Path) -> dict[str, list]:
    """The run's trajectory.npz, every column but the wall times, as lists (compared to the bit)."""
    return {name: column.tolist() for name, column in read_trajectory(out / "trajectory.npz").items() if name != "seconds"}


def same_policy_file(a: Path, b: Path) -> bool:
    p, q = fsc.Policy.load(a), fsc.Policy.load(b)
    return torch.equal(p.logits, q.logits) and torch.equal(p.init_logits, q.init_logits)


def small_run(out, **kwargs):
    arguments = dict(mu=0.2, memory="ram:2", init="random", seed=0, reset=0.02, until_t=200.0, out=out, quiet=True, policy=fsc.Policy.random(fsc.RAM(2), 3))
    return run_training(**(arguments | kwargs))


def test_run_directory(tmp_path):
    out = tmp_path / "run"
    result = small_run(out)
    names = {"run.json", "result.json", "trajectory.npz", "policy.npz", "initial_policy.npz", "checkpoint.npz", "checkpoint.previous.npz", "checkpoint.json"}
    assert {p.name for p in out.iterdir()} == names
    assert json.loads((out / "result.json").read_text()) == result.summary()
    assert result.stop == "until_t" and result.t >= 200.0 and result.steps > 10
    assert list(result.summary())[:4] == ["q", "t", "steps", "seconds"]
    # trajectory.npz: one row per accepted step, every column of the checkpoint's.
    columns = read_trajectory(out)
    assert list(columns) == ["t", "step", "q", "gain", "dt", "seconds", "grad_norm", "evaluations"]
    assert columns["step"].dtype == columns["evaluations"].dtype == np.int64 and columns["t"].dtype == np.float64
    assert list(columns["step"]) == list(range(result.steps + 1))
    assert columns["t"][-1] == result.t and columns["q"][-1] == result.q
    assert columns["t"][0] == 0 and columns["dt"][0] == 0
    assert np.all(np.diff(columns["seconds"]) >= 0)
    np.testing.assert_array_equal(np.cumsum(columns["dt"]), columns["t"])  # t is the sum of the accepted dt
    # run.json: every argument and the versions.
    doc = json.loads((out / "run.json").read_text())
    assert doc["status"] == "done" and doc["stop"] == "until_t"
    for key in ("mu", "memory", "init", "seed", "reset", "until_t", "max_dgrad", "max_seconds", "convention", "optimizer", "out"):
        assert key in doc["arguments"]
    assert doc["arguments"]["memory"] == "ram:2" and doc["arguments"]["reset"] == 0.02
    assert doc["versions"]["torch"] == torch.__version__ and doc["versions"]["numpy"] == np.__version__
    assert doc["versions"]["fsc"] == fsc.__version__
    checkout = Path(fsc.__file__).resolve().parents[1]
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    if (checkout / ".git").exists() and head:  # run from a checkout: the commit, "+" when files were edited since
        assert doc["versions"]["commit"] in (head, head + "+")
    else:
        assert doc["versions"]["commit"] is None
    assert doc["result"]["q"] == result.q
    # The final policy is the state of the final checkpoint; nothing is pickled.
    state, columns, meta = load_checkpoint(out)
    final = fsc.Policy.load(out / "policy.npz")
    assert torch.equal(final.logits, state.point.logits) and state.step == result.steps
    assert list(columns["step"]) == list(range(result.steps + 1)) and columns["q"][-1] == result.q
    assert all(np.array_equal(column, read_trajectory(out)[name]) for name, column in columns.items())
    for name in ("policy.npz", "initial_policy.npz", "checkpoint.npz", "trajectory.npz"):
        with np.load(out / name, allow_pickle=False) as data:
            assert all(data[key].dtype != object for key in data.files)
    assert meta["arguments"] == doc["arguments"]


def test_first_converged_is_converged_row_by_row():
    """first_converged over rows appended after earlier ones: the first row at which converged() holds on the
    rows up to it, the reference row t / 10 back found among the earlier rows or the new ones."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        t = np.cumsum(rng.exponential(rng.choice([0.5, 5.0, 50.0]), n))
        gain = np.cumsum(rng.choice([0.0, 1e-12, 1e-3], n, p=[0.5, 0.3, 0.2])) + 1.0
        cut = int(rng.integers(0, n))
        expected = next((j for j in range(cut, n) if converged(t[: j + 1].tolist(), gain[: j + 1].tolist())), None)
        old_t, old_gain = array.array("d", t[:cut]), array.array("d", gain[:cut])
        found = first_converged(old_t, old_gain, t[cut:].tolist(), gain[cut:].tolist())
        assert found == (None if expected is None else expected - cut)
        old_t.append(1e300)  # the columns are not held: the loop appends to them after
    assert first_converged([], [], [1.0, 20.0], [1.0, 1.0]) == 1 and first_converged([], [], [20.0], [1.0]) is None


@pytest.mark.parametrize(("mu", "reset", "steps"), [(0.5, 0.05, 1232), (0.3, 0.01, 603)])
def test_a_run_without_until_t_stops_as_converged_on_the_step_of_the_every_step_rule(tmp_path, mu, reset, steps):
    """Without until_t, run_training takes its steps in compiled runs and stops as converged at the first step where
    the rows of every step so far have converged: found here from fsc.optim.optimize's record of every step, within
    the first compiled run of 1000 steps (603) and after it (1232), the rows to the bit."""
    policy = policies.initial_policy("random", fsc.Memento(1), seed=1)
    t, gain, rows = [], [], []
    for record in fsc.optimize(tasks.TwoHypothesis(mu), policy, reset=reset, max_steps=10_000):
        t.append(record.t)
        gain.append(record.gain)
        rows.append((record.t, record.step, record.q, record.gain, record.dt, record.grad_norm, record.evaluations))
        if converged(t, gain):
            break
    assert record.step == steps  # the cases meant: one stop in the first compiled run, one after it
    result = run_training(out=tmp_path / "run", mu=mu, memory="memento:1", init="random", seed=1, reset=reset, quiet=True, policy=policy)
    assert result.stop == "converged" and result.steps == steps
    columns = read_trajectory(tmp_path / "run")
    names = ("t", "step", "q", "gain", "dt", "grad_norm", "evaluations")
    assert list(zip(*(columns[name].tolist() for name in names), strict=True)) == rows


@pytest.mark.parametrize(("optimizer", "extra"), [("flow", {}), ("adam", {"lr": 0.5}), ("ascent", {"lr": 2.0})])
def test_stopped_and_continued_run_equals_uninterrupted(tmp_path, optimizer, extra):
    whole = small_run(tmp_path / "whole", optimizer=optimizer, **extra)
    first = small_run(tmp_path / "parts", optimizer=optimizer, max_steps=9, **extra)
    assert first.stop == "max_steps" and first.steps == 9
    rest = small_run(tmp_path / "parts", optimizer=optimizer, **extra)  # the stop conditions may change
    assert rest.resumed and (rest.q, rest.t, rest.steps) == (whole.q, whole.t, whole.steps)
    assert trajectory_without_seconds(tmp_path / "parts") == trajectory_without_seconds(tmp_path / "whole")
    assert same_policy_file(tmp_path / "parts" / "policy.npz", tmp_path / "whole" / "policy.npz")


def test_rows_per_decade_keeps_the_first_row_of_each_interval_and_resumes_alike(tmp_path):
    """A thinned trajectory is the full one filtered by its rule, plus the final step; stopped and continued,
    it is the same (the first session's final row goes when the run goes on past it)."""
    import math

    full = small_run(tmp_path / "full", until_t=2e4)
    rows = read_trajectory(tmp_path / "full")
    expected, last = [], -math.inf
    for i, t in enumerate(rows["t"]):  # the rule written out: step 0, then the first row in each [10^(k/3), 10^((k+1)/3))
        bucket = math.floor(3 * math.log10(t)) if t > 0 else -math.inf
        if i == 0 or bucket > last:
            expected.append(i)
            last = max(last, bucket)
    assert expected[-1] != len(rows["t"]) - 1  # the rule alone would end before the final step ...
    expected.append(len(rows["t"]) - 1)  # ... which is kept as the last row
    thin = small_run(tmp_path / "thin", until_t=2e4, rows_per_decade=3)
    kept = read_trajectory(tmp_path / "thin")
    assert 5 < len(expected) < 30 and len(expected) < len(rows["t"]) / 10
    for name, column in kept.items():
        if name != "seconds":
            assert column.tolist() == rows[name][expected].tolist(), name
    assert (thin.q, thin.t, thin.steps) == (full.q, full.t, full.steps) == (kept["q"][-1], kept["t"][-1], kept["step"][-1])
    cut = next(s for s in range(30, 200) if s not in rows["step"][expected])  # a row only as the first session's end
    first = small_run(tmp_path / "parts", until_t=2e4, rows_per_decade=3, max_steps=cut)
    ended = read_trajectory(tmp_path / "parts")
    assert first.stop == "max_steps" and (ended["step"][-1], ended["t"][-1], ended["q"][-1]) == (cut, first.t, first.q)
    rest = small_run(tmp_path / "parts", until_t=2e4, rows_per_decade=3)
    assert rest.resumed and (rest.q, rest.t, rest.steps) == (full.q, full.t, full.steps)
    assert trajectory_without_seconds(tmp_path / "parts") == trajectory_without_seconds(tmp_path / "thin")
    with pytest.raises(ValueError, match="other arguments"):  # a directory thinned otherwise is another run
        small_run(tmp_path / "thin", until_t=2e4, rows_per_decade=4)


def test_csv_on_request_and_by_export(tmp_path, capsys):
    """--csv writes trajectory.csv beside trajectory.npz, with the same numbers (seconds to the microsecond); a
    session without it removes the CSV (it would fall behind); fsc export writes it again, byte for byte;
    a run directory holding only a CSV (as runs made before trajectory.npz) is read from it."""
    out = tmp_path / "run"
    result = small_run(out, csv=True)
    text = (out / "trajectory.csv").read_text()
    assert text.splitlines()[0] == csv_header(["q"]) == "t,step,q,gain,dt,seconds" and len(text.splitlines()) == result.steps + 2
    binary, written = read_trajectory(out / "trajectory.npz"), read_trajectory(out / "trajectory.csv")
    assert list(written) == ["t", "step", "q", "gain", "dt", "seconds"]
    for name, column in written.items():
        if name == "seconds":
            np.testing.assert_allclose(column, binary[name], rtol=0, atol=5e-7)
        else:
            assert column.tolist() == binary[name].tolist(), name
    small_run(out)  # started again without --csv: the numbers stay, the CSV goes
    assert not (out / "trajectory.csv").exists() and trajectory_without_seconds(out) == {k: v.tolist() for k, v in binary.items() if k != "seconds"}
    assert main(["export", str(tmp_path)]) == 0  # a directory: every trajectory.npz under it
    assert (out / "trajectory.csv").read_text() == text and "wrote 1 file" in capsys.readouterr().out
    (out / "trajectory.npz").unlink()
    assert read_trajectory(out)["q"].tolist() == written["q"].tolist()
    assert main(["export", str(out / "result.json")]) == 2 and "is not a trajectory.npz" in capsys.readouterr().err
    assert main(["export", str(out)]) == 2 and "holds no trajectory.npz" in capsys.readouterr().err


def test_a_run_directory_made_before_trajectory_npz_continues_into_it(tmp_path):
    """A run directory holding trajectory.csv alone (as runs made before trajectory.npz) reads from it, and
    continued it writes trajectory.npz at once, drops the CSV and ends as an uninterrupted run."""
    old = tmp_path / "old"
    small_run(old, until_t=100.0, csv=True)
    (old / "trajectory.npz").unlink()
    rows = read_trajectory(old)
    assert list(rows) == ["t", "step", "q", "gain", "dt", "seconds"]
    rest = small_run(old)
    whole = small_run(tmp_path / "whole")
    assert rest.resumed and (rest.q, rest.steps) == (whole.q, whole.steps) and not (old / "trajectory.csv").exists()
    assert trajectory_without_seconds(old) == trajectory_without_seconds(tmp_path / "whole")
    assert read_trajectory(old)["q"][: len(rows["q"])].tolist() == rows["q"].tolist()


def test_finished_run_started_again_changes_nothing(tmp_path):
    out = tmp_path / "run"
    first = small_run(out)
    before = read_trajectory(out)
    again = small_run(out)
    assert again.resumed and again.summary() == first.summary()
    after = read_trajectory(out)
    assert list(after) == list(before) and all(np.array_equal(after[k], before[k]) for k in before)  # seconds too


def test_a_directory_holding_another_run_is_refused_before_writing(tmp_path):
    out = tmp_path / "run"
    small_run(out)
    stamps = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    with pytest.raises(ValueError, match=r"holds a run with other arguments \(reset: 0.02 there, 0.05 now\)"):
        small_run(out, reset=0.05)
    with pytest.raises(ValueError, match=r"started from another initial policy"):
        small_run(out, policy=fsc.Policy.random(fsc.RAM(2), 4))
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == stamps


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path, capsys):
    small_run(tmp_path / "run", quiet=False)
    assert capsys.readouterr() == ("", "")


def test_threads_are_restored(tmp_path):
    threads = torch.get_num_threads()
    small_run(tmp_path / "run", threads=1)
    assert torch.get_num_threads() == threads


def test_threads_limit_lapack_during_the_run(tmp_path, monkeypatch):
    """OpenBLAS (LAPACK's threads) runs one thread per run when ``threads = 1``, and gets its own back after."""
    from threadpoolctl import threadpool_info, threadpool_limits

    import fsc.train.run as run

    seen = []
    inner = run.train_loop

    def spy(*args, **kwargs):
        seen.append([pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"])
        return inner(*args, **kwargs)

    monkeypatch.setattr(run, "train_loop", spy)
    with threadpool_limits(limits=2, user_api="blas"):  # as on a machine of 2 or more cores
        before = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
        small_run(tmp_path / "run", threads=1)
        after = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert before and set(before) == {2} and seen == [[1] * len(before)] and after == before


BAD = [
    (dict(mu=1.5), ValueError, r"mu must be in \(0, 1\), got 1.5"),
    (dict(memory="tape:3"), ValueError, r"memory must be ram:M, .*'tape:3'"),
    (dict(memory=8), TypeError, r"memory must be a string like 'ram:8' .*8"),
    (dict(init=""), TypeError, r"init must be an initialisation name or a policy file, got ''"),
    (dict(seed="1"), TypeError, r"seed must be an int, got '1'"),
    (dict(reset=0.0), ValueError, r"reset must be in \(0, 1\], got 0.0"),
    (dict(until_t=-5.0), ValueError, r"until_t must be a finite number >= 0, got -5.0"),
    (dict(until_t="1e5"), TypeError, r"until_t must be a number, got '1e5'"),
    (dict(max_dgrad=-1e-4), ValueError, r"max_dgrad must be in \(0, inf\), got -0.0001"),
    (dict(max_seconds=0.0), ValueError, r"max_seconds must be in \(0, inf\), got 0.0"),
    (dict(convention="matlab"), ValueError, r"convention must be one of .*'matlab'"),
    (dict(optimizer="sgd"), ValueError, r"optimizer must be one of .*'sgd'"),
    (dict(lr=0.1), ValueError, r"takes no lr, got lr=0.1"),
    (dict(optimizer="adam", max_dgrad=1e-3), ValueError, r"max_dgrad belongs to the flow optimizer"),
    (dict(engine="gpu"), ValueError, r"engine must be .*'gpu'"),
    (dict(threads=0), ValueError, r"threads must be an int in \[1, 256\] or None, got 0"),
    (dict(policy=fsc.Policy.random(fsc.RAM(3), 0)), ValueError, r"the initial policy is for RAM\(M=3.*not for memory RAM\(M=2"),
    (dict(policy="random"), TypeError, r"policy must be a fsc.Policy, got str"),
]


@pytest.mark.parametrize(("kwargs", "error", "pattern"), BAD, ids=[str(b[0]) for b in BAD])
def test_bad_input_writes_nothing(tmp_path, kwargs, error, pattern):
    out = tmp_path / "run"
    with pytest.raises(error, match=pattern):
        small_run(out, **kwargs)
    assert not out.exists()


def test_out_must_be_a_directory(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"is not a directory"):
        small_run(tmp_path / "file")


def test_command_line_entry_point(tmp_path, capsys):
    policy_file = tmp_path / "start.npz"
    fsc.Policy.random(fsc.RAM(2), 3).save(policy_file)
    out = tmp_path / "run"
    args = ["train", "--memory", "ram:2", "--init", str(policy_file), "--reset", "0.02", "--until-t", "50", "--out", str(out), "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert list(summary)[:4] == ["q", "t", "steps", "seconds"] and summary["t"] >= 50
    assert main(["train", "--memory", "ram:2", "--init", str(policy_file), "--reset", "2", "--until-t", "50", "--out", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "reset must be in (0, 1], got 2.0" in err
    assert not (tmp_path / "bad").exists()


# ---------------------------------------------------------------------------
# Kill and resume: SIGKILL a training process mid-run, start it again with the same command.


def _command(policy_file: Path, out: Path, memory: str = "memento:3", engine: str = "auto", max_steps: int = 150) -> list[str]:
    return [
        sys.executable, "-m", "fsc", "train", "--memory", memory, "--init", str(policy_file), "--mu", "0.1",
        "--reset", "1e-3", "--until-t", "1e9", "--max-steps", str(max_steps), "--convention", "paper", "--engine", engine,
        "--checkpoint-seconds", "0", "--threads", "1", "--out", str(out), "--json", "--quiet",
    ]  # fmt: skip


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.mark.parametrize(
    ("memory", "engine", "max_steps", "kill_after"),
    [
        ("memento:3", "sparse", 150, 20),  # a record, hence a checkpoint, after each step
        ("ram:64", "choices", 2500, 1000),  # every row kept by compiled runs of MOST_STEPS steps (about 1 s each)
    ],
)
def test_killed_run_resumes_to_the_same_result(tmp_path, memory, engine, max_steps, kill_after):
    policy_file = tmp_path / "start.npz"
    fsc.Policy.random(fsc.parse_memory(memory), 12).save(policy_file)
    env = _environment()
    command = lambda out: _command(policy_file, out, memory, engine, max_steps)  # noqa: E731
    whole = subprocess.run(command(tmp_path / "whole"), env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert whole.returncode == 0, whole.stderr
    expected = json.loads(whole.stdout)

    out = tmp_path / "killed"
    process = subprocess.Popen(command(out), env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    killed_at = None
    while time.monotonic() < deadline and process.poll() is None:
        try:
            step = json.loads((out / "checkpoint.json").read_text())["step"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            step = -1
        if step >= kill_after:
            process.send_signal(signal.SIGKILL)
            killed_at = step
            break
        time.sleep(0.005)
    process.wait(timeout=60)
    process.stdout.close()
    process.stderr.close()
    assert killed_at is not None and process.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    doc = json.loads((out / "run.json").read_text())
    assert doc["status"] == "running" and not (out / "result.json").exists()
    state, _, _ = load_checkpoint(out)
    assert kill_after <= state.step < expected["steps"]

    again = subprocess.run(command(out), env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    result = json.loads(again.stdout)
    assert (result["q"], result["t"], result["steps"]) == (expected["q"], expected["t"], expected["steps"])
    assert trajectory_without_seconds(out) == trajectory_without_seconds(tmp_path / "whole")
    assert same_policy_file(out / "policy.npz", tmp_path / "whole" / "policy.npz")
    assert json.loads((out / "run.json").read_text())["status"] == "done"


def test_interrupted_run_checkpoints_and_resumes(tmp_path):
    """SIGINT (what a sweep sends to its trainers): the run checkpoints, exits with status 130, resumes exactly."""
    policy_file = tmp_path / "start.npz"
    fsc.Policy.random(fsc.Memento(3), 12).save(policy_file)
    out = tmp_path / "interrupted"
    command = _command(policy_file, out)
    command[command.index("--checkpoint-seconds") + 1] = "1000"  # only the interrupt writes a mid-run checkpoint
    command[command.index("--max-steps") + 1] = "1000000"
    # A shell that starts pytest in the background (`cmd &`) makes it and its children ignore SIGINT, and
    # Python keeps an ignored SIGINT ignored: the trainer starts with the default disposition, as from a terminal.
    default_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    process = subprocess.Popen(
        command, env=_environment(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None and not (out / "checkpoint.json").exists():
        time.sleep(0.01)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, (stdout, stderr)
    assert "interrupted" in stderr and not (out / "result.json").exists()
    state, _, _ = load_checkpoint(out)
    assert state.step > 0
    # Continue a little further (the stop conditions may change), and compare with a run straight to there.
    command[command.index("--max-steps") + 1] = str(state.step + 30)
    assert main(command[3:]) == 0
    reference = run_training(
        mu=0.1,
        memory="memento:3",
        init=str(policy_file),
        reset=1e-3,
        until_t=1e9,
        max_steps=state.step + 30,
        convention="paper",
        out=tmp_path / "whole",
        quiet=True,
    )
    assert json.loads((out / "result.json").read_text())["q"] == reference.q
    assert trajectory_without_seconds(out) == trajectory_without_seconds(tmp_path / "whole")


@pytest.mark.parametrize("columns_done", [0, 3, 7])
def test_interrupt_in_the_middle_of_a_row_leaves_a_resumable_run(tmp_path, monkeypatch, columns_done):
    """Ctrl-C while a trajectory row is half appended: the checkpoint keeps whole rows, and the run resumes to the bit.
    (On the sparse engine each step is a record, whose row is appended alone.)"""
    from fsc.io import trajectory as train

    small_run = functools.partial(globals()["small_run"], engine="sparse")
    whole = small_run(tmp_path / "whole")
    cut = whole.steps // 2
    original = train.Trajectory.append

    def interrupted(self, row):
        if row["step"] == cut:
            for name in list(self.columns)[:columns_done]:
                self.columns[name].append(row[name])
            raise KeyboardInterrupt
        original(self, row)

    monkeypatch.setattr(train.Trajectory, "append", interrupted)
    with pytest.raises(KeyboardInterrupt):
        small_run(tmp_path / "cut")
    monkeypatch.setattr(train.Trajectory, "append", original)
    state, columns, _ = load_checkpoint(tmp_path / "cut")
    assert {len(c) for c in columns.values()} == {cut} and state.step == cut  # rows 0 .. cut - 1, whole
    again = small_run(tmp_path / "cut")
    assert again.q == whole.q and again.steps == whole.steps
    assert trajectory_without_seconds(tmp_path / "cut") == trajectory_without_seconds(tmp_path / "whole")


@pytest.mark.parametrize("columns_done", [0, 3, 7])
def test_interrupt_in_the_middle_of_the_steps_of_a_compiled_run_leaves_a_resumable_run(tmp_path, monkeypatch, columns_done):
    """Ctrl-C while the rows of a compiled run's steps are appended, between two columns: none of them is kept,
    the checkpoint is that of the record before them, and the run resumes to the bit."""
    from fsc.io import trajectory as train

    whole = small_run(tmp_path / "whole", until_t=1e5)
    assert whole.steps > 1000  # two compiled runs: steps 1 to 1000, then the rest
    original = train.Trajectory.extend

    class Breaking(array.array):
        def frombytes(self, values):
            raise KeyboardInterrupt

    def interrupted(self, steps):
        if steps["step"][0] > 1:  # the second compiled run's steps
            name = list(self.columns)[columns_done]
            self.columns[name] = Breaking(self.columns[name].typecode, self.columns[name])
        original(self, steps)

    monkeypatch.setattr(train.Trajectory, "extend", interrupted)
    with pytest.raises(KeyboardInterrupt):
        small_run(tmp_path / "cut", until_t=1e5)
    monkeypatch.setattr(train.Trajectory, "extend", original)
    state, columns, _ = load_checkpoint(tmp_path / "cut")
    assert state.step == fsc.optim.MOST_STEPS and {len(c) for c in columns.values()} == {state.step + 1}  # rows 0 .. 1000
    again = small_run(tmp_path / "cut", until_t=1e5)
    assert again.q == whole.q and again.steps == whole.steps
    assert trajectory_without_seconds(tmp_path / "cut") == trajectory_without_seconds(tmp_path / "whole")


def test_a_ragged_checkpoint_is_refused_in_one_line(tmp_path):
    small_run(tmp_path / "run", until_t=20.0)
    path = tmp_path / "run" / "checkpoint.npz"
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["trajectory_q"] = np.append(arrays["trajectory_q"], 0.5)  # one column a row longer
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=r"checkpoint.npz' is inconsistent \(trajectory columns of lengths \[\d+, \d+\]\)"):
        load_checkpoint(path)


def test_a_run_past_a_lowered_max_steps_is_refused(tmp_path):
    """A run continues to a larger max_steps, ends again at the same one, but cannot be cut back to a smaller one."""
    first = small_run(tmp_path / "run", until_t=None, max_steps=40)
    assert (first.steps, first.stop) == (40, "max_steps")
    assert small_run(tmp_path / "run", until_t=None, max_steps=40).steps == 40
    with pytest.raises(ValueError, match=r"already at step 40, past max_steps 39: a run continues but is never cut back"):
        small_run(tmp_path / "run", until_t=None, max_steps=39)
    assert small_run(tmp_path / "run", until_t=None, max_steps=60).steps == 60


def test_max_steps_zero_is_refused_like_the_command_line(tmp_path):
    with pytest.raises(ValueError, match=r"max_steps must be an int in \[1, 9007199254740992\] or None, got 0"):
        small_run(tmp_path / "run", max_steps=0)
    assert not (tmp_path / "run").exists()


def test_a_run_directory_has_one_owner(tmp_path):
    """While one fsc train holds a run directory, another is refused in one line and writes nothing there."""
    import fcntl

    out = tmp_path / "run"
    out.mkdir()
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # the other owner holds the directory itself
    try:
        with pytest.raises(ValueError, match="is in use by another fsc train"):
            small_run(out)
        assert list(out.iterdir()) == []
    finally:
        os.close(fd)
    assert small_run(out).stop == "until_t"  # free again


def test_two_trainers_at_once_on_one_directory(tmp_path):
    """Two fsc train processes with different seeds on one --out: one runs, the other is refused; no mixed directory."""
    out = tmp_path / "run"
    command = [sys.executable, "-m", "fsc.cli", "train", "--memory", "ram:4", "--init", "random", "--until-t", "3e4", "--reset", "0.01"]
    command += ["--out", str(out), "--quiet"]
    processes = [subprocess.Popen([*command, "--seed", str(seed)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for seed in (1, 2)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in processes]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert "in use by another fsc train" in refused or "holds a run with other arguments" in refused or "changed while this run started" in refused
    run = json.loads((out / "run.json").read_text())
    winner = run["arguments"]["seed"]
    start = fsc.Policy.load(out / "initial_policy.npz")
    assert torch.equal(start.logits, fsc.Policy.random(fsc.RAM(4), winner).logits)


# ---------------------------------------------------------------------------
# The configuration, the result's policy and history, and the trainer's own entry point.


def test_the_configuration_has_one_checked_field_per_training_argument(tmp_path):
    from fsc.train import TrainingConfig
    from fsc.train.arguments import TRAINING

    assert [field.name for field in attrs.fields(TrainingConfig)] == [a.name for a in TRAINING]
    config = TrainingConfig(memory="ram:2", init="random", out=tmp_path / "run", until_t=200, max_dgrad=1e-3)
    assert config.until_t == 200.0 and isinstance(config.until_t, float) and config.hyperparameters() == {"max_dgrad": 1e-3}
    assert config.stop_conditions() == {"until_t": 200.0, "max_seconds": None, "max_steps": None}
    with pytest.raises(ValueError, match=r"seed must be an int in \[0, 9223372036854775807\], got -1"):
        TrainingConfig(memory="ram:2", init="random", out="x", seed=-1)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        config.seed = 3
    with pytest.raises(ValueError, match="not both"):
        run_training(config, seed=1)


def test_the_result_carries_the_final_policy_and_the_history(tmp_path):
    result = small_run(tmp_path / "run")
    saved = fsc.Policy.load(tmp_path / "run" / "policy.npz")
    assert result.policy.architecture == saved.architecture == fsc.RAM(2)
    assert torch.equal(result.policy.logits, saved.logits) and torch.equal(result.policy.init_probs(), saved.init_probs())
    on_disk = read_trajectory(tmp_path / "run")
    assert len(result.history["t"]) == result.steps + 1 == len(on_disk["t"])
    assert np.array_equal(result.history["q"], on_disk["q"]) and result.history["t"][-1] == result.t


def test_python_m_fsc_train_is_fsc_train(tmp_path):
    """The trainer a sweep runs (``python -m fsc.train``) gives what ``fsc train`` gives, errors included."""
    options = ["--memory", "ram:2", "--init", "random", "--mu", "0.2", "--reset", "0.02", "--until-t", "50", "--json", "--quiet"]
    done = subprocess.run([sys.executable, "-m", "fsc.train", *options, "--out", str(tmp_path / "a")], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parents[2])  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert main(["train", *options, "--out", str(tmp_path / "b")]) == 0
    a, b = (json.loads((tmp_path / name / "result.json").read_text()) for name in "ab")
    assert {k: v for k, v in a.items() if k not in ("seconds", "out")} == {k: v for k, v in b.items() if k not in ("seconds", "out")}
    bad = subprocess.run([sys.executable, "-m", "fsc.train", *options, "--out", str(tmp_path / "c"), "--seed", "x"], capture_output=True,
                         text=True, timeout=300, cwd=Path(__file__).resolve().parents[2])  # fmt: skip
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--seed" in bad.stderr and not (tmp_path / "c").exists()
