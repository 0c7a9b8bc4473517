"""Memory architectures: the interface, the registry of kinds, and the general form from rules.

A memory architecture is a deterministic automaton that a controller's policy
lives on.  Axis letters: ``N`` memory nodes, ``C`` choices, ``O``
observations, ``A`` world actions.  An architecture is pure structure
(integers, masks, labels): it holds no weights, compares and hashes by value,
and computes each of its tables once.

:class:`MemoryArchitecture` is the interface every engine reads.
:class:`Automaton` is its general form: nodes and choices given as Python
labels and the rules that connect them, tabulated once::

    wsls = fsc.Automaton(
        nodes=["start"] + [(x, o) for x in "AB" for o in "+-"],
        choices=["A", "B"],
        step=lambda node, choice, obs: (choice, "+-"[obs]),
        action="AB".index,
        actions=2,
        observations=2,
        reset=["start"],
    )

Every restriction of an architecture (:meth:`MemoryArchitecture.restrict`) is
an automaton, which is why the two live in one module.  The named
architectures of the paper are in :mod:`fsc.model.memory`; products in
:mod:`fsc.model.product`.
"""

from __future__ import annotations

import abc
import collections
import hashlib
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import attrs
import numpy as np

from fsc.checks import integer
from fsc.errors import InputError, InputTypeError

__all__ = [
    "Automaton",
    "MemoryArchitecture",
    "architecture_kind",
    "arm_labels",
    "label_text",
    "observation_labels",
    "register_architecture",
    "rule_mask",
    "successor_classes",
]


