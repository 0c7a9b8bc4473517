"""Beside SARSOP and PAYNT: file x budget -> SARSOP's lower and upper bound, ``fsc solve``'s value per memory and
PAYNT's value, each with the CPU seconds it used.

SARSOP (Kurniawati, Hsu and Lee 2008) is run as ``pomdpsol FILE --timeout B -o TMP`` in a temporary folder: its
``--timeout`` counts its own CPU seconds.  The last row of its table gives ``LBound`` (the exact value, at the
file's start belief, of the policy it found: comparable with a controller's exact value) and ``UBound`` (no policy
is worth more).  ``fsc solve --pomdp FILE --memory ram:K --max-seconds B --seed S --workers 1 --json`` gives the
exact value of the controller it returns.  PAYNT runs when the ``paynt`` package is importable (the table says
"absent" otherwise).  The CPU seconds of every row are the child process's (``resource.getrusage`` of children,
user + system).

Rows go to one JSON cache (``--cache``), written atomically under a lock after each row, so that a run stopped
half-way resumes and the SARSOP and fsc sides may run at the same time; a row already there is not run again
(``--again`` runs it anew; a row whose process the wall-clock guard killed runs again).  Run it niced:

    nice -n 10 python benchmarks/bench_sarsop.py sarsop FOLDER --pomdpsol PATH/pomdpsol \\
        --budgets 10 60 --cache out/bench-sarsop.json
    nice -n 10 python benchmarks/bench_sarsop.py fsc FOLDER --memory ram:8 --budgets 10 60 300 \\
        --files hallway.POMDP,tiger-grid.POMDP --cache out/bench-sarsop.json
    python benchmarks/bench_sarsop.py paynt FOLDER --memory ram:8 --cache out/bench-sarsop.json
    python benchmarks/bench_sarsop.py report --cache out/bench-sarsop.json --plot out/bench-sarsop.png
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import importlib.util
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The file names the benchmark runs on in a folder.
SUFFIXES = (".POMDP", ".pomdp", ".pomdpx")

#: SARSOP's table: ``Time | #Trial | #Backup | LBound | UBound | Precision | #Alphas | #Beliefs``.
ROW = re.compile(r"^\s*([\d.eE+-]+)\s+(\d+)\s+(\d+)\s+(-?[\d.eE+-]+)\s+(-?[\d.eE+-]+)\s+(-?[\d.eE+-]+)\s+(\d+)\s+(\d+)\s*$")


# ---------------------------------------------------------------------------------------------------- the cache


def key(row: dict) -> tuple:
    """What makes a row: the tool, the file, the budget, the memory and seed (fsc and PAYNT), fsc's workers."""
    return (row["tool"], row["file"], float(row["budget"]), row.get("memory"), row.get("seed"), row.get("workers"))


def load(cache: Path) -> list[dict]:
    return json.loads(cache.read_text())["rows"] if cache.exists() else []


