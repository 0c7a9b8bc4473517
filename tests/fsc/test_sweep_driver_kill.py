"""Killing the sweep driver leaves no process behind on the local pool, and the restarted sweep equals an
uninterrupted one."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# 8 points to t = 2e7: about 14 s on 2 workers here, so that kills at fractions of that time fall at
# different moments of the work (before any point starts, during the first points, at the last ones).
SPEC = {
    "name": "kill",
    "fixed": {"mu": 0.1, "reset": 1e-3, "init": "random", "memory": "ram:2", "until_t": 20_000_000, "convention": "paper"},
    "grid": {"seed": [0, 1, 2, 3, 4, 5, 6, 7]},
}


def _ours(marker: str) -> list[int]:
    """Processes whose command line mentions ``marker`` (the driver, pool workers, trainers)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def _sweep(spec: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    workers = [] if "--summary" in extra else ["--workers", "2"]
    return subprocess.run([sys.executable, "-m", "fsc.cli", "sweep", str(spec), "--out", str(out), *workers,
                           "--quiet", *extra], capture_output=True, text=True, timeout=300)


def _summary(spec: Path, out: Path) -> list[dict]:
    done = _sweep(spec, out, "--summary")
    assert done.returncode == 0, done.stderr
    with open(out / "summary.csv", newline="") as f:
        return [{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(f)]


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.0, 0.04, 0.1, 0.2, 0.35])
def test_killed_driver_leaves_nothing_and_resumes_equal(tmp_path, fraction):
    """The kill comes at ``fraction`` of the uninterrupted sweep's wall time after the pool started: a delay
    that scales with the machine and the code, so the sweep is never already over."""
    spec = tmp_path / "kill.json"
    spec.write_text(json.dumps(SPEC))
    reference = tmp_path / "reference"
    start = time.monotonic()
    assert _sweep(spec, reference).returncode == 0
    delay = fraction * (time.monotonic() - start)
    out = tmp_path / "killed"
    driver = subprocess.Popen([sys.executable, "-m", "fsc.cli", "sweep", str(spec), "--out", str(out), "--workers", "2",
                               "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(_ours(str(out))) < 2 and time.monotonic() < deadline:  # the driver has started its pool
        time.sleep(0.05)
    time.sleep(delay)  # then kill it at some moment of the work
    assert len(_ours(str(out))) >= 2  # the driver and its workers were running
    assert not (out / "runs" / "seed=7" / "result.json").exists()  # the sweep was not over
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    deadline = time.monotonic() + 30
    while _ours(str(out)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _ours(str(out)) == []  # no worker, no trainer outlives the driver
    assert _sweep(spec, out).returncode == 0
    assert _summary(spec, out) == _summary(spec, reference)