def arm_labels(count: int) -> tuple[str, ...]:
    """Arm names: ``A, B, C, ...`` (then ``A1, B1, ...`` past 26)."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return tuple(letters[i % 26] + (str(i // 26) if i >= 26 else "") for i in range(count))


def observation_labels(count: int) -> tuple[str, ...]:
    """Observation names: ``+, -`` for two (the reward sign), else ``0, 1, ...``."""
    return ("+", "-") if count == 2 else tuple(str(i) for i in range(count))


class MemoryArchitecture(abc.ABC):
    """What the agent remembers and what it may decide.

    A subclass is a final ``attrs.frozen`` class whose fields are small
    integers; it implements the abstract properties below.  Everything else in
    the framework works from these tables only, so a new architecture is one
    new subclass.

    Tables (read-only numpy arrays):
        ``allowed[n, c]``: choice ``c`` may be taken in node ``n`` (bool, ``(N, C)``).
        ``next_node[n, c, o]``: node after choice ``c`` and observation ``o``
        (int64, ``(N, C, O)``).
        ``choice_action[c]``: world action played by choice ``c`` (int64, ``(C,)``).
        ``reset_mask[n]``: a reset may start in node ``n`` (bool, ``(N,)``).
    """

    @property
    @abc.abstractmethod
    def num_actions(self) -> int:
        """Number of world actions (arms)."""

    @property
    @abc.abstractmethod
    def num_observations(self) -> int:
        """Number of observations the automaton reads."""

    @property
    @abc.abstractmethod
    def node_labels(self) -> tuple[str, ...]:
        """A readable, unique label per node."""

    @property
    @abc.abstractmethod
    def choice_labels(self) -> tuple[str, ...]:
        """A readable, unique label per choice."""

    @property
    @abc.abstractmethod
    def allowed(self) -> np.ndarray:
        """``allowed[n, c]``, bool of shape ``(N, C)``."""

    @property
    @abc.abstractmethod
    def next_node(self) -> np.ndarray:
        """``next_node[n, c, o]``, int64 of shape ``(N, C, O)``."""

    @property
    @abc.abstractmethod
    def choice_action(self) -> np.ndarray:
        """``choice_action[c]``, int64 of shape ``(C,)``."""

    @property
    @abc.abstractmethod
    def reset_mask(self) -> np.ndarray:
        """``reset_mask[n]``, bool of shape ``(N,)``: where a reset may start."""

    # Derived facts, the same for every architecture.

    @property
    def num_nodes(self) -> int:
        return self.allowed.shape[0]

    @property
    def num_choices(self) -> int:
        return self.allowed.shape[1]

    @property
    def node_values(self) -> tuple:
        """What rules see of each node (:meth:`restrict`): the labels, unless a subclass gives structure."""
        return self.node_labels

    @property
    def choice_values(self) -> tuple:
        """What rules see of each choice: the labels, unless a subclass gives structure."""
        return self.choice_labels

    @property
    def node_names(self) -> tuple[str, ...]:
        """The node labels as text, for diagrams and tables."""
        return self.node_labels

    @property
    def choice_names(self) -> tuple[str, ...]:
        """The choice labels as text."""
        return self.choice_labels

    def restrict(self, rule) -> MemoryArchitecture:
        """The same nodes and choices, with ``allowed[n, c] &= rule(node, choice)``.

        ``rule`` sees :attr:`node_values` and :attr:`choice_values`: for RAM,
        Chain and Column the tuples ``(memory, arm, observation)`` (memory
        from 1; arm and observation None in a blank node) and ``(memory,
        arm)``; for Memento the history, a tuple of ``(arm, observation)``
        pairs oldest first, and the arm; for an :class:`fsc.Automaton` its
        labels.  Returns an :class:`fsc.Automaton` with the same labels.

        Raises:
            ValueError: a node left with no allowed choice (naming it).
        """
        return Automaton.from_tables(
            node_labels=self.node_labels,
            choice_labels=self.choice_labels,
            allowed=self.allowed & rule_mask(self, rule),
            next_node=self.next_node,
            choice_action=self.choice_action,
            reset_mask=self.reset_mask,
            actions=self.num_actions,
            observations=self.num_observations,
            node_values=self.node_values,
            choice_values=self.choice_values,
        )

    def node_index(self, label: str) -> int:
        """Index of the node called ``label``."""
        try:
            return self.node_labels.index(label)
        except ValueError:
            raise InputError(f"{self!r} has no node {label!r}") from None

    def choice_index(self, label: str) -> int:
        """Index of the choice called ``label``."""
        try:
            return self.choice_labels.index(label)
        except ValueError:
            raise InputError(f"{self!r} has no choice {label!r}") from None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able description: ``{"kind": architecture_kind(class), **fields}``."""
        return {"kind": architecture_kind(type(self)), **attrs.asdict(self)}

    @staticmethod
    def from_dict(spec: dict[str, Any]) -> MemoryArchitecture:
        """Inverse of :meth:`to_dict`: the kind must be registered (:func:`register_architecture`)."""
        spec = dict(spec)
        kind = spec.pop("kind", None)
        cls = _ARCHITECTURES.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise InputError(
                f"unknown memory architecture kind {kind!r}: import the module that defines it and register the class "
                f"with fsc.register_architecture; registered: {sorted(_ARCHITECTURES)}"
            )
        return cls.from_fields(spec)

    @classmethod
    def from_fields(cls, spec: dict[str, Any]) -> MemoryArchitecture:
        """Build from the fields of :meth:`to_dict` (without ``kind``)."""
        return cls(**spec)


#: The architectures that saved files may name: kind -> class, and back.
_ARCHITECTURES: dict[str, type[MemoryArchitecture]] = {}
_KIND_OF: dict[type[MemoryArchitecture], str] = {}


def architecture_kind(cls: type[MemoryArchitecture]) -> str:
    """The name files give the architecture class ``cls``: its registered kind, else ``module.QualifiedName``."""
    return _KIND_OF.get(cls) or f"{cls.__module__}.{cls.__qualname__}"


