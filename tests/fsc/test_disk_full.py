"""A full disk: one line, a consistent state, and the next run on a good disk completes correctly.

Each test mounts a small tmpfs (root only; skipped with the reason elsewhere), runs a command that fills it,
then grows the same file system (``mount -o remount,size=``) and runs the command again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fsc.train import read_trajectory

FSC = [sys.executable, "-m", "fsc.cli"]


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of 48 kB at ``tmp_path / "disk"``; yields a function that grows it."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.fail("this test mounts a small tmpfs: run the tests as root (the set-up and CI do)")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(disk)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")

    def grow() -> None:
        subprocess.run(["mount", "-o", "remount,size=20m", str(disk)], check=True)

    try:
        yield disk, grow
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fsc(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*FSC, *argv], capture_output=True, text=True, cwd=cwd, timeout=300)


def one_error_line(process: subprocess.CompletedProcess) -> str:
    lines = [line for line in process.stderr.splitlines() if line.strip()]
    assert process.returncode == 1, process.stderr
    assert "Traceback" not in process.stderr and lines[-1].startswith("fsc: error: "), process.stderr
    assert "No space left on device" in lines[-1]
    return lines[-1]


TRAIN = ["train", "--memory", "ram:4", "--init", "random", "--seed", "2", "--reset", "0.01", "--until-t", "3e4",
         "--checkpoint-seconds", "0", "--quiet", "--json"]


def test_train_on_a_full_disk(small_disk, tmp_path):
    disk, grow = small_disk
    reference = fsc(*TRAIN, "--out", str(tmp_path / "reference"))
    assert reference.returncode == 0, reference.stderr
    line = one_error_line(fsc(*TRAIN, "--out", str(disk / "run")))
    assert str(disk / "run") in line  # names the file that could not be written
    assert not list(disk.glob("run/.*.tmp"))  # no half-written file left behind
    grow()
    again = fsc(*TRAIN, "--out", str(disk / "run"))
    assert again.returncode == 0, again.stderr
    for name in ("policy.npz",):
        with np.load(tmp_path / "reference" / name) as a, np.load(disk / "run" / name) as b:
            assert all(np.array_equal(a[k], b[k]) for k in a.files)
    ours, theirs = read_trajectory(disk / "run"), read_trajectory(tmp_path / "reference")
    assert list(ours) == list(theirs) and all(np.array_equal(ours[k], theirs[k]) for k in ours if k != "seconds")


def test_report_on_a_full_disk(small_disk):
    disk, grow = small_disk
    one_error_line(fsc("report", "--out", str(disk / "report"), "--quiet"))
    assert list(disk.iterdir()) == []  # the half-built report is gone
    grow()
    again = fsc("report", "--out", str(disk / "report"), "--quiet")
    assert again.returncode == 0, again.stderr
    assert (disk / "report" / "index.html").is_file() and (disk / "report" / ".fsc-report").is_file()


def test_sweep_on_a_full_disk(small_disk, tmp_path):
    disk, grow = small_disk
    spec = tmp_path / "tiny.json"
    grid = [{"memory": ["ram:2"], "init": ["random"], "seed": [0, 1, 2]}]
    spec.write_text(json.dumps({"name": "tiny", "fixed": {"until_t": 3000, "reset": 0.01, "checkpoint_seconds": 0}, "grid": grid}))
    one_error_line(fsc("sweep", str(spec), "--out", str(disk / "sweep"), "--workers", "1"))
    grow()
    again = fsc("sweep", str(spec), "--out", str(disk / "sweep"), "--workers", "1", "--json")
    assert again.returncode == 0, again.stderr
    done = json.loads(again.stdout)
    assert done["failed"] == 0 and done["trained"] + done["skipped"] == 3
    reference = fsc("sweep", str(spec), "--out", str(tmp_path / "reference"), "--workers", "1")
    assert reference.returncode == 0, reference.stderr
    for seed in range(3):
        point = f"runs/memory=ram-2/init=random/seed={seed}/result.json"
        mine, theirs = json.loads((disk / "sweep" / point).read_text()), json.loads((tmp_path / "reference" / point).read_text())
        assert {k: v for k, v in mine.items() if k not in ("seconds", "out")} == {k: v for k, v in theirs.items() if k not in ("seconds", "out")}
