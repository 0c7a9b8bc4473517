"""Files and the command line: reading .POMDP files, the time constants of the limits, hostile inputs, and the
trajectory a training run writes.

Modes (``bench_files.py MODE --help`` for each one's options):

- ``pomdp-file``: a sparse world (1,000 states, 10 actions, 10 observations by default) written by
  ``fsc.write_pomdp`` and read back by ``fsc.read_pomdp`` (tokenise, parse, check every row, build the validated
  POMDP; target under 2 s), the POMDP's construction alone beside it, and whether the world read back is the same
  bits;
- ``limits``: the cost of one memory state of ``fsc closed-form`` and of one word of the necklace graph
  (``fsc necklace``), against the constants ``fsc/limits.py`` computes its limits from;
- ``hostile``: the command line on hostile inputs (a FIFO, ``/dev/zero``, a 1 GB sparse file, an .npz declaring
  80 GB, a world of 60,000 observations, extreme numbers), each as ``python -m fsc.cli`` under an address-space
  limit: wall time, peak memory, exit status and its one line; ``--root`` runs another checkout;
- ``trajectory``: ``fsc train`` keeping every row, writing ``trajectory.npz`` alone (the default) against
  ``--csv`` (``trajectory.csv`` too): microseconds per step and whether both wrote the same rows.

Usage: ``.venv/bin/python benchmarks/bench_files.py MODE [options]``
"""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from timing import ROOT, add_mode, modes_parser, one_thread

# isort: split
import numpy as np  # after timing, which sets one LAPACK thread before numpy loads OpenBLAS

# ---------------------------------------------------------------- pomdp-file


def sparse_world(S: int, A: int, O: int, seed: int = 0):
    """A world with 3 successor states per state and action, 3 possible observations per end state and action, a
    reward per state and action with a bonus on one successor."""
    import fsc

    rng = np.random.default_rng(seed)
    k = min(3, S)
    transition = np.zeros((S, A, S))
    succ = np.stack([rng.choice(S, size=k, replace=False) for _ in range(S * A)]).reshape(S, A, k)
    p = rng.dirichlet(np.ones(k), size=(S, A))
    np.put_along_axis(transition, succ, p, axis=2)
    m = min(3, O)
    observation = np.zeros((A, S, O))
    seen = np.stack([rng.choice(O, size=m, replace=False) for _ in range(A * S)]).reshape(A, S, m)
    np.put_along_axis(observation, seen, rng.dirichlet(np.ones(m), size=(A, S)), axis=2)
    reward = np.broadcast_to(rng.normal(size=(S, A))[:, :, None, None], (S, A, S, O)).copy()
    reward[np.arange(S)[:, None], np.arange(A)[None, :], succ[:, :, 0], :] += 10.0
    return fsc.POMDP(
        transition=transition,
        observation=observation,
        reward=reward,
        initial=np.full(S, 1.0 / S),
        state_labels=tuple(f"cell-{i}" for i in range(S)),
        discount=0.95,
    )


def best_of(repeats: int, fn):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def pomdp_file(args) -> None:
    """The .POMDP writer and reader on a sparse world."""
    import attrs

    import fsc

    S, A, O = args.states, args.actions, args.observations
    world = sparse_world(S, A, O)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.pomdp"
        write_s, _ = best_of(args.repeats, lambda: fsc.write_pomdp(world, path))
        text = path.read_text()
        read_s, back = best_of(args.repeats, lambda: fsc.read_pomdp(path))
        construct_s, _ = best_of(args.repeats, lambda: attrs.evolve(back))  # POMDP(...) on the tables the reader made
    same = all(getattr(world, k).tobytes() == getattr(back, k).tobytes() for k in ("transition", "observation", "reward", "initial"))
    print(f"world: {S} states, {A} actions, {O} observations; dense reward table {S * A * S * O * 8 / 1024**2:.0f} MiB")
    print(f"file: {len(text) / 1024**2:.2f} MiB, {text.count(chr(10))} lines")
    print(f"write_pomdp:                 {write_s:7.3f} s")
    print(f"read_pomdp (read+validate):  {read_s:7.3f} s   target < 2 s: {'met' if read_s < 2 else 'NOT met'}")
    print(f"  of which POMDP(...) alone: {construct_s:7.3f} s   ({construct_s / read_s:.0%} of the read: the validation of the tables)")
    print(f"read back bit-identical: {same}")
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


# ---------------------------------------------------------------- limits


