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
- ``pomdpx``: SARSOP's POMDPX files (``--folder``, the shared benchmark files): ``Tiger.pomdpx`` and ``Hallway.pomdpx``
  against their ``.POMDP`` twins (tables and the values of the same controllers), ``RockSample_7_8.pomdpx`` read
  (time, peak memory), its uniform controller's value and ``fsc evaluate``'s time, RockSample[11,11] written by
  ``tests/fsc/rocksample_pomdpx.py`` and read, hostile POMDPX files (entities, a declared 10^12 states) through
  ``fsc pomdp``, and SARSOP (``--pomdpsol``, when the file is there) on the twins written by ``write_pomdpx``;
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


# ---------------------------------------------------------------- pomdpx

#: POMDPX files and their .POMDP twins (the same worlds) in the shared folder of benchmark files.
TWINS = {"Tiger.pomdpx": "tiger.95.POMDP", "Hallway.pomdpx": "hallway.POMDP"}


def _controllers(world, count: int):
    """The uniform controller on ram:1 and ram:2, and ``count`` random ones on ram:1 to ram:3 (seeds 0, 1, ...)."""
    import fsc

    out = [fsc.Policy.uniform(fsc.parse_memory(m, arms=world.num_actions, observations=world.num_observations)) for m in ("ram:1", "ram:2")]
    for seed in range(count):
        arch = fsc.parse_memory(f"ram:{1 + seed % 3}", arms=world.num_actions, observations=world.num_observations)
        out.append(fsc.Policy.random(arch, seed))
    return out


def twins(folder: Path, count: int) -> None:
    """Each POMDPX file against its .POMDP twin: orders, tables, and the values of the same controllers on both."""
    import fsc

    for name, twin in TWINS.items():
        x, p = fsc.read_pomdp(folder / name), fsc.read_pomdp(folder / twin)
        sizes = [(w.num_states, w.num_actions, w.num_observations) for w in (x, p)]
        names = {kind: getattr(x, f"{kind}_labels") == getattr(p, f"{kind}_labels") for kind in ("state", "action", "observation")}
        print(f"{name} {sizes[0]} vs {twin} {sizes[1]}: same names {names} (compared by position, the orders of both files)")
        gap = {
            "T": float(np.abs(x.transition - p.transition).max()),
            "O": float(np.abs(x.observation - p.observation).max()),
            "E[R | s, a]": float(np.abs(x.expected_step(x.reward_table) - p.expected_step(p.reward_table)).max()),
            "start": float(np.abs(x.initial - p.initial).max()),
        }
        print("  largest differences of the tables: " + ", ".join(f"{k} {v:.3g}" for k, v in gap.items()))
        values = [(float(fsc.evaluate(x, c).value), float(fsc.evaluate(p, c).value)) for c in _controllers(x, count)]
        worst = max(abs(a - b) for a, b in values)
        print(f"  {len(values)} controllers (ram:1 to ram:3): values {values[0][0]:.6f} ... ; largest |difference| {worst:.3g}"
              f" ({'within' if worst <= 1e-9 else 'NOT within'} 1e-9)")  # fmt: skip


def _timed(function):
    """``function()``, its wall seconds and its CPU seconds (this process: on a shared machine the CPU time is the cost)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def _peak_mib(function) -> float:
    """The most memory ``function()`` held at once (Python's and numpy's allocations, traced), in MiB."""
    import tracemalloc

    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def pomdpx(args) -> None:
    """SARSOP's POMDPX files: the twins, RockSample[7,8] read, evaluated by fsc evaluate, RockSample[11,11] read, refusals."""
    import fsc
    from fsc.io.pomdpx import parse_pomdpx
    from tests.fsc.rocksample_pomdpx import rocksample_pomdpx

    if not args.folder:
        raise SystemExit("bench_files.py pomdpx: give --folder, the folder of Tiger.pomdpx, Hallway.pomdpx, RockSample_7_8.pomdpx and their twins")
    folder = Path(args.folder)
    rs = folder / "RockSample_7_8.pomdpx"
    with tempfile.TemporaryDirectory() as tmp:  # the commands first, from a small process (a child's peak counts its parent's)
        _refusals(Path(tmp), args.limit_gb)
        took = measure(["evaluate", "--pomdp", str(rs), "--memory", "ram:1"], Path(tmp), str(ROOT), 8.0, 600)
        print(f"fsc evaluate --pomdp {rs.name} --memory ram:1: {took}")
    external = rocksample_pomdpx(2, 1).replace("<pomdpx", "<!DOCTYPE p [<!ENTITY e SYSTEM 'file:///etc/passwd'>]><pomdpx", 1)
    for text in (_LAUGHS, external):
        line, wall, cpu = _timed(lambda text=text: _refused(parse_pomdpx, text))
        print(f"parse_pomdpx, in this process: {wall * 1e3:.2f} ms ({cpu * 1e3:.2f} ms CPU): {line[:90]}")
    twins(folder, args.controllers)
    if args.pomdpsol and Path(args.pomdpsol).is_file():
        _sarsop_reads(folder, Path(args.pomdpsol))
    world, wall, cpu = _timed(lambda: fsc.read_pomdp(rs))
    print(f"RockSample_7_8.pomdpx: {world.num_states:,} states, {world.num_actions} actions, {world.num_observations} observations,"
          f" {world.transition_table.nnz:,} transitions: read in {wall:.2f} s ({cpu:.2f} s CPU), {_peak_mib(lambda: fsc.read_pomdp(rs)):.0f} MiB"
          " at the peak")  # fmt: skip
    uniform = fsc.Policy.uniform(fsc.parse_memory("ram:1", arms=world.num_actions, observations=world.num_observations))
    print(f"  uniform controller on ram:1, discount {world.discount}: value {float(fsc.evaluate(world, uniform).value):.6f}")
    text = rocksample_pomdpx(11, 11)
    world, wall, cpu = _timed(lambda: parse_pomdpx(text))
    print(f"RockSample[11,11] (tests/fsc/rocksample_pomdpx.py, {len(text) / 1024:.0f} KiB): {world.num_states:,} states,"
          f" {world.num_actions} actions, {world.num_observations} observations, {world.transition_table.nnz:,} transitions:"
          f" read in {wall:.2f} s ({cpu:.2f} s CPU), {_peak_mib(lambda: parse_pomdpx(text)):.0f} MiB at the peak")  # fmt: skip


