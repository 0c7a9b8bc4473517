"""The POMDPX reader and writer (fsc/io/pomdpx.py): hand-built factored files against flat tables derived by hand,
RockSample against a flat construction state by state, the keywords, hostile XML, sizes refused before anything is
built, and round trips.  SARSOP's own files are compared with their .POMDP twins in benchmarks/bench_files.py (tests
read no shared data)."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import fsc
from fsc.cli import main
from fsc.io import pomdp_file, pomdpx
from fsc.io.pomdpx import format_pomdpx, parse_pomdpx, write_pomdpx
from tests.fsc.rocksample_pomdpx import rocksample_flat, rocksample_pomdpx

DATA = Path(__file__).resolve().parents[1] / "data"
HEAD = '<?xml version="1.0" encoding="ISO-8859-1"?>\n<pomdpx version="1.0" id="t">\n<Discount>0.95</Discount>\n'


def cond(var: str, parents: str, *entries: tuple[str, str], table: str = "ProbTable", tag: str = "CondProb") -> str:
    body = "".join(f"<Entry><Instance>{i}</Instance><{table}>{v}</{table}></Entry>\n" for i, v in entries)
    return f'<{tag}><Var>{var}</Var><Parent>{parents}</Parent><Parameter type="TBL">\n{body}</Parameter></{tag}>\n'


def func(var: str, parents: str, *entries: tuple[str, str]) -> str:
    return cond(var, parents, *entries, table="ValueTable", tag="Func")


# -- Tiger (Kaelbling, Littman & Cassandra 1998), tests/data/tiger.pomdpx: written with identity, '*' and '-' ---------------

TIGER = (DATA / "tiger.pomdpx").read_text()


def test_tiger_reads_as_its_published_tables():
    world = parse_pomdpx(TIGER)
    t = np.zeros((2, 3, 2))
    t[:, 0] = np.eye(2)
    t[:, 1:] = 0.5
    o = np.full((3, 2, 2), 0.5)
    o[0] = [[0.85, 0.15], [0.15, 0.85]]
    r = np.array([[-1.0, -100.0, 10.0], [-1.0, 10.0, -100.0]])
    assert np.array_equal(world.transition, t) and np.array_equal(world.observation, o)
    assert np.array_equal(world.reward, np.broadcast_to(r[:, :, None, None], (2, 3, 2, 2)))
    assert np.array_equal(world.initial, [0.5, 0.5]) and world.discount == 0.95
    assert world.state_labels == ("left", "right") and world.action_labels == ("listen", "open-left", "open-right")
    assert world.observation_labels == ("hear-left", "hear-right")
    assert not world.is_sparse


# -- a factored 2 x 2 world: Y (fully observed) then X, Y' depending on X' of the same step --------------------------

FACTORED = (
    HEAD
    + """<Variable>
