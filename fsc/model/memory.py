"""The paper's memory architectures: RAM, Chain, Column and Memento, and ``--memory`` text.

Each is a :class:`fsc.model.architecture.MemoryArchitecture` whose tables are
computed from its few integer fields; Chain and Column are RAM with a rule.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import attrs
import numpy as np

from fsc.checks import integer
from fsc.errors import InputError, quoted
from fsc.files import check_regular_file
from fsc.limits import check_memento_nodes, check_table_entries, memento_nodes
from fsc.model.architecture import MemoryArchitecture, arm_labels, observation_labels, readonly, register_architecture, rule_mask

__all__ = [
    "RAM",
    "Chain",
    "Column",
    "Memento",
    "memory_spec",
    "parse_memory",
]


def _count(**field: object):
    """An attrs field holding a count: an int (not a bool) >= 1 (numpy's taken as Python's)."""
    return attrs.field(converter=attrs.Converter(lambda value, field: integer(field.name, value, 1), takes_field=True), **field)


class _ArmsAndObservations:
    """``num_actions`` and ``num_observations`` of the paper's memories: their fields ``arms`` and ``observations``."""

    arms: int
    observations: int

    @property
    def num_actions(self) -> int:
        return self.arms

    @property
    def num_observations(self) -> int:
        return self.observations


class _MemoryWithLastObservation(_ArmsAndObservations):
    """Shared tables of RAM, Chain and Column (a mixin of pure functions).

    Nodes: the blank nodes ``(i, _)`` for ``i = 1..M`` (where resets start),
    then ``(i, arm, o)``.  Choices ``(i', arm)``; the next node after choice
    ``(i', arm)`` and observation ``o`` is ``(i', arm, o)``.
    """

    M: int
    arms: int
    observations: int

    def __attrs_post_init__(self) -> None:
        # What every engine holds: the policy's node x choice table.  The next-node table is a view of its
        # (choice, observation) rows (:attr:`next_node`), never ``N x C x O`` entries; an engine that expands it
        # (the joint chain's build) prices that itself (:mod:`fsc.engines.cost`).
        check_table_entries(f"{type(self).__name__.lower()}:{self.M}", self.M * (1 + self.arms * self.observations), self.M * self.arms,
                            world=f"{self.arms:,} actions and {self.observations:,} observations")  # fmt: skip

    @functools.cached_property
    def memory_and_arm(self) -> tuple[np.ndarray, np.ndarray]:
        """Per node: its memory (0-based) and the arm just played (-1 in the blank nodes), int64 ``(N,)`` each."""
        M, A, O = self.M, self.arms, self.observations
        memory = np.concatenate([np.arange(M), np.repeat(np.arange(M), A * O)])
        arm = np.concatenate([-np.ones(M, dtype=np.int64), np.tile(np.repeat(np.arange(A), O), M)])
        return readonly(memory.astype(np.int64)), readonly(arm)

    @functools.cached_property
    def node_labels(self) -> tuple[str, ...]:
        a, o = arm_labels(self.arms), observation_labels(self.observations)
        blanks = [f"{i + 1}_" for i in range(self.M)]
        full = [f"{i + 1}{x}{y}" for i in range(self.M) for x in a for y in o]
        return tuple(blanks + full)

    @functools.cached_property
    def choice_labels(self) -> tuple[str, ...]:
        a = arm_labels(self.arms)
        return tuple(f"{i + 1}{x}" for i in range(self.M) for x in a)

    @functools.cached_property
    def node_values(self) -> tuple[tuple, ...]:
        """``(memory, arm, observation)``: memory from 1, arm and observation None in the blank nodes."""
        a, o = arm_labels(self.arms), observation_labels(self.observations)
        blanks = [(i + 1, None, None) for i in range(self.M)]
        return tuple(blanks + [(i + 1, x, y) for i in range(self.M) for x in a for y in o])

    @functools.cached_property
    def choice_values(self) -> tuple[tuple, ...]:
        """``(memory, arm)``: the next memory (from 1) and the arm to play."""
        return tuple((i + 1, x) for i in range(self.M) for x in arm_labels(self.arms))

    @functools.cached_property
    def next_node(self) -> np.ndarray:
        """``(N, C, O)``, read-only: a view of its ``(C, O)`` rows, the same from every node."""
        M, A, O = self.M, self.arms, self.observations
        C = M * A
        target = M + np.arange(C, dtype=np.int64)[:, None] * O + np.arange(O, dtype=np.int64)[None, :]
        return readonly(np.broadcast_to(target, (M + M * A * O, C, O)))

    @functools.cached_property
    def choice_action(self) -> np.ndarray:
        return readonly(np.tile(np.arange(self.arms, dtype=np.int64), self.M))

    @functools.cached_property
    def reset_mask(self) -> np.ndarray:
        mask = np.zeros(self.M + self.M * self.arms * self.observations, dtype=bool)
        mask[: self.M] = True
        return readonly(mask)

    def _choice_memory_arm(self) -> tuple[np.ndarray, np.ndarray]:
        c = np.arange(self.M * self.arms)
        return c // self.arms, c % self.arms


