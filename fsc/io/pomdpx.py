"""SARSOP's POMDPX format (factored XML): read into the :class:`fsc.POMDP` the ``.POMDP`` reader builds, and written.

A POMDPX file declares state, observation, action and reward *variables* and gives the world as a dynamic Bayesian
network: one conditional table (``<CondProb>``) per state variable for the start belief and for the transition, one
per observation variable, and one function (``<Func>``) per reward variable, the reward being their sum.  The reader
flattens it: a state is one value of every state variable (the first declared varies slowest), an action one value of
every action variable, an observation one value of every observation variable and of every *fully observed* state
variable of the next state (``fullyObs="true"``: the agent sees it, so a controller's observation must carry it).
``docs/pomdp-files.md`` says what is read, refused and written.

The transitions are built per action and state, variable by variable, as products of the rows of the conditional
tables that are not zero: nothing of size ``S x S`` is ever made.  The XML is read by expat with no DOCTYPE (so no
entity of any kind is declared, expanded or fetched), from at most :data:`fsc.limits.MAX_POMDP_BYTES` bytes; sizes are
refused from what the variables declare, before any table is built.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from pathlib import Path
from xml.parsers import expat
from xml.sax.saxutils import escape

import attrs
import numpy as np

from fsc.errors import InputError, InputTypeError, quoted
from fsc.files import read_limited, write_text
from fsc.limits import MAX_INTEGER_DIGITS, MAX_POMDP_BYTES
from fsc.model.pomdp import POMDP, SparseTable, Task, as_pomdp

__all__ = ["MAX_FACTOR_CELLS", "MAX_OBSERVATIONS", "format_pomdpx", "is_pomdpx", "parse_pomdpx", "read_pomdpx", "write_pomdpx"]

#: The .POMDP reader's rules (fsc.io.pomdp_file, which passes its own MAX_TABLE_BYTES): rows of probabilities within
#: ROW_TOLERANCE of 1, divided by their sum when off by more than 1e-9; dense arrays up to DENSE_NUMBERS numbers.
MAX_TABLE_BYTES = 2 * 1024**3
ROW_TOLERANCE = 1e-5
_KEEP_TOLERANCE = 1e-9
DENSE_NUMBERS = 2**20
#: The conditional tables and reward functions are kept dense over their parents and variable, 8 bytes a cell and
#: one more per row: at most this many cells in all (1 GiB), checked from the declared sizes before any is made.
MAX_FACTOR_CELLS = 2**27

_NUMBERED = {"state": "s", "obs": "o", "action": "a"}  # SARSOP's names of the values of <NumValues>
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SIGNATURE = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*<(?:\?xml|pomdpx)")


def is_pomdpx(path: str | Path, head: bytes) -> bool:
    """Whether a file is POMDPX: its suffix is ``.pomdpx`` (any case), or its text starts with ``<?xml`` or ``<pomdpx``."""
    return Path(path).suffix.lower() == ".pomdpx" or _SIGNATURE.match(head[:4096]) is not None


# -- XML, read safely ----------------------------------------------------------------------------------------------


class _Node:
    """An element: its tag, attributes, text, children and line."""

    __slots__ = ("tag", "attributes", "parts", "children", "line")

    def __init__(self, tag: str, attributes: dict, line: int) -> None:
        self.tag, self.attributes, self.line = tag, attributes, line
        self.parts: list[str] = []
        self.children: list[_Node] = []

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def all(self, tag: str) -> list[_Node]:
        return [c for c in self.children if c.tag == tag]

    def first(self, tag: str) -> _Node | None:
        return next((c for c in self.children if c.tag == tag), None)


def _parse_xml(data: bytes, source: str, encoding: str | None = None) -> _Node:
    """The element tree of ``data`` (in ``encoding``, by default the one it declares); a DOCTYPE, an entity declaration
    or an external entity is refused where it starts."""
    parser = expat.ParserCreate(encoding)
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    roots: list[_Node] = []
    stack: list[_Node] = []

    def start(tag: str, attributes: dict) -> None:
        node = _Node(tag, attributes, parser.CurrentLineNumber)
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)

    def refuse(what: str) -> Callable:
        def handler(*_) -> None:
            raise InputError(
                f"{source}:{parser.CurrentLineNumber}: {what} is refused (a POMDPX file needs none; entities could expand without bound or read other files)"
            )

        return handler

    parser.StartElementHandler = start
    parser.EndElementHandler = lambda _tag: stack.pop()
    parser.CharacterDataHandler = lambda text: stack[-1].parts.append(text) if stack else None
    parser.StartDoctypeDeclHandler = refuse("a DOCTYPE declaration")
    parser.EntityDeclHandler = refuse("an entity declaration")
    parser.ExternalEntityRefHandler = refuse("an external entity")
    parser.buffer_text = True
    try:
        parser.Parse(data, True)
    except expat.ExpatError as error:
        raise InputError(f"{source}:{error.lineno}: not well-formed XML ({expat.ErrorString(error.code)})") from None
    if not roots or roots[0].tag != "pomdpx":
        raise InputError(f"{source}:{roots[0].line if roots else 1}: expected the root element <pomdpx>, got <{roots[0].tag if roots else ''}>")
    return roots[0]


# -- variables -------------------------------------------------------------------------------------------------------


@attrs.frozen
class _Var:
    """A state, observation or action variable: its names, its values, whether the agent observes it (``fullyObs``)."""

    kind: str  # "state", "obs" or "action"
    name: str  # vnameCurr of a state variable, vname of the others
    prev: str | None
    size: int
    enum: tuple[str, ...] | None  # the <ValueEnum> names; None for <NumValues> (s0, s1, ... as SARSOP names them)
    observed: bool
    line: int
    lookup: dict = attrs.field(factory=dict, eq=False, repr=False)

    @property
    def values(self) -> tuple[str, ...]:
        return self.enum if self.enum is not None else tuple(f"{_NUMBERED[self.kind]}{i}" for i in range(self.size))

    def index(self, token: str, source: str, line: int, written: str | None = None) -> int:
        """The index of the value ``token`` names (``written``: the variable's name where it stands, by default its own)."""
        if self.enum is not None:
            found = self.lookup.get(token)
        else:
            prefix, digits = _NUMBERED[self.kind], token[1:]
            ok = token[:1] == prefix and digits.isascii() and digits.isdigit() and len(digits) <= MAX_INTEGER_DIGITS
            found = int(digits) if ok and (digits == "0" or digits[0] != "0") and int(digits) < self.size else None
        if found is None:
            shown = self.enum[:8] if self.enum is not None else [f"{_NUMBERED[self.kind]}{i}" for i in range(min(self.size, 8))]
            hint = ", ".join(shown) + (", ..." if self.size > 8 else "")
            raise InputError(f"{source}:{line}: <Instance> names {quoted(token)}, not a value of {written or self.name} (one of {hint}, '*' or '-')")
        return found


def _value_set(node: _Node, kind: str, source: str) -> tuple[int, tuple[str, ...] | None]:
    """The size and the names (None for ``<NumValues>``) of a variable's values."""
    enum, count = node.first("ValueEnum"), node.first("NumValues")
    if enum is not None:
        names = tuple(enum.text.split())
        if not names:
            raise InputError(f"{source}:{enum.line}: expected value names in <ValueEnum>, got none")
        for name in names:
            if name in ("*", "-"):
                raise InputError(f"{source}:{enum.line}: a value cannot be named {quoted(name)} (it means every value in an <Instance>)")
        if len(set(names)) != len(names):
            twice = next(n for n in names if names.count(n) > 1)
            raise InputError(f"{source}:{enum.line}: value {quoted(twice)} given twice in <ValueEnum>")
        return len(names), names
    if count is not None:
        text = count.text.strip()
        if not (text.isascii() and text.isdigit()) or len(text) > MAX_INTEGER_DIGITS or int(text) < 1:
            raise InputError(f"{source}:{count.line}: expected a count of values (1 to {MAX_INTEGER_DIGITS} digits) in <NumValues>, got {quoted(text)}")
        return int(text), None
    raise InputError(f"{source}:{node.line}: expected <ValueEnum> or <NumValues> in <{node.tag}>")


class _Model:
    """The variables of a file, their names, and the flat numbering of states, actions and observations."""

    def __init__(self, root: _Node, source: str) -> None:
        self.source = source
        self.states: list[_Var] = []
        self.obs: list[_Var] = []
        self.actions: list[_Var] = []
        self.rewards: list[str] = []
        self.names: dict[str, tuple[str, int]] = {}  # name -> ("prev" | "curr" | "obs" | "action" | "reward", index)
        node = root.first("Variable")
        if node is None:
            raise InputError(f"{source}:{root.line}: expected a <Variable> element in <pomdpx>")
        for child in node.children:
            self.variable(child)
        for what, found in (("<StateVar>", self.states), ("<ActionVar>", self.actions), ("<RewardVar>", self.rewards)):
            if not found:
                raise InputError(f"{source}:{node.line}: expected at least one {what} in <Variable>")
        self.observed = [v for v in self.states if v.observed]
        self.S, self.A = math.prod(v.size for v in self.states), math.prod(v.size for v in self.actions)
        self.O = math.prod(v.size for v in self.obs + self.observed)
        self.line = node.line
        self.digits: dict[tuple[str, int], np.ndarray] = {}

    def name(self, node: _Node, attribute: str) -> str:
        value = node.attributes.get(attribute)
        if not value or value.split() != [value] or value == "null":
            raise InputError(f"{self.source}:{node.line}: expected a name (no spaces, not 'null') in {attribute}= of <{node.tag}>, got {quoted(value)}")
        if value in self.names:
            raise InputError(f"{self.source}:{node.line}: variable name {quoted(value)} given twice")
        return value

    def variable(self, node: _Node) -> None:
        source, tag = self.source, node.tag
        if tag == "StateVar":
            prev, curr = self.name(node, "vnamePrev"), self.name(node, "vnameCurr")
            if prev == curr:
                raise InputError(f"{source}:{node.line}: vnamePrev and vnameCurr must differ, both are {quoted(prev)}")
            observed = node.attributes.get("fullyObs", "false")
            if observed not in ("true", "false"):
                raise InputError(f'{source}:{node.line}: expected fullyObs="true" or "false", got {quoted(observed)}')
            size, enum = _value_set(node, "state", source)
            j = len(self.states)
            self.states.append(_Var("state", curr, prev, size, enum, observed == "true", node.line, _lookup(enum)))
            self.names[prev], self.names[curr] = ("prev", j), ("curr", j)
        elif tag in ("ObsVar", "ActionVar"):
            kind, found = ("obs", self.obs) if tag == "ObsVar" else ("action", self.actions)
            name = self.name(node, "vname")
            size, enum = _value_set(node, kind, source)
            self.names[name] = (kind, len(found))
            found.append(_Var(kind, name, None, size, enum, False, node.line, _lookup(enum)))
        elif tag == "RewardVar":
            name = self.name(node, "vname")
            self.names[name] = ("reward", len(self.rewards))
            self.rewards.append(name)
        elif tag == "TerminalStateRewardVar":
            raise InputError(f"{source}:{node.line}: <TerminalStateRewardVar> is not read (a world here has no terminal reward)")
        else:
            raise InputError(f"{source}:{node.line}: unknown element <{tag}> in <Variable> (expected StateVar, ObsVar, ActionVar, RewardVar)")

    def var(self, kind: str, i: int) -> _Var:
        return self.states[i] if kind in ("prev", "curr") else self.obs[i] if kind == "obs" else self.actions[i]

    def digit(self, kind: str, i: int, flat: np.ndarray) -> np.ndarray:
        """The value of variable ``(kind, i)`` in each flat state (``prev``, ``curr``), action or observation."""
        group = "state" if kind in ("prev", "curr") else kind
        table = self.digits.get((group, i))
        if table is None:  # the variable's value at every flat value of its kind, computed once
            sizes = [v.size for v in {"state": self.states, "action": self.actions, "obs": self.obs + self.observed}[group]]
            table = (np.arange(math.prod(sizes), dtype=np.int64) // math.prod(sizes[i + 1 :])) % sizes[i]
            self.digits[(group, i)] = table
        return table[flat]


def _lookup(enum: tuple[str, ...] | None) -> dict[str, int]:
    return {} if enum is None else {v: i for i, v in enumerate(enum)}


# -- conditional tables and reward functions -----------------------------------------------------------------------

#: What each section's tables may name: the variable, and the kinds of parents it may have.
_ROLES = {
    "belief": ("InitialStateBelief", "CondProb", ("prev", "curr"), ("prev", "curr")),
    "transition": ("StateTransitionFunction", "CondProb", ("curr",), ("action", "prev", "curr")),
    "observation": ("ObsFunction", "CondProb", ("obs",), ("action", "curr")),
    "reward": ("RewardFunction", "Func", ("reward",), ("action", "prev", "curr", "obs")),
}


@attrs.define
class _Factor:
    """One ``<CondProb>`` or ``<Func>``: its variable, parents and dense table (parents' axes, then the variable's)."""

    name: str
    target: int  # the index of the variable among those of its kind
    slots: list[tuple[str, int]]  # the parents: ("action" | "prev" | "curr" | "obs", index)
    table: np.ndarray
    line: int


def _numbers(text: str, source: str, line: int) -> np.ndarray:
    """The numbers of a table, strictly (finite, decimal)."""
    tokens = text.split()
    try:
        if not set(text) <= _NUMBER_CHARACTERS:
            raise ValueError
        values = np.array(tokens, dtype=np.float64)
    except ValueError:
        bad = next((t for t in tokens if not _NUMBER.fullmatch(t)), text)
        raise InputError(f"{source}:{line}: expected a number, got {quoted(bad)}") from None
    if not np.isfinite(values).all():
        raise InputError(f"{source}:{line}: expected a finite number, got {quoted(tokens[int(np.flatnonzero(~np.isfinite(values))[0])])}")
    return values


_NUMBER_CHARACTERS = set("0123456789+-.eE \t\r\n")


def _read_factor(model: _Model, node: _Node, role: str, cells: list[int]) -> _Factor:
    """A ``<CondProb>`` or ``<Func>`` of ``role``: its variable, parents and entries, checked."""
    source, (_, _, targets, kinds) = model.source, _ROLES[role]
    var_node, parent_node = node.first("Var"), node.first("Parent")
    if var_node is None or parent_node is None:
        raise InputError(f"{source}:{node.line}: expected <Var> and <Parent> in <{node.tag}>")
    name = var_node.text.strip()
    kind, target = model.names.get(name, (None, -1))
    if kind not in targets:
        what = {"belief": "a state variable", "transition": "a state variable of the next state (a vnameCurr)", "observation": "an observation variable",
                "reward": "a reward variable"}[role]  # fmt: skip
        raise InputError(f"{source}:{var_node.line}: <Var> of <{node.tag}> in <{_ROLES[role][0]}> must name {what}, got {quoted(name)}")
    tokens = parent_node.text.split()
    slots: list[tuple[str, int]] = []
    if not (role == "belief" and tokens == ["null"]):
        for token in tokens:
            slot = model.names.get(token)
            if slot is None or slot[0] not in kinds:
                allowed = ", ".join({"action": "action", "prev": "previous state", "curr": "next state", "obs": "observation"}[k] for k in kinds)
                raise InputError(f"{source}:{parent_node.line}: <Parent> of {name} names {quoted(token)}, expected variables of: {allowed}")
            slot = ("prev", slot[1]) if role == "belief" else slot
            itself = role in ("transition", "belief") and slot == ("curr" if role == "transition" else "prev", target)
            if slot in slots or itself:
                raise InputError(f"{source}:{parent_node.line}: <Parent> of {name} names {quoted(token)} twice or names the variable itself")
            slots.append(slot)
    own = [] if role == "reward" else [(model.states[target] if role in ("belief", "transition") else model.obs[target]).size]
    sizes = [model.var(*slot).size for slot in slots] + own
    cells[0] += math.prod(sizes)
    if cells[0] > MAX_FACTOR_CELLS:
        over = f"{cells[0]:,} cells with {name} given over {' x '.join(map(str, sizes))}"
        raise InputError(f"{source}:{node.line}: the tables reach {over}, over the limit of {MAX_FACTOR_CELLS:,}")
    factor = _Factor(name, target, slots, np.zeros(sizes), node.line)
    _fill(model, factor, node, role)
    return factor


def _fill(model: _Model, factor: _Factor, node: _Node, role: str) -> None:
    """Write the ``<Entry>`` s of ``node`` into the factor's table (a later entry wins), then check its rows."""
    source = model.source
    parameter = node.first("Parameter")
    if parameter is None:
        raise InputError(f"{source}:{node.line}: expected <Parameter> in <{node.tag}> of {factor.name}")
    kind = parameter.attributes.get("type", "TBL").strip()
    if kind != "TBL":
        raise InputError(f'{source}:{parameter.line}: <Parameter type={quoted(kind)}> is not read; only type="TBL" (as SARSOP)')
    variables = [model.var(*slot) for slot in factor.slots]
    written = [v.prev if kind == "prev" else v.name for v, (kind, _) in zip(variables, factor.slots, strict=True)]
    if role != "reward":
        variables.append(model.states[factor.target] if role in ("belief", "transition") else model.obs[factor.target])
        written.append(factor.name)
    given = None if role == "reward" else np.zeros(factor.table.shape[:-1], dtype=bool)
    for entry in parameter.all("Entry"):
        instance, table = entry.first("Instance"), entry.first("ValueTable" if role == "reward" else "ProbTable")
        if instance is None or table is None:
            raise InputError(f"{source}:{entry.line}: expected <Instance> and <{'ValueTable' if role == 'reward' else 'ProbTable'}> in <Entry>")
        tokens = instance.text.split()
        if len(tokens) != len(variables):
            names = " ".join(written)
            raise InputError(f"{source}:{instance.line}: <Instance> has {len(tokens)} values, expected {len(variables)} ({names})")
        index = tuple(slice(None) if t in ("*", "-") else v.index(t, source, instance.line, w) for t, v, w in zip(tokens, variables, written, strict=True))
        values = _entry_values(factor, tokens, variables, table, source, role != "reward")
        factor.table[index] = values.reshape([v.size if t == "-" else 1 for t, v in zip(tokens, variables, strict=True) if t in ("*", "-")])
        if given is not None:
            given[index[:-1]] = True
    if given is not None:
        _check_rows(factor, given, variables, written, source, node.tag)


def _entry_values(factor: _Factor, tokens: list[str], variables: list[_Var], table: _Node, source: str, probability: bool) -> np.ndarray:
    """The numbers of one ``<ProbTable>`` or ``<ValueTable>``: one per cell of its ``-`` axes (``identity``, ``uniform``)."""
    dashes = [v.size for t, v in zip(tokens, variables, strict=True) if t == "-"]
    word = table.text.strip().lower()
    if word in ("identity", "uniform"):
        parents = [i for i, t in enumerate(tokens[:-1]) if t == "-"]
        size = variables[-1].size
        if not probability or tokens[-1] != "-" or (word == "identity" and (len(parents) != 1 or variables[parents[0]].size != size)):
            need = "the variable's and one parent's of as many values" if word == "identity" else "the variable's"
            got = quoted(" ".join(tokens))
            raise InputError(f"{source}:{table.line}: {quoted(word)} in the table of {factor.name} needs '-' as {need} in <Instance>, got {got}")
        return np.eye(size) if word == "identity" else np.full(dashes, 1.0 / size)
    values = _numbers(table.text, source, table.line)
    if values.size != math.prod(dashes):
        got = quoted(" ".join(tokens))
        need = f"{math.prod(dashes)} numbers (one per value of the '-' variables of <Instance> {got})"
        raise InputError(f"{source}:{table.line}: expected {need}, got {values.size}")
    if probability:
        bad = np.flatnonzero((values < 0) | (values > 1 + ROW_TOLERANCE))
        if bad.size:
            raise InputError(f"{source}:{table.line}: expected a probability in [0, 1], got {values[bad[0]]!r} in the table of {factor.name}")
    return values


def _check_rows(factor: _Factor, given: np.ndarray, variables: list[_Var], written: list[str], source: str, tag: str) -> None:
    """Every row (one value of every parent) sums to 1 within ROW_TOLERANCE; those off by more than 1e-9 are divided by their sum."""
    rows = factor.table.reshape(-1, factor.table.shape[-1])
    sums = rows.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_TOLERANCE)
    if bad.size:
        i = int(bad[0])
        at = np.unravel_index(i, factor.table.shape[:-1])
        where = ", ".join(f"{w}={v.values[int(k)] if v.size <= 2**16 else int(k)}" for v, w, k in zip(variables, written, at, strict=False))
        row = f"the row {where}" if where else "the table"
        if not given.reshape(-1)[i]:
            raise InputError(f"{source}:{factor.line}: <{tag}> of {factor.name}: no <Entry> gives {row} (each row must sum to 1)")
        raise InputError(f"{source}:{factor.line}: <{tag}> of {factor.name}: {row} sums to {float(sums[i])!r}, expected 1 (within {ROW_TOLERANCE:g})")
    fix = np.abs(sums - 1.0) > _KEEP_TOLERANCE
    rows[fix] /= sums[fix, None]


def _section(model: _Model, root: _Node, role: str, cells: list[int]) -> list[_Factor]:
    """The tables of one section, one per variable of its kind, in the variables' order."""
    tag, child, _, _ = _ROLES[role]
    count = {"belief": len(model.states), "transition": len(model.states), "observation": len(model.obs), "reward": len(model.rewards)}[role]
    node = root.first(tag)
    if node is None:
        raise InputError(f"{model.source}:{root.line}: expected a <{tag}> element in <pomdpx>")
    found: list[_Factor | None] = [None] * count
    for item in node.children:
        if item.tag != child:
            raise InputError(f"{model.source}:{item.line}: expected <{child}> in <{tag}>, got <{item.tag}>")
        factor = _read_factor(model, item, role, cells)
        if found[factor.target] is not None:
            raise InputError(f"{model.source}:{item.line}: a second <{child}> of {factor.name} in <{tag}> (one per variable, as SARSOP)")
        found[factor.target] = factor
    names = [v.name for v in model.states] if role in ("belief", "transition") else [v.name for v in model.obs] if role == "observation" else model.rewards
    for name, factor in zip(names, found, strict=True):
        if factor is None:
            raise InputError(f"{model.source}:{node.line}: <{tag}> has no <{child}> of {name} (one per variable)")
    return found


# -- the flat world --------------------------------------------------------------------------------------------------


def _strides(sizes: list[int]) -> list[int]:
    return [math.prod(sizes[i + 1 :]) for i in range(len(sizes))]


def _parent_index(model: _Model, factor: _Factor, values: dict[str, np.ndarray], length: int) -> np.ndarray:
    """The row of the factor's table (one value of each parent) that each of ``length`` items reads."""
    index = np.zeros(length, dtype=np.int64)
    for (kind, i), size in zip(factor.slots, factor.table.shape, strict=False):
        index = index * size + model.digit(kind, i, values[kind])
    return index


def _nonzero_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of a table over its last axis, as (indptr, column, value) of the cells that are not 0."""
    flat = table.reshape(-1, table.shape[-1])
    r, c = np.nonzero(flat)
    indptr = np.zeros(flat.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=flat.shape[0]), out=indptr[1:])
    return indptr, c.astype(np.int64), flat[r, c]


class _Builder:
    """Builds the flat tables from the factors, refusing what passes the limit before it is made."""

    def __init__(self, model: _Model, max_table_bytes: int) -> None:
        self.model, self.max_table_bytes = model, max_table_bytes

    def room(self, entries: int, what: str) -> None:
        if 16 * entries > self.max_table_bytes:
            m = self.model
            raise InputError(
                f"{m.source}:{m.line}: with states={m.S:,}, actions={m.A:,}, observations={m.O:,} the {what} reach {entries:,} entries "
                f"({16 * entries / 1024**3:.3g} GiB), over the limit of {self.max_table_bytes / 1024**3:g} GiB"
            )

    def expand(self, items: tuple[np.ndarray, ...], probs: np.ndarray, factor: _Factor, parent: np.ndarray, what: str):
        """Each item times the row of ``factor`` it reads: one item per value of the factor's variable that is not 0
        (the items as they are where every row read has one such value, as a deterministic variable's)."""
        indptr, child, value = _nonzero_rows(factor.table)
        start = indptr[:-1][parent]
        counts = indptr[1:][parent] - start
        if bool((counts == 1).all()):
            return items, probs * value[start], child[start]
        total = int(counts.sum())
        self.room(total, what)
        which = np.repeat(np.arange(len(parent)), counts)
        at = np.repeat(start - (np.cumsum(counts) - counts), counts) + np.arange(total)
        return tuple(x[which] for x in items), probs[which] * value[at], child[at]

    def transition(self, factors: list[_Factor]) -> SparseTable:
        """``T[s, a, s2]``: per (state, action), the product of the state variables' rows, variable by variable."""
        m = self.model
        S, A = m.S, m.A
        s, a = np.repeat(np.arange(S, dtype=np.int64), A), np.tile(np.arange(A, dtype=np.int64), S)
        cols, probs = np.zeros(S * A, dtype=np.int64), np.ones(S * A)
        strides = _strides([v.size for v in m.states])
        for j in _order(m, factors):
            parent = _parent_index(m, factors[j], {"action": a, "prev": s, "curr": cols}, len(cols))
            (s, a, cols), probs, child = self.expand((s, a, cols), probs, factors[j], parent, "transitions")
            cols = cols + child * strides[j]
        return _sparse((S, A, S), 1, s * A + a, cols, probs)

    def observation(self, factors: list[_Factor]) -> SparseTable:
        """``O[a, s2, o]``: the observation variables' rows, and the fully observed variables of ``s2`` as they are."""
        m = self.model
        S, A = m.S, m.A
        a, s2 = np.repeat(np.arange(A, dtype=np.int64), S), np.tile(np.arange(S, dtype=np.int64), A)
        strides = _strides([v.size for v in m.obs + m.observed])
        cols = np.zeros(A * S, dtype=np.int64)
        for k, var in enumerate(m.observed):
            cols += m.digit("curr", m.states.index(var), s2) * strides[len(m.obs) + k]
        probs = np.ones(A * S)
        for k, factor in enumerate(factors):
            parent = _parent_index(m, factor, {"action": a, "curr": s2}, len(cols))
            (a, s2, cols), probs, child = self.expand((a, s2, cols), probs, factor, parent, "observations")
            cols = cols + child * strides[k]
        return _sparse((A, S, m.O), 1, a * S + s2, cols, probs)

    def reward(self, funcs: list[_Factor], transition: SparseTable, observation: SparseTable, dense: bool) -> np.ndarray | SparseTable:
        """``R[s, a, s2, o]``, the sum of the reward functions: ``(S, A, 1, 1)`` when none reads the next state or an
        observation; otherwise every cell (a small world) or the cells of positive probability (a large one), the other
        cells holding the functions of the state and action alone."""
        m = self.model
        S, A = m.S, m.A
        by_row = {"action": np.tile(np.arange(A, dtype=np.int64), S), "prev": np.repeat(np.arange(S, dtype=np.int64), A)}
        simple = [f for f in funcs if all(kind in ("action", "prev") for kind, _ in f.slots)]
        other = [f for f in funcs if f not in simple]
        base = _total([f.table.reshape(-1)[_parent_index(m, f, by_row, S * A)] for f in simple], np.zeros(S * A))
        if not other:
            none = np.zeros(0, dtype=np.int64)
            return base.reshape(S, A, 1, 1) if dense else SparseTable((S, A, 1, 1), 2, np.zeros(S * A + 1, dtype=np.int64), none, np.zeros(0), base)
        S2 = S if any(kind == "curr" for f in other for kind, _ in f.slots) else 1
        O2 = m.O if any(kind == "obs" for f in other for kind, _ in f.slots) else 1
        if dense:
            cell = np.arange(S * A * S2 * O2, dtype=np.int64)
            row, s2, o = cell // (S2 * O2), (cell // O2) % S2, cell % O2
        else:
            row, s2, o = self.reachable(transition, observation, S2, O2)
        values = {"action": row % A, "prev": row // A, "curr": s2, "obs": o}
        parts = [f.table.reshape(-1)[_parent_index(m, f, values, len(row))] for f in other]
        value = _total(([base[row]] if simple else []) + parts, None)
        if dense:
            return value.reshape(S, A, S2, O2)
        differ = (value != base[row]) | (np.signbit(value) != np.signbit(base[row]))
        return _sparse((S, A, S2, O2), 2, row[differ], s2[differ] * O2 + o[differ], value[differ], fill=base)

    def reachable(self, transition: SparseTable, observation: SparseTable, S2: int, O2: int):
        """The cells ``(s * A + a, s2, o)`` of positive probability, ``s2`` and ``o`` 0 where the reward has no such axis."""
        S = self.model.S
        row, s2 = transition.row_of, transition.indices
        a = row % self.model.A
        if O2 > 1:
            which, at = observation.gather(a * S + s2)
            self.room(len(at), "reward's cells")
            row, s2, o = row[which], s2[which], observation.indices[at]
        else:
            o = np.zeros(len(row), dtype=np.int64)
        if S2 == 1:
            key = np.unique(row * O2 + o)
            return key // O2, np.zeros(len(key), dtype=np.int64), key % O2
        return row, s2, o


def _total(parts: list[np.ndarray], empty: np.ndarray | None) -> np.ndarray:
    """The sum of ``parts`` in their order (the first as it is: a -0.0 stays -0.0), or ``empty``."""
    if not parts:
        return empty
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def _order(model: _Model, factors: list[_Factor]) -> list[int]:
    """The state variables in an order where each comes after its parents of the next state (refused if circular)."""
    needs = [{i for kind, i in f.slots if kind == "curr"} for f in factors]
    order: list[int] = []
    while len(order) < len(factors):
        ready = [j for j in range(len(factors)) if j not in order and needs[j] <= set(order)]
        if not ready:
            left = [model.states[j].name for j in range(len(factors)) if j not in order]
            raise InputError(f"{model.source}:{factors[0].line}: the next state's variables {', '.join(left)} are each other's parents (a cycle)")
        order.extend(ready)
    return order


def _sparse(shape: tuple[int, ...], columns: int, rows: np.ndarray, cols: np.ndarray, values: np.ndarray, fill: np.ndarray | None = None) -> SparseTable:
    """A :class:`SparseTable` of the items ``(rows, cols, values)`` (distinct cells; zeros dropped unless a fill is given)."""
    if fill is None:
        keep = values != 0
        rows, cols, values = rows[keep], cols[keep], values[keep]
    num_rows, num_cols = math.prod(shape[: len(shape) - columns]), math.prod(shape[len(shape) - columns :])
    key = rows * num_cols + cols
    if len(key) > 1 and not bool((key[1:] > key[:-1]).all()):
        order = np.argsort(key, kind="stable")
        rows, cols, values = rows[order], cols[order], values[order]
    indptr = np.zeros(num_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=num_rows), out=indptr[1:])
    return SparseTable(shape, columns, indptr, cols, values, fill)


def _initial(model: _Model, factors: list[_Factor]) -> np.ndarray:
    """The start belief: the product of the state variables' start tables at every state."""
    s = np.arange(model.S, dtype=np.int64)
    belief = np.ones(model.S)
    for j, factor in enumerate(factors):
        rows = factor.table.reshape(-1, model.states[j].size)
        belief *= rows[_parent_index(model, factor, {"prev": s}, model.S), model.digit("prev", j, s)]
    total = float(belief.sum())
    if abs(total - 1.0) > ROW_TOLERANCE:
        raise InputError(f"{model.source}:{factors[0].line}: the start belief sums to {total!r}, expected 1 (within {ROW_TOLERANCE:g})")
    return belief / total if abs(total - 1.0) > _KEEP_TOLERANCE else belief


def _labels(variables: list[_Var]) -> tuple[str, ...] | None:
    """One name per flat value: the variable's value, or the values of several joined by '.' (None: the default names)."""
    if not variables:
        return None
    if len(variables) == 1:
        return variables[0].values
    labels = tuple(".".join(t) for t in itertools.product(*(v.values for v in variables)))
    return labels if len(set(labels)) == len(labels) else None


# -- reading -----------------------------------------------------------------------------------------------------------

#: The most observations a file may make (observation variables times fully observed state variables): each has a name.
MAX_OBSERVATIONS = 2**24


def _check_sizes(model: _Model, max_table_bytes: int) -> None:
    """Refuse, from the declared sizes alone, a world whose rows (state, action) or observations pass the limits."""
    S, A, O = model.S, model.A, model.O
    need = 8 * (8 * S * A + S)
    if need > max_table_bytes or O > MAX_OBSERVATIONS:
        sizes = " x ".join(f"{v.name} {v.size:,}" for v in model.states)
        why = (
            f"{need / 1024**3:.3g} GiB of tables (S*A = {S * A:,} rows of transitions and as many of rewards), "
            f"over the limit of {max_table_bytes / 1024**3:g} GiB"
            if need > max_table_bytes
            else f"{O:,} observations, over the limit of {MAX_OBSERVATIONS:,}"
        )
        raise InputError(f"{model.source}:{model.line}: the variables declare {S:,} states ({sizes}), {A:,} actions and {O:,} observations: {why}")


def _discount(root: _Node, source: str, required: bool) -> float | None:
    node = root.first("Discount")
    if node is None:
        if required:
            raise InputError(f"{source}:{root.line}: expected a <Discount> element in <pomdpx>")
        return None
    text = node.text.strip()
    if not _NUMBER.fullmatch(text) or not 0 < float(text) < 1:
        raise InputError(f"{source}:{node.line}: expected a discount in (0, 1) in <Discount>, got {quoted(text)}")
    return float(text)


def parse_pomdpx(
    data: bytes | str,
    *,
    source: str = "<string>",
    require_discount: bool = False,
    check: Callable[..., None] | None = None,
    max_table_bytes: int = MAX_TABLE_BYTES,
) -> POMDP:
    """Read the text of a POMDPX file (bytes in the encoding it declares, or a str) into a :class:`fsc.POMDP`.

    ``source`` names the text in error messages (``source:line: ...``).  ``check``, if given, is called as
    ``check(states=S, actions=A, observations=O, started=k)`` with the flat sizes and the number of states of positive
    start probability, once the variables and the start belief are read and before any other table: what it raises
    stops the reading there.  ``max_table_bytes`` bounds the flat tables as :mod:`fsc.io.pomdp_file` bounds its own.

    Raises:
        ValueError: naming ``source``, the line and what was expected.
    """
    if isinstance(data, str):
        data, encoding = data.encode("utf-8"), "UTF-8"
    elif isinstance(data, (bytes, bytearray, memoryview)):
        encoding = None
    else:
        raise InputTypeError(f"data must be bytes or a str, got {type(data).__name__}")
    root = _parse_xml(bytes(data), source, encoding)
    model = _Model(root, source)
    _check_sizes(model, max_table_bytes)
    discount = _discount(root, source, require_discount)
    cells = [0]
    initial = _initial(model, _section(model, root, "belief", cells))
    if check is not None:
        check(states=model.S, actions=model.A, observations=model.O, started=int(np.count_nonzero(initial)))
    transitions = _section(model, root, "transition", cells)
    observations = _section(model, root, "observation", cells) if model.obs else []
    rewards = _section(model, root, "reward", cells)
    builder = _Builder(model, max_table_bytes)
    transition, observation = builder.transition(transitions), builder.observation(observations)
    dense = model.S * model.A * model.S + model.A * model.S * model.O + math.prod(_reward_shape(model, rewards)) <= DENSE_NUMBERS
    reward = builder.reward(rewards, transition, observation, dense)
    try:
        return POMDP(
            transition=transition.dense() if dense else transition,
            observation=observation.dense() if dense else observation,
            reward=reward,
            initial=initial,
            state_labels=_labels(model.states),
            action_labels=_labels(model.actions),
            observation_labels=_labels(model.obs + model.observed),
            discount=discount,
        )
    except ValueError as error:  # not expected after the checks above; still name the file
        raise InputError(f"{source}:{root.line}: {error}") from None


def _reward_shape(model: _Model, funcs: list[_Factor]) -> tuple[int, int, int, int]:
    kinds = {kind for f in funcs for kind, _ in f.slots}
    return (model.S, model.A, model.S if "curr" in kinds else 1, model.O if "obs" in kinds else 1)


def read_pomdpx(path, *, require_discount: bool = False, check: Callable[..., None] | None = None) -> POMDP:
    """Read a POMDPX file into a :class:`fsc.POMDP` (:func:`fsc.read_pomdp` reads it too, by its suffix or its first
    bytes).  See :func:`parse_pomdpx` for what is accepted; errors name the file and line."""
    path = Path(path)
    try:
        raw = read_limited(path, "POMDPX file", MAX_POMDP_BYTES)
    except OSError as error:
        raise InputError(f"cannot read {quoted(path)}: {error.strerror or error}") from None
    return parse_pomdpx(raw, source=path.name, require_discount=require_discount, check=check)


# -- writing -----------------------------------------------------------------------------------------------------------


def _value_names(labels: tuple[str, ...], prefix: str) -> tuple[tuple[str, ...], bool]:
    """The names a variable's values are written with, and whether they are the labels (else SARSOP's numbered names)."""
    numbered = tuple(f"{prefix}{i}" for i in range(len(labels)))
    usable = all(x and x.split() == [x] and x not in ("*", "-") for x in labels)
    return (labels, True) if usable and labels != numbered else (numbered, labels == numbered)


def _declare(tag: str, names: tuple[str, ...], enum: bool, attributes: str) -> str:
    values = f"<ValueEnum>{escape(' '.join(names))}</ValueEnum>" if enum else f"<NumValues>{len(names)}</NumValues>"
    return f"<{tag} {attributes}>{values}</{tag}>"


def _entry(instance: str, table: str, values) -> str:
    return f"<Entry><Instance>{escape(instance)}</Instance><{table}>{' '.join(repr(float(x)) for x in values)}</{table}></Entry>"


def _rows(table: SparseTable, heads: list[str], names: tuple[str, ...]) -> list[str]:
    """One probability row per head: its entries one by one when at most a third are not 0, else whole (``-``)."""
    out = []
    width = table.num_columns
    for row, head in enumerate(heads):
        lo, hi = table.indptr[row], table.indptr[row + 1]
        cols, data = table.indices[lo:hi], table.data[lo:hi]
        if 3 * len(cols) <= width:
            out.extend(_entry(f"{head} {names[c]}", "ProbTable", (v,)) for c, v in zip(cols, data, strict=True))
        else:
            out.append(_entry(f"{head} -", "ProbTable", table.row(row)))
    return out


def _present(value: float) -> bool:
    return value != 0 or math.copysign(1.0, value) < 0


def _reward_form(world: POMDP) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    """The reward as ``(fill, rows, s2, o, value)`` cells over ``(S, A, S2, O2)`` with the axes it has: each row's most
    common value (the fill of a stored sparse table) and the cells that differ from it."""
    table = world.reward_table
    S, A = world.num_states, world.num_actions
    if isinstance(table, SparseTable):
        S2, O2 = table.shape[2], table.shape[3]
        fill = table.fill if table.fill is not None else np.zeros(S * A)
        return fill, table.row_of, table.indices // O2, table.indices % O2, table.data, S2, O2
    array = np.asarray(table)
    S2 = array.shape[2] if array.strides[2] != 0 else 1
    O2 = array.shape[3] if array.strides[3] != 0 else 1
    block = np.ascontiguousarray(array[:, :, :S2, :O2]).reshape(S * A, S2 * O2)
    bits = block.view(np.uint64)
    fill = np.empty(S * A)
    for row in range(S * A):
        values, counts = np.unique(bits[row], return_counts=True)
        fill[row] = np.array(values[counts.argmax()], dtype=np.uint64).view(np.float64)
    differ = bits != fill.view(np.uint64)[:, None]
    rows, cols = np.nonzero(differ)
    return fill, rows, cols // O2, cols % O2, block[rows, cols], S2, O2


def _reward_entries(world: POMDP, s_: tuple[str, ...], o_: tuple[str, ...], a_: tuple[str, ...]) -> tuple[str, list[str]]:
    """The reward function's parents beyond ``action state_0`` and its entries."""
    fill, rows, s2, o, value, S2, O2 = _reward_form(world)
    A = world.num_actions
    stars = " *" * ((S2 > 1) + (O2 > 1))
    out = []
    if not stars:  # R(s, a): per action, the row over states whole ('-') or its cells that are not 0
        for a in range(A):
            column = fill[a::A]
            present = [s for s in range(len(column)) if _present(column[s])]
            if 3 * len(present) > len(column):
                out.append(_entry(f"{a_[a]} -", "ValueTable", column))
            else:
                out.extend(_entry(f"{a_[a]} {s_[s]}", "ValueTable", (column[s],)) for s in present)
        return "", out
    starts = np.searchsorted(rows, np.arange(len(fill) + 1))
    for row, base in enumerate(fill):
        s, a = divmod(row, A)
        head = f"{a_[a]} {s_[s]}"
        if _present(base):
            out.append(_entry(head + stars, "ValueTable", (base,)))
        for k in range(starts[row], starts[row + 1]):
            tail = (f" {s_[s2[k]]}" if S2 > 1 else "") + (f" {o_[o[k]]}" if O2 > 1 else "")
            out.append(_entry(head + tail, "ValueTable", (value[k],)))
    return (" state_1" if S2 > 1 else "") + (" obs" if O2 > 1 else ""), out


def format_pomdpx(world: POMDP | Task) -> str:
    """The text of a POMDPX file for ``world`` (see :func:`write_pomdpx`)."""
    world = as_pomdp(world)
    S, A = world.num_states, world.num_actions
    (s_, s_enum), (a_, a_enum), (o_, o_enum) = (
        _value_names(labels, p) for labels, p in ((world.state_labels, "s"), (world.action_labels, "a"), (world.observation_labels, "o"))
    )
    notes = ["written by fsc.write_pomdpx; numbers are Python reprs (read back bit for bit)"]
    for kind, labels, names in (("state", world.state_labels, s_), ("action", world.action_labels, a_), ("observation", world.observation_labels, o_)):
        if labels != names:
            notes.append(f"{kind} labels are not names of values (a space, '*' or '-'), written as numbered values")
    if world.metrics:
        notes.append(f"metrics not written (the format has none): {', '.join(sorted(world.metrics))}")
    extra, rewards = _reward_entries(world, s_, o_, a_)
    out = ['<?xml version="1.0" encoding="UTF-8"?>', '<pomdpx version="1.0" id="fsc">', f"<Description>{escape('; '.join(notes))}</Description>"]
    if world.discount is not None:
        out.append(f"<Discount>{world.discount!r}</Discount>")
    out += [
        "<Variable>",
        _declare("StateVar", s_, s_enum, 'vnamePrev="state_0" vnameCurr="state_1" fullyObs="false"'),
        _declare("ObsVar", o_, o_enum, 'vname="obs"'),
        _declare("ActionVar", a_, a_enum, 'vname="action"'),
        '<RewardVar vname="reward"/>',
        "</Variable>",
        '<InitialStateBelief><CondProb><Var>state_0</Var><Parent>null</Parent><Parameter type="TBL">',
        _entry("-", "ProbTable", world.initial),
        "</Parameter></CondProb></InitialStateBelief>",
        '<StateTransitionFunction><CondProb><Var>state_1</Var><Parent>action state_0</Parent><Parameter type="TBL">',
        *_rows(world.transition_table, [f"{a_[a]} {s_[s]}" for s in range(S) for a in range(A)], s_),
        "</Parameter></CondProb></StateTransitionFunction>",
        '<ObsFunction><CondProb><Var>obs</Var><Parent>action state_1</Parent><Parameter type="TBL">',
        *_rows(world.observation_table, [f"{a_[a]} {s_[s]}" for a in range(A) for s in range(S)], o_),
        "</Parameter></CondProb></ObsFunction>",
        f'<RewardFunction><Func><Var>reward</Var><Parent>action state_0{extra}</Parent><Parameter type="TBL">',
        *rewards,
        "</Parameter></Func></RewardFunction>",
        "</pomdpx>",
        "",
    ]
    return "\n".join(out)


def write_pomdpx(world: POMDP | Task, path) -> Path:
    """Write ``world`` as a POMDPX file (one state, one observation and one action variable); return the path.

    Values are named by the world's labels when they can be (no spaces, not ``*`` or ``-``), else numbered as SARSOP
    numbers ``<NumValues>`` (``s0``, ``a0``, ``o0``).  Rows of ``T`` and ``O`` are written whole, or as single entries
    when at most a third of a row is not 0; the reward as one function of the action and state, and of the next state
    and observation when it depends on them (each row's most common value, then the cells that differ).  Numbers are
    Python reprs, so :func:`fsc.read_pomdp` gives the same tables back.  The file is written whole or not at all.
    """
    text = format_pomdpx(world)
    write_text(path, text)
    return Path(path)
