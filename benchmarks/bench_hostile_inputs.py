"""Benchmark: what hostile inputs cost the command line (issue 36, the third attack).

For each case the command runs as ``python -m fsc.cli ...`` in a fresh directory of hostile files, under an
address-space limit (``--limit-gb``, default 3), and the script prints its wall time, peak resident memory,
exit status, number of stderr lines and the length of the last one. Run it with another checkout's
``PYTHONPATH`` (``--root``) to compare: an older tree blocks on the FIFO and reads ``/dev/zero`` until memory
runs out, this one refuses each case in one line.

Usage: ``.venv/bin/python benchmarks/bench_hostile_inputs.py [--root .] [--limit-gb 3] [--timeout 40]``
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

_RUN = ("import runpy, sys, resource\nsys.argv = ['fsc'] + sys.argv[1:]\ntry:\n    runpy.run_module('fsc.cli', run_name='__main__')\n"
        "finally:\n    print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n")  # fmt: skip

CASES = [
    ["pomdp", "fifo.POMDP"], ["pomdp", "zero.POMDP"], ["pomdp", "sparse.POMDP"], ["evaluate", "--policy", "header.npz"],
    ["evaluate", "--pomdp", "obs60000.POMDP", "--memory", "ram:2"], ["simulate", "--reset", "1e-300"], ["evaluate", "--reset", "5e-324"],
    ["simulate", "--steps", "100000000000000000000"], ["evaluate", "--memory", "x" * 100_000],
]  # fmt: skip


def _member(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def make_files(root: Path) -> None:
    """A FIFO, a link to /dev/zero, a 1 GB sparse file, a 1 KB .npz declaring 80 GB, a 66-byte world of 60,000 observations."""
    os.mkfifo(root / "fifo.POMDP")
    os.symlink("/dev/zero", root / "zero.POMDP")
    with open(root / "sparse.POMDP", "wb") as f:
        f.truncate(2**30)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (100_000, 100_000)})
    ram2 = {"kind": "RAM", "M": 2, "arms": 2, "observations": 2}
    with zipfile.ZipFile(root / "header.npz", "w") as z:
        z.writestr("architecture.npy", _member(np.array(json.dumps(ram2))))
        z.writestr("logits.npy", header.getvalue() + b"\0" * 800)
        z.writestr("init_logits.npy", _member(np.zeros(10)))
    (root / "obs60000.POMDP").write_text("states: 2\nactions: 2\nobservations: 60000\nT: * uniform\nO: * uniform\n")


def measure(argv: list[str], cwd: Path, root: str, limit_gb: float, timeout: float) -> str:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (int(limit_gb * 2**30),) * 2)

    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": root, "OMP_NUM_THREADS": "1"}
    try:
        done = subprocess.run([sys.executable, "-c", _RUN, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=limit)  # fmt: skip
    except subprocess.TimeoutExpired:
        return f"{time.perf_counter() - start:6.1f} s  killed after {timeout:g} s"
    peak = [int(line.split()[1]) // 1024 for line in done.stderr.splitlines() if line.startswith("PEAK")]
    lines = [line for line in done.stderr.splitlines() if not line.startswith("PEAK")]
    last = lines[-1] if lines else ""
    return (f"{time.perf_counter() - start:6.1f} s  status {done.returncode}  peak {peak[0] if peak else '?':>5} MB  "
            f"{len(lines)} line(s), the last {len(last):,} characters: {last[:70]}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[1]), help="the checkout to run (PYTHONPATH)")
    parser.add_argument("--limit-gb", type=float, default=3.0)
    parser.add_argument("--timeout", type=float, default=40.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        make_files(Path(tmp))
        for argv in CASES:
            print(f"{' '.join(argv)[:48]:48} {measure(argv, Path(tmp), args.root, args.limit_gb, args.timeout)}", flush=True)


if __name__ == "__main__":
    main()