@contextlib.contextmanager
def locked(cache: Path):
    """Hold ``CACHE.lock`` (two sides writing the same cache take turns)."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache.with_name(cache.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def store(cache: Path, row: dict) -> None:
    """Add (or replace) ``row`` in the cache: read again under the lock, written to a temporary file and moved into place."""
    with locked(cache):
        rows = [r for r in load(cache) if key(r) != key(row)] + [row]
        rows.sort(key=lambda r: (r["file"], r["tool"], float(r["budget"]), str(r.get("memory")), r.get("seed") or 0))
        handle, temporary = tempfile.mkstemp(dir=cache.parent, prefix=cache.name + ".")
        with os.fdopen(handle, "w") as f:
            json.dump({"rows": rows}, f, indent=1)
            f.write("\n")
        os.replace(temporary, cache)


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_child(argv: list[str], cwd: str, wall: float, env: dict | None = None) -> tuple[str, float, float, bool]:
    """Run ``argv``: its output (stdout and stderr), its CPU and wall seconds, whether it hit the wall-clock guard."""
    cpu, clock = children_cpu(), time.monotonic()
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=wall, env=env)
        log, killed = done.stdout + done.stderr, False
    except subprocess.TimeoutExpired as error:
        out = error.stdout.decode() if isinstance(error.stdout, bytes) else error.stdout or ""
        log, killed = out, True
    return log, children_cpu() - cpu, time.monotonic() - clock, killed


# ---------------------------------------------------------------------------------------------------- SARSOP


def parse_sarsop(log: str) -> dict:
    """The last row of SARSOP's table (lower and upper bound, its own seconds), the rows (the plot's curve), why it stopped."""
    rows = [tuple(float(x) for x in m.groups()) for m in map(ROW.match, log.splitlines()) if m]
    if not rows:
        return {"lower": None, "upper": None, "error": (log.strip().splitlines() or ["no output"])[-1][:300]}
    last = rows[-1]
    loading = re.search(r"loading time\s*:\s*([\d.]+)", log)
    reason = re.search(r"SARSOP finishing \.\.\.\s*\n\s*(.+)", log)
    return {
        "lower": last[3], "upper": last[4], "sarsop_seconds": last[0], "alphas": int(last[6]), "beliefs": int(last[7]),
        "loading_seconds": float(loading.group(1)) if loading else None,
        "stopped": reason.group(1).strip() if reason else "no final table (killed?)",
        "curve": [[r[0], r[3], r[4]] for r in rows[:-1]],
    }  # fmt: skip


def run_sarsop(pomdpsol: str, path: Path, budget: float, memory_mb: int | None) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        argv = [pomdpsol, str(path), "--timeout", f"{budget:g}", "-o", str(Path(folder) / "out.policy")]
        argv += ["--memory", str(memory_mb)] if memory_mb else []
        log, cpu, wall, killed = run_child(argv, folder, wall=30 * budget + 1800)  # a guard against a hang: it counts CPU seconds
    return {**parse_sarsop(log), "cpu_seconds": cpu, "wall_seconds": wall, **({"killed": True} if killed else {})}


# ---------------------------------------------------------------------------------------------------- fsc and PAYNT


def run_fsc(path: Path, memory: str, budget: float, seed: int, workers: int) -> dict:
    argv = [sys.executable, "-m", "fsc", "solve", "--pomdp", str(path), "--memory", memory, "--max-seconds", f"{budget:g}",
            "--seed", str(seed), "--workers", str(workers), "--json", "--quiet"]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    log, cpu, wall, killed = run_child(argv, str(ROOT), wall=10 * budget + 900, env=env)
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    if not records:
        return {"value": None, "error": (log.strip().splitlines() or ["no output"])[-1][:300], "cpu_seconds": cpu, "wall_seconds": wall}
    record = records[-1]
    kept = {name: record.get(name) for name in ("value", "upper_bound", "method", "seconds", "evaluations", "larger_value", "larger_memory")}
    return {**kept, "cpu_seconds": cpu, "wall_seconds": wall, **({"killed": True} if killed else {})}


def run_paynt(path: Path, memory: str, budget: float) -> dict:
    """PAYNT's controller of ``K`` nodes per observation (``ram:K``), as ``benchmarks/bench_solve.py`` runs it."""
    if importlib.util.find_spec("paynt") is None:
        return {"value": None, "absent": True}
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_solve import run_paynt as paynt

    cpu = children_cpu()
    found = paynt(path, int(memory.split(":")[1]), budget)
    return {
        "value": found["value"],
        "wall_seconds": found["seconds"],
        "cpu_seconds": children_cpu() - cpu,
        **({"twin": True} if found.get("twin") else {}),
        **({"tail": found["tail"]} if found["value"] is None else {}),
    }


# ---------------------------------------------------------------------------------------------------- the sides


def files_of(folder: Path, names: str | None) -> list[Path]:
    found = sorted((p for p in folder.iterdir() if p.name.endswith(SUFFIXES)), key=lambda p: p.name.lower())
    if names is None:
        return found
    wanted = names.split(",")
    missing = [name for name in wanted if not (folder / name).is_file()]
    if missing:
        raise SystemExit(f"bench_sarsop: no file {missing[0]!r} in {folder}")
    return [folder / name for name in wanted]


