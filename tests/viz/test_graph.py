"""Memory transition diagrams: the graph model against brute force and hand counts, rendered with the real dot program."""

import functools
import re
import shutil
import xml.etree.ElementTree as ET
from collections import deque

import attrs
import graphviz
import numpy as np
import pytest

import fsc
import tasks
import viz
from fsc.model.architecture import arm_labels

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz's dot program is not installed")

SVG = "{http://www.w3.org/2000/svg}"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

ARCHITECTURES = (
    [kind(M) for kind in (fsc.RAM, fsc.Chain, fsc.Column) for M in (1, 2, 3)]
    + [fsc.Memento(m) for m in (1, 2, 3)]
    + [fsc.Column(2, arms=3), fsc.RAM(2, arms=3), fsc.Memento(2, arms=3)]
)


def ids(arch):
    return f"{type(arch).__name__}{getattr(arch, 'M', getattr(arch, 'm', ''))}-{arch.arms}arms"


# ----------------------------------------------------------------------------
# Helpers: reading what graphviz wrote


def svg_groups(path):
    """``{class: [<g> elements]}`` of an SVG file written by graphviz."""
    root = ET.parse(path).getroot()
    groups = {}
    for g in root.iter(f"{SVG}g"):
        groups.setdefault(g.get("class"), []).append(g)
    return groups


def svg_counts(path):
    groups = svg_groups(path)
    return len(groups.get("node", [])), len(groups.get("edge", []))


def svg_centres(path):
    """Node name -> centre (x, y) of its ellipse (SVG y grows downward)."""
    centres = {}
    for g in svg_groups(path).get("node", []):
        ellipse = g.find(f"{SVG}ellipse")
        if ellipse is not None:
            centres[g.find(f"{SVG}title").text] = (float(ellipse.get("cx")), float(ellipse.get("cy")))
    return centres


def dot_edge_count(source):
    return len(re.findall(r"^\s*\S+\s*->\s*\S+", source, flags=re.M))


def render_all(graph, tmp_path, name="g"):
    """Render SVG, PNG and DOT; check each; return the SVG counts."""
    svg = viz.render(graph, tmp_path / f"{name}.svg")
    png = viz.render(graph, tmp_path / f"{name}.png")
    gv = viz.render(graph, tmp_path / f"{name}.dot")
    assert ET.parse(svg).getroot().tag == f"{SVG}svg"
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    source = gv.read_text()
    assert source == graph.digraph().source if isinstance(graph, viz.MemoryGraph) else graph.source
    # The DOT text is graphviz input: dot reads it back and lays it out the same way.
    again = graphviz.Source(source).pipe(format="svg")
    (tmp_path / f"{name}.again.svg").write_bytes(again)
    assert svg_counts(tmp_path / f"{name}.again.svg") == svg_counts(svg)
    return svg_counts(svg), source


# ----------------------------------------------------------------------------
# Brute force: what should be drawn, from the node and choice labels only