@attrs.frozen(kw_only=False)
class RAM(_MemoryWithLastObservation, MemoryArchitecture):
    """Random access memory (paper Definition 3.1): every ``(i', arm)`` allowed.

    ``N = M (1 + arms * observations)`` nodes, ``C = M * arms`` choices.
    """

    M: int = _count()
    arms: int = _count(default=2, kw_only=True)
    observations: int = _count(default=2, kw_only=True)

    @functools.cached_property
    def allowed(self) -> np.ndarray:
        return readonly(np.ones((self.M * (1 + self.arms * self.observations), self.M * self.arms), dtype=bool))


def _neighbours(node: tuple, choice: tuple) -> bool:
    """Chain's rule: the next memory is ``i - 1``, ``i`` or ``i + 1``."""
    return abs(node[0] - choice[0]) <= 1


def _columns(node: tuple, choice: tuple) -> bool:
    """Column's rule: Chain's, and above memory 1 the arm played last time."""
    return _neighbours(node, choice) and (node[0] == 1 or node[1] in (None, choice[1]))


@attrs.frozen(kw_only=False)
class _RestrictedRAM(_MemoryWithLastObservation, MemoryArchitecture):
    """RAM's nodes and choices, with the choices allowed by the class's ``rule(node, choice)``."""

    M: int = _count()
    arms: int = _count(default=2, kw_only=True)
    observations: int = _count(default=2, kw_only=True)

    rule: ClassVar

    @functools.cached_property
    def allowed(self) -> np.ndarray:
        ram = RAM(self.M, arms=self.arms, observations=self.observations)
        return readonly(ram.allowed & rule_mask(ram, self.rule))


@attrs.frozen(kw_only=False)
class Chain(_RestrictedRAM):
    """RAM restricted to neighbouring memories: the next memory is ``i-1``, ``i`` or ``i+1``."""

    rule: ClassVar = staticmethod(_neighbours)


@attrs.frozen(kw_only=False)
class Column(_RestrictedRAM):
    """Chain in which, above memory 1, the agent plays the same arm as last time.

    The column of confidence policy (paper Figure 1C) lives here: one column
    of memories per arm, switching arm only at the bottom.
    """

    rule: ClassVar = staticmethod(_columns)


