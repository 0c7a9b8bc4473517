"""Start-up time of the ``fsc`` command: what a user waits for before anything happens.

Prints, beside ``python -c pass`` measured in the same run (so load on the machine shows in both), the seconds
of ``fsc --help``, ``fsc pomdp FILE``, ``fsc closed-form ccp``, and of the commands of issue 49 on Tiger
(``tiger.95.POMDP``, written here): ``fsc evaluate`` of RAM 2's uniform policy, ``fsc simulate`` of it for 10^4
steps, ``fsc draw`` of a saved policy, ``fsc solve --memory ram:3 --max-seconds 10`` (which must reach the
optimum 19.3714) and ``fsc train --memory ram:2 --init uniform --max-steps 100``.  Each is timed ``--repeats``
times and the median kept; the ``beyond pass`` column is that median less ``python -c pass``'s, the figure the
targets are set in.

Each checkout starts with an empty numba cache (``NUMBA_CACHE_DIR`` pointing to a new folder: a fresh
installation).  Where its Makefile compiles the kernels at set-up (the ``.kernels`` step of ``make setup``),
those commands run first and are timed on their own line; then each command of issue 49 runs once (``first
after make setup``) before its timed runs, whose median is its ``second`` run: the ratio says whether a command
still compiled something at first use.  Last, the first ``fsc sweep examples/sweeps/fig2-small.json`` after
the warm-up (issue 49: within 90 s on 2 cores; ``--workers``, default 2), once, and a second sweep of it into
a new folder: their ratio says whether the sweep's pool workers compiled anything (``--no-sweep`` skips both).
``--repo A B`` times several checkouts in the same run, one column each (two versions under the same load).

    python benchmarks/bench_startup.py [--repo PATH ...] [--repeats 5] [--workers 2] [--no-sweep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: A two-state Tiger world in Cassandra's format, written for ``fsc pomdp`` and ``fsc evaluate --pomdp``.
TIGER = """\
discount: 0.95
values: reward
states: tiger-left tiger-right
actions: listen open-left open-right
observations: tiger-left tiger-right
start: uniform
T: listen
identity
T: open-left
uniform
T: open-right
uniform
O: listen
0.85 0.15
0.15 0.85
O: open-left
uniform
O: open-right
uniform
R: listen : * : * : * -1
R: open-left : tiger-left : * : * -100
R: open-left : tiger-right : * : * 10
R: open-right : tiger-left : * : * 10
R: open-right : tiger-right : * : * -100
"""

#: Seconds beyond ``python -c pass`` each command should take (issue 49 for the last five).
TARGETS = {
    "fsc --help": 0.3, "fsc pomdp FILE": 0.6, "fsc closed-form ccp": 0.6,
    "evaluate tiger ram:2 uniform": 0.6, "simulate 1e4 steps": 0.8, "draw a saved policy": 1.0,
    "solve tiger ram:3 10 s": 4.0, "train ram:2 100 steps": 1.5, "sweep fig2-small": 90.0,
}  # fmt: skip
#: The commands of issue 49, each run once right after the warm-up (its first run) before its timed runs.
ISSUE = ("evaluate tiger ram:2 uniform", "simulate 1e4 steps", "draw a saved policy", "solve tiger ram:3 10 s", "train ram:2 100 steps")
#: The optimum ``fsc solve`` must reach on Tiger with RAM 3 (its two-state bound, fsc.bounds.two_state_bound, which SARSOP's bounds bracket).
TIGER_OPTIMUM = 19.3714


def run(command: list[str], env: dict) -> tuple[float, str]:
    """The wall time and standard output of ``command``, which must succeed.  It runs in the folder of the numba
    cache, so that ``python -m`` finds the package on ``PYTHONPATH``, not in the current directory."""
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=Path(env["NUMBA_CACHE_DIR"]).parent, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()}")
    return seconds, done.stdout


def seconds(commands: list[list[str]], env: dict, repeats: int) -> float:
    """The median over ``repeats`` runs of the wall time of ``commands`` run in turn."""
    return statistics.median(sum(run(command, env)[0] for command in commands) for _ in range(repeats))


def warm_up_commands(repo: Path, work: Path) -> list[list[str]]:
    """The commands ``make setup`` of ``repo`` runs to fill numba's cache (its ``.kernels`` recipe: ``$(BIN)/fsc``
    lines as ``python -m fsc.cli`` writing under ``work``, ``$(BIN)/python`` lines as they are); none when its
    Makefile has no such step."""
    makefile = (repo / "Makefile").read_text() if (repo / "Makefile").is_file() else ""
    recipe = makefile.partition("$(VENV)/.kernels:")[2].split("\n\n")[0]
    found = []
    for line in recipe.splitlines()[1:]:
        words = [w for w in line.strip().replace("$(VENV)", str(work)).split() if not w.startswith(">")]
        if words[:1] == ["$(BIN)/fsc"]:
            found.append([sys.executable, "-m", "fsc.cli", *words[1:]])
        elif words[:1] == ["$(BIN)/python"]:  # its folders (compileall's) are the checkout's
            found.append([sys.executable, *(str(repo / w) if (repo / w).is_dir() else w for w in words[1:])])
    return found


#: The sweep of issue 49's first-run figure: run once after the warm-up, then once more into a new folder.
SWEEP = "sweep fig2-small"


def commands(repo: Path, work: Path, workers: int = 2) -> tuple[dict, dict[str, list[list[str]]]]:
    """The environment and the commands of each line of the table, for the checkout ``repo`` working in ``work``
    (the sweep on ``workers`` processes)."""
    work.mkdir()
    tiger = work / "tiger.POMDP"
    tiger.write_text(TIGER)
    env = {**os.environ, "PYTHONPATH": str(repo), "NUMBA_CACHE_DIR": str(work / "numba-cache"), "OMP_NUM_THREADS": "1"}
    fsc = [sys.executable, "-m", "fsc.cli"]
    train = [*fsc, "train", "--mu", "0.1", "--memory", "ram:2", "--init", "uniform", "--quiet"]
    on_tiger = ["--pomdp", str(tiger), "--memory", "ram:2"]
    policy = work / "policy.npz"
    save = f"import fsc; fsc.Policy.random(fsc.RAM(2, arms=3, observations=2), generator=0).save({str(policy)!r})"
    return env, {
        "python -c pass": [[sys.executable, "-c", "pass"]],
        "fsc --help": [[*fsc, "--help"]],
        "fsc pomdp FILE": [[*fsc, "pomdp", str(tiger)]],
        "fsc closed-form ccp": [[*fsc, "closed-form", "ccp", "--M", "4"]],
        "make setup: compiling the kernels": [*warm_up_commands(repo, work), [sys.executable, "-c", save]],
        "evaluate tiger ram:2 uniform": [[*fsc, "evaluate", *on_tiger, "--policy", "uniform"]],
        "simulate 1e4 steps": [[*fsc, "simulate", *on_tiger, "--policy", "uniform", "--steps", "10000"]],
        "draw a saved policy": [[*fsc, "draw", "--pomdp", str(tiger), "--policy", str(policy), "--out", str(work / "graph.svg")]],
        "solve tiger ram:3 10 s": [[*fsc, "solve", "--pomdp", str(tiger), "--memory", "ram:3", "--max-seconds", "10", "--json", "--quiet"]],
        "train ram:2 100 steps": [[*train, "--max-steps", "100", "--out", str(work / "run"), "--checkpoint-seconds", "1e9"]],
        SWEEP: [[*fsc, "sweep", str(repo / "examples" / "sweeps" / "fig2-small.json"), "--out", str(work / "sweep"), "--workers", str(workers), "--quiet"]],
    }


def check_solve(command: list[str], env: dict) -> float:
    """The value ``fsc solve`` reaches (it must be Tiger's optimum)."""
    _, out = run(command, env)
    value = json.loads(out.strip().splitlines()[-1])["value"]
    if round(value, 4) < TIGER_OPTIMUM:
        print(f"warning: fsc solve reached {value}, not {TIGER_OPTIMUM}", file=sys.stderr)
    return value


def time_line(name: str, lines: list[list[str]], env: dict, repeats: int) -> dict[str, float]:
    """The seconds of one line of the table (and for a command of issue 49 its first run, and solve's value)."""
    if not lines:
        return {name: float("nan")}
    if name == "make setup: compiling the kernels":
        return {name: seconds(lines, env, 1)}
    if name == SWEEP:  # the first sweep, then a second one into a new folder (a finished sweep trains nothing)
        again = [[word if word != lines[0][lines[0].index("--out") + 1] else f"{word}-again" for word in lines[0]]]
        return {f"{name} (first)": seconds(lines, env, 1), name: seconds(again, env, 1)}
    out = {}
    if name in ISSUE:
        out[f"{name} (first)"] = seconds(lines, env, 1)
    if name.startswith("train"):  # a new run directory each time: a finished run is not resumed
        times = []
        for _ in range(repeats):
            shutil.rmtree(lines[0][lines[0].index("--out") + 1], ignore_errors=True)
            times.append(run(lines[0], env)[0])
        out[name] = statistics.median(times)
    else:
        out[name] = seconds(lines, env, repeats)
    if name.startswith("solve"):
        out["solve's value"] = check_solve(lines[0], env)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, nargs="+", default=[ROOT], help="the checkouts to time, one column each (default: this one)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each command; the median is kept (default 5)")
    parser.add_argument("--workers", type=int, default=2, help="the fig2-small sweep's pool size (default 2)")
    parser.add_argument("--no-sweep", action="store_true", help="time no fig2-small sweep")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        setups = [commands(repo.resolve(), Path(tmp) / f"repo{k}", args.workers) for k, repo in enumerate(args.repo)]
        if args.no_sweep:
            setups = [(env, {name: lines for name, lines in table.items() if name != SWEEP}) for env, table in setups]
        columns: list[dict[str, float]] = [{} for _ in setups]
        for name in setups[0][1]:  # command by command, every checkout in turn: the same load on each
            for column, (env, lines) in zip(columns, setups, strict=True):
                column |= time_line(name, lines[name], env, args.repeats)
    for k, repo in enumerate(args.repo):
        print(f"[{k}] {repo.resolve()}")
    floor = [column["python -c pass"] for column in columns]
    print(f"{'command':40s} " + " ".join(f"{f'[{k}] s':>8s} {'beyond':>7s}" for k in range(len(columns))) + f" {'target':>7s}")
    for name in columns[0]:
        if name == "solve's value":
            print(f"{name:40s} " + " ".join(f"{column[name]:16.4f}" for column in columns))
            continue
        base = name.removesuffix(" (first)")
        shown = base != name if base == SWEEP else base == name  # the sweep's target is its first run's
        target = f"{TARGETS[base]:.1f}" if base in TARGETS and shown else ""
        cells = " ".join(f"{column[name]:8.3f} {column[name] - pass_:7.3f}" for column, pass_ in zip(columns, floor, strict=True))
        print(f"{name:40s} {cells} {target:>7s}")
    for name in (*ISSUE, *(() if args.no_sweep else (SWEEP,))):
        ratios = " ".join(f"{column[f'{name} (first)'] / column[name]:5.2f}" for column in columns)
        print(f"first / second run: {name:30s} {ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
