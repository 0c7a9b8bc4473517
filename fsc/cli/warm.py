"""Compile every kernel the commands run into numba's on-disk cache, once, so that no command compiles at first use.

``make setup`` runs ``python -m fsc.cli.warm`` (the ``.kernels`` step of the Makefile).  numba compiles a kernel
once for each combination of argument types it is called with, so the warm-up runs the commands themselves, in
one process, with each shape of arguments they pass: ``fsc train`` by the flow (to a step count, and to a time
``--until-t`` as a sweep's points run), by Rosenbrock and by Adam; a sweep's pool worker's own warm-up (which
then forks its trainers); ``fsc evaluate`` with and without ``--grad``; ``fsc solve`` with every method for a
round; each on the two engines ``auto`` chooses on small worlds (dense and choices).  A command run afterwards
loads the kernels from the cache (``NUMBA_DEBUG_CACHE=1`` shows it: ``data loaded``, never ``data saved``;
``tests/fsc/test_startup.py``).
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

from fsc.cli import main

__all__ = ["COMMANDS", "warm_up"]

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


def warm_up(quiet: bool = False) -> int:
    """Run :data:`COMMANDS` on each world and engine, and a sweep's pool worker's warm-up; return 0, or the
    first failing command's status (said on standard error)."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fsc-warm-") as tmp:
        runs = 0
        for world in WORLDS:
            for engine in ENGINES:
                for command in COMMANDS:
                    if world[1] == "two-hypothesis" and "memento:3" in command:
                        continue
                    if world[1] != "two-hypothesis" and "near-ccp" in command:  # a policy of the two-hypothesis task
                        continue
                    runs += 1
                    argv = [word if word != "OUT" else str(Path(tmp) / f"run{runs}") for word in command]
                    argv += [*world, "--engine", engine]
                    with contextlib.redirect_stdout(io.StringIO()):
                        status = main(argv)
                    if status != 0:
                        print(f"fsc warm-up: failed: fsc {' '.join(argv)}", file=sys.stderr)
                        return status
        from fsc.sweep.worker import _warm_trainer  # what a pool worker runs before it forks its trainers

        _warm_trainer()
    if not quiet:
        print(f"fsc warm-up: compiled the kernels of {runs} commands and of a sweep's worker in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(warm_up(quiet="--quiet" in sys.argv[1:]))
