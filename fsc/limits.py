"""Sizes nobody can afford, refused before anything is allocated.

Estimates are computed from the arguments alone (exact integer arithmetic, stopping as soon as the limit is
passed, so absurd sizes cost nothing) and compared with a fixed limit; the error names the option, the
estimate and the limit.
"""

from __future__ import annotations

import argparse
import os

from fsc.errors import InputError

__all__ = [
    "MAX_NODES",
    "MAX_TABLE_ENTRIES",
    "MAX_THREADS",
    "MAX_WALKERS",
    "MAX_WORKERS",
    "check_memento_nodes",
    "check_table_entries",
    "memento_nodes",
    "seed_arg",
    "threads_arg",
    "walkers_arg",
    "workers_arg",
]

#: The largest memory (number of nodes) any architecture may have. A policy alone holds ``N * C`` float64
#: logits and every engine several vectors of length ``N * states`` (the iterative engine keeps 60 of them):
#: ``memento:10`` (1.4 million nodes) is the largest Memento allowed; ``memento:11`` (5.6 million) needs more
#: than 8 GB to evaluate and is refused.
MAX_NODES = 2**22

#: The largest node-by-choice table (``N * C`` entries): a float64 copy is 512 MB. ``ram:1000`` has 10 million
#: entries; ``ram:3000`` (90 million) is refused.
MAX_TABLE_ENTRIES = 2**26

#: Torch threads and pool workers beyond these are refused (the machine cannot use them; torch crashes on
#: 100,000 threads, and 1,000,000 forked workers bring any machine down).
MAX_THREADS = 256
MAX_WORKERS = 256

#: Seeds are stored as signed 64-bit integers by torch and in run files.
MAX_SEED = 2**63 - 1


def memento_nodes(m: int, symbols: int, *, stop_above: int | None = None) -> int:
    """``N = sum_{l=0}^m symbols**l`` (paper Definition 3.2), or the first partial sum above ``stop_above``."""
    total, term = 0, 1
    for _ in range(m + 1):
        total += term
        if stop_above is not None and total > stop_above:
            return total
        term *= symbols
    return total


def check_memento_nodes(m: int, arms: int, observations: int, *, limit: int = MAX_NODES) -> None:
    """Raise ``ValueError`` when ``memento:m`` would have more than ``limit`` nodes."""
    if memento_nodes(m, arms * observations, stop_above=limit) <= limit:
        return
    # Past the limit: give the exact count when it is cheap to write down, a bound otherwise.
    shown = f"{memento_nodes(m, arms * observations):,}" if m <= 64 else f"more than {limit:,}"
    raise InputError(
        f"memory memento:{m} would have {shown} nodes (estimate), over the limit of {limit:,} nodes; "
        "choose a smaller m"
    )


def check_table_entries(name: str, nodes: int, choices: int, *, limit: int = MAX_TABLE_ENTRIES) -> None:
    """Raise ``ValueError`` when the ``nodes x choices`` tables of memory ``name`` exceed ``limit`` entries."""
    if nodes > MAX_NODES or nodes * choices > limit:
        raise InputError(
            f"memory {name} would have {nodes:,} nodes x {choices:,} choices = {nodes * choices:,} table entries "
            f"(estimate {8 * nodes * choices / 2**30:.3g} GiB per float64 table), over the limit of {limit:,} "
            f"entries; choose a smaller size"
        )


def machine_memory_bytes() -> int:
    """Physical memory of this machine (bytes), or 4 GiB when the system does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 4 * 2**30


def _bounded_int(text: str, low: int, high: int, why: str) -> int:
    text = text.strip()
    if len(text) > 40:  # int() of a 10**5-digit string is slow and the value is out of range anyway
        raise argparse.ArgumentTypeError(f"expected an integer in [{low}, {high}], got {text[:20]!r}... ({len(text)} characters)")
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer in [{low}, {high}], got {text!r}") from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"expected an integer in [{low}, {high}]{why}, got {text!r}")
    return value


def seed_arg(text: str) -> int:
    """``--seed``: an integer in ``[0, 2**63 - 1]``."""
    return _bounded_int(text, 0, MAX_SEED, " (a signed 64-bit seed)")


def threads_arg(text: str) -> int:
    """``--threads``: an integer in ``[1, MAX_THREADS]``."""
    return _bounded_int(text, 1, MAX_THREADS, f" (this machine has {os.cpu_count()} CPUs)")


def workers_arg(text: str) -> int:
    """``--workers``: an integer in ``[1, MAX_WORKERS]``."""
    return _bounded_int(text, 1, MAX_WORKERS, f" (this machine has {os.cpu_count()} CPUs)")


#: Most Monte Carlo walkers a simulation runs side by side (their state is allocated at once, a few hundred
#: bytes each).
MAX_WALKERS = 10**7


def walkers_arg(text: str) -> int:
    """``--walkers``: an integer in ``[1, MAX_WALKERS]``."""
    return _bounded_int(text, 1, MAX_WALKERS, " (their state is allocated at once)")


#: ``closed-form --M``: the closed forms sum over the ``M`` memory states; about 2.3 microseconds per state
#: here, so the limit 10**6 takes 2.3 s.
MAX_CLOSED_FORM_M = 10**6
SECONDS_PER_CLOSED_FORM_STATE = 2.3e-6


def closed_form_M_arg(text: str) -> int:
    """``closed-form --M``: an integer in ``[1, MAX_CLOSED_FORM_M]``."""
    return _bounded_int(
        text, 1, MAX_CLOSED_FORM_M, f" (work grows like M: about {SECONDS_PER_CLOSED_FORM_STATE * 1e6:.1f} s per million)"
    )


#: ``necklace``: building the necklace graph takes about ``2**m * 8e-6`` seconds and ``2**m * 300`` bytes here
#: (measured: m = 18, 19, 20 take 1.8, 4.0, 8.4 s and m = 20 uses 300 MB beyond the interpreter).
NECKLACE_SECONDS_PER_WORD = 8e-6
NECKLACE_BYTES_PER_WORD = 300


def check_necklace_work(m: int, time_budget: float) -> None:
    """Raise ``ValueError`` when building the graph of ``--m`` would not fit ``--time-budget`` or the memory."""
    if m > 64:
        raise InputError(f"--m {m} is over the limit of 64 (2**m binary words)")
    seconds = 2**m * NECKLACE_SECONDS_PER_WORD
    if seconds > time_budget:
        raise InputError(
            f"--m {m}: building the necklace graph takes about {seconds:.3g} s (estimate), more than "
            f"--time-budget {time_budget:g}; give a larger --time-budget or a smaller --m"
        )
    need, have = 2**m * NECKLACE_BYTES_PER_WORD, machine_memory_bytes() // 2
    if need > have:
        raise InputError(
            f"--m {m}: the necklace graph needs about {need / 2**30:.3g} GiB (estimate), "
            f"over the limit of {have / 2**30:.3g} GiB (half this machine's memory)"
        )
