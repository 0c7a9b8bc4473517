"""Sizes nobody can afford, refused before anything is allocated.

Estimates are computed from the arguments alone (exact integer arithmetic, stopping as soon as the limit is
passed, so absurd sizes cost nothing) and compared with a fixed limit; the error names the option, the
estimate and the limit.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import time

from fsc.errors import InputError

__all__ = [
    "Deadline",
    "MAX_INTEGER_DIGITS",
    "MAX_JSON_POLICY_BYTES",
    "MAX_NODES",
    "MAX_NPZ_BYTES",
    "MAX_NPZ_INFLATED",
    "MAX_POMDP_BYTES",
    "MAX_RECORD_BYTES",
    "MAX_SIMULATE_STEPS",
    "MAX_STEPS",
    "MAX_TABLE_ENTRIES",
    "MIN_RESET",
    "MAX_THREADS",
    "TimeUp",
    "MAX_WALKERS",
    "MAX_WORKERS",
    "bounded_int",
    "check_memento_nodes",
    "check_simulate_steps",
    "check_table_entries",
    "count_text",
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


def check_table_entries(name: str, nodes: int, choices: int, observations: int = 1, *, limit: int = MAX_TABLE_ENTRIES, world: str = "") -> None:
    """Raise ``ValueError`` when a table of memory ``name`` exceeds ``limit`` entries: the ``nodes x choices``
    logits, or the ``nodes x choices x observations`` next-node table (one int64 per entry); ``world``: the sizes
    the memory was built for, said in the message (``300 actions, 300 observations``)."""
    entries = nodes * choices * observations
    if nodes > MAX_NODES or entries > limit:
        per = f" x {count_text(observations)} observations" if observations > 1 else ""
        raise InputError(
            f"memory {name} would have {count_text(nodes)} nodes x {count_text(choices)} choices{per} = {count_text(entries)} "
            f"table entries (estimate {_gib(8 * entries)} GiB per 8-byte table), over the limit of {limit:,} "
            f"entries; choose a smaller size{f' for {world}' if world else ''}"
        )


#: The largest dense world table (``S x A x S`` transitions, ``A x S x O`` observations), in numbers: a float64
#: copy is 2 GiB. Large worlds stay sparse (:class:`fsc.model.pomdp.SparseTable`); only what needs the dense
#: arrays (``fsc simulate``, ``POMDP.transition``) builds them.
MAX_DENSE_WORLD_NUMBERS = 2**28


def check_dense_world(states: int, actions: int, observations: int, *, what: str = "this") -> None:
    """Raise ``ValueError`` when the dense transition table ``S x A x S`` or the dense observation table
    ``A x S x O`` of a world of these sizes would exceed :data:`MAX_DENSE_WORLD_NUMBERS` numbers; ``what``
    names what needs them."""
    check_dense_table("transition", (states, actions, states), what=what)
    check_dense_table("observation", (actions, states, observations), what=what)


def check_dense_table(name: str, shape: tuple[int, ...], *, what: str = "this") -> None:
    """Raise ``ValueError`` when the world's dense table ``name`` of this ``shape`` would exceed
    :data:`MAX_DENSE_WORLD_NUMBERS` numbers."""
    numbers = math.prod(shape)
    if numbers > MAX_DENSE_WORLD_NUMBERS:
        raise InputError(
            f"{what} needs the world's dense {name} table, {' x '.join(count_text(n) for n in shape)} = {count_text(numbers)} numbers "
            f"(estimate {_gib(8 * numbers)} GiB), over the limit of {MAX_DENSE_WORLD_NUMBERS:,}; use a smaller world, or fsc evaluate, "
            f"which keeps it sparse"
        )


def _gib(size: int) -> str:
    return f"{size / 2**30:.3g}" if size < 10**18 else count_text(size // 2**30)


def count_text(n: int) -> str:
    """``n`` with thousands separators, or ``about 10^k`` when it has more than 40 digits (a count of
    thousands of digits is neither readable nor cheap to print)."""
    if n < 10**40:
        return f"{n:,}"
    return f"about 10^{int((n.bit_length() - 1) * 0.30103)}"


#: The smallest reset probability ``r > 0``: ``2**-53`` (about 1.1e-16), the smallest ``r`` for which
#: ``1 - r`` is a float64 below 1 (``1 - 2**-53`` is exact). Below it ``1 - r`` rounds to 1, ``I - (1 - r) P``
#: is exactly singular, and the LU engines fail; ``r = 0`` itself is the undiscounted limit, which
#: ``evaluate`` takes with the engines built for it. Down to this limit every engine computes the gain to
#: about 15 digits (the gain depends on ``r`` only at order ``r``); the value ``gain / r`` is then large.
MIN_RESET = 2.0**-53

#: The most accepted steps of a training run (``--max-steps``, and what a run may reach): ``2**53``, the
#: largest count every reader of the run's files keeps exact (a float64, JSON read by JavaScript), far inside
#: the int64 counters of the compiled kernels.
MAX_STEPS = 2**53

#: The most steps ``simulate`` is expected to take: ``walkers x episodes`` episodes of ``1 / r`` steps each
#: (``--steps`` is a budget; a small ``--reset`` makes every episode long). About a microsecond per step
#: here (10^6 steps in 1 s, 10^7 in 9.6 s, 2.7 x 10^8 in 570 s on a loaded machine): 10^10 is about three hours.
MAX_SIMULATE_STEPS = 10**10

#: The largest files read whole: a ``.POMDP`` text, a JSON policy, a run's or a sweep's JSON.
MAX_POMDP_BYTES = 2**26
MAX_JSON_POLICY_BYTES = 2**26
MAX_RECORD_BYTES = 2**24

#: A ``.npz`` (a policy, a checkpoint): the file, and the bytes its members declare once inflated (the
#: largest table is ``MAX_TABLE_ENTRIES`` float64 = 512 MiB; a checkpoint holds several).
MAX_NPZ_BYTES = 2**32
MAX_NPZ_INFLATED = 2**33

#: Digits of an integer in a ``.POMDP`` header or index: a size of 10^12 is far past every table limit.
MAX_INTEGER_DIGITS = 12


def check_simulate_steps(steps: int, walkers: int, reset: float, *, prefix: str = "") -> int:
    """The number of steps ``simulate`` is expected to take (``walkers`` walkers, each running
    ``max(1, round(steps * reset / walkers))`` episodes of mean length ``1 / reset``), or ``ValueError`` naming
    ``steps``, ``walkers`` and ``reset`` (after ``prefix``: ``--`` on the command line) when it is over
    :data:`MAX_SIMULATE_STEPS`."""
    episodes = max(1, round(steps * reset / walkers)) if steps <= MAX_SIMULATE_STEPS else steps
    expected = walkers * episodes / reset
    if expected > MAX_SIMULATE_STEPS:
        raise InputError(
            f"simulate would take about {expected:.3g} steps ({walkers} walkers x {episodes:.3g} episodes of 1/reset = "
            f"{1 / reset:.3g} steps), over the limit of {MAX_SIMULATE_STEPS:.0e} (about 1 us each); give fewer {prefix}steps "
            f"or {prefix}walkers, or a larger {prefix}reset"
        )
    return int(expected)


def machine_memory_bytes() -> int:
    """Physical memory of this machine (bytes), or 4 GiB when the system does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 4 * 2**30


