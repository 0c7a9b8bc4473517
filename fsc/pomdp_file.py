"""Cassandra's ``.POMDP`` file format: read and write :class:`fsc.POMDP` worlds.

The format of pomdp-solve and of the classic benchmark sets.  A file is a
preamble, then entries; ``#`` starts a comment; line breaks are not
significant (a matrix may span lines, several entries may share one)::

    discount: 0.95
    values: reward                      # or cost: every reward is negated
    states: tiger-left tiger-right      # names, or a count
    actions: listen open-left open-right
    observations: 2
    start: uniform                      # a vector, a state, include/exclude lists

    T: listen identity                  # whole matrix: identity, uniform or S x S numbers
    T: open-left : * uniform            # one row: uniform or S numbers
    T: * : 0 : 1 0.0                    # one entry (a colon before the number is optional)
    O: listen : tiger-left 0.85 0.15    # O: a : s2 : o p, a row of O numbers, or an S x O matrix
    R: listen : * : * : * -1            # R: a : s : s2 : o v, a row over o, or an S x O matrix over (s2, o)

States, actions and observations are named or numbered from 0, and ``*``
stands for all of them anywhere in an entry's head.  Entries are applied in
order, so a later one overrides what an earlier one set.  Unset
probabilities are 0, unset rewards 0, a missing ``start`` is uniform.

Tolerance: real files write ``0.333333`` three times.  A row of ``T`` or
``O`` (and ``start``) whose sum is within ``SUM_TOLERANCE`` = 1e-5 of 1 is
divided by its sum (rows within 1e-12 are kept exactly as written, so a file
written by :func:`write_pomdp` reads back to the same bits); a row further
from 1 is an error naming the line of its last entry.

``discount`` must lie in (0, 1): an undiscounted file (``discount: 1``) is
refused; evaluate it with ``reset=0`` instead.  Every error is a ``ValueError`` ``"FILE:LINE: expected ..., got ..."``.
Sizes are checked before any table is allocated: the tables may take at most
``MAX_BYTES`` (2 GiB).  The reward is stored compactly when no entry depends
on the next state or the observation (``R: a : s : * : * v``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .pomdp import POMDP, as_pomdp

__all__ = ["MAX_BYTES", "SUM_TOLERANCE", "parse_pomdp", "read_pomdp", "write_pomdp"]

SUM_TOLERANCE = 1e-5
MAX_BYTES = 2 * 1024**3
_EXACT = 1e-12
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*\Z")
_TOKEN = re.compile(r"[^\s:]+|:")
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?)\Z")
_PREAMBLE = ("discount", "values", "states", "actions", "observations", "start")
_KEYWORDS = (*_PREAMBLE, "T", "O", "R")


class _Tokens:
    """The file as ``(token, line)`` pairs, with the reading position."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.items: list[tuple[str, int]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.split("#", 1)[0]
            self.items.extend((token, number) for token in _TOKEN.findall(line))
        self.position = 0
        self.last_line = len(text.splitlines()) or 1

    def peek(self) -> str | None:
        return self.items[self.position][0] if self.position < len(self.items) else None

    @property
    def line(self) -> int:
        if self.position < len(self.items):
            return self.items[self.position][1]
        return self.items[-1][1] if self.items else self.last_line

    def error(self, expected: str, line: int | None = None) -> ValueError:
        got = self.peek()
        found = "the end of the file" if got is None else repr(got)
        return ValueError(f"{self.source}:{self.line if line is None else line}: expected {expected}, got {found}")

    def take(self, expected: str) -> str:
        token = self.peek()
        if token is None:
            raise self.error(expected)
        self.position += 1
        return token

    def colon(self, after: str) -> None:
        if self.peek() != ":":
            raise self.error(f"':' after {after!r}")
        self.position += 1

    def number(self, expected: str = "a number") -> float:
        token = self.peek()
        if token is None or not _NUMBER.match(token):
            raise self.error(expected)
        self.position += 1
        return float(token)

    def numbers(self, count: int, what: str) -> np.ndarray:
        """Exactly ``count`` numbers (a row or a matrix), and not one more."""
        values = np.empty(count)
        for i in range(count):
            token = self.peek()
            if token is None or not _NUMBER.match(token):
                raise self.error(f"{count} numbers for {what}, found {i}")
            values[i] = float(token)
            self.position += 1
        extra = self.peek()
        if extra is not None and _NUMBER.match(extra):
            raise self.error(f"{count} numbers for {what}, then a keyword")
        return values


