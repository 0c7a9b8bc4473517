"""Cassandra's ``.POMDP`` file format: read and write :class:`fsc.POMDP` worlds.

The format is the one of pomdp-solve and of the classic benchmark sets.  A
file has a preamble (``discount:``, ``values:``, ``states:``, ``actions:``,
``observations:``), an optional ``start`` belief, and ``T:``, ``O:``, ``R:``
entries at three granularities each, with ``*`` wildcards; later entries
override earlier ones.  ``docs/pomdp-files.md`` describes what is read and
written.

Array axes are those of :class:`fsc.POMDP`, which match the file's order of
indices: ``T: a : s : s2`` sets ``transition[s, a, s2]``, ``O: a : s2 : o``
sets ``observation[a, s2, o]``, ``R: a : s : s2 : o`` sets
``reward[s, a, s2, o]``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path

import attrs
import numpy as np

from fsc.engines import cost
from fsc.errors import InputError, InputTypeError, quoted
from fsc.files import read_limited
from fsc.limits import MAX_INTEGER_DIGITS, MAX_POMDP_BYTES
from fsc.model.pomdp import POMDP, SparseTable, Task, as_pomdp

__all__ = ["DENSE_NUMBERS", "MAX_TABLE_BYTES", "ROW_TOLERANCE", "Declared", "format_pomdp", "parse_pomdp", "pomdp_summary", "read_pomdp", "write_pomdp"]

#: Rows of ``T``, ``O`` and ``start`` may differ from 1 by at most this much.
ROW_TOLERANCE = 1e-5
#: Rows within this of 1 are kept as written (the POMDP class accepts them);
#: rows further off, but within ROW_TOLERANCE, are divided by their sum.
_KEEP_TOLERANCE = 1e-9
#: Largest size of the tables a file may make: the entries it gives (16 bytes each, value and index) and
#: what is kept per (state, action): 2 GiB each.  The rows are checked from the preamble (64 bytes per (state,
#: action), which also bounds the entries every row of T and of O needs, 32 bytes), the entries as the body is
#: read (a block before it is expanded).  Reading costs more than what is kept: about
#: 100 bytes of peak memory per entry logged (resolving the log: concatenated, sorted, filtered; 0.93 GB for the
#: 9 million entries of a world of a million states, 3 actions and 2 observations given by ``T: * identity`` and
#: ``O: * uniform``), so the largest file accepted takes about 2 GiB of rows and 134 million entries, 15 GB at
#: the peak, under the 24 GB of the machine the project runs on.
MAX_TABLE_BYTES = 2 * 1024**3
#: Peak bytes of reading, measured (``benchmarks/bench_large.py``'s reader cases): per cell an entry gives (its log,
#: then resolving it: concatenated, sorted, filtered; 105 bytes measured on ``T: * uniform`` of 1,000 and 2,000
#: states), and per byte of text (the statements and their tokens; 32 bytes measured on files of one-cell lines,
#: 540 bytes a line of 17 bytes).  Reading is refused before it starts (the text) or before an entry is expanded
#: (its cells) when the peak would pass the memory this process may use (:func:`fsc.engines.cost.available_bytes`:
#: free memory, ``ulimit -v``, the container's limit).
READ_BYTES_PER_CELL = 110
READ_BYTES_PER_TEXT_BYTE = 32
#: A peak of reading under this many bytes is never refused (the interpreter and numpy take more).
READ_FREE_BYTES = 2**26


@attrs.frozen
class Declared:
    """What a file has declared once its preamble and ``start`` are read, before its first ``T``, ``O`` or ``R``
    entry: the sizes, and how many states the start belief gives mass to (all of them by default)."""

    states: int
    actions: int
    observations: int
    started: int

_PREAMBLE = ("discount", "values", "states", "actions", "observations")
_KEYWORDS = frozenset(_PREAMBLE + ("start", "T", "O", "R"))
_RESERVED = _KEYWORDS | {"uniform", "identity", "reset", "include", "exclude"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-.]*")
_INDEX = re.compile(r"[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_KIND_WORD = {"state": "states", "action": "actions", "observation": "observations"}


#: Worlds whose dense tables (transition, observation and reward, float64) hold at most this many numbers are
#: read into dense arrays, as small worlds always were; larger ones keep sparse tables (fsc.POMDP.is_sparse).
DENSE_NUMBERS = 2**20


def _ids(index, size: int) -> np.ndarray:
    """The indices an entry names: one (an int) or all of ``size`` (``*``)."""
    if isinstance(index, slice):
        return np.arange(size, dtype=np.int64)[index]
    return np.array([index], dtype=np.int64)


class _Log:
    """The writes into one table of ``rows x cols`` cells, in file order, resolved at the end: a later write
    of a cell wins.  A row written whole is cleared first (its other cells take the ``fill`` given, 0 for
    probabilities), so nothing but the entries a file gives is ever stored."""

    def __init__(self, rows: int, cols: int) -> None:
        self.rows, self.cols = rows, cols
        self.fill = np.zeros(rows)
        self.fill_seq = np.zeros(rows, dtype=np.int64)
        self.seq = 0
        self.single: tuple[list, list, list, list] = ([], [], [], [])  # one cell per entry, the commonest line
        self.chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []
        self.count = 0

    def statement(self) -> None:
        self.seq += 1

    def cell(self, row: int, col: int, value: float) -> None:
        for out, x in zip(self.single, (row, col, value, self.seq), strict=True):
            out.append(x)
        self.count += 1

    def cells(self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> None:
        """Cells ``(rows[i], cols[i])`` take ``values[i]`` (arrays broadcast together)."""
        rows, cols, values = np.broadcast_arrays(rows, cols, values)
        self.chunks.append((rows.reshape(-1).copy(), cols.reshape(-1).copy(), values.reshape(-1).copy(), self.seq))
        self.count += rows.size

    def clear(self, rows: np.ndarray, fill: float = 0.0) -> None:
        """Every cell of ``rows`` takes ``fill``: the rows' earlier writes are forgotten."""
        self.fill[rows] = fill
        self.fill_seq[rows] = self.seq

    def entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The writes not cleared since, as ``(rows, cols, values, seq)``."""
        r, c, v, q = (np.array(x, dtype=dtype) for x, dtype in zip(self.single, (np.int64, np.int64, np.float64, np.int64), strict=True))
        parts = [(r, c, v, q)] + [(rr, cc, vv, np.full(len(rr), seq, dtype=np.int64)) for rr, cc, vv, seq in self.chunks]
        r, c, v, q = (np.concatenate([p[i] for p in parts]) for i in range(4))
        self.single, self.chunks = ([], [], [], []), []
        keep = q >= self.fill_seq[r]
        return r[keep], c[keep], v[keep], q[keep]

    def table(self, shape: tuple[int, ...], columns: int, entries=None, *, fill: bool = False) -> SparseTable:
        """The last write of each cell, as a :class:`SparseTable` (zeros dropped unless ``fill``)."""
        r, c, v, q = self.entries() if entries is None else entries
        order = np.lexsort((q, c, r))
        r, c, v = r[order], c[order], v[order]
        last = np.ones(len(r), dtype=bool)
        last[:-1] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
        base = self.fill[r] if fill else np.zeros(len(r))
        keep = last & ((v != base) | (np.signbit(v) != np.signbit(base)))  # a cell that differs from its fill, -0.0 too
        indptr = np.zeros(self.rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(r[keep], minlength=self.rows), out=indptr[1:])
        return SparseTable(shape, columns, indptr, c[keep], v[keep], self.fill if fill else None)


class _Statement:
    """One statement: its keyword, tokens after the keyword's colon, their lines."""

    __slots__ = ("keyword", "line", "tokens", "lines")

    def __init__(self, keyword: str, line: int) -> None:
        self.keyword = keyword
        self.line = line
        self.tokens: list[str] = []
        self.lines: list[int] = []


