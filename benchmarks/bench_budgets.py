"""Budgets that hold: ``fsc solve --max-seconds B`` against the wall clock, on every file of a folder.

Modes (``bench_budgets.py MODE --help`` for each one's options):

- ``solve``: each file of ``FOLDER`` (``.POMDP``, ``.pomdp``, ``.pomdpx``) with each ``--memory`` and each budget
  ``--budgets``, ``fsc solve --memory M --max-seconds B --workers W --seed 0 --quiet --json`` in a process of its
  own; the table gives the wall time, the process's user + system seconds, the start-up (a process that imports
  what ``fsc solve`` imports and reads the file, timed on its own) and the overrun: ``(wall - start-up - B) / B``,
  which the budget keeps under 10%.  ``--trace SECONDS`` makes each solve dump its stacks (``faulthandler``) that
  many seconds after the budget has passed, to show where an overrun goes; ``--big`` adds 60 s runs on the
  larger files (TagAvoid, RockSample 5 5 and 7 8).
- ``engines``: ``auto`` against every engine that can hold the chain, on the files and memories given (default
  RockSample 5 5 and 7 8, TagAvoid and hallway with ``memento:2`` and ``ram:8``), corridors and random sparse worlds
  (``--corridors``, ``--sparse``): the first value and gradient of the uniform controller, set-up included, each
  engine in a process of its own (``bench_evaluate.py files``' cases); ``auto/best`` is auto's seconds over the
  fastest engine's.
- ``fill``: the large engine's LU fill, ``nnz(L) + nnz(U)`` over ``nnz(B)``, measured (SuperLU as the engine calls
  it, in a process of its own with ``--timeout``) against :func:`fsc.engines.cost.large_fill`'s estimate and the
  reverse Cuthill-McKee profile of ``B``, on files, random sparse worlds and corridors.

Usage: ``.venv/bin/python benchmarks/bench_budgets.py solve FOLDER [--budgets 10] [--memory ram:8]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FSC = [sys.executable, "-c", "import sys; from fsc.cli import main; sys.exit(main())"]

#: The files whose budget of 60 s is measured too (``--big``), with the memories that fit them.
BIG = {"TagAvoid.pomdp": ["ram:8"], "RockSample_5_5.pomdp": ["ram:8"], "RockSample_7_8.pomdpx": ["ram:4", "ram:2"]}
#: Memories the size limits refuse on a file, replaced by these.
SMALLER = {"RockSample_7_8.pomdpx": ["ram:4", "ram:2"]}

STARTUP = """
import sys, time
clock = time.monotonic()
from fsc.console import import_torch
from fsc.resolve import resolve_world_and_memory
import_torch()
import fsc.solver
resolve_world_and_memory(sys.argv[2], pomdp=sys.argv[1])
print(time.monotonic() - clock)
"""

TRACED = """
import faulthandler, sys
faulthandler.dump_traceback_later(float(sys.argv.pop(1)), exit=False)
from fsc.cli import main
sys.exit(main())
"""


def world_files(folder: str) -> list[str]:
    names = sorted(name for name in os.listdir(folder) if name.lower().endswith((".pomdp", ".pomdpx")))
    return [os.path.join(folder, name) for name in names]


def startup(path: str, memory: str) -> float:
    """Seconds to import what ``fsc solve`` imports and read the file (a process of its own)."""
    out = subprocess.run([sys.executable, "-c", STARTUP, path, memory], capture_output=True, text=True, cwd=ROOT)
    lines = out.stdout.strip().splitlines()
    return float(lines[-1]) if out.returncode == 0 and lines else math.nan


def timed_solve(path: str, memory: str, budget: float, workers: int | None, trace: float | None) -> dict:
    """One ``fsc solve`` in a process of its own: wall seconds, the child's user + system seconds, its summary."""
    argv = ["solve", "--pomdp", path, "--memory", memory, "--max-seconds", f"{budget:g}", "--seed", "0", "--quiet", "--json"]
    argv += [] if workers is None else ["--workers", str(workers)]
    command = FSC + argv if trace is None else [sys.executable, "-c", TRACED, f"{budget + trace:g}", *argv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    clock = time.monotonic()
    out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - clock
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    summary = json.loads(lines[-1]) if lines else {"error": (out.stderr.strip().splitlines() or ["?"])[-1][:100]}
    return {"wall": wall, "cpu": cpu, "status": out.returncode, "summary": summary, "stderr": out.stderr if trace is not None else ""}


def solve(args) -> None:
    """The table of ``fsc solve`` budgets against the wall clock."""
    cases = []
    for path in world_files(args.folder):
        name = os.path.basename(path)
        for memory in SMALLER.get(name, args.memory):
            cases += [(path, memory, budget) for budget in args.budgets]
        if args.big and name in BIG:
            cases += [(path, memory, 60.0) for memory in BIG[name]]
    print(f"{'file':<24} {'memory':<7} {'workers':>7} {'budget':>6} {'wall':>7} {'cpu':>7} {'start-up':>8} {'overrun':>8}  value        cut")
    records = []
    for path, memory, budget in cases:
        start = startup(path, memory)
        run = timed_solve(path, memory, budget, args.workers, args.trace)
        over = (run["wall"] - start - budget) / budget
        summary = run["summary"]
        value = summary.get("value")
        shown = f"{value:<12.6g}" if isinstance(value, float) else str(summary.get("error", "-"))[:60]
        cut = "; ".join(summary.get("cut_short", []) or [])
        workers = "default" if args.workers is None else str(args.workers)
        print(f"{os.path.basename(path):<24} {memory:<7} {workers:>7} {budget:>6.0f} {run['wall']:>7.1f} {run['cpu']:>7.1f} {start:>8.1f} "
              f"{100 * over:>7.0f}%  {shown} {cut}", flush=True)  # fmt: skip
        if run["stderr"]:
            print(run["stderr"], file=sys.stderr, flush=True)
        records.append({"file": os.path.basename(path), "memory": memory, "budget": budget, "startup": start, "overrun": over, **run})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1, default=str)