def _sarsop_reads(folder: Path, pomdpsol: Path) -> None:
    """SARSOP (``--pomdpsol``) on the files write_pomdpx writes for the twins' .POMDP files: its bounds after 3 s."""
    import fsc
    from fsc.io.pomdpx import write_pomdpx

    with tempfile.TemporaryDirectory() as tmp:
        for twin in TWINS.values():
            path = write_pomdpx(fsc.read_pomdp(folder / twin), Path(tmp) / (Path(twin).stem + ".pomdpx"))
            done = subprocess.run([str(pomdpsol), str(path), "--timeout", "3", "-o", str(path) + ".policy"], capture_output=True, text=True, timeout=120)
            rows = [line.split() for line in done.stdout.splitlines() if line.split()[:1] and line.split()[0].replace(".", "").isdigit()]
            bounds = f"lower {rows[-1][3]}, upper {rows[-1][4]}" if rows and len(rows[-1]) > 4 else f"no bounds (status {done.returncode})"
            print(f"SARSOP on {path.name} written by write_pomdpx from {twin}: status {done.returncode}, after 3 s {bounds}")


def _refused(function, text: str) -> str:
    """The line ``function`` refuses ``text`` with (or that it did not)."""
    try:
        function(text.encode())
    except ValueError as error:
        return str(error)
    return "NOT refused"


_LAUGHS = '<?xml version="1.0"?>\n<!DOCTYPE p [{}]>\n<pomdpx>&l9;</pomdpx>\n'.format(
    "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10 if i else "lol"}">' for i in range(10))
)


def _refusals(root: Path, limit_gb: float) -> None:
    """Hostile POMDPX files through fsc pomdp: wall time, peak memory, status, the line."""
    (root / "laughs.pomdpx").write_text(_LAUGHS)
    (root / "external.pomdpx").write_text('<?xml version="1.0"?>\n<!DOCTYPE p [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<pomdpx>&x;</pomdpx>\n')
    var = '<StateVar vnamePrev="{0}0" vnameCurr="{0}1"><NumValues>1000000</NumValues></StateVar>'
    (root / "declared.pomdpx").write_text(f'<pomdpx><Variable>{var.format("a")}{var.format("b")}<ActionVar vname="x"><NumValues>2</NumValues></ActionVar>'
                                          '<RewardVar vname="r"/></Variable></pomdpx>')  # fmt: skip
    for name in ("laughs.pomdpx", "external.pomdpx", "declared.pomdpx"):
        print(f"fsc pomdp {name:18} {measure(['pomdp', name], root, str(ROOT), limit_gb, 60)}")


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
    what = "SARSOP's POMDPX files: twins, RockSample[7,8] and [11,11], refusals (--folder: the files; --pomdpsol: SARSOP, optional)"
    add_mode(sub, pomdpx, what, folder="", controllers=8, limit_gb=3.0, pomdpsol="")
    add_mode(sub, trajectory, "fsc train keeping every row: trajectory.npz against --csv", repeats=3, checkpoint_seconds=60.0, scale=1.0)
    args = parser.parse_args(argv)
    one_thread()
    args.run(args)


if __name__ == "__main__":
    main()