def run_side(args: argparse.Namespace) -> None:
    """Every (file, budget[, memory]) case of the side not yet in the cache, one at a time."""
    cache, done = Path(args.cache), {key(r) for r in load(Path(args.cache)) if not r.get("killed")}  # a killed row runs again
    if args.side == "sarsop" and (args.pomdpsol is None or not os.access(args.pomdpsol, os.X_OK)):
        raise SystemExit(f"bench_sarsop: SARSOP's pomdpsol is absent ({args.pomdpsol!r}); the report's SARSOP columns say so")
    memories = [None] if args.side == "sarsop" else args.memory
    for path in files_of(Path(args.folder), args.files):
        for budget in args.budgets:
            for memory in memories:
                row = {"tool": args.side, "file": path.name, "budget": float(budget)}
                row |= {} if memory is None else {"memory": memory, "seed": args.seed}
                row |= {"workers": args.workers} if args.side == "fsc" else {}
                if key(row) in done and not args.again:
                    continue
                if args.side == "sarsop":
                    row |= run_sarsop(args.pomdpsol, path, budget, args.sarsop_memory)
                elif args.side == "fsc":
                    row |= run_fsc(path, memory, budget, args.seed, args.workers)
                else:
                    row |= run_paynt(path, memory, budget)
                store(cache, row)
                print(json.dumps({k: v for k, v in row.items() if k != "curve"}), flush=True)


# ---------------------------------------------------------------------------------------------------- the report


def cell(row: dict | None, name: str = "value") -> str:
    if row is None:
        return ""
    if row.get("absent"):
        return "absent"
    if row.get(name) is None:
        return "failed"
    notes = [f"{row['cpu_seconds']:.0f}"] if row.get("cpu_seconds") is not None else []
    notes += ["converged"] if "precision reached" in row.get("stopped", "") else []
    notes += ["killed by the wall-clock guard"] if row.get("killed") else []
    return f"{row[name]:.5g}" + (f" ({', '.join(notes)})" if notes else "")