def register_architecture(cls: type[MemoryArchitecture] | None = None, *, kind: str | None = None):
    """Let saved policies and runs name the architecture class ``cls`` (also a decorator).

    ``kind`` defaults to the qualified name ``module.QualifiedName``; the
    built-in classes hold the short kinds ``RAM``, ``Chain``, ``Column``,
    ``Memento`` and ``Automaton``, so a class of your own called ``RAM`` is
    ``yourmodule.RAM`` and never replaces them.  A kind already held by another
    class is refused (``ValueError``); registering a class again is harmless.
    """

    def register(cls: type[MemoryArchitecture]) -> type[MemoryArchitecture]:
        if not (isinstance(cls, type) and issubclass(cls, MemoryArchitecture)):
            raise InputTypeError(f"register_architecture expects a MemoryArchitecture subclass, got {cls!r}")
        name = f"{cls.__module__}.{cls.__qualname__}" if kind is None else kind
        if not isinstance(name, str) or not name:
            raise InputTypeError(f"kind must be a non-empty string, got {name!r}")
        known = _ARCHITECTURES.get(name)
        if known is not None and known is not cls:
            raise InputError(f"architecture kind {name!r} is already registered for {known.__module__}.{known.__qualname__}; give another kind=")
        if cls in _KIND_OF and _KIND_OF[cls] != name:
            raise InputError(f"{name!r}: the class is already registered as {_KIND_OF[cls]!r}")
        _ARCHITECTURES[name], _KIND_OF[cls] = cls, name
        return cls

    return register if cls is None else register(cls)


def label_text(label: object) -> str:
    """A label as text: strings as they are, ``None`` as ``_``, tuples joined.

    ``("A", "+")`` -> ``A+``, ``(3, "A", "+")`` -> ``3A+``; parts longer than
    one character are separated by commas (``(12, "AB")`` -> ``12,AB``).
    """
    if isinstance(label, str):
        return label
    if label is None:
        return "_"
    if isinstance(label, tuple):
        parts = [label_text(part) for part in label]
        return ("" if all(len(part) == 1 for part in parts) else ",").join(parts)
    return str(label)


def _texts(labels: Sequence[object]) -> tuple[str, ...]:
    """Unique display names for ``labels`` (``label_text``, or ``repr`` where that collides)."""
    names = tuple(label_text(label) for label in labels)
    if len(set(names)) == len(names):
        return names
    return tuple(repr(label) for label in labels)


def readonly(array: np.ndarray) -> np.ndarray:
    """``array`` itself, marked read-only: the tables of architectures and chains are shared and cached."""
    array.setflags(write=False)
    return array


