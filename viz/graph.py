"""The memory transition diagram of a policy as plain data (docs/model.md).

:func:`memory_graph` turns a policy (on its architecture) into a
:class:`MemoryGraph`, a plain description of what is drawn: display nodes
(architecture nodes merged by the :class:`~viz.display.NodeDisplay` of the
architecture), edges aggregated from the policy, positions and clusters;
:meth:`MemoryGraph.digraph` writes it as a :class:`graphviz.Digraph`
(:mod:`viz.output` writes it).

- an edge ``u -> v`` exists when some node ``n`` of ``u``, reached by the
  policy, takes a choice of probability ``>= threshold`` that leads to a node
  of ``v``.  Its label lists the conditions and probabilities, compressed:
  no label when the probability is 1 whatever the condition, ``+`` alone
  when it is 1 under condition ``+``, ``otherwise`` for the most common
  value.  The pen width grows with the largest probability;
- only display nodes reachable from the reset nodes through drawn edges are
  drawn; reset nodes are small boxes ``start`` (with their initial
  probability when it is not 1).  Memento's partial histories (the first
  ``m`` steps after a reset) are hidden unless ``warmup=True``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping

import attrs
import graphviz
import numpy as np

from fsc.errors import InputError, InputTypeError
from fsc.model.architecture import MemoryArchitecture
from fsc.model.policy import Policy, Weights, check_policy

from .display import node_display

__all__ = [
    "LAYOUTS",
    "DisplayEdge",
    "DisplayNode",
    "MemoryGraph",
    "format_probability",
    "memory_graph",
]

#: Layouts accepted by :func:`memory_graph`.
LAYOUTS = ("auto", "columns", "necklaces", "free")

#: Largest number of condition lines written on one edge before summarising.
_MAX_LINES = 4


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
    if not isinstance(occupancy, np.ndarray):  # an evaluation (fsc.evaluate: imported when one is given)
        from fsc.evaluate import Evaluation, Values

        if isinstance(occupancy, Values):
            return occupancy.occupancy()
        if isinstance(occupancy, Evaluation):
            p = occupancy.distribution.detach()
            weights = occupancy.part_weights.detach().to(p.dtype)
            return (p.sum(dim=1) * weights[:, None]).sum(dim=0).numpy()
    array = np.asarray(occupancy.detach().numpy() if callable(getattr(occupancy, "detach", None)) else occupancy, dtype=np.float64)  # a tensor
    if array.shape != (N,):
        raise InputError(f"occupancy must have shape (N,) = ({N},), got {array.shape}")
    if not np.all(np.isfinite(array)) or (array < 0).any():
        raise InputError("occupancy must be finite and non-negative")
    return array


def _obs_labels(architecture: MemoryArchitecture) -> tuple[str, ...]:
    from fsc.model.architecture import observation_labels

    return observation_labels(architecture.num_observations)


def _node_names(keys: list[str]) -> dict[str, str]:
    """Graphviz node names: the key itself when it is safe (no ':' port syntax), else ``n<k>``."""
    names = {}
    for k, key in enumerate(keys):
        safe = key and ":" not in key and "\\" not in key and not key.startswith("_pad")
        names[key] = key if safe else f"n{k}"
    return names


def _caption(architecture, display, threshold, title, hidden_warmup, several_starts=False) -> str:
    lines = [title if title is not None else repr(architecture)]
    if display.choice_implied:
        lines.append(f"edge label = {display.condition_name}: probability of the move (no number: 1; no label: 1 whatever the condition)")
    else:
        lines.append("edge label = choice/observation: probability of the choice (no number: 1)")
    if display.legend and several_starts:
        lines.append(display.legend)
    lines.append(f"edges of probability < {threshold:g} hidden; only states reached from the start through drawn edges are shown")
    if hidden_warmup:
        lines.append("partial histories of the first steps after a reset not drawn")
    return "\\l".join(lines) + "\\l"


def memory_graph(
    policy: Policy | Weights,
    *,
    threshold: float = 1e-3,
    layout: str = "auto",
    warmup: bool = False,
    occupancy=None,
    title: str | None = None,
) -> MemoryGraph:
    """The memory transition diagram of ``policy`` (a :class:`fsc.Policy`, or its numpy logits
    :class:`fsc.model.policy.Weights`, with which nothing imports torch) on its architecture, as a :class:`MemoryGraph`.

    Nodes are memory states (architecture nodes merged as :mod:`viz.display` says), edges the
    transitions of probability ``>= threshold``, labelled by condition and probability.  The column of
    confidence policy is drawn as the paper's two columns (Figure 1C), the necklace policy as its chain
    of necklaces (Figure 3).  :meth:`MemoryGraph.digraph` gives it as a :class:`graphviz.Digraph`;
    :func:`viz.render` writes it as SVG, PNG or DOT.

    Args:
        threshold: edges (choices) of probability below it are hidden, and
            nodes reached only through them are not drawn; stated in the caption.
        layout: ``auto``, ``columns`` (RAM, Chain, Column), ``necklaces``
            (Memento) or ``free``.
        warmup: draw Memento's partial histories (the first ``m`` steps after a reset).
        occupancy: stationary mass per architecture node, shape ``(N,)``, or an
            :class:`fsc.Evaluation` (or :class:`fsc.evaluate.Values`); nodes are shaded by it.
        title: first line of the caption (default: the architecture).
    """
    architecture = (policy if isinstance(policy, Weights) else check_policy(policy)).architecture
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

    if isinstance(policy, Weights):  # numpy logits: no torch
        probs, init = policy.probs(), policy.init_probs()
    else:
        probs, init = policy.probs().detach().numpy(), policy.init_probs().detach().numpy()
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
    hidden_warmup = any(kinds[n] == "warmup" for n in range(N)) and not warmup
    caption = _caption(architecture, display, threshold, title, hidden_warmup, several_starts=len(starts) > 1)
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
