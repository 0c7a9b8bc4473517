"""How an architecture's nodes are drawn in a memory transition diagram (docs/model.md).

A :class:`NodeDisplay` says, for one architecture, which architecture nodes
are merged into one display node, how display nodes are labelled, coloured,
grouped and laid out; :func:`node_display` gives the display of an
architecture.  :mod:`viz.graph` builds the diagram with it.

- a *display node* merges the architecture nodes that the paper draws as one
  memory state.  RAM, Chain and Column: memory ``i`` and the arm just played
  (``3A`` merges ``3A+`` and ``3A-``; paper Figure 1C); Memento: the word of
  arms, rewards hidden (``AABA`` merges the 16 reward patterns; paper
  Figure 3).  What a merged node remembers besides its key (the last reward,
  the rewards of the window) is the *condition* written on its edges.  Other
  architectures are drawn node by node; register a :class:`NodeDisplay` with
  :func:`node_display` to draw a new architecture differently;
- layouts: ``columns`` (RAM-like; one column per arm, memory 1 at the bottom,
  chosen automatically when every edge stays in its column or switches arm at
  memory 1, as the column of confidence policy does), ``necklaces`` (Memento:
  the words of each necklace on a circle inside a cluster, necklaces left to
  right by their number of B letters, as in the paper's Figure 3), ``free``
  (graphviz's ``dot``, top to bottom).  The fixed layouts pin positions and set
  the DOT attribute ``layout=neato``, so the DOT file renders the same way
  with any graphviz command.
"""

from __future__ import annotations

import abc
import functools
import math
from collections import defaultdict

from fsc.errors import InputError
from fsc.model.architecture import MemoryArchitecture, arm_labels
from fsc.model.memory import RAM, Chain, Column, Memento

__all__ = ["NodeDisplay", "node_display"]

_ARM_COLOURS = ("#dbe8f6", "#f8dcd6", "#dcefd9", "#f3e7c9", "#e6dcf1", "#d9eeee")


class NodeDisplay(abc.ABC):
    """How the nodes of one architecture are merged, labelled and laid out.

    Subclasses say, per architecture node ``n``: its display key (nodes with
    the same key are drawn as one), its kind (``start`` for reset nodes,
    ``warmup`` for transient nodes hidden by default, ``memory`` otherwise)
    and its condition (what the node remembers besides its key, written on
    its edges).
    """

    def __init__(self, architecture: MemoryArchitecture) -> None:
        self.architecture = architecture

    @abc.abstractmethod
    def key(self, n: int) -> str:
        """Display key of node ``n``."""

    @abc.abstractmethod
    def kind(self, n: int) -> str:
        """``start``, ``warmup`` or ``memory``."""

    @abc.abstractmethod
    def condition(self, n: int) -> str:
        """What node ``n`` remembers besides its key ('' if nothing)."""

    #: The target display node determines the choice taken (so edge labels omit it).
    choice_implied: bool = False
    #: What the conditions are, for the caption.
    condition_name: str = "condition"
    #: Layouts this display supports besides ``free``.
    layouts: tuple[str, ...] = ()
    #: What the caption says of the start nodes when there are several ('' for nothing).
    legend: str = ""

    def label(self, key: str) -> str:
        """Text written in the display node ``key``."""
        return key

    def group(self, key: str) -> str | None:
        """Cluster or column of a display node (edges between groups are dashed)."""
        return None

    def colour(self, key: str) -> str:
        """Fill colour of a memory node."""
        return "white"

    def auto_layout(self, keys: list[str], edges: list[tuple[str, str]]) -> str:
        """The layout chosen by ``layout="auto"``."""
        return "free"

    def positions(self, layout: str, keys: list[str], edges: list[tuple[str, str]]) -> tuple[dict[str, tuple[float, float]], list[tuple[float, float, str]]]:
        """Pinned positions (inches) of the display nodes, and invisible padding points ``(x, y, cluster)``."""
        raise InputError(f'layout {layout!r} has no pinned positions for {type(self).__name__}; use layout="free"')

    def ports(self, layout: str, tail: str, head: str) -> tuple[str, str]:
        """Compass ports (``tailport``, ``headport``; '' for none) of an edge."""
        return "", ""

    def clusters(self, layout: str, keys: list[str]) -> dict[str, str]:
        """Display key -> cluster label, for the keys drawn inside a cluster."""
        return {}


class _GenericDisplay(NodeDisplay):
    """Any architecture: one display node per architecture node."""

    def key(self, n: int) -> str:
        return self.architecture.node_names[n]

    def kind(self, n: int) -> str:
        return "start" if self.architecture.reset_mask[n] else "memory"

    def condition(self, n: int) -> str:
        return ""