def _names(tokens: _Tokens, kind: str) -> tuple[int, tuple[str, ...] | None]:
    """``states: 3`` or ``states: a b c``: the count and the names (None for a count)."""
    token = tokens.peek()
    if token is not None and token.isdigit():
        tokens.position += 1
        count = int(token)
        if count < 1:
            raise ValueError(f"{tokens.source}:{tokens.items[tokens.position - 1][1]}: expected at least one {kind[:-1]}, got {count}")
        return count, None
    names = []
    while tokens.peek() is not None and tokens.peek() not in _KEYWORDS and tokens.peek() != ":":
        line = tokens.line
        name = tokens.take("a name")
        if not _NAME.match(name):
            raise ValueError(f"{tokens.source}:{line}: expected a {kind[:-1]} name (a letter, then letters, digits, '_' or '-'), got {name!r}")
        if name in names:
            raise ValueError(f"{tokens.source}:{line}: {kind[:-1]} name {name!r} is declared twice")
        names.append(name)
    if not names:
        raise tokens.error(f"a count or names of {kind}")
    return len(names), tuple(names)


class _Reader:
    def __init__(self, text: str, source: str) -> None:
        self.tokens = _Tokens(text, source)
        self.source = source
        self.discount: float | None = None
        self.cost = False
        self.sizes: dict[str, int] = {}
        self.names: dict[str, tuple[str, ...] | None] = {}
        self.start: tuple[str, object, int] | None = None
        self.entries: list[tuple] = []  # (kind, line, head indices, values)
        self.checked = False

    # -- heads: names, numbers and '*'

    def index(self, kind: str) -> slice | int:
        tokens = self.tokens
        line = tokens.line
        token = tokens.take(f"a {kind[:-1]}, a number or '*'")
        if token == "*":
            return slice(None)
        count, names = self.sizes[kind], self.names[kind]
        if token.isdigit():
            if int(token) >= count:
                raise ValueError(f"{self.source}:{line}: expected a {kind[:-1]} number below {count}, got {token}")
            return int(token)
        if names is not None and token in names:
            return names.index(token)
        known = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "") if names else f"0..{count - 1}"
        raise ValueError(f"{self.source}:{line}: expected a {kind[:-1]} ({known}), got {token!r}")

    # -- the file

    def read(self) -> POMDP:
        tokens = self.tokens
        while tokens.peek() is not None:
            line = tokens.line
            keyword = tokens.take("a keyword")
            if keyword in _PREAMBLE:
                if self.entries:
                    raise ValueError(f"{self.source}:{line}: expected the preamble ({keyword}:) before the first T:, O: or R: entry, got it after")
                self.preamble(keyword, line)
            elif keyword in ("T", "O", "R"):
                self.entry(keyword, line)
            else:
                tokens.position -= 1
                raise tokens.error("a keyword (" + ", ".join(_KEYWORDS) + ")")
        return self.build()

    def preamble(self, keyword: str, line: int) -> None:
        tokens = self.tokens
        if keyword == "start":
            mode = "vector"
            if tokens.peek() in ("include", "exclude"):
                mode = tokens.take("include or exclude")
            tokens.colon("start" if mode == "vector" else f"start {mode}")
            self.need_sizes(line, "start")
            self.start = (mode, self.start_value(mode), line)
            return
        tokens.colon(keyword)
        if keyword == "discount":
            value = tokens.number("a discount in (0, 1)")
            if not 0 < value < 1:
                raise ValueError(f"{self.source}:{line}: expected a discount in (0, 1), got {value!r}")
            self.discount = value
        elif keyword == "values":
            value = tokens.take("reward or cost")
            if value not in ("reward", "cost"):
                tokens.position -= 1
                raise tokens.error("reward or cost")
            self.cost = value == "cost"
        else:
            if keyword in self.sizes:
                raise ValueError(f"{self.source}:{line}: {keyword}: is declared twice")
            self.sizes[keyword], self.names[keyword] = _names(tokens, keyword)

    def need_sizes(self, line: int, what: str) -> None:
        missing = [k for k in ("states", "actions", "observations") if k not in self.sizes]
        if missing:
            raise ValueError(f"{self.source}:{line}: expected {', '.join(f'{k}:' for k in missing)} before {what}")
        if not self.checked:
            self.checked = True
            S, A, O = (self.sizes[k] for k in ("states", "actions", "observations"))
            needed = 8 * (A * S * S + A * S * O + S * A)
            if needed > MAX_BYTES:
                raise ValueError(
                    f"{self.source}:{line}: states: {S}, actions: {A}, observations: {O} need {needed / 1e9:.3g} GB of tables, "
                    f"more than the limit of {MAX_BYTES / 1e9:.3g} GB"
                )

    def start_value(self, mode: str) -> object:
        tokens = self.tokens
        S = self.sizes["states"]
        if mode != "vector":
            chosen = []
            while tokens.peek() is not None and tokens.peek() not in _KEYWORDS:
                chosen.append(self.index("states"))
            if not chosen:
                raise tokens.error("states to " + mode)
            return chosen
        if tokens.peek() == "uniform":
            tokens.position += 1
            return "uniform"
        token = tokens.peek()
        if token is not None and not _NUMBER.match(token):
            return [self.index("states")]
        count = 0
        while self.tokens.position + count < len(tokens.items) and _NUMBER.match(tokens.items[tokens.position + count][0]):
            count += 1
        if count == 1 and S > 1:
            return [self.index("states")]
        if count == 1 and token == "0":
            tokens.position += 1
            return [0]
        return tokens.numbers(S, "start")

    def entry(self, kind: str, line: int) -> None:
        tokens = self.tokens
        self.need_sizes(line, f"{kind}:")
        tokens.colon(kind)
        axes = {"T": ("actions", "states", "states"), "O": ("actions", "states", "observations"), "R": ("actions", "states", "states", "observations")}[kind]
        head = [self.index(axes[0])]
        while len(head) < len(axes) and tokens.peek() == ":":
            tokens.position += 1
            head.append(self.index(axes[len(head)]))
        if len(head) == len(axes):  # one entry: an optional colon, then the number
            if tokens.peek() == ":":
                tokens.position += 1
            value = tokens.number("a reward" if kind == "R" else "a probability")
            self.entries.append((kind, line, tuple(head), value))
            return
        # A row (the head lacks the last axis) or a matrix (it lacks two).
        free = axes[len(head) :]
        shape = tuple(self.sizes[axis] for axis in free)
        token = tokens.peek()
        if token in ("uniform", "identity"):
            if kind == "R":
                raise tokens.error("numbers (rewards have no 'uniform' or 'identity')")
            if token == "identity" and (len(free) != 2 or shape[0] != shape[1]):
                raise tokens.error("numbers or 'uniform' ('identity' needs a square matrix)")
            tokens.position += 1
            self.entries.append((kind, line, tuple(head), token))
            return
        what = f"{kind}: {' : '.join(axes[: len(head)])}" + (" (a row)" if len(free) == 1 else " (a matrix)")
        self.entries.append((kind, line, tuple(head), tokens.numbers(math.prod(shape), what).reshape(shape)))

    # -- tables

    def build(self) -> POMDP:
        for kind in ("states", "actions", "observations"):
            if kind not in self.sizes:
                raise ValueError(f"{self.source}:{self.tokens.last_line}: expected {kind}: in the preamble, got none")
        self.need_sizes(self.tokens.last_line, "the end")
        S, A, O = (self.sizes[k] for k in ("states", "actions", "observations"))
        # The reward is stored only along the axes some entry sets one by one.
        depends = [False, False]
        for kind, _, head, _ in self.entries:
            if kind == "R":
                depends[0] |= len(head) < 3 or head[2] != slice(None)
                depends[1] |= len(head) < 4 or head[3] != slice(None)
        shape = (S, A, S if depends[0] else 1, O if depends[1] else 1)
        if 8 * math.prod(shape) > MAX_BYTES:
            needed = 8 * math.prod(shape) / 1e9
            raise ValueError(f"{self.source}:{self.tokens.last_line}: the rewards need {needed:.3g} GB, more than the limit of {MAX_BYTES / 1e9:.3g} GB")
        T = np.zeros((A, S, S))  # file order: T[a, s, s2]
        Ob = np.zeros((A, S, O))
        R = np.zeros((A, S) + shape[2:])
        last_line = {"T": np.zeros((A, S), dtype=np.int64), "O": np.zeros((A, S), dtype=np.int64)}
        for kind, line, head, value in self.entries:
            if kind == "R":
                index = (head[0], head[1]) + tuple(slice(None) if len(head) <= i or shape[i] == 1 else head[i] for i in (2, 3))
                R[index] = value
                continue
            table = T if kind == "T" else Ob
            if isinstance(value, str):
                value = np.eye(table.shape[2]) if value == "identity" else np.full(table.shape[2], 1 / table.shape[2])
            if np.any(np.asarray(value) < 0) or np.any(np.asarray(value) > 1):
                bad = np.asarray(value).ravel()
                bad = bad[(bad < 0) | (bad > 1)][0]
                raise ValueError(f"{self.source}:{line}: expected probabilities in [0, 1], got {bad!r}")
            table[head] = value
            last_line[kind][head[:2]] = line
        T = _normalised(T, "T", last_line["T"], self, ("action", "state"))
        Ob = _normalised(Ob, "O", last_line["O"], self, ("action", "next state"))
        initial = self.initial(S)
        reward = np.moveaxis(R, 0, 1)
        if self.cost:
            reward = -reward + 0.0  # + 0.0: no -0.0 where nothing was set
        return POMDP(
            transition=np.moveaxis(T, 0, 1),
            observation=Ob,
            reward=reward,
            initial=initial,
            state_labels=self.names["states"],
            action_labels=self.names["actions"],
            observation_labels=self.names["observations"],
            discount=self.discount,
        )

    def initial(self, S: int) -> np.ndarray:
        if self.start is None:
            return np.full(S, 1 / S)
        mode, value, line = self.start
        if isinstance(value, str):
            return np.full(S, 1 / S)
        if mode == "vector" and isinstance(value, np.ndarray):
            if np.any(value < 0):
                raise ValueError(f"{self.source}:{line}: expected start probabilities >= 0, got {float(value.min())!r}")
            return _normalised(value[None, :], "start", np.array([[line]]), self, ())[0]
        chosen = np.zeros(S, dtype=bool)
        for index in value:
            chosen[index] = True
        if mode == "exclude":
            chosen = ~chosen
        if not chosen.any():
            raise ValueError(f"{self.source}:{line}: expected start exclude: to leave at least one state, got none left")
        return chosen / chosen.sum()