def _tokenise(text: str, source: str) -> tuple[list[_Statement], int]:
    """Split ``text`` into statements; return them and the number of lines.

    A statement starts at a keyword followed by ``:`` (or ``start include:``,
    ``start exclude:``) and runs to the next one.  ``#`` starts a comment.
    """
    statements: list[_Statement] = []
    current: _Statement | None = None
    lineno = 0
    for lineno, raw in enumerate(text.splitlines(), start=1):
        hash_at = raw.find("#")
        if hash_at >= 0:
            raw = raw[:hash_at]
        if not raw or raw.isspace():
            continue
        words = raw.replace(":", " : ").split()
        n = len(words)
        # Fast paths: a line that is one whole statement, or only more tokens.
        if n > 1 and words[1] == ":" and words[0] in _KEYWORDS and _KEYWORDS.isdisjoint(words[2:]):
            current = _Statement(words[0], lineno)
            statements.append(current)
            current.tokens = words[2:]
            current.lines = [lineno] * (n - 2)
            continue
        if current is not None and _KEYWORDS.isdisjoint(words):
            current.tokens.extend(words)
            current.lines.extend([lineno] * n)
            continue
        i = 0
        while i < n:
            word = words[i]
            if word in _KEYWORDS:
                if i + 1 < n and words[i + 1] == ":":
                    current = _Statement(word, lineno)
                    statements.append(current)
                    i += 2
                    continue
                if word == "start" and i + 2 < n and words[i + 1] in ("include", "exclude") and words[i + 2] == ":":
                    current = _Statement(f"start {words[i + 1]}", lineno)
                    statements.append(current)
                    i += 3
                    continue
                if word in ("T", "O", "R") or word in _PREAMBLE or word == "start":
                    raise InputError(f"{source}:{lineno}: expected ':' after {quoted(word)}")
            if current is None:
                raise InputError(f"{source}:{lineno}: expected a keyword (discount, values, states, actions, observations, start, T, O, R), got {quoted(word)}")
            current.tokens.append(word)
            current.lines.append(lineno)
            i += 1
    return statements, lineno


def _number(token: str, source: str, line: int, what: str = "a number") -> float:
    if not _NUMBER.fullmatch(token):
        raise InputError(f"{source}:{line}: expected {what}, got {quoted(token)}")
    value = float(token)
    if not math.isfinite(value):
        raise InputError(f"{source}:{line}: expected a finite number, got {quoted(token)}")
    return value


