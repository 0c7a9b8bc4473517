"""Solving: ``fsc.solve``: file x memory x method -> value, seconds, gap to the upper bound,
beside PAYNT on the same machine with the same time limit.

Each method runs alone (``methods=[name]``) and together (``portfolio``).  Memory sizes run in increasing
order, each started from the same method's best controller of the previous size (split into copies in the
larger memory, :func:`fsc.solver.split`: the same value), so the value is non-decreasing in the memory by
construction.  Every row records the solution's exact value, the upper bound, the gap, the seconds, and
the history of new bests (value against seconds: the plot).  PAYNT (``paynt DIR --sketch FILE --fsc-memory-size K --timeout S``) synthesises deterministic
observation-based controllers with K memory nodes per observation (policies on ``ram:K`` that do not see
the previous action); a file without a ``start:`` line is given ``start: uniform`` in a temporary copy, as the
project's reader assumes.  PAYNT's value is Storm's (not exact: Tiger K=1 -19.9984 against -20).

Rows are appended to ``OUT/rows.jsonl`` as they finish; a rerun skips the cases already there.  Run it niced:

    nice python benchmarks/bench_solve.py [FOLDER] --files tiger.95,network --memory 1,2,4,8 --seconds 30 --out OUT
    python benchmarks/bench_solve.py --report OUT        # the table (markdown) and OUT/solve.png

Mode ``graphs``: the point-based part alone (docs/solving.md, "Belief-guided starts"), per file at its own
discount, seed 0: Perseus (``fsc.solver.pointbased.Search(model(world, 1 - discount), beliefs, default_rng(seed))``,
``advance()`` until settled or ``--cpu-seconds`` of CPU, its set-up included), its bound at the start, stages,
beliefs and CPU seconds; the closed policy graph's exact value and nodes (``graph()``); and for each ``ram:K`` the
graph that fits it (``graph(K)``: compressed, ``fsc.solver.graph.compress``) as value (nodes), each checked against
``fsc.evaluate`` of its policy on ``ram:K`` (``fsc.solver.graph.as_policy``; the largest difference is printed
below the table).  SARSOP's 60 s lower bound is read from ``FOLDER/SOURCES.md`` when it lists the file:

    nice python benchmarks/bench_solve.py graphs FOLDER tiger-grid.POMDP hallway.POMDP --cpu-seconds 40

Mode ``compress``: the price of one large graph, per file: Perseus as in ``graphs`` for ``--cpu-seconds``, then the
search's graph (``Search.graph`` as it stands: the best vector's plan when it fits ``PLAN_PAIRS``, else the vectors'
own) evaluated (``evaluate_graph``) and compressed onto ``ram:8`` (``compress``), timed in this process with four
settings: sweeps alone looking at their progress after every sweep, merge candidates scored dense; sweeps alone looking
every ``LOOKS`` (``fsc.solver.graph.LOOKS``), candidates scored on the beliefs' nonzero entries (``SPARSE_SCORES``);
as that, with BiCGSTAB after ``KRYLOV_AFTER`` sweeps; these three with every graph on ``merge``'s way solved whole;
and as that, those graphs solved for ranking (``evaluate_graph(..., ranking=True)``, the default); on one thread, as
``fsc solve`` computes: seconds, values and the ratios:

    nice python benchmarks/bench_solve.py compress FOLDER RockSample_7_8.pomdpx --cpu-seconds 25

Mode ``backup``: the price of a point-based backup (``fsc.solver.graph.backup``), per file: Perseus as in ``graphs``
for ``--stages`` stages, then the same batches of 8 of its beliefs backed up against its vectors with the beliefs moved
through the transitions as dense tables and as sparse matrices (``SPARSE_SCORES``; the default takes the sparse way only
for batches of ``SPARSE_MOVES`` entries), in turn, in this process on one thread: milliseconds a backup, the ratio, and
the largest difference of the values:

    nice python benchmarks/bench_solve.py backup FOLDER RockSample_7_8.pomdpx TagAvoid.pomdp --stages 40

Mode ``refresh``: Perseus alone (``Search.advance()`` for ``--cpu-seconds`` of CPU, its set-up included) per file and
seed (``default_rng(seed)``), with the belief set refreshed when the value at the start belief stalls on a full set
(``fsc.solver.pointbased.STALL_STAGES``, the default) and without (only when every belief settles): the value at the
start belief, stages and beliefs at the end, one line per run as it ends:

    nice python benchmarks/bench_solve.py refresh FOLDER RockSample_7_8.pomdpx --seeds 0,1,2,3,4 --cpu-seconds 55

Mode ``polish``: iterated local search on a compressed graph (``fsc.solver.graph.kick``), per file: Perseus for
``--stages`` stages (seed as in ``graphs``), its graph compressed onto ``ram:K`` (``compress``, which improves its
candidates), node improvement until no round gains (``improve``), then ``--cpu-seconds`` of kicks, each improved in
turn and kept when better; each value exact on the graph, the last checked by ``fsc.evaluate`` on ``ram:K``:

    nice python benchmarks/bench_solve.py polish FOLDER tiger-grid.POMDP hallway.POMDP --stages 120 --cpu-seconds 40

Mode ``bounds``: the upper bound (``fsc.solver.upper_bound``'s parts), per file: the fast informed bound iterated from
above (``fsc.solver.bound.informed_from_above``, to its tolerance), then for each of ``--seconds`` the trials of
point-based backups on a sawtooth started again from it (``fsc.solver.bound.refined``, seed 0, that time limit or
until they stop), each with its CPU seconds, on one thread:

    nice python benchmarks/bench_solve.py bounds FOLDER network.POMDP tiger-grid.POMDP hallway.POMDP --seconds 1 6
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import ROOT  # noqa: F401  (one LAPACK thread; the checkout on the path)

# isort: split
import numpy as np
import torch

import fsc
from fsc.solver import embed

#: The methods ``fsc.solve(..., methods=[name])`` takes (docs/solving.md), the portfolio of them all, and PAYNT.
METHOD_NAMES = ("portfolio", "mirror", "adam", "em", "greedy", "paynt")


def run_ours(world, memory: int, method: str, seconds: float, seed: int, start, out: Path, name: str, grow: str = "split") -> dict:
    arch = fsc.RAM(memory, arms=world.num_actions, observations=world.num_observations)
    if grow == "embed" and start is not None:  # the new memories left unused (solve would split the smaller controller)
        start = embed(start, arch)
    solution = fsc.solve(world, arch, seconds=seconds, seed=seed, methods=None if method == "portfolio" else [method], start=start)
    solution.policy.save(out / "policies" / f"{name}-{method}-{memory}.npz")
    summary = {k: v for k, v in solution.summary().items() if k not in ("memory", "method")}
    return {**summary, "found_by": solution.method, "history": solution.history}


def run_paynt(path: Path, memory: int, seconds: float) -> dict:
    """PAYNT on a copy of ``path`` (with ``start: uniform`` if it has no start line); on the file's ``.POMDP`` twin
    written by fsc (the same world in plain Cassandra format) when PAYNT cannot read the file itself (POMDPX; the
    layouts its parser refuses as "unknown format": machine, RockSample, Tag)."""
    binary = shutil.which("paynt") or str(Path(os.sys.executable).parent / "paynt")
    found = None if path.suffix.lower() == ".pomdpx" else _paynt_on(binary, path.read_text(), path.name, memory, seconds)
    if found is None or "unknown format of input file" in found.pop("log"):
        from fsc.io.pomdp_file import format_pomdp
        from fsc.io.pomdpx import read_pomdpx

        world = read_pomdpx(path) if path.suffix.lower() == ".pomdpx" else fsc.read_pomdp(path)
        found = _paynt_on(binary, format_pomdp(world), f"{path.stem}.POMDP", memory, seconds)
        found.pop("log")
        found["twin"] = True
    return found


def _paynt_on(binary: str, text: str, name: str, memory: int, seconds: float) -> dict:
    """PAYNT on ``text`` written as ``name`` in a folder of its own: its value, seconds, explored share and log."""
    with tempfile.TemporaryDirectory() as folder:
        if not re.search(r"^\s*start", text, re.M):
            text = re.sub(r"^(\s*observations\s*:.*)$", r"\1\nstart: uniform", text, count=1, flags=re.M)
        (Path(folder) / name).write_text(text)
        clock = time.monotonic()
        try:
            done = subprocess.run(
                [binary, folder, "--sketch", name, "--fsc-memory-size", str(memory), "--timeout", str(int(seconds))],
                capture_output=True, text=True, timeout=seconds * 3 + 60,
            )  # fmt: skip
            log = done.stdout + done.stderr
        except subprocess.TimeoutExpired as error:
            log = (error.stdout or b"").decode() if isinstance(error.stdout, bytes) else str(error.stdout or "")
        elapsed = time.monotonic() - clock
    found = re.findall(r"optimum:\s*(-?[\d.eE+-]+)", log) or re.findall(r"value\s*=?\s*(-?[\d.eE+-]+)", log)
    explored = re.findall(r"explored:\s*([\d.]+)\s*%", log)
    return {
        "value": float(found[-1]) if found else None, "seconds": elapsed, "log": log,
        "explored": float(explored[-1]) if explored else None, "tail": log.strip().splitlines()[-1:] if not found else [],
    }  # fmt: skip


def done_cases(rows: Path) -> set:
    if not rows.exists():
        return set()
    return {(r["file"], r["memory"], r["method"]) for r in map(json.loads, rows.read_text().splitlines()) if r}


def sarsop_lower(folder: Path, name: str) -> str:
    """SARSOP's 60 s lower bound for ``name`` from ``folder/SOURCES.md`` ("(optimal)" when it meets the upper), or ""."""
    sources = folder / "SOURCES.md"
    text = sources.read_text() if sources.exists() else ""
    found = re.search(rf"^\|\s*{re.escape(name)}\s*\|[^|\n]*\|\s*(-?[\d.]+)\s*/\s*(-?[\d.]+)", text, re.M)
    if found is None:
        return ""
    return found[1] + (" (optimal)" if float(found[1]) == float(found[2]) else "")