def engines(args) -> None:
    """``auto`` against every engine, by ``bench_evaluate.py files``' cases: the files, and the random sparse worlds and
    corridors written beside links to them in a temporary folder."""
    paths, folder = fill_worlds(args.folder, args.files, args.sparse, [])
    for path in paths[: len(args.files)]:
        os.symlink(os.path.abspath(path), os.path.join(folder, os.path.basename(path)))
    names = [os.path.basename(path) for path in paths]
    command = [sys.executable, str(ROOT / "benchmarks" / "bench_evaluate.py"), "files", "--folder", folder, "--files", *names,
               "--memories", *args.memories, "--corridors", *map(str, args.corridors), "--timeout", f"{args.timeout:g}"]  # fmt: skip
    subprocess.run(command, cwd=ROOT, check=False)


FILL_CASE = """
import json, sys, time
import numpy as np
sys.path.insert(0, ".")
import fsc
from fsc.engines import cost
from fsc.engines.large import b_matrices, large_chain
from fsc.resolve import resolve_world_and_memory
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import reverse_cuthill_mckee


def profile(indptr, indices, n):
    # The envelope of the symmetric pattern A + A^T (diagonal included) in reverse Cuthill-McKee order: the sum over
    # rows of the distance from the row's first entry to the diagonal; an LU without pivoting in that order has at
    # most this many entries below the diagonal and as many above.
    if n == 0:
        return 0
    pattern = sp.csr_matrix((np.ones(len(indices), dtype=np.int8), indices, indptr), shape=(n, n))
    sym = (pattern + pattern.T + sp.identity(n, dtype=np.int8, format="csr")).tocsr()
    order = reverse_cuthill_mckee(sym, symmetric_mode=True)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    first = np.minimum.reduceat(rank[sym.indices], sym.indptr[:-1])  # every row holds its diagonal: no empty row
    return int((rank - first).sum())


spec = json.loads(sys.argv[1])
resolved, arch = resolve_world_and_memory(spec["memory"], pomdp=spec["path"])
world = fsc.model.pomdp.as_pomdp(resolved.world)
sizes = cost.world_sizes(world, arch)
clock = time.perf_counter()
chain = large_chain(world, arch)
matrices = b_matrices(chain, chain.class_weights(fsc.Policy.uniform(arch).probs().detach().numpy()), 0.05)
built = time.perf_counter() - clock
print(json.dumps({"Y": chain.size, "parts": len(matrices), "nnz": chain.nnz, "large_nonzeros": sizes.large_nonzeros,
                  "estimate": cost.large_fill(sizes), "profile": sum(profile(B.indptr, B.indices, B.shape[0]) for B in matrices),
                  "build": built}), flush=True)
clock = time.perf_counter()
fill = sum(spla.splu(B, permc_spec="COLAMD", diag_pivot_thresh=0.0).nnz for B in matrices)
print(json.dumps({"fill": fill, "seconds": time.perf_counter() - clock}), flush=True)
"""


def fill_worlds(folder: str, files: list[str], sparse: list[str], corridors: list[int]) -> tuple[list[str], str]:
    """The paths of the files, and of random sparse worlds (``S:fanout``) and corridors written to a temporary folder;
    and that folder."""
    import tempfile

    sys.path.insert(0, str(ROOT))
    from tests.fsc.corridor import corridor_text
    from tests.fsc.sparse_world import sparse_world_text

    made = tempfile.mkdtemp(prefix="bench-fill-")
    paths = [os.path.join(folder, name) for name in files]
    for spec in sparse:
        S, fanout = (int(x) for x in spec.split(":"))
        paths.append(os.path.join(made, f"sparse{S}x{fanout}.POMDP"))
        Path(paths[-1]).write_text(sparse_world_text(S, fanout=fanout))
    for S in corridors:
        paths.append(os.path.join(made, f"corridor{S}.POMDP"))
        Path(paths[-1]).write_text(corridor_text(S))
    return paths, made


