"""Compile every kernel the commands run into numba's on-disk cache, once, so that no command compiles at first use.

``make setup`` runs ``python -m fsc.cli.warm`` (the ``.kernels`` step of the Makefile).  numba compiles a kernel
once for each combination of argument types it is called with, so the warm-up runs the commands themselves, with
each shape of arguments they pass: ``fsc train`` by the flow (to a step count, and to a time ``--until-t`` as a
sweep's points run), by Rosenbrock and by Adam; a sweep's pool worker's own warm-up (which then forks its
trainers); ``fsc evaluate`` with and without ``--grad``; ``fsc solve`` with every method for a round; each on the
two engines ``auto`` chooses on small worlds (dense and choices).  A command run afterwards loads the kernels from
the cache (``NUMBA_DEBUG_CACHE=1`` shows it: ``data loaded``, never ``data saved``).

The two engines' commands compile different signatures, so the warm-up runs them in two processes at once (one
per core, :data:`PARTS`): this process runs one part and a child process the other.  numba saves a signature by
reading its kernel's index of saved signatures, adding its own and writing the index back; two processes saving
two signatures of one kernel at once would lose one of them (or give both the same data file), so each process
here saves one signature at a time across processes (:func:`one_cache_writer_at_a_time`).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fsc.cli import main

__all__ = ["COMMANDS", "PARTS", "one_cache_writer_at_a_time", "warm_up"]

#: The small worlds the commands run on: the two-hypothesis task (dense on RAM) and Tiger (choices).
WORLDS = (("--world", "two-hypothesis"), ("--world", "tiger"))
#: What each command is run with, on each world and each engine (``OUT``: a new folder each time).
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("train", "--memory", "ram:2", "--init", "uniform", "--max-steps", "3", "--rows-per-decade", "5", "--quiet", "--out", "OUT"),
    ("train", "--memory", "ram:2", "--init", "near-ccp", "--until-t", "2", "--convention", "paper", "--quiet", "--out", "OUT"),
    ("train", "--memory", "ram:2", "--init", "uniform", "--max-steps", "3", "--optimizer", "rosenbrock", "--quiet", "--out", "OUT"),
    ("train", "--memory", "ram:2", "--init", "random", "--max-steps", "3", "--optimizer", "adam", "--quiet", "--out", "OUT"),
    ("evaluate", "--memory", "ram:2", "--policy", "random"),
    ("evaluate", "--memory", "ram:2", "--policy", "random", "--grad"),
    ("evaluate", "--memory", "memento:3", "--policy", "random", "--grad"),
    ("solve", "--memory", "ram:2", "--max-seconds", "30", "--rounds", "1", "--mirror-steps", "3", "--adam-steps", "3", "--em-steps", "3",
     "--greedy-tries", "2", "--greedy-steps", "3", "--shaped-steps", "3", "--quiet"),
)  # fmt: skip
ENGINES = ("dense", "choices")
#: What each of the two processes runs: the commands on one engine (both worlds), and for the dense part a sweep's
#: pool worker's warm-up (both engines' flow steps; the two parts take about as long).  The first runs here.
PARTS = {"choices": ("choices", False), "dense": ("dense", True)}


def one_cache_writer_at_a_time() -> None:
    """Make numba's cache saves in this process wait for those of other processes doing the same (a lock on the
    cache folder held while a signature's data file and its kernel's index are written).  Idempotent."""
    import fcntl

    from numba.core import caching

    save = caching.IndexDataCacheFile.save
    if getattr(save, "one_at_a_time", False):
        return

    def locked_save(cache_file, key, data):
        folder = os.open(cache_file._cache_path, os.O_RDONLY)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)
            save(cache_file, key, data)
        finally:
            os.close(folder)  # releases the lock

    locked_save.one_at_a_time = True
    caching.IndexDataCacheFile.save = locked_save


def _runs(engine: str, out: Path) -> list[list[str]]:
    """The command lines of :data:`COMMANDS` on each world with ``engine``, each writing into a new folder of ``out``."""
    runs = []
    for world in WORLDS:
        for command in COMMANDS:
            if world[1] == "two-hypothesis" and "memento:3" in command:
                continue
            if world[1] != "two-hypothesis" and "near-ccp" in command:  # a policy of the two-hypothesis task
                continue
            folder = str(out / f"{engine}{len(runs)}")
            runs.append([*(word if word != "OUT" else folder for word in command), *world, "--engine", engine])
    return runs


def warm_part(part: str) -> int:
    """Run one of :data:`PARTS`; return 0, or the first failing command's status (said on standard error)."""
    one_cache_writer_at_a_time()
    engine, worker = PARTS[part]
    with tempfile.TemporaryDirectory(prefix="fsc-warm-") as tmp:
        for argv in _runs(engine, Path(tmp)):
            with contextlib.redirect_stdout(io.StringIO()):
                status = main(argv)
            if status != 0:
                print(f"fsc warm-up: failed: fsc {' '.join(argv)}", file=sys.stderr)
                return status
    if worker:
        from fsc.sweep.worker import _warm_trainer  # what a pool worker runs before it forks its trainers

        _warm_trainer()
    return 0


def warm_up(quiet: bool = False) -> int:
    """Run :data:`PARTS` at once, the first here and the others in child processes; return 0, or the first failing
    part's status."""
    start = time.perf_counter()
    first, *others = PARTS
    children = [subprocess.Popen([sys.executable, "-m", "fsc.cli.warm", "--part", part]) for part in others]
    statuses = [warm_part(first), *(child.wait() for child in children)]
    status = next((status for status in statuses if status != 0), 0)
    if not quiet and status == 0:
        runs = sum(len(_runs(engine, Path())) for engine, _ in PARTS.values())
        print(f"fsc warm-up: compiled the kernels of {runs} commands and of a sweep's worker in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return status


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if "--part" in arguments:
        sys.exit(warm_part(arguments[arguments.index("--part") + 1]))
    sys.exit(warm_up(quiet="--quiet" in arguments))