def expected_graph(arch, policy, threshold, warmup=False):
    """Display nodes and edges recomputed from the labels (independent of viz)."""
    probs = policy.probs().detach().numpy()
    init = policy.init_probs().detach().numpy()
    labels, choices = arch.node_labels, arch.choice_labels
    obs = ("+", "-")
    index = {label: n for n, label in enumerate(labels)}
    memento = isinstance(arch, fsc.Memento)

    def key(label):
        if memento:
            return label[: len(label) // 2] if label != "_" else "_"
        return label[:-1] if not label.endswith("_") else label

    def targets(label, choice):
        if memento:
            arms, rewards = (label[: len(label) // 2], label[len(label) // 2 :]) if label != "_" else ("", "")
            if len(arms) == arch.m:
                arms, rewards = arms[1:], rewards[1:]
            return [arms + choice + rewards + o for o in obs]
        return [choice + o for o in obs]

    reached, queue = set(), deque()
    for n in np.flatnonzero((init > 0) & (init >= threshold)):
        reached.add(labels[n])
        queue.append(labels[n])
    edges = set()
    while queue:
        label = queue.popleft()
        for c, choice in enumerate(choices):
            p = probs[index[label], c]
            if p > 0 and p >= threshold:
                for target in targets(label, choice):
                    edges.add((key(label), key(target)))
                    if target not in reached:
                        reached.add(target)
                        queue.append(target)

    def hidden(k):  # Memento's partial histories, unless warmup
        return memento and not warmup and k != "_" and len(k) < arch.m

    edges = {(u, v) for u, v in edges if not hidden(u) and not hidden(v)}
    # A start node whose moves all lead to hidden nodes is hidden too.
    nodes = {key(label) for label in reached if not hidden(key(label))}
    nodes = {k for k in nodes if not (memento and k == "_") or any(u == k for u, _ in edges)}
    return nodes, edges


# ----------------------------------------------------------------------------
# Hand-built policies


def ccp_probs(arch, eps):
    """The column of confidence policy, built by hand from the paper's Figure 1C."""
    M = arch.M
    probs = np.zeros((arch.num_nodes, arch.num_choices))
    n, c = arch.node_index, arch.choice_index
    for i in range(1, M + 1):
        for x, y in (("A", "B"), ("B", "A")):
            probs[n(f"{i}{x}+"), c(f"{min(i + 1, M)}{x}")] = 1
            if i == M:
                probs[n(f"{M}{x}-"), c(f"{M}{x}")] += 1 - eps
                probs[n(f"{M}{x}-"), c(f"{M - 1}{x}" if M > 1 else f"1{y}")] += eps
            elif i == 1:
                probs[n(f"1{x}-"), c(f"1{y}")] = 1
            else:
                probs[n(f"{i}{x}-"), c(f"{i - 1}{x}")] = 1
        row = probs[n(f"{i}_")]
        if i == 1:
            row[c("1A")] = row[c("1B")] = 0.5
        else:
            row[:] = arch.allowed[n(f"{i}_")] / arch.allowed[n(f"{i}_")].sum()
    init = np.zeros(arch.num_nodes)
    init[n("1_")] = 1
    return fsc.Policy.from_probs(arch, probs, init)


# Exits of the necklace policy for m = 4 (issue 3): word + rewards -> arm, taken with eps1.
NECKLACE_EXITS_4 = {"BAAA-+++": "A", "ABAA-+--": "B", "BAAB-++-": "A", "ABBA-++-": "B", "BABB-+--": "A", "ABBB-+++": "B"}


def necklace_probs_4(eps0, eps1):
    arch = fsc.Memento(4)
    probs = np.full((arch.num_nodes, 2), 0.5)
    for n, label in enumerate(arch.node_labels):
        if len(label) != 8:
            continue
        oldest = label[0]
        other = "B" if oldest == "A" else "A"
        leave = eps1 if NECKLACE_EXITS_4.get(label) == other else 0.0
        if label in ("AAAA----", "BBBB----"):
            leave = eps0
        probs[n, "AB".index(oldest)] = 1 - leave
        probs[n, "AB".index(other)] = leave
    init = np.zeros(arch.num_nodes)
    init[0] = 1
    return arch, fsc.Policy.from_probs(arch, probs, init)


# ----------------------------------------------------------------------------
# Every architecture, random policies


@pytest.mark.parametrize("arch", ARCHITECTURES, ids=ids)
@pytest.mark.parametrize("threshold", [0.0, 0.15])
def test_random_policy_graph_matches_brute_force_and_svg(arch, threshold, tmp_path):
    policy = fsc.Policy.random(arch, 7)
    graph = viz.memory_graph(policy, threshold=threshold)
    nodes, edges = expected_graph(arch, policy, threshold)
    assert {node.key for node in graph.nodes} == nodes
    assert {(e.tail, e.head) for e in graph.edges} == edges
    assert graph.num_edges == len(edges)  # one drawn edge per pair of display nodes
    (n_svg, e_svg), source = render_all(graph, tmp_path)
    assert (n_svg, e_svg) == (graph.num_nodes, graph.num_edges)
    assert dot_edge_count(source) == graph.num_edges
    assert f"< {threshold:g} hidden" in source


@pytest.mark.parametrize("arch", [fsc.Memento(2), fsc.Memento(3), fsc.Memento(2, arms=3)], ids=ids)
def test_memento_warmup_draws_the_partial_histories(arch, tmp_path):
    policy = fsc.Policy.random(arch, 3)
    graph = viz.memory_graph(policy, threshold=0.0, warmup=True)
    nodes, edges = expected_graph(arch, policy, 0.0, warmup=True)
    K = arch.arms
    assert len(nodes) == sum(K**length for length in range(arch.m + 1))  # every history is reached
    assert {node.key for node in graph.nodes} == nodes
    assert {(e.tail, e.head) for e in graph.edges} == edges
    assert svg_counts(viz.render(graph, tmp_path / "w.svg")) == (graph.num_nodes, graph.num_edges)
    kinds = [node.kind for node in graph.nodes]
    assert kinds.count("start") == 1 and kinds.count("warmup") == len(nodes) - 1 - K**arch.m


@pytest.mark.parametrize("arch", [fsc.RAM(2), fsc.Chain(3), fsc.Memento(3)], ids=ids)
def test_edge_probabilities_are_the_policy_probabilities(arch):
    """Each (condition, probability) on an edge u -> v is probs[node u+condition, choice leading to v]."""
    policy = fsc.Policy.random(arch, 11)
    probs = policy.probs().detach().numpy()
    graph = viz.memory_graph(policy, threshold=0.0, warmup=True)
    for edge in graph.edges:
        node = graph.node(edge.tail)
        assert edge.probability == max(p for _, p in edge.conditions)
        for condition, p in edge.conditions:
            label = edge.tail if node.kind == "start" else edge.tail + condition
            choice = edge.head[-1] if isinstance(arch, fsc.Memento) else edge.head
            assert p == pytest.approx(probs[arch.node_index(label), arch.choice_index(choice)], abs=1e-15)


# ----------------------------------------------------------------------------
# The column of confidence policy: two columns, hand counts


@pytest.mark.parametrize("M", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("kind", [fsc.Column, fsc.RAM, fsc.Chain])
def test_ccp_hand_count_and_two_columns(kind, M, tmp_path):
    arch = kind(M)
    policy = ccp_probs(arch, eps=0.03)
    graph = viz.memory_graph(policy, threshold=1e-3)
    # Nodes: start + iA, iB for i = 1..M.  Edges: 2 from start; per column M - 1 up,
    # M - 1 down, the self-loop at the top and the switch at the bottom.
    assert (graph.num_nodes, graph.num_edges) == (2 * M + 1, 4 * M + 2)
    assert graph.layout == "columns"
    (n_svg, e_svg), source = render_all(graph, tmp_path)
    assert (n_svg, e_svg) == (2 * M + 1, 4 * M + 2)
    assert dot_edge_count(source) == 4 * M + 2
    # The picture: A above A, B above B, A left of B, memory M on top, start below memory 1.
    centres = svg_centres(tmp_path / "g.svg")
    xa = {round(centres[f"{i}A"][0], 1) for i in range(1, M + 1)}
    xb = {round(centres[f"{i}B"][0], 1) for i in range(1, M + 1)}
    assert len(xa) == len(xb) == 1 and xa.pop() < xb.pop()
    ys = [centres[f"{i}A"][1] for i in range(1, M + 1)]
    assert ys == sorted(ys, reverse=True)  # SVG y grows downward: memory 1 lowest
    # Edge labels: + up, - down, the top's exit eps, the start's 1/2.
    if M > 1:
        assert graph.edge("1A", "2A").label == "+"
        assert graph.edge("2A", "1A").label == ("-" if M > 2 else "-: 0.03")
        assert graph.edge(f"{M}A", f"{M - 1}A").label == "-: 0.03"
        assert graph.edge(f"{M}A", f"{M}A").label == "+\n-: 0.97"
    assert graph.edge("1_", "1A").label == "0.5"
    assert graph.node("1_").label == "start"


def test_ccp_threshold_hides_the_exits_of_the_top(tmp_path):
    M = 4
    arch = fsc.Column(M)
    graph = viz.memory_graph(ccp_probs(arch, eps=0.03), threshold=0.05)
    assert (graph.num_nodes, graph.num_edges) == (2 * M + 1, 4 * M)
    assert "< 0.05 hidden" in graph.caption
    assert svg_counts(viz.render(graph, tmp_path / "t.svg")) == (2 * M + 1, 4 * M)


def test_ccp_with_three_arms_draws_three_columns(tmp_path):
    arch = fsc.Column(3, arms=3)
    probs = np.zeros((arch.num_nodes, arch.num_choices))
    n, c = arch.node_index, arch.choice_index
    for i in range(1, 4):
        for k, x in enumerate("ABC"):
            nxt = "ABC"[(k + 1) % 3]
            probs[n(f"{i}{x}+"), c(f"{min(i + 1, 3)}{x}")] = 1
            if i == 3:
                probs[n(f"3{x}-"), c(f"3{x}")], probs[n(f"3{x}-"), c(f"2{x}")] = 0.9, 0.1
            else:
                probs[n(f"{i}{x}-"), c(f"{i - 1}{x}" if i > 1 else f"1{nxt}")] = 1
        probs[n(f"{i}_")] = arch.allowed[n(f"{i}_")] / arch.allowed[n(f"{i}_")].sum()
    probs[n("1_")] = 0
    probs[n("1_"), [c("1A"), c("1B"), c("1C")]] = 1 / 3
    init = np.zeros(arch.num_nodes)
    init[n("1_")] = 1
    policy = fsc.Policy.from_probs(arch, probs, init)
    graph = viz.memory_graph(policy)
    # start -> 1A, 1B, 1C; per column 2 up, 2 down, the loop at the top, the switch at the bottom.
    assert graph.layout == "columns"
    assert (graph.num_nodes, graph.num_edges) == (10, 3 + 3 * 6)
    assert svg_counts(viz.render(graph, tmp_path / "c.svg")) == (10, 21)
    centres = svg_centres(tmp_path / "c.svg")
    assert centres["1A"][0] < centres["1B"][0] < centres["1C"][0]


# ----------------------------------------------------------------------------
# The necklace policy: the chain of necklaces


def test_necklace_policy_m4_hand_count_and_chain_of_necklaces(tmp_path):
    arch, policy = necklace_probs_4(eps0=0.003, eps1=0.056)
    graph = viz.memory_graph(policy, threshold=1e-3)
    # 16 words; one rotation edge per word (self-loops at AAAA and BBBB), 6 exits, 2 end exits.
    assert graph.layout == "necklaces"
    assert (graph.num_nodes, graph.num_edges) == (16, 16 + 6 + 2)
    (n_svg, e_svg), source = render_all(graph, tmp_path)
    assert (n_svg, e_svg) == (16, 24)
    # Clusters: the six necklaces, left to right by number of B (AABB and ABAB stacked).
    clusters = {}
    for g in svg_groups(tmp_path / "g.svg")["cluster"]:
        text = g.find(f"{SVG}text")
        clusters[text.text] = float(text.get("x"))
    assert set(clusters) == {"AAAA", "AAAB", "AABB", "ABAB", "ABBB", "BBBB"}
    assert clusters["AAAA"] < clusters["AAAB"] < min(clusters["AABB"], clusters["ABAB"])
    assert max(clusters["AABB"], clusters["ABAB"]) < clusters["ABBB"] < clusters["BBBB"]
    # Edge labels: rotations with no exit are unlabelled, exits carry their rewards and eps1.
    assert graph.edge("AAAB", "AABA").label == ""
    assert graph.edge("ABAA", "BAAB").label == "-+--: 0.056"
    assert graph.edge("ABAA", "BAAB").style == "dashed"
    assert graph.edge("ABAA", "BAAA").label == "-+--: 0.94\nelse"
    assert graph.edge("AAAA", "AAAB").label == "----: 0.003"
    # With the warm-up: + start and 14 partial histories, + 2 + 28 edges.
    warm = viz.memory_graph(policy, threshold=1e-3, warmup=True)
    assert (warm.num_nodes, warm.num_edges) == (31, 54)
    assert svg_counts(viz.render(warm, tmp_path / "w.svg")) == (31, 54)


def test_necklace_threshold_between_eps0_and_eps1(tmp_path):
    arch, policy = necklace_probs_4(eps0=0.003, eps1=0.056)
    graph = viz.memory_graph(policy, threshold=0.01)
    assert (graph.num_nodes, graph.num_edges) == (16, 22)  # the two end exits are hidden
    assert svg_counts(viz.render(graph, tmp_path / "t.svg")) == (16, 22)


def test_explicit_policies_package_if_present(tmp_path):
    policies = pytest.importorskip("policies")
    arch, policy = policies.ccp(4, 0.03)
    graph = viz.memory_graph(policy)
    assert (graph.layout, graph.num_nodes, graph.num_edges) == ("columns", 9, 18)
    assert svg_counts(viz.render(graph, tmp_path / "ccp.svg")) == (9, 18)
    for m in (3, 4):
        arch, policy = policies.necklace_policy(m, 0.003, 0.05)
        graph = viz.memory_graph(policy)
        assert graph.layout == "necklaces"
        assert graph.num_nodes == 2**m
        assert svg_counts(viz.render(graph, tmp_path / f"n{m}.svg")) == (graph.num_nodes, graph.num_edges)


# ----------------------------------------------------------------------------
# Layouts, shading, a user-defined architecture


def test_free_layout_and_auto_choice(tmp_path):
    arch = fsc.RAM(3)
    policy = fsc.Policy.random(arch, 1)
    graph = viz.memory_graph(policy, threshold=0.2)
    assert graph.layout == "free"
    assert all(node.pos is None for node in graph.nodes)
    assert "layout=neato" not in graph.digraph().source
    forced = viz.memory_graph(policy, threshold=0.2, layout="columns")
    assert forced.layout == "columns" and "layout=neato" in forced.digraph().source
    assert svg_counts(viz.render(forced, tmp_path / "f.svg")) == (forced.num_nodes, forced.num_edges)
    ccp = viz.memory_graph(ccp_probs(fsc.Column(3), 0.1), layout="free")
    assert ccp.layout == "free"
    assert svg_counts(viz.render(ccp, tmp_path / "c.svg")) == (7, 14)


def test_occupancy_shades_nodes_by_stationary_mass(tmp_path):
    arch = fsc.Column(3)
    policy = ccp_probs(arch, 0.05)
    evaluation = fsc.evaluate(tasks.TwoHypothesis(0.2), policy, reset=0.01)
    graph = viz.memory_graph(policy, occupancy=evaluation)
    masses = {node.key: node.mass for node in graph.nodes}
    assert sum(masses.values()) == pytest.approx(1, abs=1e-12)  # every reached node is drawn
    assert masses["3A"] == pytest.approx(masses["3B"]) and masses["3A"] > masses["2A"]
    assert "p=" in graph.digraph().source
    assert svg_counts(viz.render(graph, tmp_path / "o.svg")) == (graph.num_nodes, graph.num_edges)


@attrs.frozen
class Toggle(fsc.MemoryArchitecture):
    """A user-defined architecture: a bit flipped by the choice, whatever was observed; start in ``_``."""

    arms: int = 2

    num_actions = property(lambda self: self.arms)
    num_observations = property(lambda self: 2)
    node_labels = property(lambda self: ("_", *(f"s{x}" for x in arm_labels(self.arms)), "s:odd"))
    choice_labels = property(lambda self: arm_labels(self.arms))

    @functools.cached_property
    def allowed(self):
        return np.ones((self.arms + 2, self.arms), dtype=bool)

    @functools.cached_property
    def next_node(self):
        table = np.zeros((self.arms + 2, self.arms, 2), dtype=np.int64)
        table[:, :, 0] = 1 + np.arange(self.arms)[None, :]  # after +: remember the arm
        table[:, :, 1] = self.arms + 1  # after -: the odd node
        return table

    @functools.cached_property
    def choice_action(self):
        return np.arange(self.arms)

    @functools.cached_property
    def reset_mask(self):
        return np.eye(self.arms + 2, dtype=bool)[0]


def test_user_architecture_is_drawn_node_by_node(tmp_path):
    arch = Toggle()
    probs = np.array([[0.5, 0.5], [1.0, 0.0], [0.25, 0.75], [0.0, 1.0]])
    policy = fsc.Policy.from_probs(arch, probs)
    graph = viz.memory_graph(policy)
    assert graph.layout == "free"
    assert {node.key for node in graph.nodes} == {"_", "sA", "sB", "s:odd"}
    # Edges: from each node, each choice taken leads to sX (after +) and s:odd (after -).
    # _ -> sA, sB, s:odd; sA -> sA, s:odd; sB -> sA, sB, s:odd; s:odd -> sB, s:odd
    assert graph.num_edges == 3 + 2 + 3 + 2
    assert graph.edge("sB", "s:odd").label == "A/-: 0.25\nB/-: 0.75"
    assert graph.edge("sA", "sA").label == "A/+"
    # ':' would be a graphviz port: the node gets a safe name
    assert graph.node("s:odd").name != "s:odd"
    (n_svg, e_svg), source = render_all(graph, tmp_path)
    assert (n_svg, e_svg) == (4, 10)


def test_register_a_display_for_a_new_architecture():
    class Merged(viz.NodeDisplay):
        choice_implied = True

        def key(self, n):
            return "start" if n == 0 else "memory"

        def kind(self, n):
            return "start" if n == 0 else "memory"

        def condition(self, n):
            return self.architecture.node_labels[n]

    @attrs.frozen
    class Toggle2(Toggle):
        pass

    viz.node_display.register(Toggle2)(Merged)
    arch = Toggle2()
    graph = viz.memory_graph(fsc.Policy.uniform(arch))
    assert [node.key for node in graph.nodes] == ["start", "memory"]
    assert graph.num_edges == 2


# ----------------------------------------------------------------------------
# Bad input


def test_bad_input(tmp_path):
    arch = fsc.Column(2)
    policy = fsc.Policy.uniform(arch)
    with pytest.raises(ValueError, match="threshold must be in"):
        viz.memory_graph(policy, threshold=1.0)
    with pytest.raises(TypeError, match="threshold must be a number"):
        viz.memory_graph(policy, threshold="0.1")
    with pytest.raises(ValueError, match="layout must be one of"):
        viz.memory_graph(policy, layout="circle")
    with pytest.raises(ValueError, match="'necklaces' is not available"):
        viz.memory_graph(policy, layout="necklaces")
    with pytest.raises(TypeError, match="policy must be"):
        viz.memory_graph("ccp")
    with pytest.raises(ValueError, match="occupancy must have shape"):
        viz.memory_graph(policy, occupancy=np.ones(3))
    graph = viz.memory_graph(policy).digraph()  # render takes a graphviz.Digraph too
    with pytest.raises(ValueError, match="format must be one of svg, png, dot, got 'pdf'"):
        viz.render(graph, tmp_path / "g.pdf")
    with pytest.raises(ValueError, match="got ''"):
        viz.render(graph, tmp_path / "g")
    assert not list(tmp_path.iterdir())  # nothing half-written
    viz.render(graph, tmp_path / "g", format="svg")
    assert ET.parse(tmp_path / "g").getroot().tag == f"{SVG}svg"
    viz.render(graph, tmp_path / "g.gv")
    assert (tmp_path / "g.gv").read_text() == graph.source
    with pytest.raises(RuntimeError, match="did not finish"):
        viz.render(graph, tmp_path / "slow.svg", timeout=1e-6)
    assert not (tmp_path / "slow.svg").exists()


def test_format_probability():
    assert [viz.format_probability(p) for p in (1.0, 0.5, 0.03, 0.97, 0.995, 1e-5)] == ["1", "0.5", "0.03", "0.97", "1-0.005", "1e-05"]