<StateVar vnamePrev="y0" vnameCurr="y1" fullyObs="true"><ValueEnum>lo hi</ValueEnum></StateVar>
<StateVar vnamePrev="x0" vnameCurr="x1"><ValueEnum>off on</ValueEnum></StateVar>
<ObsVar vname="z"><ValueEnum>quiet loud</ValueEnum></ObsVar>
<ActionVar vname="act"><ValueEnum>stay flip</ValueEnum></ActionVar>
<RewardVar vname="r1"/><RewardVar vname="r2"/>
</Variable>
<InitialStateBelief>"""
    + cond("x0", "null", ("-", "uniform"))
    + cond("y0", "null", ("-", "1 0"))
    + "</InitialStateBelief><StateTransitionFunction>"
    + cond("y1", "x1", ("off -", "0.9 0.1"), ("on -", "0.3 0.7"))
    + cond("x1", "act x0", ("stay - -", "identity"), ("flip off -", "0.2 0.8"), ("flip on -", "0.8 0.2"))
    + "</StateTransitionFunction><ObsFunction>"
    + cond("z", "act x1", ("* off -", "0.75 0.25"), ("* on -", "0.25 0.75"), ("flip * -", "0.5 0.5"))
    + "</ObsFunction><RewardFunction>"
    + func("r1", "act x0", ("stay *", "1"), ("flip on", "-2"))
    + func("r2", "y1", ("hi", "5"))
    + "</RewardFunction></pomdpx>"
)


def test_a_factored_world_flattens_to_the_tables_derived_by_hand():
    """States (y, x) numbered y * 2 + x (the first declared varies slowest); observations (z, y') numbered z * 2 + y'.

    T[s, a, s'] = P(x' | a, x) P(y' | x'); O[a, s', o] = P(z | a, x') [y' seen as it is]; R = r1(a, x) + r2(y')."""
    world = parse_pomdpx(FACTORED)
    t = np.zeros((4, 2, 4))
    for x in (0, 1):
        for y in (0, 1):
            s = 2 * y + x
            t[s, 0, [x, 2 + x]] = [0.9, 0.1] if x == 0 else [0.3, 0.7]  # stay: x' = x
            p0, p1 = (0.2, 0.8) if x == 0 else (0.8, 0.2)  # flip: P(x' = 0), P(x' = 1)
            t[s, 1] = [p0 * 0.9, p1 * 0.3, p0 * 0.1, p1 * 0.7]
    o = np.zeros((2, 4, 4))
    for y2 in (0, 1):
        for x2 in (0, 1):
            quiet = 0.75 if x2 == 0 else 0.25
            o[0, 2 * y2 + x2, [y2, 2 + y2]] = [quiet, 1 - quiet]
            o[1, 2 * y2 + x2, [y2, 2 + y2]] = 0.5
    r = np.zeros((4, 2, 4, 1))
    for s in range(4):
        r[s, 0] = 1.0
        r[s, 1] = -2.0 if s % 2 == 1 else 0.0
        r[s, :, 2:] += 5.0
    np.testing.assert_allclose(world.transition, t, rtol=0, atol=1e-15)
    assert np.array_equal(world.observation, o)
    assert np.array_equal(world.reward, np.broadcast_to(r, (4, 2, 4, 4)))
    assert np.array_equal(world.initial, [0.5, 0.5, 0.0, 0.0])
    assert world.state_labels == ("lo.off", "lo.on", "hi.off", "hi.on")
    assert world.observation_labels == ("quiet.lo", "quiet.hi", "loud.lo", "loud.hi")


@pytest.mark.parametrize(("n", "k"), [(2, 1), (3, 2), (4, 3)])
def test_rocksample_reads_as_its_flat_construction(n, k):
    """'*', '-', identity, fully observed variables and rewards over '-' against a world built state by state."""
    world = parse_pomdpx(rocksample_pomdpx(n, k))
    flat = rocksample_flat(n, k)
    np.testing.assert_array_equal(world.transition, flat["transition"])
    np.testing.assert_array_equal(world.observation, flat["observation"])
    np.testing.assert_array_equal(world.reward[:, :, 0, 0], flat["reward"])
    np.testing.assert_array_equal(world.initial, flat["initial"])


def test_a_large_rocksample_is_read_sparse_and_as_its_flat_construction():
    """RockSample[5, 4] (416 states, 9 actions) passes the size of dense tables: read into sparse ones, the same numbers."""
    world = parse_pomdpx(rocksample_pomdpx(5, 4))
    flat = rocksample_flat(5, 4)
    assert world.is_sparse and world.num_states == 416 and world.num_observations == 78
    np.testing.assert_array_equal(world.transition_table.dense(), flat["transition"])
    np.testing.assert_array_equal(world.observation_table.dense(), flat["observation"])
    np.testing.assert_array_equal(world.expected_step(world.reward_table), flat["reward"])


# -- round trips ---------------------------------------------------------------------------------------------------


def random_world(seed: int, S: int, A: int, O: int, *, reward_axes: bool) -> fsc.POMDP:
    rng = np.random.default_rng(seed)
    t = rng.random((S, A, S)) * (rng.random((S, A, S)) < 0.4)
    t[:, :, 0] += 0.01
    o = rng.random((A, S, O)) * (rng.random((A, S, O)) < 0.5)
    o[:, :, 0] += 0.01
    shape = (S, A, S, O) if reward_axes else (S, A, 1, 1)
    r = np.round(rng.normal(size=shape), 3) * (rng.random(shape) < 0.3)
    return fsc.POMDP(
        transition=t / t.sum(-1, keepdims=True),
        observation=o / o.sum(-1, keepdims=True),
        reward=np.broadcast_to(r, (S, A, S, O)),
        initial=rng.dirichlet(np.ones(S)),
        discount=0.9,
    )


@pytest.mark.parametrize("seed", range(6))
def test_a_world_written_as_pomdpx_reads_back_the_same_bits(seed, tmp_path):
    world = random_world(seed, S=2 + seed, A=1 + seed % 3, O=1 + seed % 4, reward_axes=seed % 2 == 1)
    path = write_pomdpx(world, tmp_path / "w.pomdpx")
    back = fsc.read_pomdp(path)
    for name in ("transition", "observation", "reward", "initial"):
        assert getattr(back, name).tobytes() == np.ascontiguousarray(getattr(world, name)).tobytes(), name
    assert back.discount == world.discount and back.state_labels == world.state_labels
    assert back.action_labels == world.action_labels and back.observation_labels == world.observation_labels


def test_tiger_and_a_sparse_world_round_trip(tmp_path):
    tiger = parse_pomdpx(TIGER)
    back = parse_pomdpx(format_pomdpx(tiger))
    assert back.transition.tobytes() == tiger.transition.tobytes() and back.reward.tobytes() == tiger.reward.tobytes()
    assert back.state_labels == tiger.state_labels and back.observation_labels == tiger.observation_labels
    large = parse_pomdpx(rocksample_pomdpx(5, 4))
    back = fsc.read_pomdp(write_pomdpx(large, tmp_path / "rs.pomdpx"))
    assert back.is_sparse and back.state_labels == large.state_labels
    for name in ("transition_table", "observation_table"):
        a, b = getattr(large, name), getattr(back, name)
        assert a.indptr.tobytes() == b.indptr.tobytes() and a.indices.tobytes() == b.indices.tobytes() and a.data.tobytes() == b.data.tobytes()
    assert back.reward_table.fill.tobytes() == large.reward_table.fill.tobytes() and back.initial.tobytes() == large.initial.tobytes()


def test_labels_that_are_not_value_names_are_numbered(tmp_path):
    world = random_world(0, 3, 2, 2, reward_axes=False)
    named = fsc.POMDP(
        transition=world.transition, observation=world.observation, reward=world.reward, initial=world.initial,
        state_labels=("a b", "c", "d"), action_labels=("-", "go"), observation_labels=("x<y", "z&w"),
    )  # fmt: skip
    back = parse_pomdpx(format_pomdpx(named))
    assert back.state_labels == ("s0", "s1", "s2") and back.action_labels == ("a0", "a1")
    assert back.observation_labels == ("x<y", "z&w")  # escaped in the XML, read back as they were


# -- the reader as fsc reads files ---------------------------------------------------------------------------------


def test_read_pomdp_and_the_commands_read_pomdpx_by_suffix_or_content(tmp_path, capsys):
    (tmp_path / "tiger.POMDPX").write_text(TIGER)
    (tmp_path / "tiger.txt").write_text(TIGER)
    for name in ("tiger.POMDPX", "tiger.txt"):
        assert fsc.read_pomdp(tmp_path / name).observation_labels == ("hear-left", "hear-right")
    assert main(["pomdp", str(tmp_path / "tiger.POMDPX"), "--json"]) == 0
    assert '"states": 2' in capsys.readouterr().out
    assert main(["evaluate", "--pomdp", str(tmp_path / "tiger.txt"), "--memory", "ram:1", "--json"]) == 0
    assert '"value"' in capsys.readouterr().out


def test_the_readers_share_their_rules():
    assert (pomdpx.ROW_TOLERANCE, pomdpx._KEEP_TOLERANCE, pomdpx.DENSE_NUMBERS, pomdpx.MAX_TABLE_BYTES) == (
        pomdp_file.ROW_TOLERANCE, pomdp_file._KEEP_TOLERANCE, pomdp_file.DENSE_NUMBERS, pomdp_file.MAX_TABLE_BYTES,
    )  # fmt: skip


def test_the_check_sees_the_declared_sizes_before_the_tables():
    seen = []

    def check(declared):
        seen.append(declared)
        raise ValueError("stop")

    path_text = rocksample_pomdpx(3, 2)
    with pytest.raises(ValueError, match="stop"):
        parse_pomdpx(path_text, check=lambda **sizes: check(pomdp_file.Declared(**sizes)))
    assert seen == [pomdp_file.Declared(states=40, actions=7, observations=30, started=4)]


# -- malformed and hostile files -----------------------------------------------------------------------------------


def variables(state: str = "<ValueEnum>a b</ValueEnum>", extra: str = "") -> str:
    return (
        HEAD
        + f'<Variable><StateVar vnamePrev="s0" vnameCurr="s1">{state}</StateVar><ObsVar vname="o"><ValueEnum>u v</ValueEnum></ObsVar>'
        + f'<ActionVar vname="act"><ValueEnum>go</ValueEnum></ActionVar><RewardVar vname="r"/>{extra}</Variable>\n'
    )


def small(belief="uniform", transition=(("go - -", "identity"),), observation=(("go * -", "0.5 0.5"),), reward=(("go *", "1"),), **kw) -> str:
    return (
        variables(**kw)
        + "<InitialStateBelief>" + cond("s0", "null", ("-", belief)) + "</InitialStateBelief>\n"
        + "<StateTransitionFunction>" + cond("s1", "act s0", *transition) + "</StateTransitionFunction>\n"
        + "<ObsFunction>" + cond("o", "act s1", *observation) + "</ObsFunction>\n"
        + "<RewardFunction>" + func("r", "act s0", *reward) + "</RewardFunction></pomdpx>"
    )  # fmt: skip


def test_the_small_file_reads():
    world = parse_pomdpx(small())
    assert world.num_states == 2 and np.array_equal(world.transition[:, 0], np.eye(2))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (small(transition=(("go - -", "0.5 0.5 0.5"),)), r"t:\d+: expected 4 numbers"),
        (small(transition=(("go a -", "1 0"),)), "no <Entry> gives the row act=go, s0=b"),
        (small(transition=(("go - -", "0.5 0.4 0 1"),)), "the row act=go, s0=a sums to 0.9"),
        (small(transition=(("go - -", "1.5 -0.5 0 1"),)), "expected a probability in"),
        (small(transition=(("go c -", "1 0"),)), "names 'c', not a value of s0 .one of a, b"),
        (small(transition=(("go -", "1 0"),)), "<Instance> has 2 values, expected 3"),
        (small(transition=(("go * -", "identity"),)), "'identity' in the table of s1 needs '-'"),
        (small(transition=(("go - -", "1 0 0 x"),)), "expected a number, got 'x'"),
        (small(transition=(("go - -", "1 0 0 1e999"),)), "expected a finite number"),
        (small(transition=(("go - -", "1 0 0 nan"),)), "expected a number, got 'nan'"),
        (small(belief="0.5 0.6"), "<CondProb> of s0: the table sums to 1.1"),
        (small(reward=(("go * *", "1"),)), "<Instance> has 3 values, expected 2"),
        (small(state="<NumValues>0</NumValues>"), "expected a count of values"),
        (small(state="<NumValues>2</NumValues>", transition=(("go a -", "1 0"),)), "names 'a', not a value of s0 .one of s0, s1"),
        (small(state="<ValueEnum>a a</ValueEnum>"), "value 'a' given twice"),
        (small(extra='<TerminalStateRewardVar vname="t"/>'), "TerminalStateRewardVar> is not read"),
        (small().replace('type="TBL"', 'type="DD"', 1), 'only type="TBL"'),
        (small().replace("<Discount>0.95</Discount>", "<Discount>1.5</Discount>"), "expected a discount in .0, 1."),
        (small().replace("<Parent>act s0</Parent>", "<Parent>act o</Parent>", 1), "<Parent> of s1 names 'o'"),
        (small().replace("<Parent>null</Parent>", "<Parent>s0</Parent>", 1), "<Parent> of s0 names 's0' twice or names the variable itself"),
        (small().replace("</pomdpx>", ""), r"t:\d+: not well-formed XML"),
        (small().replace("<ObsFunction>", "<ObsFunction><Foo/>"), "expected <CondProb> in <ObsFunction>, got <Foo>"),
        (small().replace("<Var>s1</Var>", "<Var>s0</Var>", 1), "must name a state variable of the next state"),
        ("<pomdpx><Variable/></pomdpx>", "expected at least one <StateVar>"),
        ("<notpomdpx/>", "expected the root element <pomdpx>"),
    ],
)
def test_malformed_files_are_refused_in_one_line_naming_the_line(text, message):
    with pytest.raises(ValueError, match=message) as error:
        parse_pomdpx(text, source="t")
    assert "\n" not in str(error.value) and str(error.value).startswith("t:")


def test_next_state_variables_that_are_each_others_parents_are_refused():
    text = FACTORED.replace("<Parent>act x0</Parent>", "<Parent>act x0 y1</Parent>", 1)
    text = text.replace("<Instance>stay - -</Instance><ProbTable>identity", "<Instance>stay - * -</Instance><ProbTable>identity")
    text = text.replace("<Instance>flip off -</Instance>", "<Instance>flip off * -</Instance>").replace(
        "<Instance>flip on -</Instance>", "<Instance>flip on * -</Instance>"
    )
    with pytest.raises(ValueError, match="are each other's parents"):
        parse_pomdpx(text)


LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 1 else "&lol;" * 10}">' for i in range(1, 10))
    + "]>\n<pomdpx>&lol9;</pomdpx>"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (LAUGHS, "t:2: a DOCTYPE declaration is refused"),
        ('<?xml version="1.0"?>\n<!DOCTYPE p [<!ENTITY x SYSTEM "file:///etc/passwd">]><pomdpx>&x;</pomdpx>', "DOCTYPE declaration is refused"),
        ('<?xml version="1.0"?>\n<!DOCTYPE pomdpx SYSTEM "http://example.invalid/pomdpx.dtd"><pomdpx/>', "DOCTYPE declaration is refused"),
        ("<pomdpx>&undefined;</pomdpx>", "not well-formed XML .undefined entity"),
    ],
)
def test_entities_are_refused_at_once(text, message):
    start = time.perf_counter()
    with pytest.raises(ValueError, match=message):
        parse_pomdpx(text.encode(), source="t")
    assert time.perf_counter() - start < 1.0


def test_sizes_are_refused_from_the_declaration_before_anything_is_built():
    """A million values for each of two state variables: 10^12 states, refused in one line with no table made."""
    text = small(state="<NumValues>1000000</NumValues>").replace(
        '<StateVar vnamePrev="s0"', '<StateVar vnamePrev="w0" vnameCurr="w1"><NumValues>1000000</NumValues></StateVar><StateVar vnamePrev="s0"'
    )
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"declare 1,000,000,000,000 states \(w1 1,000,000 x s1 1,000,000\).*over the limit") as error:
            parse_pomdpx(text, source="t")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * 2**20 and "\n" not in str(error.value)


def test_tables_too_large_are_refused_from_their_parents_sizes(monkeypatch):
    monkeypatch.setattr(pomdpx, "MAX_FACTOR_CELLS", 5)
    with pytest.raises(ValueError, match="the tables reach 6 cells with s1 given over 1 x 2 x 2, over the limit of 5"):
        parse_pomdpx(small(), source="t")


def test_transitions_past_the_limit_are_refused_while_they_are_built():
    """8 states, one action, every state reached from every state: 64 entries of 16 bytes, past a limit of 800 bytes
    that the 8 rows (64 bytes each, and 8 per state: 576) pass."""
    text = small(state="<NumValues>8</NumValues>", transition=(("go * -", "uniform"),))
    assert parse_pomdpx(text, max_table_bytes=1024).transition_table.nnz == 64
    with pytest.raises(ValueError, match="the transitions reach 64 entries"):
        parse_pomdpx(text, source="t", max_table_bytes=800)


def test_a_bad_file_is_one_line_and_status_2(tmp_path, capsys):
    bad = tmp_path / "bad.pomdpx"
    bad.write_text(LAUGHS)
    for argv in (["pomdp", str(bad)], ["evaluate", "--pomdp", str(bad)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "DOCTYPE declaration is refused" in err


def test_two_action_variables_and_a_world_seen_only_through_a_fully_observed_variable():
    """No observation variable: the fully observed state variable is the observation; two action variables make
    2 x 2 actions, the first varying slowest, and a table reads the one it names."""
    text = (
        HEAD
        + """<Variable>
<StateVar vnamePrev="p0" vnameCurr="p1" fullyObs="true"><ValueEnum>a b c</ValueEnum></StateVar>
<ActionVar vname="go"><ValueEnum>left right</ValueEnum></ActionVar>
<ActionVar vname="say"><ValueEnum>hush shout</ValueEnum></ActionVar>
<RewardVar vname="r"/>
</Variable><InitialStateBelief>"""
        + cond("p0", "null", ("-", "0 1 0"))
        + "</InitialStateBelief><StateTransitionFunction>"
        + cond("p1", "go p0", ("left - -", "1 0 0 1 0 0 0 1 0"), ("right - -", "0 1 0 0 0 1 0 0 1"))
        + "</StateTransitionFunction><RewardFunction>"
        + func("r", "say", ("shout", "-1"))
        + "</RewardFunction></pomdpx>"
    )
    world = parse_pomdpx(text)
    assert world.action_labels == ("left.hush", "left.shout", "right.hush", "right.shout")
    assert world.observation_labels == ("a", "b", "c") and np.array_equal(world.observation, np.broadcast_to(np.eye(3), (4, 3, 3)))
    left, right = np.array([[1, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 0], [0, 0, 1], [0, 0, 1]])
    assert np.array_equal(world.transition, np.stack([left, left, right, right], axis=1))
    assert np.array_equal(world.reward[:, :, 0, 0], np.tile([0.0, -1.0, 0.0, -1.0], (3, 1)))
    hidden = parse_pomdpx(text.replace('fullyObs="true"', 'fullyObs="false"'))
    assert hidden.num_observations == 1 and np.array_equal(hidden.observation, np.ones((4, 3, 1)))


def test_fsc_pomdp_writes_the_world_in_the_format_its_suffix_names(tmp_path, capsys):
    """tests/data/tiger.pomdpx to .POMDP and back to POMDPX: the same tables each time; a path that cannot be written
    (under a file) is one line and status 2."""
    first, second = tmp_path / "tiger.POMDP", tmp_path / "again.pomdpx"
    assert main(["pomdp", str(DATA / "tiger.pomdpx"), "--write", str(first)]) == 0
    assert main(["pomdp", str(first), "--write", str(second), "--json"]) == 0
    worlds = [fsc.read_pomdp(p) for p in (DATA / "tiger.pomdpx", first, second)]
    for world in worlds[1:]:
        for name in ("transition", "observation", "reward", "initial"):
            assert getattr(world, name).tobytes() == getattr(worlds[0], name).tobytes(), name
    capsys.readouterr()
    assert main(["pomdp", str(first), "--write", str(first / "such.pomdpx")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--write: cannot write" in err


def test_a_large_world_whose_reward_reads_the_next_state_round_trips(tmp_path):
    """RockSample[5, 4] with a bonus on entering the cell c0_0 (a function of the next state): stored as, per (state,
    action), the rewards of the state and action and the cells of positive probability that differ; written (one
    function of the action and both states) and read back, the same reward at every cell of positive probability."""
    text = rocksample_pomdpx(5, 4).replace('<RewardVar vname="reward"/>', '<RewardVar vname="reward"/><RewardVar vname="bonus"/>')
    text = text.replace("</RewardFunction>", func("bonus", "robot_1", ("c0_0", "1.5")) + "</RewardFunction>")
    world = parse_pomdpx(text)
    flat = rocksample_flat(5, 4)
    enters = flat["transition"][:, :, : 2**4].sum(axis=2)  # the probability of reaching cell c0_0 (the first 16 states)
    np.testing.assert_allclose(world.expected_step(world.reward_table), flat["reward"] + 1.5 * enters, rtol=0, atol=1e-12)
    table = world.reward_table
    assert world.is_sparse and table.shape == (416, 9, 416, 1) and table.nnz == int((enters > 0).sum())
    back = fsc.read_pomdp(write_pomdpx(world, tmp_path / "bonus.pomdpx"))
    t = world.transition_table
    cells = (t.row_of, t.indices)
    assert back.reward_table.lookup(*cells).tobytes() == table.lookup(*cells).tobytes()
    assert back.transition_table.data.tobytes() == t.data.tobytes() and back.transition_table.indices.tobytes() == t.indices.tobytes()
    np.testing.assert_allclose(back.expected_step(back.reward_table), world.expected_step(table), rtol=0, atol=1e-12)