def _normalised(table: np.ndarray, kind: str, lines: np.ndarray, reader: _Reader, axes: tuple[str, ...]) -> np.ndarray:
    """Divide the rows (last axis) that sum to 1 within the tolerance by their sum; refuse the others."""
    sums = table.sum(axis=-1)
    off = np.abs(sums - 1)
    bad = np.argwhere(off > SUM_TOLERANCE)
    if len(bad):
        where = tuple(bad[0])
        line = int(lines[where]) or reader.tokens.last_line
        names = [reader.names[k] or None for k in ("actions", "states")]
        label = ", ".join(f"{axis} {names[i][where[i]] if names[i] else where[i]}" for i, axis in enumerate(axes))
        row = f"the row of {kind} for {label}" if axes else kind
        raise ValueError(f"{reader.source}:{line}: expected {row} to sum to 1 (within {SUM_TOLERANCE:g}), got {float(sums[where])!r}")
    fix = off > _EXACT
    if fix.any():
        table = table.copy()
        table[fix] /= sums[fix][..., None]
    return table


def parse_pomdp(text: str, *, source: str = "<string>") -> POMDP:
    """A :class:`fsc.POMDP` from the text of a ``.POMDP`` file (``source`` names it in errors)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _Reader(text, source).read()


def read_pomdp(path: str | os.PathLike) -> POMDP:
    """Read a ``.POMDP`` file (module docstring).

    Raises:
        ValueError: a malformed file, naming the file, the line and what was expected.
        OSError: a file that cannot be read.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: expected a text file, got bytes that are not UTF-8 ({error.reason} at byte {error.start})") from None
    return parse_pomdp(text, source=str(path))