def table(rows: list[dict], sarsop_present: bool) -> str:
    """The markdown table: file x budget -> SARSOP lower, upper (CPU s), fsc per memory (CPU s), PAYNT per memory."""
    memories = sorted({(r["memory"], r.get("workers", 1)) for r in rows if r["tool"] == "fsc"}, key=lambda m: (len(m[0]), m))
    paynts = sorted({r["memory"] for r in rows if r["tool"] == "paynt"}, key=lambda m: (len(m), m))
    head = ["file", "budget (s)", "SARSOP lower (CPU s)", "SARSOP upper"]
    head += [f"fsc {m}" + (f", {w} workers" if w != 1 else "") + " (CPU s)" for m, w in memories]
    head += [f"PAYNT {m}" for m in paynts]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in sorted({r["file"] for r in rows}, key=str.lower):
        for budget in sorted({float(r["budget"]) for r in rows if r["file"] == name}):

            def find(tool: str, memory: str | None = None, workers: int | None = None, name=name, budget=budget) -> dict | None:
                match = [r for r in rows if (r["tool"], r["file"], float(r["budget"]), r.get("memory")) == (tool, name, budget, memory)
                         and (workers is None or r.get("workers", 1) == workers)]  # fmt: skip
                return match[-1] if match else None

            sarsop = find("sarsop")
            lower = cell(sarsop, "lower") if sarsop is not None else "" if sarsop_present else "absent"
            upper = "" if sarsop is None else "failed" if sarsop.get("upper") is None else f"{sarsop['upper']:.5g}"
            cells = [name, f"{budget:g}", lower, upper] + [cell(find("fsc", m, w)) for m, w in memories] + [cell(find("paynt", m), "value") for m in paynts]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: list[dict], out: Path) -> None:
    """Value against CPU seconds, one panel per file: SARSOP's lower and upper bounds (its longest run's curve and
    each budget's end), fsc's value per memory and PAYNT's at each budget."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    names = sorted({r["file"] for r in rows if r.get("lower", r.get("value")) is not None}, key=str.lower)  # files with something to draw
    if not names:
        return
    columns = min(4, len(names))
    fig, axes = plt.subplots(-(-len(names) // columns), columns, figsize=(3.4 * columns, 2.8 * -(-len(names) // columns)), squeeze=False)
    for ax in axes.flat[len(names) :]:
        ax.axis("off")
    for ax, name in zip(axes.flat, names, strict=False):
        mine = [r for r in rows if r["file"] == name]
        sarsop = sorted((r for r in mine if r["tool"] == "sarsop" and r.get("lower") is not None), key=lambda r: r["budget"])
        if sarsop:
            curve = [point for point in sarsop[-1].get("curve", []) if point[0] > 0]
            if curve:
                ax.plot([p[0] for p in curve], [p[1] for p in curve], color="C0", lw=0.8, alpha=0.6)
            ax.plot([r["cpu_seconds"] for r in sarsop], [r["lower"] for r in sarsop], "o-", color="C0", ms=4, label="SARSOP lower")
            ax.plot([r["cpu_seconds"] for r in sarsop], [r["upper"] for r in sarsop], "v--", color="C0", ms=4, lw=0.8, label="SARSOP upper")
        for index, (tool, marker) in enumerate((("fsc", "s-"), ("paynt", "^:"))):
            for number, (memory, workers) in enumerate(sorted({(r["memory"], r.get("workers", 1)) for r in mine if r["tool"] == tool})):
                found = sorted((r for r in mine if (r["tool"], r.get("memory"), r.get("workers", 1)) == (tool, memory, workers) and r.get("value") is not None),
                               key=lambda r: r["budget"])  # fmt: skip
                if found:
                    label = f"{tool} {memory}" + (f" x{workers}" if workers != 1 else "")
                    ax.plot([r["cpu_seconds"] for r in found], [r["value"] for r in found], marker, color=f"C{1 + 3 * index + number}", ms=4, label=label)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("CPU seconds", fontsize=8)
        ax.tick_params(labelsize=7)
    handles = {label: handle for ax in axes.flat for handle, label in zip(*ax.get_legend_handles_labels(), strict=True)}
    fig.legend(handles.values(), handles.keys(), loc="lower right", fontsize=7)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sides = p.add_subparsers(dest="side", required=True)
    for side, text in (("sarsop", "run SARSOP"), ("fsc", "run fsc solve"), ("paynt", "run PAYNT (if installed)")):
        s = sides.add_parser(side, help=text)
        s.add_argument("folder", help="a folder of .POMDP / .pomdp / .pomdpx files")
        s.add_argument("--files", default=None, help="comma-separated file names in the folder (default every file)")
        s.add_argument("--budgets", type=float, nargs="+", default=[10.0, 60.0, 300.0], help="CPU seconds (default 10 60 300)")
        s.add_argument("--cache", required=True, help="the JSON file of rows (read, then added to)")
        s.add_argument("--again", action="store_true", help="run the cases already in the cache again")
        if side == "sarsop":
            s.add_argument("--pomdpsol", default=None, help="SARSOP's pomdpsol binary")
            s.add_argument("--sarsop-memory", type=int, default=None, metavar="MB", help="SARSOP's --memory limit (default none)")
        else:
            s.add_argument("--memory", nargs="+", default=["ram:8"], help="memories (default ram:8)")
            s.add_argument("--seed", type=int, default=0)
            s.add_argument("--workers", type=int, default=1, help="fsc solve --workers (default 1: one core, as SARSOP)")
    r = sides.add_parser("report", help="the markdown table and the plot")
    r.add_argument("--cache", required=True)
    r.add_argument("--pomdpsol", default=None, help="SARSOP's binary: without it and without SARSOP rows, its columns say 'absent'")
    r.add_argument("--plot", default=None, help="write the plot (PNG) here")
    r.add_argument("--out", default=None, help="write the table (markdown) here as well as printing it")
    args = p.parse_args()
    if args.side != "report":
        run_side(args)
        return
    rows = load(Path(args.cache))
    present = any(row["tool"] == "sarsop" for row in rows) or (args.pomdpsol is not None and os.access(args.pomdpsol, os.X_OK))
    text = table(rows, sarsop_present=present)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    if args.plot:
        plot(rows, Path(args.plot))


if __name__ == "__main__":
    main()
