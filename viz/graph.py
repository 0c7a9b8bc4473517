"""Memory transition diagrams drawn with graphviz (docs/model.md).

A diagram is built in two steps:

1. :func:`build_memory_graph` turns an architecture and a policy into a
   :class:`MemoryGraph`, a plain description of what is drawn: display nodes
   (architecture nodes merged by a per-architecture *display key*), edges
   aggregated from the policy, positions and clusters;
2. :meth:`MemoryGraph.digraph` (or :func:`memory_graph`, which does both)
   writes it as a :class:`graphviz.Digraph`; :func:`render` writes SVG, PNG or
   DOT.

The drawing model:

- a *display node* merges the architecture nodes that the paper draws as one
  memory state.  RAM, Chain and Column: memory ``i`` and the arm just played
  (``3A`` merges ``3A+`` and ``3A-``; paper Figure 1C); Memento: the word of
  arms, rewards hidden (``AABA`` merges the 16 reward patterns; paper
  Figure 3).  What a merged node remembers besides its key (the last reward,
  the rewards of the window) is the *condition* written on its edges.  Other
  architectures are drawn node by node; register a :class:`NodeDisplay` with
  :func:`node_display` to draw a new architecture differently;
- an edge ``u -> v`` exists when some node ``n`` of ``u``, reached by the
  policy, takes a choice of probability ``>= threshold`` that leads to a node
  of ``v``.  Its label lists the conditions and probabilities, compressed:
  no label when the probability is 1 whatever the condition, ``+`` alone
  when it is 1 under condition ``+``, ``otherwise`` for the most common
  value.  The pen width grows with the largest probability;
- only display nodes reachable from the reset nodes through drawn edges are
  drawn; reset nodes are small boxes ``start`` (with their initial
  probability when it is not 1).  Memento's partial histories (the first
  ``m`` steps after a reset) are hidden unless ``warmup=True``;
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
import os
import re
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

import attrs
import graphviz
import numpy as np
import torch

from fsc.errors import InputError, InputTypeError
from fsc.evaluate import Evaluation
from fsc.memory import RAM, Chain, Column, Memento, MemoryArchitecture, arm_labels
from fsc.policy import Policy, atomic_write

__all__ = [
    "FORMATS",
    "LAYOUTS",
    "DisplayEdge",
    "DisplayNode",
    "MemoryGraph",
    "NodeDisplay",
    "build_memory_graph",
    "memory_graph",
    "node_display",
    "render",
]

#: Layouts accepted by :func:`build_memory_graph`.
LAYOUTS = ("auto", "columns", "necklaces", "free")
#: Output formats of :func:`render`.
FORMATS = ("svg", "png", "dot")

#: Largest number of condition lines written on one edge before summarising.
_MAX_LINES = 4
_ARM_COLOURS = ("#dbe8f6", "#f8dcd6", "#dcefd9", "#f3e7c9", "#e6dcf1", "#d9eeee")


# ----------------------------------------------------------------------------
# How an architecture's nodes are drawn


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

    def __init__(self, architecture: MemoryArchitecture) -> None:
        super().__init__(architecture)
        M, A, O = architecture.M, architecture.arms, architecture.observations
        self._arms = arm_labels(A)
        self._memory = np.concatenate([np.arange(M), np.repeat(np.arange(M), A * O)]) + 1
        self._arm = np.concatenate([-np.ones(M, dtype=np.int64), np.tile(np.repeat(np.arange(A), O), M)])
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


# ----------------------------------------------------------------------------
# The graph model


@attrs.frozen
class DisplayNode:
    """A drawn memory state.

    Attributes:
        key: display key (unique), e.g. ``3A`` or ``AABA``.
        name: graphviz node name.
        label: text in the node.
        kind: ``start``, ``warmup`` or ``memory``.
        members: the architecture nodes merged into it that the policy reaches.
        group: cluster or column (``None`` if none).
        mass: stationary probability of its members, if an occupancy was given.
        pos: pinned position in inches (``None`` in the free layout).
    """

    key: str
    name: str
    label: str
    kind: str
    members: tuple[int, ...]
    group: str | None
    mass: float | None = None
    pos: tuple[float, float] | None = None


@attrs.frozen
class DisplayEdge:
    """A drawn transition ``tail -> head``.

    Attributes:
        conditions: ``(condition, probability)`` pairs, one per reached member
            of the tail (and per choice and observation when the target does
            not determine them), each with probability ``>= threshold``.
        probability: the largest of them.
        label: the compressed label written on the edge.
        style: ``solid``, or ``dashed`` between two groups (necklaces, columns).
        ports: compass ports ``(tail, head)`` in a pinned layout ('' for none).
    """

    tail: str
    head: str
    conditions: tuple[tuple[str, float], ...]
    probability: float
    label: str
    style: str
    ports: tuple[str, str] = ("", "")


@attrs.frozen
class MemoryGraph:
    """What :func:`memory_graph` draws: display nodes, edges, layout and caption."""

    architecture: MemoryArchitecture
    nodes: tuple[DisplayNode, ...]
    edges: tuple[DisplayEdge, ...]
    layout: str
    threshold: float
    caption: str
    clusters: Mapping[str, str] = attrs.field(factory=dict)
    pads: tuple[tuple[float, float, str], ...] = ()

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def num_edges(self) -> int:
        return len(self.edges)

    def node(self, key: str) -> DisplayNode:
        """The display node with this key."""
        for node in self.nodes:
            if node.key == key:
                return node
        raise KeyError(key)

    def edge(self, tail: str, head: str) -> DisplayEdge:
        """The edge between the display nodes with these keys."""
        for edge in self.edges:
            if edge.tail == tail and edge.head == head:
                return edge
        raise KeyError((tail, head))

    def digraph(self) -> graphviz.Digraph:
        """The :class:`graphviz.Digraph` (DOT source; render it with :func:`render`)."""
        pinned = self.layout != "free"
        engine = "neato" if pinned else "dot"
        graph = graphviz.Digraph(name=type(self.architecture).__name__, engine=engine)
        graph.attr(label=self.caption, labelloc="b", labeljust="l", fontsize="11", fontname="Helvetica")
        if pinned:
            graph.attr(layout="neato", splines="true", outputorder="edgesfirst", pad="0.3")
        else:
            graph.attr(rankdir="TB", nodesep="0.35", ranksep="0.5")
        graph.attr("node", fontname="Helvetica", fontsize="11")
        graph.attr("edge", fontname="Helvetica", fontsize="9", arrowsize="0.6")
        masses = [n.mass for n in self.nodes if n.mass is not None]
        top = max(masses) if masses else 0.0
        display = node_display(self.architecture)
        names = {node.key: node.name for node in self.nodes}

        def node_attrs(node: DisplayNode) -> dict[str, str]:
            label = node.label
            options = {"label": label}
            if node.kind == "start":
                options.update(shape="box", style="rounded,filled", fillcolor="#eeeeee", fontsize="9", margin="0.05,0.02", height="0.3")
            else:
                colour = display.colour(node.key) if node.kind == "memory" else "white"
                options.update(shape="ellipse", style="filled", fillcolor=colour, margin="0.04,0.02")
                if node.kind == "warmup":
                    options.update(style="filled,dashed", fontsize="9")
            if node.mass is not None and node.kind != "start":
                shade = 0.0 if top <= 0 else node.mass / top
                options["label"] = f"{label}\n{_format_mass(node.mass)}"
                options["fillcolor"] = _grey(shade)
                options["fontcolor"] = "white" if shade > 0.55 else "black"
            if node.pos is not None:
                options["pos"] = f"{node.pos[0]:.3f},{node.pos[1]:.3f}!"
            return options

        clustered: dict[str, list[DisplayNode]] = defaultdict(list)
        for node in self.nodes:
            cluster = self.clusters.get(node.key)
            if cluster is None:
                graph.node(node.name, **node_attrs(node))
            else:
                clustered[cluster].append(node)
        pads_by_cluster: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for k, (x, y, cluster) in enumerate(self.pads):
            if cluster and cluster in clustered:
                pads_by_cluster[cluster].append((x, y))
            elif not cluster:
                graph.node(f"_pad{k}", label="", style="invis", width="0.01", height="0.01", pos=f"{x:.3f},{y:.3f}!")
        for c, (cluster, members) in enumerate(sorted(clustered.items())):
            with graph.subgraph(name=f"cluster_{c}") as sub:
                sub.attr(label=cluster, style="rounded", color="#999999", fontsize="10", labelloc="t")
                for node in members:
                    sub.node(node.name, **node_attrs(node))
                for k, (x, y) in enumerate(pads_by_cluster[cluster]):
                    sub.node(f"_pad{c}_{k}", label="", style="invis", width="0.01", height="0.01", pos=f"{x:.3f},{y:.3f}!")
        for edge in self.edges:
            options = {
                "penwidth": f"{0.6 + 1.6 * edge.probability:.2f}",
                "style": edge.style,
            }
            if edge.label:
                options["label"] = edge.label
            if edge.probability < 0.5:
                options["color"] = "#555555"
            if edge.ports[0]:
                options["tailport"] = edge.ports[0]
            if edge.ports[1]:
                options["headport"] = edge.ports[1]
            graph.edge(names[edge.tail], names[edge.head], **options)
        return graph


def _grey(shade: float) -> str:
    level = int(round(96 - 70 * min(max(shade, 0.0), 1.0)))
    return f"gray{level}"


def _format_mass(mass: float) -> str:
    return f"p={mass:.2g}"


def format_probability(p: float) -> str:
    """Short text for a probability: ``1``, ``0.5``, ``0.032``, ``1-0.032``."""
    if p >= 1 - 1e-12:
        return "1"
    if p > 0.99:
        return f"1-{1 - p:.2g}"
    return f"{p:.2g}"


def _edge_label(conditions: dict[str, float], universe: list[str], implied: bool) -> str:
    """Compressed label: conditions grouped by (formatted) probability.

    ``universe`` lists the conditions of the tail's reached members, in
    order; a group covering every one of them is written as the probability
    alone, and when the edge covers the universe the largest group is written
    ``otherwise``.
    """
    groups: dict[str, list[str]] = defaultdict(list)
    for condition in sorted(conditions, key=lambda c: universe.index(c) if c in universe else len(universe)):
        groups[format_probability(conditions[condition])].append(condition)
    covers = implied and set(conditions) == set(universe)
    if covers and len(groups) == 1:
        (text,) = groups
        return "" if text == "1" else text
    if len(conditions) > _MAX_LINES and len(groups) > _MAX_LINES:
        values = list(conditions.values())
        return f"{len(values)} cases: {format_probability(min(values))}..{format_probability(max(values))}"
    lines = []
    rest = None
    if covers:
        rest = max(groups, key=lambda text: (len(groups[text]), text == "1"))
        if len(groups[rest]) < 3:  # short enough to list
            rest = None
    for text, conds in groups.items():
        if text == rest:
            continue
        shown = ",".join(c or "*" for c in conds) if len(conds) <= 3 else f"{conds[0] or '*'},... ({len(conds)})"
        lines.append(shown if text == "1" else f"{shown}: {text}")
    if rest is not None:
        lines.append("else" if rest == "1" else f"else: {rest}")
    return "\n".join(lines)


def _check_threshold(threshold: object) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise InputTypeError(f"threshold must be a number in [0, 1), got {threshold!r}")
    threshold = float(threshold)
    if not (math.isfinite(threshold) and 0 <= threshold < 1):
        raise InputError(f"threshold must be in [0, 1), got {threshold!r}")
    return threshold


def _occupancy(occupancy, N: int) -> np.ndarray | None:
    if occupancy is None:
        return None
    if isinstance(occupancy, Evaluation):
        p = occupancy.distribution.detach()
        weights = occupancy.part_weights.detach().to(p.dtype)
        return (p.sum(dim=1) * weights[:, None]).sum(dim=0).numpy()
    array = np.asarray(occupancy.detach().numpy() if isinstance(occupancy, torch.Tensor) else occupancy, dtype=np.float64)
    if array.shape != (N,):
        raise InputError(f"occupancy must have shape (N,) = ({N},), got {array.shape}")
    if not np.all(np.isfinite(array)) or (array < 0).any():
        raise InputError("occupancy must be finite and non-negative")
    return array


def build_memory_graph(
    architecture: MemoryArchitecture,
    policy: Policy,
    *,
    threshold: float = 1e-3,
    layout: str = "auto",
    warmup: bool = False,
    occupancy=None,
    title: str | None = None,
) -> MemoryGraph:
    """The diagram of ``policy`` on ``architecture``, as a :class:`MemoryGraph`.

    Args:
        threshold: edges (choices) of probability below it are hidden, and
            nodes reached only through them are not drawn; stated in the caption.
        layout: ``auto``, ``columns`` (RAM, Chain, Column), ``necklaces``
            (Memento) or ``free``.
        warmup: draw Memento's partial histories (the first ``m`` steps after a reset).
        occupancy: stationary mass per architecture node, shape ``(N,)``, or an
            :class:`fsc.Evaluation`; nodes are shaded by it.
        title: first line of the caption (default: the architecture).
    """
    if not isinstance(architecture, MemoryArchitecture):
        raise InputTypeError(f"architecture must be a fsc.MemoryArchitecture, got {type(architecture).__name__}")
    if not isinstance(policy, Policy):
        raise InputTypeError(f"policy must be a fsc.Policy, got {type(policy).__name__}")
    if policy.architecture != architecture:
        raise InputError(f"the policy lives on {policy.architecture!r}, not on {architecture!r}")
    threshold = _check_threshold(threshold)
    if layout not in LAYOUTS:
        raise InputError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if not isinstance(warmup, bool):
        raise InputTypeError(f"warmup must be a bool, got {warmup!r}")
    if title is not None and not isinstance(title, str):
        raise InputTypeError(f"title must be a str, got {title!r}")
    display = node_display(architecture)
    if layout not in ("auto", "free") and layout not in display.layouts:
        raise InputError(f"layout {layout!r} is not available for {architecture!r}; choose among {('auto', *display.layouts, 'free')}")
    N = architecture.num_nodes
    mass = _occupancy(occupancy, N)

    with torch.no_grad():
        probs = policy.probs().detach().numpy()
        init = policy.init_probs().detach().numpy()
    keep = (probs > 0) & (probs >= threshold)
    start = (init > 0) & (init >= threshold)
    if not start.any():  # every initial probability below the threshold: keep the likeliest
        start = init == init.max()
    next_node = architecture.next_node

    # Architecture nodes reached from the reset nodes through kept choices.
    reached = start.copy()
    frontier = np.flatnonzero(reached)
    while len(frontier):
        rows, choices = np.nonzero(keep[frontier])
        targets = np.unique(next_node[frontier[rows], choices].ravel())
        targets = targets[~reached[targets]]
        reached[targets] = True
        frontier = targets

    keys = [display.key(n) for n in range(N)]
    kinds = [display.kind(n) for n in range(N)]
    hidden = {keys[n] for n in range(N) if kinds[n] == "warmup" and not warmup}

    # Edges between display nodes, aggregated over the reached members of the tail.
    items: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    choice_labels, obs_labels = architecture.choice_names, _obs_labels(architecture)
    O = architecture.num_observations
    for n in np.flatnonzero(reached):
        u = keys[n]
        if u in hidden:
            continue
        for c in np.flatnonzero(keep[n]):
            heads: dict[str, list[int]] = defaultdict(list)
            for o in range(O):
                heads[keys[next_node[n, c, o]]].append(o)
            for v, observations in heads.items():
                if v in hidden:
                    continue
                condition = display.condition(n)
                if not display.choice_implied:
                    extra = choice_labels[c] + ("" if len(observations) == O else "/" + ",".join(obs_labels[o] for o in observations))
                    condition = f"{condition} {extra}".strip()
                items[(u, v)][condition] += float(probs[n, c])
    # Start nodes whose every edge leads to hidden nodes are hidden too.
    drawn_tails = {u for u, _ in items}
    for n in np.flatnonzero(reached):
        if kinds[n] == "start" and keys[n] not in drawn_tails:
            hidden.add(keys[n])
    items = {uv: conds for uv, conds in items.items() if uv[0] not in hidden and uv[1] not in hidden}

    # Display nodes, in architecture order of their first member.
    order: list[str] = []
    members: dict[str, list[int]] = defaultdict(list)
    for n in np.flatnonzero(reached):
        if keys[n] in hidden:
            continue
        if keys[n] not in members:
            order.append(keys[n])
        members[keys[n]].append(int(n))
    chosen = display.auto_layout(order, list(items)) if layout == "auto" else layout
    positions, pads = display.positions(chosen, order, list(items)) if chosen != "free" else ({}, [])
    clusters = display.clusters(chosen, order) if chosen != "free" else {}
    names = _node_names(order)
    starts = [key for key in order if kinds[members[key][0]] == "start"]
    nodes = []
    for key in order:
        kind = kinds[members[key][0]]
        if kind == "start":
            p0 = float(init[members[key]].sum())
            text = "start" if len(starts) == 1 else f"start {display.label(key).rstrip('_')}"
            if p0 < 1 - 1e-12:
                text += f"\np0={format_probability(p0)}"
        else:
            text = display.label(key)
        nodes.append(
            DisplayNode(
                key=key,
                name=names[key],
                label=text,
                kind=kind,
                members=tuple(members[key]),
                group=display.group(key),
                mass=None if mass is None else float(mass[members[key]].sum()),
                pos=positions.get(key),
            )
        )
    edges = []
    for (u, v), conditions in sorted(items.items(), key=lambda item: (order.index(item[0][0]), order.index(item[0][1]))):
        universe = list(dict.fromkeys(display.condition(n) for n in members[u]))
        gu, gv = display.group(u), display.group(v)
        style = "dashed" if gu is not None and gv is not None and gu != gv else "solid"
        edges.append(
            DisplayEdge(
                tail=u,
                head=v,
                conditions=tuple(conditions.items()),
                probability=max(conditions.values()),
                label=_edge_label(dict(conditions), universe, display.choice_implied),
                style=style,
                ports=display.ports(chosen, u, v) if chosen != "free" else ("", ""),
            )
        )
    caption = _caption(architecture, display, threshold, title, hidden_warmup=any(kinds[n] == "warmup" for n in range(N)) and not warmup)
    return MemoryGraph(
        architecture=architecture,
        nodes=tuple(nodes),
        edges=tuple(edges),
        layout=chosen,
        threshold=threshold,
        caption=caption,
        clusters=clusters,
        pads=tuple(pads),
    )


def _run_graphviz(source: str, engine: str, fmt: str, timeout: float) -> bytes:
    """``dot -K<engine> -T<fmt>`` on ``source``; on a timeout, once more with straight edges."""
    program = shutil.which("dot")
    if program is None:
        raise RuntimeError("graphviz's dot program is missing: install graphviz (apt-get install graphviz)")
    attempts = [source]
    if "splines" in source:
        attempts.append(re.sub(r"splines=(\"?)(true|curved|spline)\1", "splines=line", source))
    for k, text in enumerate(attempts):
        try:
            done = subprocess.run([program, f"-K{engine}", f"-T{fmt}"], input=text.encode(), capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            if k + 1 < len(attempts):
                continue
            raise RuntimeError(f"graphviz did not finish within {timeout:g} s") from None
        if done.returncode != 0:
            raise RuntimeError(f"graphviz failed (status {done.returncode}): {done.stderr.decode(errors='replace').strip()}")
        return done.stdout
    raise AssertionError("unreachable")  # pragma: no cover


def _obs_labels(architecture: MemoryArchitecture) -> tuple[str, ...]:
    from fsc.memory import observation_labels

    return observation_labels(architecture.num_observations)


def _node_names(keys: list[str]) -> dict[str, str]:
    """Graphviz node names: the key itself when it is safe (no ':' port syntax), else ``n<k>``."""
    names = {}
    for k, key in enumerate(keys):
        safe = key and ":" not in key and "\\" not in key and not key.startswith("_pad")
        names[key] = key if safe else f"n{k}"
    return names


def _caption(architecture, display, threshold, title, hidden_warmup) -> str:
    lines = [title if title is not None else repr(architecture)]
    if display.choice_implied:
        lines.append(f"edge label = {display.condition_name}: probability of the move (no number: 1; no label: 1 whatever the condition)")
    else:
        lines.append("edge label = choice/observation: probability of the choice (no number: 1)")
    lines.append(f"edges of probability < {threshold:g} hidden; only states reached from the start through drawn edges are shown")
    if hidden_warmup:
        lines.append("partial histories of the first steps after a reset not drawn")
    return "\\l".join(lines) + "\\l"


def memory_graph(
    architecture: MemoryArchitecture,
    policy: Policy,
    *,
    threshold: float = 1e-3,
    layout: str = "auto",
    warmup: bool = False,
    occupancy=None,
    title: str | None = None,
) -> graphviz.Digraph:
    """The memory transition diagram of ``policy`` as a :class:`graphviz.Digraph`.

    Nodes are memory states (merged architecture nodes, see the module
    docstring), edges the transitions of probability ``>= threshold``,
    labelled by condition and probability.  The column of confidence policy
    is drawn as the paper's two columns (Figure 1C), the necklace policy as
    its chain of necklaces (Figure 3).  Arguments as in
    :func:`build_memory_graph`; write the result with :func:`render`.
    """
    return build_memory_graph(architecture, policy, threshold=threshold, layout=layout, warmup=warmup, occupancy=occupancy, title=title).digraph()


def render(graph: graphviz.Digraph | MemoryGraph, path: str | os.PathLike, format: str | None = None, *, timeout: float = 60.0) -> Path:
    """Write ``graph`` to ``path`` as SVG, PNG or DOT, atomically.

    The format is ``format`` if given, else the suffix of ``path``
    (``.svg``, ``.png``, ``.dot`` or ``.gv``).  SVG and PNG run graphviz's
    ``dot`` program (with the graph's engine), stopped after ``timeout``
    seconds; if graphviz's spline router does not finish in time (it can
    loop forever on some pinned layouts), the edges are drawn again as
    straight lines.  Returns the path written.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise InputError(f"timeout must be a number of seconds > 0, got {timeout!r}")
    if isinstance(graph, MemoryGraph):
        graph = graph.digraph()
    if not isinstance(graph, graphviz.Digraph):
        raise InputTypeError(f"graph must be a graphviz.Digraph or a viz.MemoryGraph, got {type(graph).__name__}")
    path = Path(path)
    fmt = format if format is not None else path.suffix.lstrip(".")
    if not isinstance(fmt, str):
        raise InputTypeError(f"format must be a str, got {fmt!r}")
    fmt = {"gv": "dot"}.get(fmt.lower(), fmt.lower())
    if fmt not in FORMATS:
        raise InputError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r} (for {str(path)!r})")
    data = graph.source.encode() if fmt == "dot" else _run_graphviz(graph.source, graph.engine, fmt, timeout)
    atomic_write(path, lambda f: f.write(data))
    return path