def limits(args) -> None:
    """The time constants of fsc/limits.py, measured here."""
    from fsc.limits import NECKLACE_SECONDS_PER_WORD, SECONDS_PER_CLOSED_FORM_STATE
    from policies import closed_form
    from policies.necklaces.gray import _graph

    eps = closed_form.ccp_eps_best(0.1, args.M, 1e-4)
    start = time.perf_counter()
    closed_form.ccp_q(0.1, args.M, 1e-4, eps)
    per_state = (time.perf_counter() - start) / args.M
    print(f"closed-form: {per_state * 1e6:.2f} us per memory state at M = {args.M} (fsc.limits: {SECONDS_PER_CLOSED_FORM_STATE * 1e6:.1f} us; "
          f"ratio {per_state / SECONDS_PER_CLOSED_FORM_STATE:.2f})")  # fmt: skip
    for m in args.m:
        start = time.perf_counter()
        _graph(m)
        per_word = (time.perf_counter() - start) / 2**m
        print(f"necklace graph m = {m}: {per_word * 2**m:.2f} s, {per_word * 1e6:.1f} us per word (fsc.limits: {NECKLACE_SECONDS_PER_WORD * 1e6:.0f} us; "
              f"ratio {per_word / NECKLACE_SECONDS_PER_WORD:.2f})")  # fmt: skip


# ---------------------------------------------------------------- hostile

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


def hostile(args) -> None:
    """What hostile inputs cost the command line."""
    with tempfile.TemporaryDirectory() as tmp:
        make_files(Path(tmp))
        for argv in CASES:
            print(f"{' '.join(argv)[:48]:48} {measure(argv, Path(tmp), args.root, args.limit_gb, args.timeout)}", flush=True)


# ---------------------------------------------------------------- trajectory


def trajectory(args) -> None:
    """fsc train keeping every row: trajectory.npz alone against --csv."""
    from fsc.train import read_trajectory, run_training

    def train(out: Path, memory: str, reset: float, until_t: float, csv: bool):
        shutil.rmtree(out, ignore_errors=True)
        began = time.perf_counter()
        result = run_training(mu=0.1, memory=memory, init="random", seed=0, reset=reset, until_t=until_t, convention="paper", out=out,
                              quiet=True, csv=csv, checkpoint_seconds=args.checkpoint_seconds)  # fmt: skip
        seconds = time.perf_counter() - began
        rows = read_trajectory(out)
        return result, seconds, {name: rows[name] for name in ("t", "step", "q", "gain", "dt")}

    cases = [("ram:8", 1e-3, 3e6), ("memento:3", 1e-3, 1e6), ("ram:20", 1e-3, 3e5), ("ram:5", 2.0**-20, 1e7)]
    print(f"{'memory':<10} {'reset':>9} {'until_t':>8} {'steps':>8} {'npz us/step':>12} {'--csv us/step':>14} {'csv / npz':>10} {'same':>5}")
    with tempfile.TemporaryDirectory() as tmp:
        train(Path(tmp) / "warm", "ram:2", 1e-3, 10.0, False)  # compile (or load the cache) and warm up
        for memory, reset, until_t in cases:
            until_t *= args.scale
            runs = {"npz": [], "csv": []}
            for _ in range(args.repeats):
                for writer in runs:
                    runs[writer].append(train(Path(tmp) / writer, memory, reset, until_t, writer == "csv"))
            ends = {(r.t, r.q, r.steps) for done in runs.values() for r, _, _ in done}
            first = runs["npz"][0][2]
            same = len(ends) == 1 and all(np.array_equal(rows[k], first[k]) for done in runs.values() for _, _, rows in done for k in first)
            steps = runs["npz"][0][0].steps
            best = {writer: min(s for _, s, _ in done) for writer, done in runs.items()}
            print(f"{memory:<10} {reset:>9.3g} {until_t:>8.0e} {steps:>8} {best['npz'] / steps * 1e6:>12.1f} {best['csv'] / steps * 1e6:>14.1f} "
                  f"{best['csv'] / best['npz']:>10.2f} {same!s:>5}", flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser, sub = modes_parser(__doc__)
    add_mode(sub, pomdp_file, "the .POMDP writer and reader on a sparse world", states=1000, actions=10, observations=10, repeats=3)
    mode = add_mode(sub, limits, "the time constants of fsc/limits.py, measured here", M=200_000)
    mode.add_argument("--m", type=int, nargs="+", default=[16, 17, 18], help="necklace lengths whose graph is built")
    add_mode(sub, hostile, "what hostile inputs cost the command line", root=str(ROOT), limit_gb=3.0, timeout=40.0)
    add_mode(sub, trajectory, "fsc train keeping every row: trajectory.npz against --csv", repeats=3, checkpoint_seconds=60.0, scale=1.0)
    args = parser.parse_args(argv)
    one_thread()
    args.run(args)


if __name__ == "__main__":
    main()
