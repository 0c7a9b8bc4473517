"""The .POMDP reader and writer: grammar, tolerance, round trips, malformed files.

Expected tensors are written out by hand from each file's text (or from the
tiger problem's published description), never produced by the reader.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import fsc
import tasks
from fsc.bounds import mdp_bound
from fsc.cli import main
from fsc.io.pomdp_file import MAX_TABLE_BYTES, ROW_TOLERANCE, Declared, format_pomdp, parse_pomdp
from tests.fsc.corridor import corridor_text

DATA = Path(__file__).resolve().parents[1] / "data"
TIGER_FILES = ["tiger.pomdp", "tiger-entries.pomdp", "tiger-wildcards.pomdp"]

HEAD = "discount: 0.9\nvalues: reward\nstates: 2\nactions: 2\nobservations: 2\n"
# Rows for HEAD worlds that are otherwise left unset.
FILL = "T: * : *\nuniform\nO: * : *\nuniform\n"


def tiger_by_hand():
    """Tiger from Kaelbling, Littman & Cassandra (1998): states (left, right), actions (listen, open-left, open-right)."""
    t = np.zeros((2, 3, 2))
    t[:, 0, :] = np.eye(2)
    t[:, 1:, :] = 0.5
    o = np.full((3, 2, 2), 0.5)
    o[0] = [[0.85, 0.15], [0.15, 0.85]]
    r = np.zeros((2, 3, 2, 2))
    r[:, 0] = -1.0
    r[0, 1], r[1, 1] = -100.0, 10.0
    r[0, 2], r[1, 2] = 10.0, -100.0
    return t, o, r, np.array([0.5, 0.5])


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def assert_same_world(w1: fsc.POMDP, w2: fsc.POMDP) -> None:
    for name in ("transition", "observation", "reward", "initial"):
        assert same_bits(getattr(w1, name), getattr(w2, name)), name
    assert w1.discount == w2.discount


# -- Tiger, three styles --------------------------------------------------------


@pytest.mark.parametrize("name", TIGER_FILES)
def test_tiger_files_read_to_the_published_problem(name):
    world = fsc.read_pomdp(DATA / name)
    t, o, r, b = tiger_by_hand()
    np.testing.assert_array_equal(world.transition, t)
    np.testing.assert_array_equal(world.observation, o)
    np.testing.assert_array_equal(world.reward, r)
    np.testing.assert_array_equal(world.initial, b)
    assert world.discount == 0.95
    assert world.parts == ((0, 1),)


def test_tiger_names_become_labels():
    world = fsc.read_pomdp(DATA / "tiger.pomdp")
    assert world.state_labels == ("tiger-left", "tiger-right")
    assert world.action_labels == ("listen", "open-left", "open-right")
    assert world.observation_labels == ("hear-left", "hear-right")
    counted = fsc.read_pomdp(DATA / "tiger-wildcards.pomdp")
    assert counted.state_labels == ("s0", "s1") and counted.action_labels == ("a0", "a1", "a2")


# -- each construct -----------------------------------------------------------


def test_counts_names_and_indices_are_interchangeable():
    text = "states: x y\nactions: go\nobservations: 2\nT: go : x : y 1\nT: 0 : 1 : 0 1.0\nO: * : * : 1 1\nR: 0 : y : x : 0 2.5\n"
    w = parse_pomdp(text)
    np.testing.assert_array_equal(w.transition[:, 0, :], [[0, 1], [1, 0]])
    np.testing.assert_array_equal(w.observation[0], [[0, 1], [0, 1]])
    assert w.reward[1, 0, 0, 0] == 2.5 and np.count_nonzero(w.reward) == 1
    assert w.discount is None


def test_comments_anywhere():
    text = "# a comment\nstates: 1 # one state\nactions: 1\nobservations: 1\nT: 0 # the action\n1.0 # its matrix\nO: 0\n1.0\n"
    w = parse_pomdp(text)
    assert w.transition.shape == (1, 1, 1) and w.transition[0, 0, 0] == 1.0


@pytest.mark.parametrize(
    "start, expected",
    [
        ("", [0.5, 0.5, 0.0, 0.0]),  # no start: replaced below by uniform
        ("start: uniform", [0.25] * 4),
        ("start: 0.1 0.2 0.3 0.4", [0.1, 0.2, 0.3, 0.4]),
        ("start: c", [0, 0, 1, 0]),
        ("start: 3", [0, 0, 0, 1]),
        ("start include: a d", [0.5, 0, 0, 0.5]),
        ("start include: 1 c 3", [0, 1 / 3, 1 / 3, 1 / 3]),
        ("start exclude: b", [1 / 3, 0, 1 / 3, 1 / 3]),
        ("start: a\nstart: 0.0 1.0 0.0 0.0", [0, 1, 0, 0]),  # the later one wins
    ],
)
def test_start(start, expected):
    if not start:
        expected = [0.25] * 4  # the format's default is uniform
    text = f"states: a b c d\nactions: 1\nobservations: 1\n{start}\nT: 0\nidentity\nO: 0\nuniform\n"
    np.testing.assert_array_equal(parse_pomdp(text).initial, expected)


def test_transition_granularities_and_wildcards():
    text = HEAD + (
        "T: 0\n0.2 0.8\n0.7 0.3\n"  # a matrix
        "T: 1 : 0\n0.6 0.4\n"  # a row
        "T: 1 : 1 : 0 0.9\nT: 1 : 1 : 1 : 0.1\n"  # entries, without and with ':'
        "O: * \nuniform\n"
    )
    w = parse_pomdp(text)
    np.testing.assert_array_equal(w.transition[:, 0, :], [[0.2, 0.8], [0.7, 0.3]])
    np.testing.assert_array_equal(w.transition[:, 1, :], [[0.6, 0.4], [0.9, 0.1]])


@pytest.mark.parametrize(
    "entry, expected",
    [
        ("T: * : * : * 0.5", np.full((2, 2, 2), 0.5)),
        ("T: *\nidentity", np.stack([np.eye(2)] * 2, axis=1)),
        ("T: *\nuniform", np.full((2, 2, 2), 0.5)),
        ("T: * : 1\nuniform\nT: * : 0\n1 0", np.array([[[1, 0], [1, 0]], [[0.5, 0.5], [0.5, 0.5]]])),
        ("T: 1 : * \n0.25 0.75\nT: 0 : * : 0 1\nT: 0 : * : 1 0", np.array([[[1, 0], [0.25, 0.75]], [[1, 0], [0.25, 0.75]]])),
        ("T: * : * : 1 1.0\nT: * : * : 0 0", np.array([[[0, 1], [0, 1]], [[0, 1], [0, 1]]])),
    ],
)
def test_transition_wildcards_in_each_position(entry, expected):
    w = parse_pomdp(HEAD + entry + "\nO: * : *\nuniform\n")
    np.testing.assert_array_equal(w.transition, expected)


def test_observation_granularities_and_wildcards():
    text = HEAD + "T: *\nidentity\n" + (
        "O: * : * : * 0.5\n"
        "O: 0 : 1\n0.3 0.7\n"
        "O: 1\n0.1 0.9\n0.4 0.6\n"
        "O: 1 : * : 0 0.8\nO: 1 : * : 1 : 0.2\n"
    )
    w = parse_pomdp(text)
    np.testing.assert_array_equal(w.observation[0], [[0.5, 0.5], [0.3, 0.7]])
    np.testing.assert_array_equal(w.observation[1], [[0.8, 0.2], [0.8, 0.2]])


def test_observation_identity_and_uniform():
    w = parse_pomdp(HEAD + "T: *\nuniform\nO: 0\nidentity\nO: 1\nuniform\n")
    np.testing.assert_array_equal(w.observation[0], np.eye(2))
    np.testing.assert_array_equal(w.observation[1], np.full((2, 2), 0.5))


def test_reward_granularities_wildcards_and_overrides():
    text = HEAD + FILL + (
        "R: * : * : * : * 1\n"  # everything 1 ...
        "R: 0 : 1 : * : 0 2\n"  # ... then overrides, later wins
        "R: 1 : 0 : 1\n3 4\n"  # a row over observations
        "R: 1 : 1\n5 6\n7 8\n"  # a matrix, end state by observation
        "R: * : * : 0 : 1 : -9.5\n"  # entry with the optional colon
    )
    w = parse_pomdp(text)
    r = np.ones((2, 2, 2, 2))
    r[1, 0, :, 0] = 2
    r[0, 1, 1] = [3, 4]
    r[1, 1] = [[5, 6], [7, 8]]
    r[:, :, 0, 1] = -9.5
    np.testing.assert_array_equal(w.reward, r)


def test_cost_files_negate_rewards():
    base = HEAD + FILL + "R: 0 : 1 : * : * 4.0\nR: 1 : * : 0\n1.5 -2.0\n"
    reward = parse_pomdp(base).reward
    cost = parse_pomdp(base.replace("values: reward", "values: cost")).reward
    np.testing.assert_array_equal(cost, -reward)
    assert cost[1, 0, 0, 0] == -4.0 and cost[0, 1, 0, 1] == 2.0


def test_preamble_in_any_order_and_preamble_only_discount_optional():
    text = "observations: 1\nactions: 1\nstates: 1\nvalues: cost\ndiscount: 0.5\nT: 0\n1.0\nO: 0\n1.0\n"
    w = parse_pomdp(text)
    assert w.discount == 0.5
    assert parse_pomdp(text.replace("discount: 0.5\n", "")).discount is None


def test_later_entries_override_earlier_ones():
    text = HEAD + "T: * : * : * 0.5\nT: 0 : 0\n1 0\nT: 0 : 0 : 1 0.25\nT: 0 : 0 : 0 0.75\nO: *\nuniform\nO: 0 : 0 : 0 1\nO: 0 : 0 : 1 0\n"
    w = parse_pomdp(text)
    np.testing.assert_array_equal(w.transition[0, 0], [0.75, 0.25])
    np.testing.assert_array_equal(w.transition[1, 1], [0.5, 0.5])
    np.testing.assert_array_equal(w.observation[0, 0], [1, 0])
    np.testing.assert_array_equal(w.observation[0, 1], [0.5, 0.5])


# -- tolerance ----------------------------------------------------------------


def test_rows_within_tolerance_are_renormalised():
    text = "states: 3\nactions: 1\nobservations: 1\nstart: 0.333333 0.333333 0.333333\nT: 0\n" + "0.333333 0.333333 0.333333\n" * 3 + "O: 0\nuniform\n"
    w = parse_pomdp(text)
    third = 0.333333 / (3 * 0.333333)  # the row divided by its sum
    np.testing.assert_array_equal(w.transition[:, 0, :], np.full((3, 3), third))
    np.testing.assert_array_equal(w.initial, np.full(3, third))
    assert abs(w.transition.sum(axis=2) - 1).max() < 1e-15


def test_rows_within_1e9_are_kept_as_written():
    row = "0.4 0.6000000001"  # sums to 1 + 1e-10: the POMDP class accepts it
    w = parse_pomdp(HEAD + f"T: * : *\n{row}\nO: * : *\nuniform\n")
    assert w.transition[0, 0, 1] == 0.6000000001


@pytest.mark.parametrize("row, total", [("0.3333 0.3333 0.3333", "0.9999"), ("0.5 0.50002 0.0", "1.00002")])
def test_rows_outside_tolerance_are_refused_naming_line_and_sum(row, total):
    text = f"states: 3\nactions: 1\nobservations: 1\nO: 0\nuniform\nT: 0 : *\n{row}\nT: 0 : 1 : 1 1.0\nT: 0 : 1 : 0 0\nT: 0 : 1 : 2 0\n"
    with pytest.raises(ValueError, match=rf"^x\.pomdp:6: T row of action 0, start state 0 sums to {total}"):
        parse_pomdp(text, source="x.pomdp")
    assert ROW_TOLERANCE == 1e-5


# -- round trips ----------------------------------------------------------------


def random_world(rng: np.random.Generator, *, sparse: bool, names: bool, discount: bool) -> fsc.POMDP:
    S, A, O = (int(x) for x in rng.integers(1, 6, size=3))

    def dist(shape, k):
        x = rng.random(shape) ** 3
        if sparse:
            x *= rng.random(shape) < 0.3
            flat = x.reshape(-1, k)
            flat[np.arange(flat.shape[0]), rng.integers(0, k, flat.shape[0])] += 0.5
        return x / x.sum(axis=-1, keepdims=True)

    reward = rng.normal(size=(S, A, S, O)) * 10.0 ** rng.integers(-8, 8, size=(S, A, S, O))
    if sparse:
        reward *= rng.random(reward.shape) < 0.2
        reward[0, 0, 0, 0] = -0.0
    labels = {}
    if names:
        labels = dict(
            state_labels=tuple(f"room-{i}" for i in range(S)),
            action_labels=tuple(f"act_{i}" for i in range(A)),
            observation_labels=tuple(f"see.{i}" for i in range(O)),
        )
    return fsc.POMDP(
        transition=dist((S, A, S), S),
        observation=dist((A, S, O), O),
        reward=reward,
        initial=dist((S,), S),
        discount=float(rng.uniform(0.01, 0.999)) if discount else None,
        **labels,
    )


@pytest.mark.parametrize("seed", range(12))
def test_round_trip_of_random_worlds_is_bit_identical(seed, tmp_path):
    rng = np.random.default_rng(seed)
    world = random_world(rng, sparse=seed % 2 == 0, names=seed % 3 == 0, discount=seed % 4 != 1)
    path = fsc.write_pomdp(world, tmp_path / "w.pomdp")
    back = fsc.read_pomdp(path)
    assert_same_world(world, back)
    assert back.state_labels == world.state_labels and back.action_labels == world.action_labels
    assert back.observation_labels == world.observation_labels


def test_round_trip_of_the_two_hypothesis_task(tmp_path):
    world = tasks.TwoHypothesis(0.1).pomdp
    back = fsc.read_pomdp(fsc.write_pomdp(world, tmp_path / "th.pomdp"))
    assert_same_world(world, back)
    assert back.metrics == {}  # the format has no metrics
    if world.metrics:
        assert "metrics not written" in (tmp_path / "th.pomdp").read_text()


@pytest.mark.parametrize("name", TIGER_FILES)
def test_round_trip_of_the_test_files(name, tmp_path):
    world = fsc.read_pomdp(DATA / name)
    back = fsc.read_pomdp(fsc.write_pomdp(world, tmp_path / name))
    assert_same_world(world, back)
    assert back.state_labels == world.state_labels
    assert "values: reward" in (tmp_path / name).read_text()  # cost files come back as rewards


def test_round_trip_of_hand_made_worlds_with_awkward_numbers(tmp_path):
    world = fsc.POMDP(
        transition=[[[0.1, 0.2, 0.7]], [[1 / 3, 1 / 3, 1 / 3]], [[0.0, 0.0, 1.0]]],
        observation=[[[1 / 7, 6 / 7], [1.0, 0.0], [0.5, 0.5]]],
        reward=np.array([1e-300, -5e-324, 1.7976931348623157e308, 3.0] * 9).reshape(3, 1, 3, 4)[..., :2] * 1.0,
        initial=[0.0, 1.0, 0.0],
        state_labels=("a", "b c", "d"),  # 'b c' is not a name: counts are written
        discount=0.999999999,
    )
    path = fsc.write_pomdp(world, tmp_path / "w.pomdp")
    assert "states: 3" in path.read_text()
    assert_same_world(world, fsc.read_pomdp(path))


def test_write_leaves_no_half_written_file(tmp_path):
    target = tmp_path / "w.pomdp"
    with pytest.raises(TypeError):
        fsc.write_pomdp("not a world", target)
    assert list(tmp_path.iterdir()) == []


# -- malformed files ----------------------------------------------------------------

GOOD = "discount: 0.9\nvalues: reward\nstates: a b\nactions: 2\nobservations: 2\nT: *\nidentity\nO: *\nuniform\n"

MALFORMED = [
    # (name, text, line, words the message must contain)
    ("missing header", "T: 0\nidentity\n", 1, "expected 'states:'"),
    ("missing actions", "states: 2\nobservations: 2\nT: 0\nidentity\n", 3, "expected 'actions:'"),
    ("row not summing to 1", GOOD + "T: 0 : a\n0.5 0.4\n", 10, "sums to 0.9"),
    ("unknown state name", GOOD + "T: 0 : c : a 1.0\n", 10, "expected a state name or index (one of a, b), got 'c'"),
    ("index out of range", GOOD + "O: 2 : a\n1 0\n", 10, "expected a action index below 2, got '2'"),
    ("bad number", GOOD + "R: 0 : a : a : 0 abc\n", 10, "expected a number, got 'abc'"),
    ("bad probability", GOOD + "T: 0 : a : b 0.5x\n", 10, "expected a probability, got '0.5x'"),
    ("nan", GOOD + "R: 0 : a : a : 0 nan\n", 10, "expected a number, got 'nan'"),
    ("overflow", GOOD + "R: 0 : a : a\n1.0 1e400\n", 11, "expected a finite number, got '1e400'"),
    ("overflow in an entry", GOOD + "R: 0 : a : a : 0 -1e999\n", 10, "expected a finite number, got '-1e999'"),
    ("truncated matrix", GOOD + "T: 1\n0.5 0.5\n0.5\n", 10, "expected 4 numbers"),
    ("too many numbers in a row", GOOD + "O: 0 : b\n0.5 0.5 0.0\n", 10, "expected 2 numbers"),
    ("huge declared size", "discount: 0.9\nstates: 1000000000\nactions: 1\nobservations: 1\nT: 0 : 0 : 0 1\n", 5, "over the limit of 2 GiB"),
    ("negative probability", GOOD + "T: 0 : a\n-0.5 1.5\n", 11, "expected a probability in [0, 1], got '-0.5'"),
    ("probability above 1", GOOD + "O: 0 : a : 0 1.5\n", 10, "expected a probability in [0, 1], got '1.5'"),
    ("unknown keyword", GOOD + "Q: 0 : a : a 1.0\n", 10, "expected a keyword (start, T, O, R) or a number, got 'Q'"),
    ("keyword without colon", GOOD + "T 0 : a : a 1.0\n", 10, "expected ':' after 'T'"),
    ("wrong number of start entries", GOOD.replace("T: *", "start: 0.5 0.25 0.25\nT: *"), 6, "expected 2 start probabilities"),
    ("duplicate names", "states: a b a\nactions: 1\nobservations: 1\n", 1, "state name 'a' given twice"),
    ("start not summing to 1", GOOD.replace("T: *", "start: 0.6 0.6\nT: *"), 6, "start sums to 1.2"),
    ("discount out of range", GOOD.replace("discount: 0.9", "discount: 1.5"), 1, "expected a discount in (0, 1), got '1.5'"),
    ("discount of 1", GOOD.replace("discount: 0.9", "discount: 1.0"), 1, "expected a discount in (0, 1), got '1.0'"),
    ("discount not a number", GOOD.replace("discount: 0.9", "discount: high"), 1, "expected a discount factor, got 'high'"),
    ("bad values", GOOD.replace("values: reward", "values: profit"), 2, "expected 'reward' or 'cost'"),
    ("states given twice", GOOD + "states: 3\n", 10, "'states:' must come before"),
    ("preamble repeated", "states: 2\nstates: 3\n", 2, "'states:' given twice (first on line 1)"),
    ("zero states", "states: 0\nactions: 1\nobservations: 1\n", 1, "expected at least one state"),
    ("name starting with a digit", "states: a 2b\nactions: 1\nobservations: 1\n", 1, "expected a state name"),
    ("keyword as a name", "states: a uniform\nactions: 1\nobservations: 1\n", 1, "got the keyword 'uniform'"),
    ("never-given row", GOOD.replace("T: *\nidentity\n", "T: 0\nidentity\nT: 1 : a\n1 0\n"), 11, "T row of action 1, start state 'b' was never given"),
    ("identity for a row", GOOD + "T: 0 : a\nidentity\n", 11, "expected 2 numbers (a row over end states), got 'identity'"),
    ("uniform for an entry", GOOD + "T: 0 : a : b uniform\n", 10, "expected a probability, got 'uniform'"),
    ("uniform reward", GOOD + "R: 0 : a\nuniform\n", 11, "expected 4 numbers"),
    ("R without a state", GOOD + "R: 0 1.0\n", 10, "expected ':' and a state"),
    ("missing index after colon", GOOD + "T: 0 : a :\n", 10, "expected a state name, index or '*'"),
    ("start state unknown", GOOD.replace("T: *", "start: zz\nT: *"), 6, "got 'zz'"),
    ("start exclude everything", GOOD.replace("T: *", "start exclude: a b\nT: *"), 6, "excludes every state"),
    ("stray colon in numbers", GOOD + "R: 0 : a : a\n1 : 2\n", 11, "unexpected ':'"),
    ("empty file", "", 1, "expected 'states:'"),
    ("no entries", "discount: 0.5\nstates: 1\nactions: 1\nobservations: 1\n", 4, "expected T: and O: entries"),
]


@pytest.mark.parametrize("name, text, line, words", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_files_are_refused_from_the_api(name, text, line, words, tmp_path):
    path = tmp_path / "bad.pomdp"
    path.write_text(text)
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(ValueError) as info:
            fsc.read_pomdp(path)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert message.startswith(f"bad.pomdp:{line}: "), message
    assert words in message, message
    assert "\n" not in message
    assert seconds < 1.0
    assert peak < 50 * 1024**2  # the declared size is never allocated


def test_missing_discount_where_required(tmp_path):
    path = tmp_path / "bad.pomdp"
    path.write_text(GOOD.replace("discount: 0.9\n", ""))
    with pytest.raises(ValueError, match=r"^bad\.pomdp:5: expected 'discount:'"):
        fsc.read_pomdp(path, require_discount=True)
    assert fsc.read_pomdp(path).discount is None


def test_a_large_world_keeps_its_entries_and_refuses_what_is_dense():
    # 100 states, 100 actions, 300 observations: a dense reward of every (s, a, s2, o) would be 3e8 floats
    # (2.2 GiB), the dense observation table 3e6. The file is read into sparse tables of its entries.
    head = "states: 100\nactions: 100\nobservations: 300\nT: *\nidentity\nO: *\nuniform\nR: 3 : * : * : * 2.5\n"
    world = parse_pomdp(head, source="x")
    assert world.is_sparse and world.reward_table.shape == (100, 100, 1, 1) and world.reward_table.nnz == 0
    assert world.transition_table.nnz == 100 * 100 and world.observation_table.nnz == 100 * 100 * 300
    # An entry of one end state and one observation makes one cell per (state, action), not a dense table.
    world = parse_pomdp(head + "R: * : * : 4 : 5 1\n", source="x")
    table = world.reward_table
    assert table.shape == (100, 100, 100, 300) and table.nnz == 100 * 100
    # By hand: action 3 pays 2.5 everywhere; from state 4 (T is the identity) observation 5 comes with
    # probability 1/300 and then pays 1 instead.
    expected = np.zeros((100, 100))
    expected[:, 3] = 2.5
    expected[4] += (1 - expected[4]) / 300
    np.testing.assert_allclose(world.expected_step(table), expected, rtol=0, atol=1e-15)
    # A dense entry still costs what it is: a uniform 20000 x 20000 transition matrix is refused on its line.
    with pytest.raises(ValueError, match=r"^x:4: with states=20000, actions=10, observations=1 the tables reach 400,000,000 entries"):
        parse_pomdp("states: 20000\nactions: 10\nobservations: 1\nT: *\nuniform\n", source="x")
    # So does a reward given for every cell, 100 * 100 rows of 100 * 300 cells: refused once its '*' is spread
    # over the axes the reward has, at the end of the file.
    with pytest.raises(ValueError, match=r"^x:10: with states=100, actions=100, observations=300 the tables reach 303,010,000 entries"):
        parse_pomdp(head + "R: * : * : *\n" + "1 " * 300 + "\n", source="x")
    # And sizes whose rows alone do not fit, before anything is read.
    with pytest.raises(ValueError, match=r"^x:4: states=200000000, actions=1000, observations=1 need .* GiB"):
        parse_pomdp("states: 200000000\nactions: 1000\nobservations: 1\nT: *\nidentity\n", source="x")
    assert MAX_TABLE_BYTES == 2 * 1024**3



def test_a_world_of_thousands_of_states_is_read_sparse_in_bounded_memory(tmp_path):
    S = 5000
    path = tmp_path / "corridor.POMDP"
    path.write_text(corridor_text(S))
    tracemalloc.start()
    try:
        world = fsc.read_pomdp(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Dense, the transitions alone are S * A * S floats (400 MB) and so is a reward by end state.
    assert peak < 60 * 2**20, f"reading took {peak / 2**20:.0f} MB"
    assert world.is_sparse and (world.num_states, world.num_actions, world.num_observations) == (S, 2, 3)
    assert world.transition_table.nnz == 2 * (2 * S - 1) and world.observation_table.nnz == 2 * S
    assert world.reward_table.shape == (S, 2, S, 1) and world.reward_table.nnz == 2 * S  # one cell per (s, a), as written
    # By hand: the step pays P(arrive in S-1) = 0.9 moving right from S-2, 1 staying there, 0.1 moving left.
    rbar = world.expected_step(world.reward_table)
    expected = np.zeros((S, 2))
    expected[S - 2, 0], expected[S - 1, 0], expected[S - 1, 1] = 0.9, 1.0, 0.1
    np.testing.assert_array_equal(rbar, expected)
    assert world.parts == (tuple(range(S)),)
    # The MDP bound (sparse value iteration): always right, by hand V(S-1) = 1 / (1 - gamma),
    # V(S-2) = (0.9 + 0.9 gamma V(S-1)) / (1 - 0.1 gamma) and V(S-3) = 0.9 gamma V(S-2) / (1 - 0.1 gamma).
    gamma = 0.95
    V = 1 / (1 - gamma)
    V = (0.9 + 0.9 * gamma * V) / (1 - 0.1 * gamma)
    V *= 0.9 * gamma / (1 - 0.1 * gamma)  # V(S-3)
    assert mdp_bound(world, gamma) == pytest.approx(V, rel=1e-9, abs=1e-300)
    # Written and read back: the same tables, still sparse.
    back = parse_pomdp(format_pomdp(world))
    assert back.is_sparse
    for name in ("transition_table", "observation_table", "reward_table"):
        got, want = getattr(back, name), getattr(world, name)
        assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices) and np.array_equal(got.data, want.data), name


def test_unreadable_and_binary_files(tmp_path):
    with pytest.raises(ValueError, match="missing.pomdp' does not exist"):
        fsc.read_pomdp(tmp_path / "missing.pomdp")
    path = tmp_path / "bin.pomdp"
    path.write_bytes(b"states: 2\n\xff\xfe")
    with pytest.raises(ValueError, match=r"^bin\.pomdp:2: expected text"):
        fsc.read_pomdp(path)


@pytest.mark.parametrize("name, text, line, words", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_files_are_refused_from_the_command_line(name, text, line, words, tmp_path, capsys):
    path = tmp_path / "bad.pomdp"
    path.write_text(text)
    start = time.perf_counter()
    status = main(["pomdp", str(path)])
    seconds = time.perf_counter() - start
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(f"fsc: error: bad.pomdp:{line}: ")
    assert words in err
    assert seconds < 1.0


def test_command_line_error_in_a_real_process_has_no_traceback(tmp_path):
    path = tmp_path / "bad.pomdp"
    path.write_text(GOOD + "T: 0 : a\n0.5 0.4\n")
    proc = subprocess.run([sys.executable, "-m", "fsc.cli", "pomdp", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == ["fsc: error: bad.pomdp:10: T row of action 0, start state 'a' sums to 0.9, expected 1 (within 1e-05)"]


# -- fsc pomdp ----------------------------------------------------------------


def test_fsc_pomdp_json_summary(capsys):
    assert main(["pomdp", str(DATA / "tiger.pomdp"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary == {
        "file": str(DATA / "tiger.pomdp"),
        "valid": True,
        "states": 2,
        "actions": 3,
        "observations": 2,
        "discount": 0.95,
        "parts": [["tiger-left", "tiger-right"]],
    }


def test_fsc_pomdp_lists_closed_parts(tmp_path, capsys):
    # Two rooms {a, b} and {c}, never linked; d is its own part with no start mass.
    text = "states: a b c d\nactions: 1\nobservations: 1\nstart: 0.5 0.25 0.25 0.0\nT: 0\n0 1 0 0\n1 0 0 0\n0 0 1 0\n0 0 0 1\nO: 0\nuniform\n"
    path = tmp_path / "rooms.pomdp"
    path.write_text(text)
    assert main(["pomdp", str(path)]) == 0
    out = capsys.readouterr().out
    assert "valid: true" in out and "discount: null" in out and "states: 4" in out
    assert "part 0: a b" in out and "part 1: c" in out and "part 2" not in out
    assert main(["pomdp", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["parts"] == [["a", "b"], ["c"]]


def test_fsc_pomdp_names_a_few_parts_and_states_and_json_all(tmp_path, capsys):
    # A ring of 15 states (one part of 15), then 30 absorbing states with start mass (30 parts of one state).
    n = 45
    rows = [" ".join("1" if j == ((i + 1) % 15 if i < 15 else i) else "0" for j in range(n)) for i in range(n)]
    names = [f"s{i}" for i in range(n)]
    text = f"states: {' '.join(names)}\nactions: 1\nobservations: 1\nstart: uniform\nT: 0\n" + "\n".join(rows) + "\nO: 0\nuniform\n"
    path = tmp_path / "many.pomdp"
    path.write_text(text)
    assert main(["pomdp", str(path), "--json"]) == 0
    parts = json.loads(capsys.readouterr().out)["parts"]
    assert len(parts) == 31 and sorted(len(part) for part in parts) == [1] * 30 + [15]
    assert main(["pomdp", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    shown = [line for line in lines if line.startswith("  part ")]
    assert "parts: 31" in lines and len(shown) == 20 and lines[-1] == "  ... 11 more parts (--json lists them all)"
    assert shown[0] == "  part 0: " + " ".join(f"s{i}" for i in range(12)) + " ... (15 states)" and parts[0] == names[:15]
    assert shown[1:] == [f"  part {i}: s{14 + i}" for i in range(1, 20)] and parts[1:] == [[name] for name in names[15:]]


def test_format_pomdp_drops_metrics_and_says_so():
    world = fsc.POMDP(
        transition=[[[1.0]]], observation=[[[1.0]]], reward=[[[[2.0]]]], initial=[1.0], metrics={"hits": [[[[1.0]]]]}
    )
    text = format_pomdp(world)
    assert "# metrics not written (the format has none): hits" in text
    assert fsc.read_pomdp is not None and parse_pomdp(text).metrics == {}


def test_reset_row_is_the_start_belief():
    text = "states: 3\nactions: 1\nobservations: 1\nstart: 0.2 0.0 0.8\nT: 0\nidentity\nT: 0 : 1\nreset\nO: 0\nuniform\n"
    np.testing.assert_array_equal(parse_pomdp(text).transition[:, 0, :], [[1, 0, 0], [0.2, 0.0, 0.8], [0, 0, 1]])
    with pytest.raises(ValueError, match=r"^x:6: expected 1 numbers|^x:6: expected one number|got 'reset'"):
        parse_pomdp(text.replace("O: 0\nuniform", "O: 0 : 0\nreset"), source="x")


def test_start_after_entries_is_refused():
    with pytest.raises(ValueError, match=r"^x:10: 'start:' must come before T, O and R entries \(the first is on line 6\)"):
        parse_pomdp(GOOD + "start: uniform\n", source="x")


def test_number_spellings():
    text = HEAD + FILL + "R: 0 : 0 : 0 : 0 .5\nR: 0 : 0 : 0 : 1 -2.5e-1\nR: 1 : 0 : 0 : 0 +3\nR: 1 : 1 : 1 : 1 1.E2\n"
    w = parse_pomdp(text)
    assert (w.reward[0, 0, 0, 0], w.reward[0, 0, 0, 1], w.reward[0, 1, 0, 0], w.reward[1, 1, 1, 1]) == (0.5, -0.25, 3.0, 100.0)
    for bad in ("1_0", "inf", "0x1", "1e", "--1"):
        with pytest.raises(ValueError, match=rf"^x:10: expected a number, got '{bad}'"):
            parse_pomdp(HEAD + FILL + f"R: 0 : 0 : 0 : 0 {bad}\n", source="x")


def test_single_start_token_index_or_vector():
    one = "states: 1\nactions: 1\nobservations: 1\nstart: {}\nT: 0\n1.0\nO: 0\n1.0\n"
    assert parse_pomdp(one.format("1.0")).initial.tolist() == [1.0]  # a decimal: the vector
    assert parse_pomdp(one.format("0")).initial.tolist() == [1.0]  # an integer: the index
    with pytest.raises(ValueError, match=r"^x:4: expected a state index below 1, got '1'"):
        parse_pomdp(one.format("1"), source="x")


def test_identity_observation_needs_a_square_matrix():
    text = "states: 2\nactions: 1\nobservations: 3\nT: 0\nidentity\nO: 0\nidentity\n"
    with pytest.raises(ValueError, match=r"^x:6: 'identity' needs a square matrix"):
        parse_pomdp(text, source="x")


def test_writer_is_compact_for_sparse_worlds():
    S = 50
    transition = np.zeros((S, 1, S))
    transition[np.arange(S), 0, (np.arange(S) + 1) % S] = 1.0
    reward = np.zeros((S, 1, S, 2))
    reward[:, 0] = np.arange(S, dtype=float)[:, None, None]  # depends on the start state only
    reward[3, 0, 4, 1] = 7.0
    world = fsc.POMDP(transition=transition, observation=np.full((1, S, 2), 0.5), reward=reward, initial=np.eye(S)[0])
    text = format_pomdp(world)
    assert text.count("\nT: ") == S and text.count("\nR: ") == (S - 1) + 1  # state 0 pays 0: no line; one exception
    assert "R: 0 : 3 : * : * 3.0\nR: 0 : 3 : 4\n3.0 7.0\n" in text  # the differing row, whole (1 of 2 differ)
    assert_same_world(world, parse_pomdp(text))


@pytest.mark.parametrize("name", TIGER_FILES)
def test_mutated_files_give_a_world_or_one_line_value_error(name):
    """Random token edits of the test files: never another exception, never a message without a line."""
    import re

    rng = np.random.default_rng(11)
    words = (DATA / name).read_text().replace(":", " : ").split("\n")
    garbage = ["*", ":", "uniform", "identity", "reset", "-1", "2", "1e400", "0.5", "abc", "T", "O:", "R:", "start", "#", "states:", "9"]
    pattern = re.compile(r"^x:[0-9]+: [^\n]+$")
    for _ in range(150):
        lines = [line.split(" ") for line in words]
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(len(lines)))
            if not lines[i]:
                continue
            j = int(rng.integers(len(lines[i])))
            edit = int(rng.integers(3))
            if edit == 0:
                del lines[i][j]
            elif edit == 1:
                lines[i][j] = garbage[int(rng.integers(len(garbage)))]
            else:
                lines[i].insert(j, garbage[int(rng.integers(len(garbage)))])
        text = "\n".join(" ".join(line) for line in lines)
        try:
            world = parse_pomdp(text, source="x")
        except ValueError as error:
            assert pattern.match(str(error)), (str(error), text)
        else:
            assert isinstance(world, fsc.POMDP)


def test_several_statements_on_one_line_and_a_byte_order_mark(tmp_path):
    text = "discount: 0.5 values: cost states: 2 actions: 1 observations: 1\nT: 0 identity O: 0 uniform R: 0 : 1 : * : * 2.0\n"
    path = tmp_path / "one.pomdp"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    w = fsc.read_pomdp(path)
    assert w.discount == 0.5
    np.testing.assert_array_equal(w.transition[:, 0, :], np.eye(2))
    np.testing.assert_array_equal(w.reward[:, 0, :, 0], [[0, 0], [-2, -2]])


def test_check_sees_the_declared_sizes_once_before_the_first_entry():
    """read_pomdp's check gets the sizes and the start belief's support before any T, O or R entry is read: what
    it raises stops the reading there (the entry after it, which names an action the file does not have, is never
    read); without it, the file reads as ever."""
    text = "states: 4\nactions: 2\nobservations: 3\nstart include: 1 2\nT: nowhere identity\nO: * uniform\n"
    seen = []

    def check(declared):
        seen.append(declared)
        raise ValueError("too large")

    with pytest.raises(ValueError, match="^too large$"):
        parse_pomdp(text, check=check)
    assert seen == [Declared(states=4, actions=2, observations=3, started=2)]
    with pytest.raises(ValueError, match="expected a action name or index"):
        parse_pomdp(text)
    good = text.replace("nowhere", "*")
    seen.clear()
    world = parse_pomdp(good, check=seen.append)
    assert seen == [Declared(4, 2, 3, 2)]
    reference = parse_pomdp(good)
    assert np.array_equal(world.transition, reference.transition) and np.array_equal(world.initial, reference.initial)