def fill(args) -> None:
    """The large engine's LU fill, ``nnz(L) + nnz(U)`` over ``nnz(B)``, measured (SuperLU, COLAMD, as the engine
    factors) against :func:`fsc.engines.cost.large_fill`'s estimate and the RCM profile of ``B``."""
    print(f"{'world':<24} {'memory':<7} {'Y':>8} {'nnz(B)':>10} {'fill':>12} {'ratio':>7} {'estimate':>9} {'profile':>9} {'LU s':>7}")
    records = []
    for path in fill_worlds(args.folder, args.files, args.sparse, args.corridors)[0]:
        for memory in args.memory:
            spec = json.dumps({"path": path, "memory": memory})
            try:
                out = subprocess.run([sys.executable, "-c", FILL_CASE, spec], capture_output=True, text=True, cwd=ROOT, timeout=args.timeout)
                stdout = out.stdout
            except subprocess.TimeoutExpired as error:
                stdout = error.stdout.decode() if isinstance(error.stdout, bytes) else (error.stdout or "")
            found = {}
            for line in stdout.splitlines():
                found.update(json.loads(line) if line.startswith("{") else {})
            if "nnz" not in found:
                print(f"{os.path.basename(path):<24} {memory:<7} failed", flush=True)
                continue
            nnz = found["nnz"]
            ratio = f"{found['fill'] / nnz:7.2f}" if "fill" in found else f"{'>' + format(args.timeout, '.0f') + 's':>7}"
            fill_text = f"{found['fill']:>12,}" if "fill" in found else f"{'-':>12}"
            seconds = f"{found['seconds']:7.2f}" if "seconds" in found else f"{'-':>7}"
            estimate, prof = found["estimate"] / nnz, (2 * found["profile"] + found["Y"] * found["parts"]) / nnz
            print(f"{os.path.basename(path):<24} {memory:<7} {found['Y']:>8,} {nnz:>10,} {fill_text} {ratio} {estimate:>9.2f} {prof:>9.2f} "
                  f"{seconds}", flush=True)  # fmt: skip
            records.append({"world": os.path.basename(path), "memory": memory, **found})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(required=True)
    mode = sub.add_parser("solve", help="fsc solve's wall time against its budget, on every file of a folder")
    mode.add_argument("folder", help="the folder of .POMDP / .pomdpx files")
    mode.add_argument("--budgets", type=float, nargs="+", default=[10.0])
    mode.add_argument("--memory", nargs="+", default=["ram:8"])
    mode.add_argument("--workers", type=int, default=1, help="--workers of fsc solve (0: the default, this machine's cores)")
    mode.add_argument("--big", action="store_true", help="also 60 s on TagAvoid, RockSample 5 5 and 7 8")
    mode.add_argument("--trace", type=float, default=None, metavar="SECONDS", help="dump the stacks this long after the budget")
    mode.add_argument("--json", default="", help="also write the records to this file")
    mode.set_defaults(run=solve)
    mode = sub.add_parser("engines", help="auto against every engine on the chains of the larger files")
    mode.add_argument("folder", help="the folder of .POMDP / .pomdpx files")
    mode.add_argument("--files", nargs="+", default=["RockSample_5_5.pomdp", "TagAvoid.pomdp", "hallway.POMDP", "RockSample_7_8.pomdpx"])
    mode.add_argument("--memories", nargs="+", default=["memento:2", "ram:8"])
    mode.add_argument("--corridors", type=int, nargs="+", default=[600, 2500], help="generated corridors of these many states too")
    mode.add_argument("--sparse", nargs="*", default=["1000:3", "2000:3"], metavar="S:FANOUT", help="random sparse worlds too")
    mode.add_argument("--timeout", type=float, default=120.0)
    mode.set_defaults(run=engines)
    mode = sub.add_parser("fill", help="the large engine's LU fill, measured against its estimate")
    mode.add_argument("folder", help="the folder of .POMDP / .pomdpx files")
    mode.add_argument("--files", nargs="+", default=["RockSample_4_4.pomdp", "RockSample_5_5.pomdp", "TagAvoid.pomdp", "hallway.POMDP"])
    mode.add_argument("--sparse", nargs="*", default=["250:3", "500:3", "1000:3", "2000:3", "500:6", "1000:6"], metavar="S:FANOUT",
                      help="random sparse worlds of S states, each action reaching FANOUT states")
    mode.add_argument("--corridors", type=int, nargs="*", default=[600, 2500])
    mode.add_argument("--memory", nargs="+", default=["ram:1", "ram:2"])
    mode.add_argument("--timeout", type=float, default=60.0)
    mode.add_argument("--json", default="")
    mode.set_defaults(run=fill)
    args = parser.parse_args(argv)
    if getattr(args, "workers", 1) == 0:
        args.workers = None
    args.run(args)


if __name__ == "__main__":
    main()