@attrs.frozen(kw_only=False)
class Memento(_ArmsAndObservations, MemoryArchitecture):
    """The last ``m`` arms and observations (paper Definition 3.2).

    Nodes are the histories of length ``0..m``, labelled arms then
    observations, oldest first (``AABB++-+``; the empty history is ``_``);
    ordered by length, then by the sequence of (arm, observation) symbols.
    A reset starts in the empty history.  Choices are the arms; after arm
    ``x`` and observation ``o`` the history is shifted and ``(x, o)``
    appended.  ``N = sum_{l=0}^m (arms * observations)^l``.
    """

    m: int = _count()
    arms: int = _count(default=2, kw_only=True)
    observations: int = _count(default=2, kw_only=True)

    def __attrs_post_init__(self) -> None:
        check_memento_nodes(self.m, self.arms, self.observations)
        check_table_entries(f"memento:{self.m}", memento_nodes(self.m, self.arms * self.observations), self.arms, self.observations)

    @functools.cached_property
    def _offsets(self) -> np.ndarray:
        """``_offsets[l]``: index of the first history of length ``l``."""
        K = self.arms * self.observations
        return np.concatenate([[0], np.cumsum([K**length for length in range(self.m + 1)])]).astype(np.int64)

    @functools.cached_property
    def node_labels(self) -> tuple[str, ...]:
        a, o = arm_labels(self.arms), observation_labels(self.observations)
        labels = ["_"]
        K, O = self.arms * self.observations, self.observations
        for length in range(1, self.m + 1):
            codes = np.arange(K**length)
            digits = [(codes // K ** (length - 1 - j)) % K for j in range(length)]
            arm_part = ["".join(a[d[i] // O] for d in digits) for i in range(len(codes))]
            obs_part = ["".join(o[d[i] % O] for d in digits) for i in range(len(codes))]
            labels += [x + y for x, y in zip(arm_part, obs_part, strict=True)]
        return tuple(labels)

    @functools.cached_property
    def choice_labels(self) -> tuple[str, ...]:
        return arm_labels(self.arms)

    @functools.cached_property
    def node_values(self) -> tuple[tuple, ...]:
        """The history as a tuple of ``(arm, observation)`` pairs, oldest first (``()`` is the empty one)."""
        symbols = [(x, y) for x in arm_labels(self.arms) for y in observation_labels(self.observations)]
        values = [()]
        layer = [()]
        for _ in range(self.m):
            layer = [history + (symbol,) for history in layer for symbol in symbols]
            values += layer
        return tuple(values)

    @functools.cached_property
    def allowed(self) -> np.ndarray:
        return readonly(np.ones((int(self._offsets[-1]), self.arms), dtype=bool))

    @functools.cached_property
    def next_node(self) -> np.ndarray:
        K, O, m = self.arms * self.observations, self.observations, self.m
        offsets = self._offsets
        symbol = np.arange(self.arms)[:, None] * O + np.arange(O)[None, :]  # (C, O)
        parts = []
        for length in range(m + 1):
            code = np.arange(K**length, dtype=np.int64)
            if length < m:
                new = offsets[length + 1] + code[:, None, None] * K + symbol[None]
            else:
                new = offsets[m] + (code[:, None, None] % K ** (m - 1)) * K + symbol[None]
            parts.append(new)
        return readonly(np.concatenate(parts).astype(np.int64))

    @functools.cached_property
    def choice_action(self) -> np.ndarray:
        return readonly(np.arange(self.arms, dtype=np.int64))

    @functools.cached_property
    def reset_mask(self) -> np.ndarray:
        mask = np.zeros(int(self._offsets[-1]), dtype=bool)
        mask[0] = True
        return readonly(mask)


_KINDS = {"ram": RAM, "chain": Chain, "column": Column, "memento": Memento}


for _builtin in (RAM, Chain, Column, Memento):
    register_architecture(_builtin, kind=_builtin.__name__)


def parse_memory(text: str, *, arms: int = 2, observations: int = 2) -> MemoryArchitecture:
    """Build an architecture from ``ram:M``, ``chain:M``, ``column:M``, ``memento:m`` or ``FILE.py:NAME``.

    ``FILE.py:NAME`` imports the Python file ``FILE.py`` as a module (named
    ``fsc_memory_file``, so its ``if __name__ == "__main__":`` block does not
    run) and takes its global ``NAME``: an architecture, or a function of no
    arguments that returns one.  The import may take :data:`MEMORY_FILE_SECONDS`.
    ``arms`` and ``observations`` size the built-in kinds only.
    """
    path, sep, name = str(text).rpartition(":")
    if sep and path.endswith(".py"):
        return _memory_from_file(path, name)
    kind, sep, size = str(text).partition(":")
    if not sep or kind.lower() not in _KINDS:
        raise InputError(f"memory must be ram:M, chain:M, column:M, memento:m or FILE.py:NAME, got {quoted(text)}")
    wrong = f"memory size must be an integer >= 1, got {quoted(size)} in {quoted(text)}"
    digits = size.strip().removeprefix("-")
    if not (digits.isascii() and digits.isdigit()):  # int() also takes "1_000", "+2" and other scripts' digits
        raise InputError(wrong)
    try:
        value = int(size)
    except ValueError:  # more digits than Python converts
        raise InputError(wrong) from None
    if value < 1:
        raise InputError(f"memory size must be an integer >= 1, got {value} in {quoted(text)}")
    return _KINDS[kind.lower()](value, arms=arms, observations=observations)


def memory_spec(arch: MemoryArchitecture) -> str | dict:
    """The canonical spec of ``arch``: ``ram:M``, ``chain:M``, ``column:M`` or ``memento:m`` for the paper's kinds (what
    ``--memory`` reads back on a world of the same actions and observations, whatever text named it: ``RAM:02``
    and ``ram:2`` are both ``ram:2``), else its :meth:`~fsc.MemoryArchitecture.to_dict`."""
    for text, kind in _KINDS.items():
        if type(arch) is kind:
            return f"{text}:{arch.m if kind is Memento else arch.M}"
    return arch.to_dict()


#: Seconds a ``--memory FILE.py`` may take to import: it should define an architecture, not run a job.
MEMORY_FILE_SECONDS = 60.0


class _StillRunning(BaseException):
    """Raised into the user's file when its import outlives :data:`MEMORY_FILE_SECONDS` (no ``except Exception`` there catches it)."""


def _import_time_boxed(path: str) -> dict:
    """The globals of the file ``path`` imported as the module ``fsc_memory_file``, stopped after
    :data:`MEMORY_FILE_SECONDS` (in the main thread, where a timer signal can stop it; elsewhere unbounded)."""
    import runpy
    import signal
    import threading
    import time

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return runpy.run_path(path, run_name="fsc_memory_file")

    def stop(signum, frame):
        raise _StillRunning

    start = time.monotonic()
    previous = signal.signal(signal.SIGALRM, stop)
    pending, _ = signal.setitimer(signal.ITIMER_REAL, MEMORY_FILE_SECONDS)
    try:
        return runpy.run_path(path, run_name="fsc_memory_file")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if pending:  # a timer of the caller's: what was left of it
            signal.setitimer(signal.ITIMER_REAL, max(pending - (time.monotonic() - start), 1e-3))


def _memory_from_file(path: str, name: str) -> MemoryArchitecture:
    """The architecture called ``name`` in the Python file ``path`` (see :func:`parse_memory`)."""
    check_regular_file(path, "memory file")  # missing, or a FIFO, a directory: said as what it is
    if not name.isidentifier():
        raise InputError(f"memory {path}:{name} must name a Python global after the colon, got {name!r}")
    try:
        namespace = _import_time_boxed(path)
    except _StillRunning:
        raise InputError(
            f"memory file {path!r} was still running after {MEMORY_FILE_SECONDS:g} s: it is imported as a module, so what it "
            'does as a script (training, plotting) belongs under `if __name__ == "__main__":`'
        ) from None
    except Exception as error:  # the user's file failed: say where, in one line
        raise InputError(f"memory file {path!r} failed to run: {type(error).__name__}: {error}") from error
    except SystemExit as error:  # sys.exit() in the user's file ends its import, not the command
        raise InputError(f"memory file {path!r} called sys.exit({error.code!r}) while it ran") from None
    if name not in namespace:
        raise InputError(f"memory file {path!r} defines no {name!r}")
    value = namespace[name]
    if callable(value) and not isinstance(value, MemoryArchitecture) and not isinstance(value, type):
        try:
            value = value()
        except Exception as error:
            raise InputError(f"{path}:{name}() failed: {type(error).__name__}: {error}") from error
    if not isinstance(value, MemoryArchitecture):
        raise InputError(f"{path}:{name} is not a fsc.MemoryArchitecture (nor a function returning one), got {type(value).__name__}")
    return value
