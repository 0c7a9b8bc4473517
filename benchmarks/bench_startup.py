"""Start-up time of the ``fsc`` command: what a user waits for before anything happens.

Prints the seconds of ``fsc --help``, ``fsc pomdp FILE``, ``fsc closed-form ccp``, a first and a second
``fsc train`` of two steps and ``fsc evaluate`` (kernels cached by then), beside ``python -c pass`` measured in the same run (so load on
the machine shows in both).  Each command but ``train`` is timed ``--repeats`` times and the best is kept.

Each checkout starts with an empty numba cache (``NUMBA_CACHE_DIR`` pointing to a new folder: a fresh
installation).  Where its Makefile compiles the kernels at set-up (the ``.kernels`` step of ``make setup``),
those commands run first and are timed on their own line; then the first ``fsc train`` and a second one.
``--repo A B`` times several checkouts in the same run, one column each (two versions under the same load);
``python -c pass`` is the floor, and ``/ pass`` each time over it.

    python benchmarks/bench_startup.py [--repo PATH ...] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
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

TARGETS = {"fsc --help": 0.3, "fsc pomdp FILE": 0.6, "fsc closed-form ccp": 0.6}


def seconds(command: list[str], env: dict, repeats: int) -> float:
    """The best wall time of ``repeats`` runs of ``command``, which must succeed.  They run in the folder of the
    numba cache, so that ``python -m`` finds the package on ``PYTHONPATH``, not in the current directory."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=Path(env["NUMBA_CACHE_DIR"]).parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        best = min(best, time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()}")
    return best


def warm_up_commands(repo: Path, work: Path) -> list[list[str]]:
    """The commands ``make setup`` of ``repo`` runs to fill numba's cache (its ``.kernels`` recipe), as
    ``python -m fsc.cli`` lines writing under ``work``; none when its Makefile has no such step."""
    makefile = (repo / "Makefile").read_text() if (repo / "Makefile").is_file() else ""
    recipe = makefile.partition("$(VENV)/.kernels:")[2].split("\n\n")[0]
    found = []
    for line in recipe.splitlines()[1:]:
        words = line.strip().replace("$(VENV)", str(work)).split()
        if words[:1] == ["$(BIN)/fsc"]:
            found.append([sys.executable, "-m", "fsc.cli", *[w for w in words[1:] if not w.startswith(">")]])
    return found


def commands(repo: Path, work: Path) -> tuple[dict, dict[str, list[list[str]]]]:
    """The environment and the commands of each line of the table, for the checkout ``repo`` working in ``work``."""
    work.mkdir()
    (work / "tiger.POMDP").write_text(TIGER)
    env = {**os.environ, "PYTHONPATH": str(repo), "NUMBA_CACHE_DIR": str(work / "numba-cache"), "OMP_NUM_THREADS": "1"}
    fsc = [sys.executable, "-m", "fsc.cli"]
    train = [*fsc, "train", "--mu", "0.1", "--memory", "ram:2", "--init", "uniform", "--max-steps", "2", "--quiet"]
    return env, {
        "python -c pass": [[sys.executable, "-c", "pass"]],
        "fsc --help": [[*fsc, "--help"]],
        "fsc pomdp FILE": [[*fsc, "pomdp", str(work / "tiger.POMDP")]],
        "fsc closed-form ccp": [[*fsc, "closed-form", "ccp", "--M", "4"]],
        "make setup: compiling the kernels": warm_up_commands(repo, work),
        "first fsc train after make setup": [[*train, "--out", str(work / "run1")]],
        "second fsc train": [[*train, "--out", str(work / "run2")]],
        "fsc evaluate": [[*fsc, "evaluate", "--pomdp", str(work / "tiger.POMDP"), "--memory", "ram:2"]],
    }


#: The lines timed once: each changes the numba cache the next one finds.
ONCE = ("make setup: compiling the kernels", "first fsc train after make setup", "second fsc train")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, nargs="+", default=[ROOT], help="the checkouts to time, one column each (default: this one)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each command; the best is kept (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        setups = [commands(repo.resolve(), Path(tmp) / f"repo{k}") for k, repo in enumerate(args.repo)]
        columns: list[dict[str, float]] = [{} for _ in setups]
        for name in setups[0][1]:  # command by command, every checkout in turn: the same load on each
            for column, (env, lines) in zip(columns, setups, strict=True):
                repeats = 1 if name in ONCE else args.repeats
                column[name] = sum(seconds(line, env, repeats) for line in lines[name]) if lines[name] else float("nan")
    for k, repo in enumerate(args.repo):
        print(f"[{k}] {repo.resolve()}")
    print(f"{'command':36s} " + " ".join(f"{f'[{k}] s':>8s} {'/ pass':>7s}" for k in range(len(columns))) + f" {'target':>7s}")
    for name in columns[0]:
        target = f"{TARGETS[name]:.1f}" if name in TARGETS else ""
        cells = " ".join(f"{column[name]:8.3f} {column[name] / column['python -c pass']:7.1f}" for column in columns)
        print(f"{name:36s} {cells} {target:>7s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