class _RamDisplay(NodeDisplay):
    """RAM, Chain, Column: memory ``i`` and the arm just played; the last reward is the condition."""

    choice_implied = True
    condition_name = "last reward"
    layouts = ("columns",)
    legend = "start i = the blank node i_: memory i before any arm is played, where a reset may start"

    def __init__(self, architecture: MemoryArchitecture) -> None:
        super().__init__(architecture)
        self._arms = arm_labels(architecture.arms)
        memory, self._arm = architecture.memory_and_arm
        self._memory = memory + 1
        self._by_key = {}
        for n in range(architecture.num_nodes):
            self._by_key[self.key(n)] = (int(self._memory[n]), int(self._arm[n]))

    def key(self, n: int) -> str:
        if self._arm[n] < 0:
            return f"{self._memory[n]}_"
        return f"{self._memory[n]}{self._arms[self._arm[n]]}"

    def kind(self, n: int) -> str:
        return "start" if self._arm[n] < 0 else "memory"

    def condition(self, n: int) -> str:
        label = self.architecture.node_labels[n]
        return "" if self._arm[n] < 0 else label[len(self.key(n)) :]

    def group(self, key: str) -> str | None:
        arm = self._by_key[key][1]
        return None if arm < 0 else self._arms[arm]

    def colour(self, key: str) -> str:
        arm = self._by_key[key][1]
        return _ARM_COLOURS[arm % len(_ARM_COLOURS)] if arm >= 0 else "white"

    def auto_layout(self, keys: list[str], edges: list[tuple[str, str]]) -> str:
        """Columns when every edge between memory nodes keeps its arm and moves by at most one memory, or switches arm at memory 1."""
        for tail, head in edges:
            (i, x), (j, y) = self._by_key[tail], self._by_key[head]
            if x < 0 or y < 0:
                continue
            if not ((x == y and abs(i - j) <= 1) or (i == j == 1)):
                return "free"
        return "columns"

    def ports(self, layout, tail, head):
        """In columns, moves up run along the west side of the nodes, moves down along the east side.

        (Diagonal compass ports such as ``nw`` can make graphviz 2.43's
        neato loop forever; ``w`` and ``e`` do not.)  With a single memory
        the self-loops point away from the other column.
        """
        if layout != "columns":
            return "", ""
        (i, x), (j, y) = self._by_key[tail], self._by_key[head]
        if x < 0 or x != y:
            return "", ""
        if tail == head and self.architecture.M == 1:
            side = "w" if x == 0 else "e" if x == self.architecture.arms - 1 else "n"
            return side, side
        if j == i + 1:
            return "w", "w"
        if j == i - 1:
            return "e", "e"
        return "", ""

    def positions(self, layout, keys, edges):
        M, A = self.architecture.M, self.architecture.arms
        dx, dy = 2.4, 1.3
        middle = (A - 1) * dx / 2
        pos = {}
        for key in keys:
            i, x = self._by_key[key]
            pos[key] = (x * dx, (i - 1) * dy) if x >= 0 else (middle, (i - 1) * dy - 0.75 * dy)
        # Room for the caption and for the self-loops at the top.
        pads = [(-0.9, (M - 1) * dy + 0.6, ""), ((A - 1) * dx + 0.9, (M - 1) * dy + 0.6, "")]
        return pos, pads


