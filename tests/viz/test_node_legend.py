"""A diagram with several start nodes says in its caption what ``start i`` is (the blank RAM node ``i_``)."""

import fsc
import viz


def test_several_blank_nodes_are_explained_in_the_caption():
    arch = fsc.RAM(3)
    init = [0.0] * arch.num_nodes
    init[arch.node_index("1_")], init[arch.node_index("2_")] = 0.5, 0.5  # resets start in two blank nodes
    graph = viz.memory_graph(fsc.Policy.from_probs(arch, arch.allowed / arch.allowed.sum(axis=1, keepdims=True), init))
    starts = sorted(node.label for node in graph.nodes if node.kind == "start")
    assert starts == ["start 1\np0=0.5", "start 2\np0=0.5"]
    assert "start i = the blank node i_" in graph.caption
    first = [1.0 if label == "1_" else 0.0 for label in arch.node_labels]
    one = viz.memory_graph(fsc.Policy.from_probs(arch, arch.allowed / arch.allowed.sum(axis=1, keepdims=True), first))
    assert [node.label for node in one.nodes if node.kind == "start"] == ["start"] and "blank node" not in one.caption