def graph_row(path: Path, sizes: list[int], cpu_seconds: float, beliefs: int, seed: int) -> tuple[str, float, str]:
    """One file's row of the table, the largest |graph value - fsc.evaluate| over its sizes, and where."""
    from fsc.solver.graph import as_policy
    from fsc.solver.pointbased import Search, model

    world = fsc.read_pomdp(path)
    if world.discount is None:
        raise SystemExit(f"{path.name} declares no discount: the table is at each world's own")
    start = time.process_time()
    search = Search(model(world, 1.0 - world.discount), beliefs, np.random.default_rng(seed))
    while not search.done and time.process_time() - start < cpu_seconds:
        search.advance()
    seconds = time.process_time() - start
    settled, cpu = ", settled" if search.done else "", f"{seconds:.1f}" if seconds < 10 else f"{seconds:.0f}"
    full = search.graph()
    name = path.name.rsplit(".", 1)[0]
    cells = [name, sarsop_lower(path.parent, name), f"{search.bound:.4f} ({search.stages}, {len(search.beliefs)}, {cpu} s{settled})",
             f"{full.value:.4f} ({full.size})"]  # fmt: skip
    worst, at = 0.0, ""
    for K in sizes:
        graph = search.graph(K)
        arch = fsc.RAM(K, arms=world.num_actions, observations=world.num_observations)
        exact = float(fsc.evaluate(world, as_policy(graph, arch)).value)
        if abs(exact - graph.value) >= worst:
            worst, at = abs(exact - graph.value), f"ram:{K}"
        cells.append(f"{graph.value:.4f} ({graph.size})")
    return "| " + " | ".join(cells) + " |", worst, at