def bounded_int(text: str, low: int, high: int, why: str = "") -> int:
    """Command-line type: an integer in ``[low, high]``; a text of more than 40 characters is refused unread."""
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
    return bounded_int(text, 0, MAX_SEED, " (a signed 64-bit seed)")


def threads_arg(text: str) -> int:
    """``--threads``: an integer in ``[1, MAX_THREADS]``."""
    return bounded_int(text, 1, MAX_THREADS, f" (this machine has {os.cpu_count()} CPUs)")


def workers_arg(text: str) -> int:
    """``--workers``: an integer in ``[1, MAX_WORKERS]``."""
    return bounded_int(text, 1, MAX_WORKERS, f" (this machine has {os.cpu_count()} CPUs)")


#: Most Monte Carlo walkers a simulation runs side by side (their state is allocated at once, a few hundred
#: bytes each).
MAX_WALKERS = 10**7


def walkers_arg(text: str) -> int:
    """``--walkers``: an integer in ``[1, MAX_WALKERS]``."""
    return bounded_int(text, 1, MAX_WALKERS, " (their state is allocated at once)")


#: ``closed-form --M``: the closed forms sum over the ``M`` memory states; about 2.3 microseconds per state
#: here, so the limit 10**6 takes 2.3 s.
MAX_CLOSED_FORM_M = 10**6
SECONDS_PER_CLOSED_FORM_STATE = 2.3e-6


def closed_form_M_arg(text: str) -> int:
    """``closed-form --M``: an integer in ``[1, MAX_CLOSED_FORM_M]``."""
    return bounded_int(
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


class TimeUp(Exception):
    """A :class:`Deadline` passed during ``what`` (:meth:`Deadline.check`): the work stops, and whoever set the
    deadline keeps the best it has (not an input error: nothing was wrong with the input)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"the time limit passed during {what}")
        self.what = what


class Deadline:
    """One point in time that every stage of a call consults: set-up, bounds, solves, methods.

    Started when the work starts (:meth:`after` for a limit in seconds from now, or from a clock reading
    taken earlier, such as the start of a command), it says how much time is left (:meth:`remaining`),
    whether it has passed (:meth:`expired`), and raises :class:`TimeUp` when it has (:meth:`check`).
    :meth:`within` gives an earlier deadline for one stage that shares what was cut short
    (:attr:`cut`: the stages that stopped early, in order, each named once).

    Attributes:
        end: the ``time.monotonic()`` reading at which the time is up (``inf``: never).
        cut: what stopped early because of this deadline (or one :meth:`within` it).
    """

    def __init__(self, end: float, cut: list[str] | None = None) -> None:
        self.end = float(end)
        self.cut = [] if cut is None else cut

    @classmethod
    def after(cls, seconds: float, *, start: float | None = None) -> Deadline:
        """The deadline ``seconds`` after ``start`` (a ``time.monotonic()`` reading; default now)."""
        return cls((time.monotonic() if start is None else start) + seconds)

    @classmethod
    def never(cls) -> Deadline:
        return cls(math.inf)

    def remaining(self) -> float:
        """Seconds left (0 once passed)."""
        return max(0.0, self.end - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.end

    def check(self, what: str) -> None:
        """Raise :class:`TimeUp` naming ``what`` (and note it as cut short) if the deadline has passed."""
        if self.expired():
            self.note(what)
            raise TimeUp(what)

    def note(self, what: str) -> None:
        """Record that ``what`` stopped early for this deadline (once)."""
        if what not in self.cut:
            self.cut.append(what)

    @contextlib.contextmanager
    def paused(self):
        """A block whose time does not count (a command's start-up: importing the libraries): the end moves by as much."""
        clock = time.monotonic()
        try:
            yield self
        finally:
            self.end += time.monotonic() - clock

    def within(self, seconds: float) -> Deadline:
        """A deadline ``seconds`` from now, or this one if it comes first; what it cuts short is noted here too."""
        return Deadline(min(self.end, time.monotonic() + seconds), self.cut)

    def __repr__(self) -> str:
        return f"Deadline(remaining={self.remaining():.3g} s)"
