"""RAM's size check counts what the engines hold: the node x choice table, not a next-node table of
``N x C x O`` entries (a view of its ``C x O`` rows)."""

from __future__ import annotations

import numpy as np
import pytest

import fsc


def test_ram_with_many_observations_is_built_and_its_next_node_table_is_a_view():
    # RockSample[7,8] (13 actions, 100 observations) on ram:8: 10,408 nodes x 104 choices; N x C x O would be 108 million
    arch = fsc.RAM(8, arms=13, observations=100)
    assert (arch.num_nodes, arch.num_choices) == (10_408, 104)
    table = arch.next_node
    assert table.shape == (10_408, 104, 100) and not table.flags.writeable
    assert table.base is not None and table.strides[0] == 0  # every node's rows are the same memory
    # choice (m, a) then observation o leads to node (m, a, o): M + (m * A + a) * O + o, from every node
    assert table[0, 5 * 13 + 7, 42] == 8 + (5 * 13 + 7) * 100 + 42
    assert np.array_equal(table[1234], table[0])


def test_a_ram_whose_node_choice_table_cannot_be_held_is_refused():
    with pytest.raises(ValueError, match=r"ram:2000 would have 42,000 nodes x 4,000 choices = 168,000,000 table entries"):
        fsc.RAM(2000, observations=10)


def test_values_on_a_small_ram_are_unchanged_by_the_view():
    """The next-node view gives the engines the same chain: Tiger's value on ram:2 by every engine that takes it."""
    import tasks

    world, arch = tasks.Tiger(), fsc.RAM(2, arms=3, observations=2)
    policy = fsc.Policy.uniform(arch)
    values = [float(fsc.evaluate(world, policy, reset=0.05, engine=engine).value) for engine in ("dense", "sparse", "iterative", "large")]
    assert max(values) - min(values) <= 1e-9