class _Reader:
    """The state of one parse: sizes, names, tables and where rows were last set."""

    def __init__(self, source: str, require_discount: bool) -> None:
        self.source = source
        self.require_discount = require_discount
        self.discount: float | None = None
        self.cost = False
        self.sizes: dict[str, int] = {}
        self.names: dict[str, tuple[str, ...] | None] = {}
        self.index: dict[str, dict[str, int]] = {}
        self.seen: dict[str, int] = {}
        self.tables_ready = False
        self.text_bytes = 0  # the peak of the text's statements (parse_pomdp)
        self.memory = max(READ_FREE_BYTES, cost.MEMORY_SHARE * cost.available_bytes())

    def take_text(self, text: str) -> None:
        """Count the text's statements in the peak of reading (:data:`READ_BYTES_PER_TEXT_BYTE`), refused before it is split."""
        self.text_bytes = READ_BYTES_PER_TEXT_BYTE * len(text)
        if self.text_bytes > self.memory:
            raise InputError(
                f"{self.source}: {len(text):,} characters take about {self.text_bytes / 1e9:.3g} GB to read "
                f"({READ_BYTES_PER_TEXT_BYTE} bytes a character), over the {self.memory / 1e9:.3g} GB this process may use"
            )

    # -- helpers --------------------------------------------------------

    def err(self, line: int, message: str) -> InputError:
        return InputError(f"{self.source}:{line}: {message}")

    def resolve(self, kind: str, token: str, line: int, *, wildcard: bool = True):
        """The index (an int) or, for ``*``, ``slice(None)`` of a name or index."""
        size = self.sizes[_KIND_WORD[kind]]
        if token == "*":
            if wildcard:
                return slice(None)
            raise self.err(line, f"expected a {kind} name or index, got '*'")
        if _INDEX.fullmatch(token):
            value = self.integer(token, line, f"a {kind} index below {size}")
            if value >= size:
                raise self.err(line, f"expected a {kind} index below {size}, got {quoted(token)}")
            return value
        found = self.index[kind].get(token)
        if found is None:
            known = self.names[_KIND_WORD[kind]]
            hint = f"one of {', '.join(known[:8])}{', ...' if len(known) > 8 else ''}" if known else f"an index below {size}"
            raise self.err(line, f"expected a {kind} name or index ({hint}), got {quoted(token)}")
        return found

    def integer(self, token: str, line: int, what: str) -> int:
        """A header size or an index (``token`` is digits): refused in one line past :data:`MAX_INTEGER_DIGITS`
        digits, before ``int`` (which refuses, or takes quadratic time over, thousands of digits)."""
        if len(token) > MAX_INTEGER_DIGITS:
            raise self.err(line, f"expected {what}, got a number of {len(token):,} digits (at most {MAX_INTEGER_DIGITS})")
        return int(token)

    def numbers(self, tokens: list[str], lines: list[int], what: str) -> np.ndarray:
        for token, line in zip(tokens, lines, strict=True):
            if not _NUMBER.fullmatch(token):
                raise self.err(line, f"expected {what}, got {quoted(token)}")
        values = np.array([float(t) for t in tokens], dtype=np.float64)
        if not np.isfinite(values).all():
            i = int(np.flatnonzero(~np.isfinite(values))[0])
            raise self.err(lines[i], f"expected a finite number, got {quoted(tokens[i])}")
        return values

    def probabilities(self, tokens: list[str], lines: list[int]) -> np.ndarray:
        values = self.numbers(tokens, lines, "a probability")
        bad = np.flatnonzero((values < 0) | (values > 1 + ROW_TOLERANCE))
        if bad.size:
            i = int(bad[0])
            raise self.err(lines[i], f"expected a probability in [0, 1], got {quoted(tokens[i])}")
        return values

    # -- preamble -------------------------------------------------------

    def preamble(self, st: _Statement) -> None:
        key = st.keyword
        if self.tables_ready:
            raise self.err(st.line, f"'{key}:' must come before start, T, O and R entries")
        if key in self.seen:
            raise self.err(st.line, f"'{key}:' given twice (first on line {self.seen[key]})")
        self.seen[key] = st.line
        if not st.tokens:
            raise self.err(st.line, f"expected a value after '{key}:'")
        if key == "discount":
            if len(st.tokens) != 1:
                raise self.err(st.lines[1], f"expected one number after 'discount:', got {quoted(st.tokens[1])} too")
            value = _number(st.tokens[0], self.source, st.line, "a discount factor")
            if not 0 < value < 1:
                raise self.err(st.line, f"expected a discount in (0, 1), got {quoted(st.tokens[0])}")
            self.discount = value
        elif key == "values":
            if len(st.tokens) != 1 or st.tokens[0] not in ("reward", "cost"):
                raise self.err(st.line, f"expected 'reward' or 'cost' after 'values:', got {' '.join(st.tokens)!r}")
            self.cost = st.tokens[0] == "cost"
        else:
            kind = key[:-1]
            if len(st.tokens) == 1 and _INDEX.fullmatch(st.tokens[0]):
                size = self.integer(st.tokens[0], st.line, f"a number of {key}")
                if size < 1:
                    raise self.err(st.line, f"expected at least one {kind}, got {quoted(st.tokens[0])}")
                self.sizes[key] = size
                self.names[key] = None
                self.index[kind] = {}
            else:
                seen: dict[str, int] = {}
                for token, line in zip(st.tokens, st.lines, strict=True):
                    if not _NAME.fullmatch(token):
                        raise self.err(line, f"expected a {kind} name (a letter or '_' then letters, digits, '_', '-', '.'), got {quoted(token)}")
                    if token in _RESERVED:
                        raise self.err(line, f"expected a {kind} name, got the keyword {quoted(token)}")
                    if token in seen:
                        raise self.err(line, f"{kind} name {quoted(token)} given twice")
                    seen[token] = len(seen)
                self.sizes[key] = len(seen)
                self.names[key] = tuple(seen)
                self.index[kind] = seen

    def allocate(self, line: int) -> None:
        """Check the preamble and the declared sizes, then set up the tables' logs (nothing of ``S*A*S``)."""
        for key in ("states", "actions", "observations"):
            if key not in self.sizes:
                raise self.err(line, f"expected '{key}:' in the preamble before start, T, O and R entries")
        if self.require_discount and self.discount is None:
            raise self.err(line, "expected 'discount:' in the preamble before start, T, O and R entries")
        S, A, O = self.sizes["states"], self.sizes["actions"], self.sizes["observations"]
        need = 8 * (8 * S * A + S)  # what is kept per row: (state, action) of T and R, (action, state) of O
        if need > MAX_TABLE_BYTES:
            raise self.err(
                line,
                f"states={S}, actions={A}, observations={O} need {need / 1024**3:.3g} GiB of tables "
                f"(S*A = {S * A} rows of transitions and as many of rewards), over the limit of {MAX_TABLE_BYTES / 1024**3:g} GiB",
            )
        self.S, self.A, self.O = S, A, O
        self.t = _Log(S * A, S)  # rows (s, a), columns s2
        self.o = _Log(A * S, O)  # rows (a, s2), columns o
        self.r = _Log(S * A, (S + 1) * (O + 1))  # rows (s, a), columns (s2 + 1, o + 1): -1 standing for '*'
        self.reward_axes = [False, False]  # whether the reward depends on the end state, on the observation
        self.initial = np.full(S, 1.0 / S)
        self.start_line = 0
        # Line of the last entry that touched each row (0: never set).
        self.t_line = np.zeros((S, A), dtype=np.int64)
        self.o_line = np.zeros((A, S), dtype=np.int64)
        self.tables_ready = True

    def room(self, line: int, cells: int) -> None:
        """Refuse an entry that would take the tables past :data:`MAX_TABLE_BYTES` (16 bytes per cell kept), or the
        peak of reading (:data:`READ_BYTES_PER_CELL`, with the text's own) past the memory this process may use."""
        kept = self.t.count + self.o.count + self.r.count + cells
        if 16 * kept > MAX_TABLE_BYTES:
            raise self.err(
                line,
                f"with states={self.S}, actions={self.A}, observations={self.O} the tables reach {kept:,} entries "
                f"({16 * kept / 1024**3:.3g} GiB), over the limit of {MAX_TABLE_BYTES / 1024**3:g} GiB",
            )
        peak = READ_BYTES_PER_CELL * kept + self.text_bytes
        if peak > self.memory:
            raise self.err(
                line,
                f"with states={self.S}, actions={self.A}, observations={self.O} the tables reach {kept:,} entries, "
                f"about {peak / 1e9:.3g} GB at the peak of reading ({READ_BYTES_PER_CELL} bytes an entry), over the "
                f"{self.memory / 1e9:.3g} GB this process may use",
            )

    # -- start ----------------------------------------------------------

    def start(self, st: _Statement) -> None:
        S = self.S
        tokens, lines = st.tokens, st.lines
        if not tokens:
            raise self.err(st.line, f"expected a start belief after '{st.keyword}:'")
        if st.keyword == "start":
            if len(tokens) == 1 and tokens[0] == "uniform":
                initial = np.full(S, 1.0 / S)
            elif len(tokens) == 1 and (_INDEX.fullmatch(tokens[0]) or not _NUMBER.fullmatch(tokens[0])):
                initial = np.zeros(S)
                initial[self.resolve("state", tokens[0], st.line, wildcard=False)] = 1.0
            else:
                if len(tokens) != S:
                    raise self.err(st.line, f"expected {S} start probabilities (one per state), got {len(tokens)}")
                initial = self.normalised(self.probabilities(tokens, lines), st.line, "start")
        else:
            chosen = np.zeros(S, dtype=bool)
            for token, line in zip(tokens, lines, strict=True):
                chosen[self.resolve("state", token, line, wildcard=False)] = True
            if st.keyword == "start exclude":
                chosen = ~chosen
            if not chosen.any():
                raise self.err(st.line, "'start exclude:' excludes every state")
            initial = chosen / chosen.sum()
        self.initial = initial
        self.start_line = st.line

    def normalised(self, row: np.ndarray, line: int, what: str) -> np.ndarray:
        total = float(row.sum())
        if abs(total - 1.0) > ROW_TOLERANCE:
            raise self.err(line, f"{what} sums to {total!r}, expected 1 (within {ROW_TOLERANCE:g})")
        if abs(total - 1.0) > _KEEP_TOLERANCE:
            row = row / total
        return row

    # -- T, O, R ----------------------------------------------------------

    def split(self, st: _Statement, kinds: tuple[str, ...], least: int):
        """Read up to len(kinds) indices separated by ':'; return (indices, data tokens, data lines).

        ``least`` is the number of indices the shortest form needs.
        """
        tokens, lines = st.tokens, st.lines
        indices = []
        i = 0
        for position, kind in enumerate(kinds):
            if position > 0:
                if i < len(tokens) and tokens[i] == ":":
                    i += 1
                else:
                    break
            if i >= len(tokens) or tokens[i] == ":":
                got = repr(tokens[i]) if i < len(tokens) else "the end of the entry"
                raise self.err(lines[i] if i < len(tokens) else st.line, f"expected a {kind} name, index or '*' in '{st.keyword}:', got {got}")
            indices.append(self.resolve(kind, tokens[i], lines[i]))
            i += 1
        if len(indices) < least:
            raise self.err(st.line, f"expected ':' and a {kinds[len(indices)]} after {len(indices)} index(es) in '{st.keyword}:'")
        if len(indices) == len(kinds) and i < len(tokens) and tokens[i] == ":":
            i += 1  # the optional colon before a single entry's number
        data, data_lines = tokens[i:], lines[i:]
        for j, (token, line) in enumerate(zip(data, data_lines, strict=True)):
            if token == ":":
                if j > 0 and not _NUMBER.fullmatch(data[j - 1]):
                    raise self.err(data_lines[j - 1], f"expected a keyword (start, T, O, R) or a number, got {data[j - 1]!r} followed by ':'")
                raise self.err(line, f"unexpected ':' in the numbers of '{st.keyword}:'")
        return indices, data, data_lines

    def data(self, st, data, data_lines, shape, *, probability, identity_ok=False, what="", entry=False, reset_ok=False):
        """The numbers of an entry, a row or a matrix, as an array of ``shape``."""
        if entry and len(data) == 1:  # fast path for the commonest line
            token = data[0]
            if not _NUMBER.fullmatch(token):
                raise self.err(data_lines[0], f"expected {'a probability' if probability else 'a number'}, got {token!r}")
            value = float(token)
            if not math.isfinite(value):
                raise self.err(data_lines[0], f"expected a finite number, got {token!r}")
            if probability and not 0 <= value <= 1 + ROW_TOLERANCE:
                raise self.err(data_lines[0], f"expected a probability in [0, 1], got {token!r}")
            return (value,)
        count = math.prod(shape)
        if len(data) == 1 and data[0] == "uniform" and probability and not entry:
            return np.full(shape, 1.0 / shape[-1])
        if len(data) == 1 and data[0] == "reset" and reset_ok:
            return self.initial.copy()
        if len(data) == 1 and data[0] == "identity" and identity_ok:
            if shape[0] != shape[-1]:
                raise self.err(st.line, f"'identity' needs a square matrix, {what} is {shape[0]}x{shape[1]}")
            return np.eye(shape[0])
        if len(data) != count:
            if count == 1:
                expected = "one number"
            else:
                expected = f"{count} numbers ({what})"
            if data and data[0] in ("uniform", "identity", "reset"):
                raise self.err(data_lines[0], f"expected {expected}, got {data[0]!r}")
            raise self.err(st.line, f"expected {expected} in '{st.keyword}:', got {len(data)}")
        values = self.probabilities(data, data_lines) if probability else self.numbers(data, data_lines, "a number")
        return values.reshape(shape)

    def rows_of(self, first, second, size_second: int, first_size: int) -> np.ndarray:
        """Rows ``first * size_second + second`` of every pair the two indices name."""
        return (_ids(first, first_size)[:, None] * size_second + _ids(second, size_second)[None, :]).reshape(-1)

    def matrix(self, st, data, lines, shape, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A probability matrix entry as its cells ``(i, j, value)`` that differ from 0."""
        n, m = shape
        if data == ["identity"] and n == m:
            return np.arange(n), np.arange(n), np.ones(n)
        if data == ["uniform"]:
            self.room(st.line, n * m)
            i, j = np.divmod(np.arange(n * m), m)
            return i, j, np.full(n * m, 1.0 / m)
        matrix = self.data(st, data, lines, shape, probability=True, identity_ok=True, what=what)
        i, j = np.nonzero((matrix != 0) | np.signbit(matrix))
        return i, j, matrix[i, j]

    def transition_entry(self, st: _Statement) -> None:
        S, A = self.S, self.A
        (a, *rest), data, lines = self.split(st, ("action", "state", "state"), 1)
        log = self.t
        log.statement()
        if len(rest) == 2:
            s, s2 = rest
            value = self.data(st, data, lines, (1,), probability=True, entry=True)[0]
            if not isinstance(a, slice) and not isinstance(s, slice) and not isinstance(s2, slice):
                log.cell(s * A + a, s2, value)
            else:
                rows, cols = self.rows_of(s, a, A, S), _ids(s2, S)
                self.room(st.line, rows.size * cols.size)
                log.cells(rows[:, None], cols[None, :], value)
            self.t_line[s, a] = st.line
        elif len(rest) == 1:
            (s,) = rest
            row = self.data(st, data, lines, (S,), probability=True, what="a row over end states", reset_ok=True)
            rows, cols = self.rows_of(s, a, A, S), np.flatnonzero((row != 0) | np.signbit(row))
            self.room(st.line, rows.size * cols.size)
            log.clear(rows)
            log.cells(rows[:, None], cols[None, :], row[cols][None, :])
            self.t_line[s, a] = st.line
        else:
            i, j, values = self.matrix(st, data, lines, (S, S), f"a {S}x{S} matrix, start state by end state")
            actions = _ids(a, A)
            self.room(st.line, len(i) * len(actions))
            log.clear(self.rows_of(slice(None), a, A, S))
            log.cells(i[:, None] * A + actions[None, :], j[:, None], values[:, None])
            self.t_line[:, a] = st.line

    def observation_entry(self, st: _Statement) -> None:
        S, O = self.S, self.O
        (a, *rest), data, lines = self.split(st, ("action", "state", "observation"), 1)
        log = self.o
        log.statement()
        if len(rest) == 2:
            s2, o = rest
            value = self.data(st, data, lines, (1,), probability=True, entry=True)[0]
            if not isinstance(a, slice) and not isinstance(s2, slice) and not isinstance(o, slice):
                log.cell(a * S + s2, o, value)
            else:
                rows, cols = self.rows_of(a, s2, S, self.A), _ids(o, O)
                self.room(st.line, rows.size * cols.size)
                log.cells(rows[:, None], cols[None, :], value)
            self.o_line[a, s2] = st.line
        elif len(rest) == 1:
            (s2,) = rest
            row = self.data(st, data, lines, (O,), probability=True, what="a row over observations")
            rows, cols = self.rows_of(a, s2, S, self.A), np.flatnonzero((row != 0) | np.signbit(row))
            self.room(st.line, rows.size * cols.size)
            log.clear(rows)
            log.cells(rows[:, None], cols[None, :], row[cols][None, :])
            self.o_line[a, s2] = st.line
        else:
            i, j, values = self.matrix(st, data, lines, (S, O), f"a {S}x{O} matrix, end state by observation")
            actions = _ids(a, self.A)
            self.room(st.line, len(i) * len(actions))
            log.clear(self.rows_of(a, slice(None), S, self.A))
            log.cells(actions[None, :] * S + i[:, None], j[:, None], values[:, None])
            self.o_line[a, :] = st.line

    def reward_entry(self, st: _Statement) -> None:
        S, A, O = self.S, self.A, self.O
        (a, s, *rest), data, lines = self.split(st, ("action", "state", "state", "observation"), 2)
        sign = -1.0 if self.cost else 1.0
        everything = slice(None)
        # The reward has an end-state or observation axis only when an entry depends on it.
        self.reward_axes[0] |= len(rest) < 2 or rest[0] != everything
        self.reward_axes[1] |= len(rest) < 2 or rest[1] != everything
        log = self.r
        log.statement()
        rows = self.rows_of(s, a, A, S)

        def pattern(s2, o):  # the column of a pattern of cells, -1 standing for '*'
            s2 = np.where(s2 < 0, -1, s2) if isinstance(s2, np.ndarray) else (-1 if isinstance(s2, slice) else s2)
            o = np.where(o < 0, -1, o) if isinstance(o, np.ndarray) else (-1 if isinstance(o, slice) else o)
            return (s2 + 1) * (O + 1) + o + 1

        if len(rest) == 2:
            s2, o = rest
            value = sign * self.data(st, data, lines, (1,), probability=False, entry=True)[0]
            if s2 == everything and o == everything:
                log.clear(rows, value)
            elif len(rows) == 1:
                log.cell(int(rows[0]), pattern(s2, o), value)
            else:
                self.room(st.line, len(rows))
                log.cells(rows, pattern(s2, o), value)
        elif len(rest) == 1:
            (s2,) = rest
            row = sign * self.data(st, data, lines, (O,), probability=False, what="a row over observations")
            self.room(st.line, len(rows) * O)
            log.cells(rows[:, None], pattern(s2, np.arange(O))[None, :], row[None, :])
        else:
            matrix = sign * self.data(st, data, lines, (S, O), probability=False, what=f"a {S}x{O} matrix, end state by observation")
            i, j = np.nonzero((matrix != 0) | np.signbit(matrix))
            self.room(st.line, len(rows) * len(i))
            log.clear(rows)
            log.cells(rows[:, None], pattern(i, j)[None, :], matrix[i, j][None, :])

    def reward_table(self, last_line: int) -> SparseTable:
        """The reward's cells: each write's pattern (``*`` standing for every end state or observation along
        the axes the reward has) spread over its cells, the last write of a cell winning."""
        S, A, O = self.S, self.A, self.O
        r, c, v, q = self.r.entries()
        S2, O2 = (S if self.reward_axes[0] else 1), (O if self.reward_axes[1] else 1)
        s2, o = c // (O + 1) - 1, c % (O + 1) - 1
        width_o = np.where(o < 0, O2, 1)
        counts = np.where(s2 < 0, S2, 1) * width_o
        self.room(last_line, int(counts.sum()) - len(c))
        e = np.repeat(np.arange(len(c)), counts)
        k = np.arange(len(e)) - np.repeat(np.cumsum(counts) - counts, counts)
        cell_s2 = np.where(s2[e] < 0, k // width_o[e], s2[e])
        cell_o = np.where(o[e] < 0, k % width_o[e], o[e])
        return self.r.table((S, A, S2, O2), 2, (r[e], cell_s2 * O2 + cell_o, v[e], q[e]), fill=True)

    # -- the end ----------------------------------------------------------

    def tables(self, last_line: int) -> dict:
        """The world's tables: dense arrays for a small world (:data:`DENSE_NUMBERS`), :class:`SparseTable` s
        otherwise.  Every row of T and O sums to 1 within ROW_TOLERANCE; those off by more than 1e-9 are
        divided by their sum."""
        S, A, O = self.S, self.A, self.O
        transition, observation = self.t.table((S, A, S), 1), self.o.table((A, S, O), 1)
        reward = self.reward_table(last_line)
        dense = S * A * S + A * S * O + math.prod(reward.shape) <= DENSE_NUMBERS
        out = {}
        for name, table, row_lines, letter in (("transition", transition, self.t_line, "T"), ("observation", observation, self.o_line, "O")):
            sums = table.row_sums()
            self.check_sums(sums, row_lines.reshape(-1), last_line, letter)
            fix = np.abs(sums - 1.0) > _KEEP_TOLERANCE
            if dense:
                rows = table.dense().reshape(table.num_rows, -1)
                sums = rows.sum(axis=1)  # as a dense row always summed: the same numbers as ever
                fix = np.abs(sums - 1.0) > _KEEP_TOLERANCE
                rows[fix] /= sums[fix, None]
                out[name] = rows.reshape(table.shape)
            elif fix.any():
                on = fix[table.row_of]
                data = table.data.copy()
                data[on] /= sums[table.row_of[on]]
                out[name] = attrs.evolve(table, data=data)
            else:
                out[name] = table
        out["reward"] = reward.dense() if dense else reward
        return out

    def check_sums(self, sums: np.ndarray, row_lines: np.ndarray, last_line: int, letter: str) -> None:
        bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_TOLERANCE)
        if bad.size:
            i = int(bad[0])
            if letter == "T":
                s, a = divmod(i, self.A)
                where = f"T row of action {self.label('action', a)}, start state {self.label('state', s)}"
            else:
                a, s2 = divmod(i, self.S)
                where = f"O row of action {self.label('action', a)}, end state {self.label('state', s2)}"
            line = int(row_lines[i])
            if line == 0:
                raise self.err(last_line, f"{where} was never given (it sums to 0), expected probabilities summing to 1")
            raise self.err(line, f"{where} sums to {float(sums[i])!r}, expected 1 (within {ROW_TOLERANCE:g})")

    def label(self, kind: str, i: int) -> str:
        names = self.names[_KIND_WORD[kind]]
        return repr(names[i]) if names else str(i)


def parse_pomdp(text: str, *, source: str = "<string>", require_discount: bool = False, check: Callable[[Declared], None] | None = None) -> POMDP:
    """Parse the text of a ``.POMDP`` file into a :class:`fsc.POMDP`.

    ``source`` names the text in error messages (``source:line: ...``).  The
    discount is optional unless ``require_discount``; a file without one gives
    ``discount=None``.  ``values: cost`` negates every ``R:`` number, so the
    world always holds rewards.  Rows of ``T``, ``O`` and the start vector must
    sum to 1 within :data:`ROW_TOLERANCE` (1e-5); those off by more than 1e-9
    are divided by their sum.

    ``check``, if given, is called once with the :class:`Declared` sizes just before the first ``T``, ``O`` or
    ``R`` entry is read (the preamble and ``start`` checked, nothing of the tables built): what it raises stops
    the reading there.

    Raises:
        ValueError: naming ``source``, the line and what was expected.
    """
    if not isinstance(text, str):
        raise InputTypeError(f"text must be a str, got {type(text).__name__}")
    reader = _Reader(source, require_discount)
    reader.take_text(text)
    statements, last_line = _tokenise(text, source)
    last_line = max(last_line, 1)
    entries = 0  # line of the first T, O or R entry
    handlers = {"T": reader.transition_entry, "O": reader.observation_entry, "R": reader.reward_entry}
    for st in statements:
        if st.keyword in _PREAMBLE:
            reader.preamble(st)
            continue
        if not reader.tables_ready:
            reader.allocate(st.line)
        if st.keyword.startswith("start"):
            if entries:
                raise reader.err(st.line, f"'{st.keyword}:' must come before T, O and R entries (the first is on line {entries})")
            reader.start(st)
        else:
            if not entries and check is not None:
                check(Declared(reader.S, reader.A, reader.O, int(np.count_nonzero(reader.initial))))
            entries = entries or st.line
            handlers[st.keyword](st)
    if not reader.tables_ready:
        reader.allocate(last_line)
    if not (reader.t_line > 0).any() and not (reader.o_line > 0).any():
        raise reader.err(last_line, "expected T: and O: entries, the file has none")
    tables = reader.tables(last_line)
    names = reader.names
    try:
        return POMDP(
            **tables,
            initial=reader.initial,
            state_labels=names["states"],
            action_labels=names["actions"],
            observation_labels=names["observations"],
            discount=reader.discount,
        )
    except ValueError as error:  # not expected after the checks above; still name the file
        raise InputError(f"{source}:{last_line}: {error}") from None


def read_pomdp(path, *, require_discount: bool = False, check: Callable[[Declared], None] | None = None) -> POMDP:
    """Read a ``.POMDP`` file (Cassandra's format) into a :class:`fsc.POMDP`; a POMDPX file (SARSOP's XML format, by
    its suffix ``.pomdpx`` or its first bytes ``<?xml`` or ``<pomdpx``) is read by :func:`fsc.io.pomdpx.parse_pomdpx`.

    See :func:`parse_pomdp` for what is accepted (and ``check``); errors name the file and line.
    """
    path = Path(path)
    try:
        raw = read_limited(path, ".POMDP file", MAX_POMDP_BYTES)  # a regular file only (not a FIFO, a device), of bounded size
    except OSError as error:
        raise InputError(f"cannot read {quoted(path)}: {error.strerror or error}") from None
    from fsc.io.pomdpx import is_pomdpx, parse_pomdpx  # SARSOP's XML format: by the suffix .pomdpx or the first bytes

    if is_pomdpx(path, raw):
        sizes = None if check is None else (lambda **declared: check(Declared(**declared)))
        return parse_pomdpx(raw, source=path.name, require_discount=require_discount, check=sizes, max_table_bytes=MAX_TABLE_BYTES)
    nul = raw.find(b"\0")
    if nul >= 0:  # a binary file: said at once, before decoding and tokenising it
        line = raw.count(b"\n", 0, nul) + 1
        raise InputError(f"{path.name}:{line}: expected text, got the byte 0x00")
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark, if any, is dropped
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise InputError(f"{path.name}:{line}: expected text, got the byte {raw[error.start]:#04x}") from None
    return parse_pomdp(text, source=path.name, require_discount=require_discount, check=check)

# -- writing ----------------------------------------------------------------


def _fmt(x: float) -> str:
    """``repr`` of a float, with a '.' in the mantissa (the format wants one)."""
    text = repr(float(x))
    if "e" in text and "." not in text.split("e")[0]:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def _names(labels: tuple[str, ...], default: str) -> tuple[str, ...] | None:
    """The labels if they can be written as names and are not the defaults, else None."""
    if labels == tuple(f"{default}{i}" for i in range(len(labels))):
        return None
    if all(_NAME.fullmatch(x) and x not in _RESERVED for x in labels):
        return labels
    return None


def _present(values: np.ndarray) -> np.ndarray:
    """Entries that differ from +0.0 (negative zero counts as present)."""
    return (values != 0) | np.signbit(values)


def format_pomdp(world: POMDP | Task) -> str:
    """The text of a ``.POMDP`` file for ``world`` (see :func:`write_pomdp`)."""
    world = as_pomdp(world)
    S, A, O = world.num_states, world.num_actions, world.num_observations
    state_names = _names(world.state_labels, "s")
    action_names = _names(world.action_labels, "a")
    obs_names = _names(world.observation_labels, "o")
    s_ = state_names or [str(i) for i in range(S)]
    a_ = action_names or [str(i) for i in range(A)]
    o_ = obs_names or [str(i) for i in range(O)]
    out: list[str] = ["# written by fsc.write_pomdp; numbers are Python reprs (read back bit for bit)"]
    skipped = [
        f"{kind} labels {json.dumps(list(labels))}"
        for kind, labels, names, default in (
            ("state", world.state_labels, state_names, "s"),
            ("action", world.action_labels, action_names, "a"),
            ("observation", world.observation_labels, obs_names, "o"),
        )
        if names is None and labels != tuple(f"{default}{i}" for i in range(len(labels)))
    ]
    for line in skipped:
        out.append("# not valid names, written as counts: " + line.replace("#", "\\u0023").replace("\n", " "))
    if world.metrics:
        out.append(f"# metrics not written (the format has none): {', '.join(sorted(world.metrics))}")
    if world.discount is not None:
        out.append(f"discount: {_fmt(world.discount)}")
    out.append("values: reward")
    out.append("states: " + (" ".join(state_names) if state_names else str(S)))
    out.append("actions: " + (" ".join(action_names) if action_names else str(A)))
    out.append("observations: " + (" ".join(obs_names) if obs_names else str(O)))
    out.append("start: " + " ".join(_fmt(x) for x in world.initial))
    out.append("")
    # T and O: one row per (action, state); a sparse row as entries.  A world stored sparse is read by rows
    # of its tables, never as dense arrays.
    if world.is_sparse:
        t_row, o_row = (lambda s, a: world.transition_table.row(s * A + a)), (lambda a, s2: world.observation_table.row(a * S + s2))
    else:
        t_row, o_row = (lambda s, a: world.transition[s, a]), (lambda a, s2: world.observation[a, s2])
    for a in range(A):
        for s in range(S):
            out.extend(_row_lines(f"T: {a_[a]} : {s_[s]}", t_row(s, a), s_))
    out.append("")
    for a in range(A):
        for s2 in range(S):
            out.extend(_row_lines(f"O: {a_[a]} : {s_[s2]}", o_row(a, s2), o_))
    out.append("")
    reward = world.reward_table
    for a in range(A):
        for s in range(S):
            head = f"R: {a_[a]} : {s_[s]}"
            if isinstance(reward, SparseTable):
                out.extend(_sparse_reward_lines(head, reward, s * A + a, s_, o_))
            else:
                out.extend(_reward_lines(head, world.reward[s, a], s_, o_))
    out.append("")
    return "\n".join(out)


def _sparse_reward_lines(head: str, reward: SparseTable, row: int, s_, o_) -> list[str]:
    """Lines for one row ``(s, a)`` of a reward stored sparse: its fill as a ``* : *`` wildcard, then its entries
    (``s2 : o``, ``s2 : *`` or ``* : o`` by the axes the reward has)."""
    fill = float(reward.fill[row]) if reward.fill is not None else 0.0
    lines = [f"{head} : * : * {_fmt(fill)}"] if fill != 0 or np.signbit(fill) else []
    S2, O2 = reward.shape[2], reward.shape[3]
    lo, hi = reward.indptr[row], reward.indptr[row + 1]
    for col, value in zip(reward.indices[lo:hi], reward.data[lo:hi], strict=True):
        s2, o = divmod(int(col), O2)
        end = s_[s2] if S2 > 1 else "*"
        seen = o_[o] if O2 > 1 else "*"
        lines.append(f"{head} : {end} : {seen} {_fmt(value)}")
    return lines


def _reward_lines(head: str, block: np.ndarray, s_, o_) -> list[str]:
    """Lines for ``reward[s, a]`` (end state by observation): its most common
    value as a ``* : *`` wildcard, then the rows (or entries) that differ."""
    bits = np.ascontiguousarray(block).view(np.uint64)
    first = bits.flat[0]
    if (bits == first).all():
        return [] if first == 0 else [f"{head} : * : * {_fmt(block.flat[0])}"]
    values, counts = np.unique(bits, return_counts=True)
    base = values[counts.argmax()]
    lines = []
    if base != 0:
        lines.append(f"{head} : * : * {_fmt(np.array(base, dtype=np.uint64).view(np.float64))}")
    differ = bits != base
    for s2 in np.flatnonzero(differ.any(axis=1)):
        row = block[s2]
        if (bits[s2] == bits[s2, 0]).all():
            lines.append(f"{head} : {s_[s2]} : * {_fmt(row[0])}")
        elif 3 * int(differ[s2].sum()) <= row.size:
            lines.extend(f"{head} : {s_[s2]} : {o_[o]} {_fmt(row[o])}" for o in np.flatnonzero(differ[s2]))
        else:
            lines.append(f"{head} : {s_[s2]}\n" + " ".join(_fmt(x) for x in row))
    return lines


def _row_lines(head: str, row: np.ndarray, names) -> list[str]:
    """A probability row: its non-zero entries one per line when at most a third are non-zero, else whole."""
    present = _present(row)
    count = int(present.sum())
    if 0 < count and 3 * count <= row.size:
        return [f"{head} : {names[j]} {_fmt(row[j])}" for j in np.flatnonzero(present)]
    return [f"{head}\n" + " ".join(_fmt(x) for x in row)]


def write_pomdp(world: POMDP | Task, path) -> Path:
    """Write ``world`` as a ``.POMDP`` file; return the path.

    Names are written when the labels are not the defaults and are valid
    names; otherwise counts (the labels then go into a comment).  Rows of
    ``T`` and ``O`` are written whole, or as single entries when at most a
    third of a row is non-zero; the rewards of each ``(action, state)`` as
    their most common value (``R: a : s : * : * v``) followed by the end
    states (rows, ``s2 : *`` entries or single entries) that differ from it.  Numbers are
    Python reprs, so :func:`read_pomdp` gives bit-identical tensors.  The
    world's ``metrics`` are not written (the format has no place for them);
    ``values:`` is always ``reward``.  The file is written whole or not at all.
    """
    text = format_pomdp(world)
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def pomdp_summary(world: POMDP) -> dict:
    """Sizes, discount and closed parts (as lists of state labels) of ``world``."""
    return {
        "valid": True,
        "states": world.num_states,
        "actions": world.num_actions,
        "observations": world.num_observations,
        "discount": world.discount,
        "parts": [[world.state_labels[s] for s in part] for part in world.parts],
    }