def graphs(argv: list[str]) -> None:
    """The mode ``graphs``: the table of docs/solving.md's point-based part, one row per file as it finishes."""
    p = argparse.ArgumentParser(prog="bench_solve.py graphs", description="the point-based part alone: Perseus, its policy graph, compressed per ram:K")
    p.add_argument("folder", help="the folder of the files (and of SOURCES.md, for SARSOP's 60 s lower bound)")
    p.add_argument("files", nargs="+", help="file names in the folder (tiger-grid.POMDP ...)")
    p.add_argument("--cpu-seconds", type=float, default=40.0, help="CPU limit of Perseus per file (default 40)")
    p.add_argument("--beliefs", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--memory", default="1,2,4,8,16,32", help="the sizes K of ram:K")
    args = p.parse_args(argv)
    torch.set_default_dtype(torch.float64)
    sizes = [int(m) for m in args.memory.split(",")]
    print("| file | SARSOP 60 s lower | Perseus at the start (stages, beliefs, CPU s) | policy graph (nodes) | "
          + " | ".join(f"ram:{K}" for K in sizes) + " |")  # fmt: skip
    print("|---|---|---|---|" + "---|" * len(sizes), flush=True)
    checks = []
    for name in args.files:
        row, worst, at = graph_row(Path(args.folder) / name, sizes, args.cpu_seconds, args.beliefs, args.seed)
        print(row, flush=True)
        checks.append(f"{name} {worst:.1e} ({at})")
    print("\nlargest |graph value - fsc.evaluate on ram:K|: " + ", ".join(checks))


def _world_tables(folder: str, name: str):
    """A file of ``folder`` (SARSOP's reader for ``.pomdpx``, else the ``.POMDP`` one) and its tables for the belief
    computations at its own discount (``fsc.solver.pointbased.model``)."""
    from fsc.io.pomdpx import read_pomdpx
    from fsc.solver.pointbased import model

    path = Path(folder) / name
    world = read_pomdpx(path) if path.suffix == ".pomdpx" else fsc.read_pomdp(path)
    return world, model(world, 1.0 - world.discount)


def _mode_parser(mode: str, description: str) -> argparse.ArgumentParser:
    """The parser of a mode that runs on files of a folder: the folder, the files, and the mode's own options after."""
    p = argparse.ArgumentParser(prog=f"bench_solve.py {mode}", description=description)
    p.add_argument("folder")
    p.add_argument("files", nargs="+")
    return p


def _staged(tables, seed: int, stages: int, beliefs: int = 1000):
    """Perseus on ``tables`` (``Search``, seeded as the solver seeds it) for ``stages`` stages, or until settled."""
    from fsc.solver.pointbased import Search

    search = Search(tables, beliefs, np.random.default_rng(seed=[seed, 1 << 22]))
    while not search.done and search.stages < stages:
        search.advance()
    return search


def compress_prices(argv: list[str]) -> None:
    """The mode ``compress``: one large graph per file, evaluated and compressed with each setting, timed here."""
    from fsc.solver import graph as graphs_module
    from fsc.solver.pointbased import Search

    p = _mode_parser("compress", "the price of evaluating and compressing one large graph")
    p.add_argument("--cpu-seconds", type=float, default=25.0, help="CPU seconds of Perseus before the plan is taken (default 25)")
    p.add_argument("--beliefs", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--memory", type=int, default=8, help="K of ram:K (default 8)")
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # as fsc solve computes (fsc.solver.parallel): BLAS's threads slow BiCGSTAB's small products
    alone = graphs_module.SWEEPS  # BiCGSTAB only after as many sweeps as the fallback waits for
    settings = {  # looks, sparse scores, BiCGSTAB after, merge's graphs on the way solved whole
        "sweeps, looks 1, dense scores": (1, 0.0, alone, True),
        f"sweeps, looks {graphs_module.LOOKS}, sparse scores": (graphs_module.LOOKS, graphs_module.SPARSE_SCORES, alone, True),
        f"as that, BiCGSTAB after {graphs_module.KRYLOV_AFTER} sweeps": (graphs_module.LOOKS, graphs_module.SPARSE_SCORES, graphs_module.KRYLOV_AFTER, True),
        "as that, merge's graphs on the way ranked (the default)": (graphs_module.LOOKS, graphs_module.SPARSE_SCORES, graphs_module.KRYLOV_AFTER, False),
    }
    exact = graphs_module.evaluate_graph
    print("| file | graph nodes (pairs) | setting | evaluation s | value | compress s | value on ram:K |")
    print("|---|---|---|---|---|---|---|", flush=True)
    for name in args.files:
        _, tables = _world_tables(args.folder, name)
        search, start = Search(tables, args.beliefs, np.random.default_rng(seed=[args.seed, 1 << 22])), time.process_time()
        while not search.done and time.process_time() - start < args.cpu_seconds:
            search.advance()
        plan = search.graph()
        pairs = plan.size * tables.shape[0]
        times = {}
        for label, (looks, sparse, krylov, whole) in settings.items():
            graphs_module.LOOKS, graphs_module.SPARSE_SCORES, graphs_module.KRYLOV_AFTER = looks, sparse, krylov
            graphs_module.evaluate_graph = (lambda *a, ranking=False, **k: exact(*a, **k)) if whole else exact
            clock = time.process_time()
            evaluated = graphs_module.evaluate_graph(tables, plan.action, plan.successor, initial=plan.initial)
            middle = time.process_time()
            small = graphs_module.compress(tables, evaluated, args.memory)
            times[label] = (middle - clock, time.process_time() - middle)
            seconds = times[label]
            cells = [name, f"{plan.size} ({pairs:,})", label, f"{seconds[0]:.2f}", f"{evaluated.value:.6f}", f"{seconds[1]:.2f}", f"{small.value:.6f}"]
            print("| " + " | ".join(cells) + " |", flush=True)
        graphs_module.evaluate_graph = exact
        default_eval, default_compress = times[label]
        print(f"\n{name}: the default's evaluation and compression, faster than each other setting's by")
        for other, (evaluation, compression) in list(times.items())[:-1]:
            print(f"  {other}: {evaluation / default_eval:.2f}x and {compression / default_compress:.2f}x")
        print(flush=True)


def backup_prices(argv: list[str]) -> None:
    """The mode ``backup``: the same batches backed up with the beliefs moved dense and sparse, timed here."""
    from fsc.solver import graph as graphs_module

    p = _mode_parser("backup", "the price of a point-based backup")
    p.add_argument("--stages", type=int, default=40, help="Perseus stages before the backups are timed (default 40)")
    p.add_argument("--batches", type=int, default=200, help="batches of 8 beliefs timed with each setting (default 200)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    sparse, moves = graphs_module.SPARSE_SCORES, graphs_module.SPARSE_MOVES
    print("| file | stages | beliefs (nonzero share) | vectors | dense ms | sparse ms | ratio | largest value difference |")
    print("|---|---|---|---|---|---|---|---|", flush=True)
    for name in args.files:
        _, tables = _world_tables(args.folder, name)
        search = _staged(tables, args.seed, args.stages)
        vectors, beliefs = search.vectors, search.beliefs
        by_state, rng = np.ascontiguousarray(vectors.T), np.random.default_rng(args.seed)
        picks = [rng.choice(len(beliefs), min(8, len(beliefs)), replace=False) for _ in range(args.batches)]
        seconds, values = {}, {}
        for label, share in (("dense", 0.0), ("sparse", sparse), ("dense", 0.0), ("sparse", sparse)):  # twice, the second timed
            graphs_module.SPARSE_SCORES, graphs_module.SPARSE_MOVES = share, 0
            clock = time.process_time()
            values[label] = [graphs_module.backup(tables, vectors, beliefs[pick], by_state)[0] for pick in picks]
            seconds[label] = (time.process_time() - clock) / len(picks) * 1e3
        graphs_module.SPARSE_SCORES, graphs_module.SPARSE_MOVES = sparse, moves
        gap = max(float(np.abs(a - b).max()) for a, b in zip(values["dense"], values["sparse"], strict=True))
        share = np.count_nonzero(beliefs) / beliefs.size
        cells = [name, str(search.stages), f"{len(beliefs)} ({share:.3f})", str(len(vectors)), f"{seconds['dense']:.2f}", f"{seconds['sparse']:.2f}",
                 f"{seconds['dense'] / seconds['sparse']:.2f}", f"{gap:.1e}"]  # fmt: skip
        print("| " + " | ".join(cells) + " |", flush=True)


def refresh_gains(argv: list[str]) -> None:
    """The mode ``refresh``: Perseus alone with and without the refresh of a stalled set, per file and seed."""
    from fsc.solver import pointbased
    from fsc.solver.pointbased import Search, model

    p = _mode_parser("refresh", "Perseus alone, a stalled set refreshed or not")
    p.add_argument("--cpu-seconds", type=float, default=20.0, help="CPU seconds of each run (default 20)")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--beliefs", type=int, default=1000)
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    stall = pointbased.STALL_STAGES
    print("| file | seed | refresh when stalled | value at the start | stages | beliefs |")
    print("|---|---|---|---|---|---|", flush=True)
    for name in args.files:
        world, _ = _world_tables(args.folder, name)
        for seed in (int(seed) for seed in args.seeds.split(",")):
            for refresh in (True, False):
                pointbased.STALL_STAGES = stall if refresh else sys.maxsize
                start = time.process_time()
                search = Search(model(world, 1.0 - world.discount), args.beliefs, np.random.default_rng(seed))
                while not search.done and time.process_time() - start < args.cpu_seconds:
                    search.advance()
                cells = [name, str(seed), "yes" if refresh else "no", f"{search.bound:.4f}", str(search.stages), str(len(search.beliefs))]
                print("| " + " | ".join(cells) + " |", flush=True)
    pointbased.STALL_STAGES = stall


def polish_gains(argv: list[str]) -> None:
    """The mode ``polish``: Perseus's graph compressed, then polished by kicks and node improvement, per file."""
    from fsc.solver import graph as graphs_module

    p = _mode_parser("polish", "iterated local search on a compressed graph")
    p.add_argument("--stages", type=int, default=120, help="Perseus stages before the graph is taken (default 120)")
    p.add_argument("--cpu-seconds", type=float, default=40.0, help="CPU seconds of kicks (default 40)")
    p.add_argument("--memory", type=int, default=8, help="K of ram:K (default 8)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    print("| file | graph (nodes) | compressed onto ram:K (s) | improved until no round gains | polished (kicks, CPU s) | checked on ram:K |")
    print("|---|---|---|---|---|---|", flush=True)
    for name in args.files:
        world, tables = _world_tables(args.folder, name)
        search = _staged(tables, args.seed, args.stages)
        full, clock = search.graph(), time.process_time()
        small = graphs_module.compress(tables, full, args.memory)
        compressed = time.process_time() - clock
        improved = graphs_module.improve(tables, small, args.memory, graphs_module.POLISH_ROUNDS)
        best, kicks, rng, clock = improved, 0, np.random.default_rng(args.seed), time.process_time()
        while time.process_time() - clock < args.cpu_seconds:
            best, kicks = graphs_module.kick(tables, best, args.memory, rng), kicks + 1
        arch = fsc.RAM(args.memory, arms=tables.shape[1], observations=tables.shape[2])
        checked = float(fsc.evaluate(world, graphs_module.as_policy(best, arch), reset=1.0 - tables.discount).value)
        cells = [name, f"{full.value:.6f} ({full.size})", f"{small.value:.6f} ({compressed:.1f})", f"{improved.value:.6f}",
                 f"{best.value:.6f} ({kicks}, {time.process_time() - clock:.1f})", f"{checked:.6f}"]  # fmt: skip
        print("| " + " | ".join(cells) + " |", flush=True)


def bound_trials(argv: list[str]) -> None:
    """The mode ``bounds``: the informed bound, then the trials that lower it, per file and time limit."""
    from fsc.limits import Deadline
    from fsc.solver.bound import informed_from_above, refined

    p = _mode_parser("bounds", "the upper bound before and after the trials of point-based backups")
    p.add_argument("--seconds", type=float, nargs="+", default=[1.0, 6.0], help="the trials' time limits (default 1 6)")
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    head = ["file", "informed bound (CPU s)"] + [f"after the trials, {limit:g} s (CPU s)" for limit in args.seconds]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head), flush=True)
    for name in args.files:
        world, tables = _world_tables(args.folder, name)
        clock = time.process_time()
        informed, Q = informed_from_above(fsc.model.pomdp.as_pomdp(world), tables.discount, Deadline.after(60.0))
        cells = [name, f"{informed:.10g} ({time.process_time() - clock:.1f})"]
        for limit in args.seconds:
            clock = time.process_time()
            bound = refined(tables, Q, Deadline.after(limit), np.random.default_rng(0))
            cells.append(f"{min(bound, informed):.10g} ({time.process_time() - clock:.1f})")
        print("| " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    modes = {"graphs": graphs, "compress": compress_prices, "backup": backup_prices, "refresh": refresh_gains, "polish": polish_gains,
             "bounds": bound_trials}  # fmt: skip
    if sys.argv[1:2] and sys.argv[1] in modes:
        modes[sys.argv[1]](sys.argv[2:])
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", nargs="?", help="a folder of classic .POMDP files (Cassandra's collection); not needed with --report")
    p.add_argument("--files", default=None, help="comma-separated names without .POMDP, or file names (default every .POMDP file)")
    p.add_argument("--memory", default="1,2,4,8")
    p.add_argument("--methods", default=",".join(METHOD_NAMES))
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--grow", choices=("split", "embed"), default="split", help="how a size starts from the size before: split into copies, or embedded unused")
    p.add_argument("--out", required=False, default="solve_results")
    p.add_argument("--max-gb", type=float, default=6.0, help="address space cap of this process (a case that needs more fails, recorded)")
    p.add_argument("--report", default=None, metavar="OUT", help="print the table of OUT/rows.jsonl and draw OUT/solve.png")
    args = p.parse_args()
    if args.report:
        report(Path(args.report))
        return
    if args.folder is None:
        p.error("give the folder of .POMDP files")
    torch.set_default_dtype(torch.float64)
    resource.setrlimit(resource.RLIMIT_AS, (int(args.max_gb * 2**30), resource.RLIM_INFINITY))
    out = Path(args.out)
    (out / "policies").mkdir(parents=True, exist_ok=True)
    rows = out / "rows.jsonl"
    folder = Path(args.folder)
    files = (
        sorted(folder.glob("*.POMDP"))
        if args.files is None
        else [folder / (name if (folder / name).is_file() else f"{name}.POMDP") for name in args.files.split(",")]
    )
    memories = [int(m) for m in args.memory.split(",")]
    done = done_cases(rows)
    for path in files:
        name = path.name.rsplit(".", 1)[0]
        world = fsc.read_pomdp(path)
        for method in args.methods.split(","):
            previous = None
            for memory in memories:
                policy_file = out / "policies" / f"{name}-{method}-{memory}.npz"
                if (name, memory, method) in done:
                    previous = fsc.Policy.load(policy_file) if policy_file.exists() else previous
                    continue
                row = {"file": name, "memory": memory, "method": method, "budget": args.seconds}
                try:
                    if method == "paynt":
                        row |= run_paynt(path, memory, args.seconds)
                    else:
                        row |= run_ours(world, memory, method, args.seconds, args.seed, previous, out, name, args.grow)
                        previous = fsc.Policy.load(policy_file)
                except (MemoryError, ValueError, np.linalg.LinAlgError) as error:
                    row |= {"value": None, "error": f"{type(error).__name__}: {error}"[:300]}
                print(json.dumps({k: v for k, v in row.items() if k != "history"}), flush=True)
                with rows.open("a") as f:
                    f.write(json.dumps(row) + "\n")


def report(out: Path) -> None:
    """The markdown table (best value per file, memory and method; the gap of the best) and the plot."""
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines() if line]
    files = sorted({r["file"] for r in rows})
    methods = [m for m in METHOD_NAMES if any(r["method"] == m for r in rows)]
    print("| file | memory | upper bound | " + " | ".join(methods) + " |")
    print("|---|---|---|" + "---|" * len(methods))
    for name in files:
        for memory in sorted({r["memory"] for r in rows if r["file"] == name}):
            cells, bound = [], None
            for method in methods:
                row = next((r for r in rows if (r["file"], r["memory"], r["method"]) == (name, memory, method)), None)
                bound = bound or (row or {}).get("upper_bound")
                if row is None:
                    cells.append("")
                elif row.get("value") is None:
                    refused = "unknown format" in " ".join(row.get("tail", []))
                    cells.append("failed" if "error" in row else "refuses the file" if refused else "none in time")
                else:
                    cells.append(f"{row['value']:.4g} ({row['seconds']:.0f} s)")
            shown = "" if bound is None else f"{bound:.4g}"
            print(f"| {name} | {memory} | {shown} | " + " | ".join(cells) + " |")
    checks(rows)
    plot(out, rows, files)


def checks(rows: list) -> None:
    """Print every row above its upper bound, and every method whose value decreases with the memory."""
    ours = [r for r in rows if r["method"] != "paynt" and r.get("value") is not None]
    above = [r for r in ours if r["value"] > r["upper_bound"] + 1e-9 * max(1.0, abs(r["upper_bound"]))]
    falls = [
        (a["file"], a["method"], a["memory"], b["memory"])
        for a in ours for b in ours
        if (a["file"], a["method"]) == (b["file"], b["method"]) and a["memory"] < b["memory"] and b["value"] < a["value"] - 1e-9 * max(1.0, abs(a["value"]))
    ]  # fmt: skip
    print(f"\n{len(ours)} rows of ours: {len(above)} above the upper bound, {len(falls)} values falling with the memory {falls}")


def plot(out: Path, rows: list, files: list) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(4, len(files))
    rows_ = -(-len(files) // columns)
    fig, axes = plt.subplots(rows_, columns, figsize=(3.2 * columns, 2.8 * rows_), squeeze=False)
    for ax in axes.flat[len(files) :]:
        ax.axis("off")
    for ax, name in zip(axes.flat, files, strict=False):
        for r in rows:
            if r["file"] != name or r["method"] != "portfolio" or not r.get("history"):
                continue
            t = [h["seconds"] for h in r["history"]] + [r["seconds"]]
            v = [h["value"] for h in r["history"]] + [r["history"][-1]["value"]]
            low = np.percentile([x for x in v], 25)
            ax.step(t, np.maximum(v, low - 0.1 * abs(low)), where="post", label=f"ram:{r['memory']}")
        bound = next((r.get("upper_bound") for r in rows if r["file"] == name and r.get("upper_bound") is not None), None)
        if bound is not None:
            ax.axhline(bound, color="k", lw=0.8, ls="--", label="upper bound")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("seconds")
        ax.tick_params(labelsize=7)
    for row in axes:
        row[0].set_ylabel("best value (portfolio)")
    axes.flat[len(files) - 1].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out / "solve.png", dpi=110)


if __name__ == "__main__":
    main()