class _MementoDisplay(NodeDisplay):
    """Memento: the word of arms, oldest first; the rewards of the window are the condition."""

    choice_implied = True
    condition_name = "rewards of the window, oldest first"
    layouts = ("necklaces",)

    def __init__(self, architecture: Memento) -> None:
        super().__init__(architecture)
        self._m = architecture.m
        self._arms = arm_labels(architecture.arms)

    def _split(self, n: int) -> tuple[str, str]:
        label = self.architecture.node_labels[n]
        if label == "_":
            return "", ""
        half = len(label) // 2
        return label[:half], label[half:]

    def key(self, n: int) -> str:
        return self._split(n)[0] or "_"

    def kind(self, n: int) -> str:
        word = self._split(n)[0]
        if not word:
            return "start"
        return "memory" if len(word) == self._m else "warmup"

    def condition(self, n: int) -> str:
        return self._split(n)[1]

    def _letters(self, key: str) -> list[str]:
        """Split a word into arm labels (arm labels past Z have two characters)."""
        if len(self._arms) <= 26:
            return list(key)
        letters, k = [], 0
        while k < len(key):
            for size in (3, 2, 1):
                if key[k : k + size] in self._arms:
                    letters.append(key[k : k + size])
                    k += size
                    break
            else:  # pragma: no cover - keys come from node labels
                raise InputError(f"cannot split {key!r} into arms")
        return letters

    def necklace(self, key: str) -> str:
        """Canonical representative of the word's necklace: its smallest rotation (by arm index)."""
        letters = [self._arms.index(x) for x in self._letters(key)]
        best = min(tuple(letters[k:] + letters[:k]) for k in range(len(letters)))
        return "".join(self._arms[i] for i in best)

    def group(self, key: str) -> str | None:
        if key == "_" or len(self._letters(key)) < self._m:
            return None
        return self.necklace(key)

    def auto_layout(self, keys, edges):
        return "necklaces"

    def ports(self, layout, tail, head):
        """Self-loops of the end necklaces point away from the chain."""
        if layout != "necklaces" or tail != head:
            return "", ""
        letters = self._letters(tail)
        weight = sum(self._arms.index(x) for x in letters)
        side = "w" if 2 * weight < len(letters) * (len(self._arms) - 1) else "e"
        return side, side

    def clusters(self, layout, keys):
        return {key: self.group(key) for key in keys if self.group(key) is not None}

    def positions(self, layout, keys, edges):
        """Necklaces left to right by their sum of arm indices (number of B letters), stacked when tied.

        The words of a necklace sit on a circle, clockwise in the order in
        which playing the oldest arm rotates them, the circle turned so that
        the moves between necklaces are short.
        """
        by_necklace: dict[str, list[str]] = defaultdict(list)
        for key in keys:
            if self.group(key) is not None:
                by_necklace[self.necklace(key)].append(key)
        weight = {w: sum(self._arms.index(x) for x in self._letters(w)) for w in by_necklace}
        columns: dict[int, list[str]] = defaultdict(list)
        for w in sorted(by_necklace, key=lambda w: (weight[w], [self._arms.index(x) for x in self._letters(w)])):
            columns[weight[w]].append(w)
        width = max(0.75, 0.2 + 0.13 * self._m)  # node width, inches
        # neighbours on the circle of the longest necklace (m words) 0.6 inch apart
        radius = (width + 0.6) / (2 * math.sin(math.pi / max(self._m, 2)))
        gap_x = 2 * radius + width + 2.0
        gap_y = 2 * radius + 1.4
        pos: dict[str, tuple[float, float]] = {}
        pads: list[tuple[float, float, str]] = []
        rings: dict[str, tuple[float, float, list[str]]] = {}
        for column, weight_value in enumerate(sorted(columns)):
            stack = columns[weight_value]
            for row, w in enumerate(stack):
                cx = column * gap_x
                cy = ((len(stack) - 1) / 2 - row) * gap_y
                cycle = self._cycle(w)
                present = [x for x in cycle if x in by_necklace[w]] + sorted(set(by_necklace[w]) - set(cycle))
                rings[w] = (cx, cy, present)
                # room for the cluster's label above the circle
                pads.append((cx, cy + (radius if len(present) > 1 else 0) + 0.45, w))

        def place(w: str, shift: int) -> None:
            cx, cy, present = rings[w]
            k = len(present)
            for j, word in enumerate(present):
                angle = math.pi / 2 - 2 * math.pi * (j + shift) / k
                pos[word] = (cx, cy) if k == 1 else (cx + radius * math.cos(angle), cy + radius * math.sin(angle))

        for w in rings:
            place(w, 0)
        between = [(u, v) for u, v in edges if u in pos and v in pos and self.necklace(u) != self.necklace(v)]

        def cost() -> float:
            return sum(math.dist(pos[u], pos[v]) for u, v in between)

        for _ in range(3):  # coordinate descent over the turn of each circle
            for w in rings:
                k = len(rings[w][2])
                best = min(range(k), key=lambda shift: (place(w, shift), cost())[1])
                place(w, best)
        # Partial histories (warm-up): a tree below the necklaces.
        warm = [key for key in keys if self.group(key) is None]
        if warm:
            bottom = min((y for _, y in pos.values()), default=0.0) - radius - 1.4
            span = max((x for x, _ in pos.values()), default=0.0)
            by_length: dict[int, list[str]] = defaultdict(list)
            for key in warm:
                by_length[0 if key == "_" else len(self._letters(key))].append(key)
            for length, level in by_length.items():
                level.sort(key=lambda w: [self._arms.index(x) for x in self._letters(w)] if w != "_" else [])
                for j, key in enumerate(level):
                    x = span / 2 if len(level) == 1 else span * j / (len(level) - 1)
                    pos[key] = (x, bottom - 1.1 * (self._m - 1 - length))
        return pos, pads

    def _cycle(self, word: str) -> list[str]:
        """The rotations of ``word`` in the order the oldest arm is played: ``w -> w[1:] + w[0]``."""
        letters = self._letters(word)
        cycle, current = [], letters
        while "".join(current) not in cycle:
            cycle.append("".join(current))
            current = current[1:] + current[:1]
        return cycle

    def label(self, key: str) -> str:
        return "start" if key == "_" else key


@functools.singledispatch
def node_display(architecture: MemoryArchitecture) -> NodeDisplay:
    """The :class:`NodeDisplay` of an architecture (a ``functools.singledispatch`` function).

    Register a display for a new architecture with
    ``@viz.node_display.register(MyArchitecture)``; unregistered
    architectures are drawn node by node.
    """
    return _GenericDisplay(architecture)


@node_display.register(RAM)
@node_display.register(Chain)
@node_display.register(Column)
def _(architecture) -> NodeDisplay:
    return _RamDisplay(architecture)


@node_display.register(Memento)
def _(architecture) -> NodeDisplay:
    return _MementoDisplay(architecture)