# ---------------------------------------------------------------- writing


def _number(x: float) -> str:
    return repr(float(x))


def _declare(labels: tuple[str, ...], default: str) -> str:
    if labels == tuple(f"{default}{i}" for i in range(len(labels))) or not all(_NAME.match(x) for x in labels):
        return str(len(labels))
    return " ".join(labels)


def _lines(world: POMDP) -> Iterator[str]:
    S, A = world.num_states, world.num_actions
    if world.discount is not None:
        yield f"discount: {_number(world.discount)}"
    yield "values: reward"
    yield f"states: {_declare(world.state_labels, 's')}"
    yield f"actions: {_declare(world.action_labels, 'a')}"
    yield f"observations: {_declare(world.observation_labels, 'o')}"
    yield "start: " + " ".join(map(_number, world.initial))
    yield ""

    def rows(kind: str, table: np.ndarray, head) -> Iterator[str]:
        # table[a, s, :]; a dense row when at least half is nonzero, else its nonzero entries.
        for a in range(A):
            for s in range(table.shape[1]):
                row = table[a, s]
                nonzero = np.flatnonzero(row)
                if 2 * len(nonzero) >= len(row):
                    yield f"{kind}: {a} : {s} " + " ".join(map(_number, row))
                else:
                    yield from (f"{kind}: {a} : {s} : {j} {_number(row[j])}" for j in nonzero)

    yield from rows("T", np.moveaxis(world.transition, 1, 0), None)
    yield ""
    yield from rows("O", world.observation, None)
    yield ""
    reward = world.reward  # (S, A, S, O)
    by_step = reward[:, :, :1, :1]
    if np.array_equal(np.broadcast_to(by_step, reward.shape), reward):
        yield from (f"R: {a} : {s} : * : * {_number(by_step[s, a, 0, 0])}" for s in range(S) for a in range(A) if by_step[s, a, 0, 0] != 0)
        return
    for s in range(S):
        for a in range(A):
            for s2 in range(S):
                values = reward[s, a, s2]
                if np.all(values == values[0]):
                    if values[0] != 0:
                        yield f"R: {a} : {s} : {s2} : * {_number(values[0])}"
                else:
                    yield f"R: {a} : {s} : {s2} " + " ".join(map(_number, values))


def write_pomdp(world, path: str | os.PathLike) -> None:
    """Write a world (a :class:`fsc.POMDP` or a task) as a ``.POMDP`` file, atomically.

    Numbers are written with ``repr``, so :func:`read_pomdp` gives back the
    same tensors bit for bit.  Labels are written as names when they are
    valid names (a letter, then letters, digits, ``_``, ``-``) and not the
    defaults; otherwise as counts.  The format has no metrics: a world's
    ``metrics`` are not written.  Rewards are written as ``values: reward``.
    """
    from .policy import atomic_write

    pomdp = as_pomdp(world)
    text = "\n".join(_lines(pomdp)) + "\n"
    atomic_write(Path(path), lambda f: f.write(text.encode()))