def successor_classes(arch: MemoryArchitecture) -> tuple[np.ndarray, np.ndarray]:
    """``(class_of, nxt)``: the class ``class_of[n, c]`` of each allowed choice (-1 elsewhere), numbered by
    choice and then by first node; choices of one class take the same ``c`` to the same nodes ``nxt[q, :]``
    (computed once per architecture)."""
    cache = getattr(arch, "__dict__", {})
    if "_successor_classes" in cache:
        return cache["_successor_classes"]
    N, C = arch.num_nodes, arch.num_choices
    class_of = -np.ones((N, C), dtype=np.int64)
    rows: list[np.ndarray] = []
    for c in range(C):
        nodes = np.flatnonzero(arch.allowed[:, c])
        if len(nodes) == 0:
            continue
        table = arch.next_node[:, c, :] if len(nodes) == N else arch.next_node[nodes, c, :]  # a view where every node allows c
        distinct, first, inverse = _distinct_rows(table)
        order = np.argsort(first, kind="stable")  # classes in the order of their first node
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        class_of[nodes, c] = len(rows) + rank[inverse.reshape(-1)]
        rows.extend(distinct[order])
    nxt = np.array(rows, dtype=np.int64).reshape(len(rows), arch.num_observations)
    cache["_successor_classes"] = found = (readonly(class_of), readonly(nxt))
    return found


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_index=True, return_inverse=True)`` up to the order of the distinct rows:
    rows grouped by a 64-bit hash of their entries and checked equal to their group's first row (``np.unique`` on
    rows sorts them as records, minutes on thousands of nodes by thousands of observations), falling back to
    ``np.unique`` if two different rows share a hash."""
    weights = np.random.default_rng(0).integers(1, 2**63, size=rows.shape[1], dtype=np.uint64) | np.uint64(1)
    keys = (rows.view(np.uint64) if rows.dtype == np.int64 else rows.astype(np.uint64)) @ weights  # wraps modulo 2^64
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    step = max(1, 2**18 // max(1, rows.shape[1]))  # compared in blocks of rows: no copy of the whole table
    if not all(np.array_equal(rows[i : i + step], rows[first[inverse[i : i + step]]]) for i in range(0, len(rows), step)):
        return np.unique(rows, axis=0, return_index=True, return_inverse=True)
    return rows[first], first, inverse


def _index(kind: str, labels: Iterable[object]) -> tuple[tuple[Hashable, ...], dict[Hashable, int]]:
    labels = tuple(labels)
    index: dict[Hashable, int] = {}
    for i, label in enumerate(labels):
        try:
            if label in index:
                raise InputError(f"{kind} labels must be distinct, got {label!r} twice")
        except TypeError:
            raise InputTypeError(f"{kind} labels must be hashable, got {label!r}") from None
        index[label] = i
    if not labels:
        raise InputError(f"an automaton needs at least one {kind}")
    return labels, index


def _count(name: str, value: object) -> int:
    value = integer(name, value)
    if value < 1:
        raise InputError(f"{name} must be >= 1, got {value!r}")
    return value


def _choice_actions(choices: tuple[Hashable, ...], action: Callable[[Any], int], A: int) -> np.ndarray:
    """``choice_action[c] = action(choice)``, each checked to be a world action."""
    choice_action = np.empty(len(choices), dtype=np.int64)
    for c, choice in enumerate(choices):
        a = integer(f"action({choice!r})", action(choice))
        if not 0 <= a < A:
            raise InputError(f"action({choice!r}) must be in [0, {A}), got {a!r}")
        choice_action[c] = a
    return choice_action


def _reset_nodes(nodes: tuple[Hashable, ...], node_index: dict[Hashable, int], reset: Iterable[Hashable] | None) -> list[Hashable]:
    """The labels where a reset may start (default: the first node), each a declared node."""
    starts = [nodes[0]] if reset is None else list(reset)
    if not starts:
        raise InputError("reset must name at least one node")
    for label in starts:
        if not isinstance(label, Hashable) or label not in node_index:
            raise InputError(f"reset node {label!r} is not a declared node")
    return starts


def _tabulate(
    nodes: tuple[Hashable, ...],
    choices: tuple[Hashable, ...],
    node_index: dict[Hashable, int],
    allowed_choices: list[list[int]],
    step: Callable[[Any, Any, int], Hashable],
    O: int,
    first: Iterable[int],
) -> tuple[np.ndarray, np.ndarray]:
    """``step`` on every node reached from the nodes ``first`` through allowed choices: the successor table
    ``(N, C, O)`` (-1 where not tabulated) and the nodes reached, in order.

    Plain Python lists in the loop: numpy item access would cost as much as the rule.
    """
    N, C = len(nodes), len(choices)
    successor = [-1] * (N * C * O)
    reached = bytearray(N)
    queue = collections.deque(first)
    for n in queue:
        reached[n] = 1
    while queue:
        n = queue.popleft()
        node = nodes[n]
        if not allowed_choices[n]:
            raise InputError(f"node {node!r} has no allowed choice")
        for c in allowed_choices[n]:
            choice = choices[c]
            base = (n * C + c) * O
            for o in range(O):
                target = step(node, choice, o)
                try:
                    n2 = node_index[target]
                except (KeyError, TypeError):
                    raise InputError(f"step({node!r}, {choice!r}, {o}) returned {target!r}, which is not a declared node") from None
                successor[base + o] = n2
                if not reached[n2]:
                    reached[n2] = 1
                    queue.append(n2)
    return np.array(successor, dtype=np.int64).reshape(N, C, O), np.flatnonzero(np.frombuffer(bytes(reached), dtype=bool))


def _check_tables(
    node_labels: tuple[Hashable, ...],
    allowed: np.ndarray,
    next_node: np.ndarray,
    choice_action: np.ndarray,
    reset_mask: np.ndarray,
    A: int,
    O: int,
    C: int,
) -> None:
    """Raise unless the tables of an automaton have their shapes and ranges, a choice per node and a reset node."""
    N = len(node_labels)
    for name, array, shape in (
        ("allowed", allowed, (N, C)),
        ("next_node", next_node, (N, C, O)),
        ("choice_action", choice_action, (C,)),
        ("reset_mask", reset_mask, (N,)),
    ):
        if array.shape != shape:
            raise InputError(f"{name} must have shape {shape}, got {array.shape}")
    if next_node.size and not ((next_node >= 0) & (next_node < N)).all():
        raise InputError(f"next_node must be in [0, {N}), got values from {next_node.min()} to {next_node.max()}")
    if not ((choice_action >= 0) & (choice_action < A)).all():
        raise InputError(f"choice_action must be in [0, {A}), got values from {choice_action.min()} to {choice_action.max()}")
    dead = np.flatnonzero(~allowed.any(axis=1))
    if len(dead):
        raise InputError(f"node {node_labels[dead[0]]!r} has no allowed choice")
    if not reset_mask.any():
        raise InputError("reset_mask must mark at least one node")


def rule_mask(arch: MemoryArchitecture, rule: Callable[[Any, Any], object]) -> np.ndarray:
    """``mask[n, c] = bool(rule(node, choice))`` over ``arch``'s node and choice values.

    The values are what rules see: an automaton's labels, and for the built-in
    architectures the tuples of :attr:`MemoryArchitecture.node_values`.
    """
    choices = arch.choice_values
    return np.array([[bool(rule(node, choice)) for choice in choices] for node in arch.node_values], dtype=bool).reshape(arch.num_nodes, arch.num_choices)


@register_architecture(kind="Automaton")
class Automaton(MemoryArchitecture):
    """A memory architecture from rules over labels.

    Args:
        nodes: the node labels (hashable: strings, numbers, tuples of them).
        choices: the choice labels.
        step: ``step(node, choice, obs) -> node``, the node after ``choice`` was
            taken in ``node`` and observation ``obs`` (an index in
            ``range(observations)``) came.  Called only for allowed choices.
        action: ``action(choice) -> int``, the world action a choice plays.
        actions: number of world actions.
        observations: number of observations.
        allowed: ``allowed(node, choice) -> bool`` (default: every choice).
        reset: the labels where a reset may start (default: the first node).
        prune: drop the nodes that no reset node reaches through allowed
            choices (default True); ``False`` keeps every declared node.

    The rules are tabulated once.  For a disallowed choice the next node is
    the node itself (it is never taken: its probability is exactly 0).

    Raises:
        ValueError: ``step`` returns an undeclared label, a node has no
            allowed choice, ``action`` is out of range, an unknown reset label,
            duplicate labels (each naming the node, choice and observation).
        TypeError: unhashable labels, non-integer actions or counts.

    An automaton compares and hashes by its labels and tables, and is saved
    (with a policy on it) as those tables: labels must then be strings,
    numbers, ``None`` or tuples of them.  Treat it as immutable.
    """

    def __init__(
        self,
        nodes: Iterable[Hashable],
        choices: Iterable[Hashable],
        step: Callable[[Any, Any, int], Hashable],
        *,
        action: Callable[[Any], int],
        actions: int,
        observations: int,
        allowed: Callable[[Any, Any], object] | None = None,
        reset: Iterable[Hashable] | None = None,
        prune: bool = True,
    ) -> None:
        A, O = _count("actions", actions), _count("observations", observations)
        nodes, node_index = _index("node", nodes)
        choices, _ = _index("choice", choices)
        choice_action = _choice_actions(choices, action, A)
        starts = _reset_nodes(nodes, node_index, reset)
        if allowed is None:
            mask = np.ones((len(nodes), len(choices)), dtype=bool)
            allowed_choices = [list(range(len(choices)))] * len(nodes)
        else:
            rows = [[bool(allowed(node, choice)) for choice in choices] for node in nodes]
            mask = np.array(rows, dtype=bool).reshape(len(nodes), len(choices))
            allowed_choices = [[c for c, ok in enumerate(row) if ok] for row in rows]
        first = sorted({node_index[label] for label in starts}) if prune else range(len(nodes))
        successor, keep = _tabulate(nodes, choices, node_index, allowed_choices, step, O, first)
        new_index = np.full(len(nodes), -1, dtype=np.int64)
        new_index[keep] = np.arange(len(keep))
        table = successor[keep]
        unused = table < 0  # disallowed choices: stay put
        table = np.where(unused, np.arange(len(keep))[:, None, None], new_index[np.maximum(table, 0)])
        reset_mask = np.zeros(len(nodes), dtype=bool)
        reset_mask[[node_index[label] for label in starts]] = True
        self._set(
            node_values=tuple(nodes[n] for n in keep),
            choice_values=choices,
            node_labels=tuple(nodes[n] for n in keep),
            choice_labels=choices,
            allowed=mask[keep],
            next_node=table,
            choice_action=choice_action,
            reset_mask=reset_mask[keep],
            actions=A,
            observations=O,
        )

    @classmethod
    def from_tables(
        cls,
        *,
        node_labels: Sequence[Hashable],
        choice_labels: Sequence[Hashable],
        allowed: np.ndarray,
        next_node: np.ndarray,
        choice_action: np.ndarray,
        reset_mask: np.ndarray,
        actions: int,
        observations: int,
        node_values: Sequence[Hashable] | None = None,
        choice_values: Sequence[Hashable] | None = None,
    ) -> Automaton:
        """An automaton from its tables (checked: shapes, ranges, a choice per node, a reset node).

        ``node_values`` and ``choice_values`` (default: the labels) are what
        rules see (:meth:`restrict`); a restriction keeps its base's.
        """
        A, O = _count("actions", actions), _count("observations", observations)
        node_labels, _ = _index("node", node_labels)
        choice_labels, _ = _index("choice", choice_labels)
        N, C = len(node_labels), len(choice_labels)
        allowed = np.array(allowed, dtype=bool)
        next_node = np.array(next_node, dtype=np.int64)
        choice_action = np.array(choice_action, dtype=np.int64)
        reset_mask = np.array(reset_mask, dtype=bool)
        _check_tables(node_labels, allowed, next_node, choice_action, reset_mask, A, O, C)
        for name, values, size in (("node_values", node_values, N), ("choice_values", choice_values, C)):
            if values is not None and len(values) != size:
                raise InputError(f"{name} must have {size} entries, got {len(values)}")
        self = object.__new__(cls)
        self._set(
            node_values=node_labels if node_values is None else tuple(node_values),
            choice_values=choice_labels if choice_values is None else tuple(choice_values),
            node_labels=node_labels,
            choice_labels=choice_labels,
            allowed=allowed,
            next_node=next_node,
            choice_action=choice_action,
            reset_mask=reset_mask,
            actions=A,
            observations=O,
        )
        return self

    def _set(self, **fields: Any) -> None:
        for name in ("allowed", "next_node", "choice_action", "reset_mask"):
            fields[name] = readonly(np.ascontiguousarray(fields[name]))
        for name, value in fields.items():
            object.__setattr__(self, "_" + name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"an Automaton is immutable (tried to set {name!r})")

    # The tables.

    node_labels = property(lambda self: self._node_labels, doc="Node labels, as given (Python values).")
    choice_labels = property(lambda self: self._choice_labels, doc="Choice labels, as given (Python values).")
    node_values = property(lambda self: self._node_values, doc="What rules see of each node: the labels, or a restricted base's values.")
    choice_values = property(lambda self: self._choice_values, doc="What rules see of each choice.")
    allowed = property(lambda self: self._allowed, doc="``allowed[n, c]``, bool ``(N, C)``.")
    next_node = property(lambda self: self._next_node, doc="``next_node[n, c, o]``, int64 ``(N, C, O)``.")
    choice_action = property(lambda self: self._choice_action, doc="``choice_action[c]``, int64 ``(C,)``.")
    reset_mask = property(lambda self: self._reset_mask, doc="``reset_mask[n]``, bool ``(N,)``.")
    num_actions = property(lambda self: self._actions)
    num_observations = property(lambda self: self._observations)

    @property
    def node_names(self) -> tuple[str, ...]:
        try:
            return self._node_names
        except AttributeError:
            object.__setattr__(self, "_node_names", _texts(self._node_labels))
            return self._node_names

    @property
    def choice_names(self) -> tuple[str, ...]:
        try:
            return self._choice_names
        except AttributeError:
            object.__setattr__(self, "_choice_names", _texts(self._choice_labels))
            return self._choice_names

    # Value semantics.

    def _key(self) -> tuple:
        return (
            self._node_labels,
            self._choice_labels,
            self._actions,
            self._observations,
            self._allowed.tobytes(),
            self._next_node.tobytes(),
            self._choice_action.tobytes(),
            self._reset_mask.tobytes(),
            self._node_values,
            self._choice_values,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Automaton):
            return NotImplemented
        return self is other or self._key() == other._key()

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            object.__setattr__(self, "_hash", hash(self._key()))
            return self._hash

    def __repr__(self) -> str:
        digest = hashlib.sha256(repr(self._key()).encode()).hexdigest()[:8]
        return f"Automaton({self.num_nodes} nodes, {self.num_choices} choices, actions={self._actions}, observations={self._observations}, #{digest})"

    # Files.

    def to_dict(self) -> dict[str, Any]:
        """The labels and tables, JSON-able (tuples become lists)."""
        values = {}
        if self._node_values != self._node_labels:
            values["node_values"] = [_json_label(v) for v in self._node_values]
        if self._choice_values != self._choice_labels:
            values["choice_values"] = [_json_label(v) for v in self._choice_values]
        return {
            "kind": "Automaton",  # a subclass is saved as its tables: it loads as a plain Automaton
            "nodes": [_json_label(label) for label in self._node_labels],
            "choices": [_json_label(label) for label in self._choice_labels],
            "allowed": self._allowed.astype(int).tolist(),
            "next_node": self._next_node.tolist(),
            "choice_action": self._choice_action.tolist(),
            "reset": np.flatnonzero(self._reset_mask).tolist(),
            "actions": self._actions,
            "observations": self._observations,
            **values,
        }

    @classmethod
    def from_fields(cls, spec: dict[str, Any]) -> Automaton:
        try:
            reset = np.zeros(len(spec["nodes"]), dtype=bool)
            reset[spec["reset"]] = True
            return cls.from_tables(
                node_labels=[_from_json_label(label) for label in spec["nodes"]],
                choice_labels=[_from_json_label(label) for label in spec["choices"]],
                allowed=spec["allowed"],
                next_node=spec["next_node"],
                choice_action=spec["choice_action"],
                reset_mask=reset,
                actions=spec["actions"],
                observations=spec["observations"],
                node_values=[_from_json_label(v) for v in spec["node_values"]] if "node_values" in spec else None,
                choice_values=[_from_json_label(v) for v in spec["choice_values"]] if "choice_values" in spec else None,
            )
        except (KeyError, IndexError) as error:
            raise InputError(f"not an Automaton description: missing or bad {error}") from None


def _json_label(label: object) -> object:
    if isinstance(label, tuple):
        return [_json_label(part) for part in label]
    if label is None or isinstance(label, (str, bool, int, float)):
        return label
    if isinstance(label, np.integer):
        return int(label)
    raise InputTypeError(f"an Automaton saved to a file needs labels made of strings, numbers, None and tuples, got {label!r}")


def _from_json_label(value: object) -> Hashable:
    return tuple(_from_json_label(part) for part in value) if isinstance(value, list) else value
