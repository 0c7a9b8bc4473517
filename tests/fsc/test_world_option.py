"""``--world NAME``: the built-in worlds named on the command line, by every command on a world, and the world
and memory options declared once (fsc.resolve) for all of them and for the training table."""

from __future__ import annotations

import json

import numpy as np
import pytest

import fsc
import policies
import tasks
from fsc.cli import main, make_parser
from fsc.resolve import MEMORY, WORLD_OPTIONS, resolve_world
from fsc.train.arguments import SWEEP_TYPES, TRAINING, TrainingConfig

#: What each name builds, written out here (not read from tasks.WORLDS).
BUILT = {"two-hypothesis": tasks.TwoHypothesis(0.1), "tiger": tasks.Tiger(), "cheese-maze": tasks.CheeseMaze(), "4x3": tasks.Grid4x3()}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_the_names_are_the_built_in_worlds():
    assert list(tasks.WORLDS) == list(BUILT)
    for name, world in BUILT.items():
        resolved = resolve_world(world=name)
        assert type(resolved.world) is type(world) and resolved.name == name
        built, expected = fsc.as_pomdp(resolved.world), fsc.as_pomdp(world)
        assert np.array_equal(built.transition, expected.transition) and np.array_equal(built.reward, expected.reward)
        assert built.discount == expected.discount


def test_evaluate_on_tiger_is_the_library_s_value(capsys):
    status, out, err = run(capsys, "evaluate", "--world", "tiger", "--memory", "ram:2", "--policy", "uniform", "--json")
    assert status == 0, err
    record = json.loads(out)
    world = tasks.Tiger()
    policy = fsc.Policy.uniform(fsc.RAM(2, arms=3, observations=2))
    expected = fsc.evaluate(world, policy)  # the world's discount, 0.95: reset 0.05
    assert record["world"] == "tiger" and "mu" not in record and "pomdp" not in record
    assert record["value"] == pytest.approx(float(expected.value), rel=1e-12)
    # The uniform controller on Tiger, by hand: each step listens (-1) with probability 1/3 and opens a door
    # (+10 or -100 with probability 1/2 each) with 2/3, whatever it heard: gain -1/3 - 2/3 * 45 = -30.333...
    assert record["gain"] == pytest.approx(-1 / 3 - 2 / 3 * 45, rel=1e-12)
    assert record["reset"] == pytest.approx(0.05, rel=1e-12)


@pytest.mark.parametrize("name", ["cheese-maze", "4x3"])
def test_evaluate_names_each_world(capsys, name):
    status, out, err = run(capsys, "evaluate", "--world", name, "--memory", "ram:1", "--policy", "uniform", "--json")
    assert status == 0, err
    record = json.loads(out)
    arch = fsc.RAM(1, arms=4, observations=fsc.as_pomdp(BUILT[name]).num_observations)
    assert record["world"] == name and record["nodes"] == arch.num_nodes
    assert record["value"] == pytest.approx(float(fsc.evaluate(BUILT[name], fsc.Policy.uniform(arch)).value), rel=1e-12)


def test_two_hypothesis_by_name_is_the_default_world(capsys):
    argv = ["evaluate", "--memory", "column:3", "--policy", "ccp", "--reset", "0.01", "--json"]
    named = run(capsys, *argv[:1], "--world", "two-hypothesis", "--mu", "0.2", *argv[1:])
    default = run(capsys, *argv[:1], "--mu", "0.2", *argv[1:])
    assert named[0] == default[0] == 0, named[2] + default[2]
    first, second = json.loads(named[1]), json.loads(default[1])
    assert first.pop("seconds") and second.pop("seconds")
    assert first == second and first["mu"] == 0.2
    policy = policies.named_policy("ccp", fsc.Column(3), mu=0.2, reset=0.01)
    assert first["q"] == pytest.approx(float(fsc.evaluate(tasks.TwoHypothesis(0.2), policy, reset=0.01).metrics["q"]), rel=1e-12)  # numpy on a tiny chain


def test_simulate_and_draw_take_the_world(capsys, tmp_path):
    status, out, err = run(capsys, "simulate", "--world", "tiger", "--memory", "ram:1", "--steps", "20000", "--json")
    assert status == 0, err
    record = json.loads(out)
    assert record["world"] == "tiger" and abs(record["gain"] - (-1 / 3 - 2 / 3 * 45)) < 6 * record["gain_stderr"]
    status, out, err = run(capsys, "draw", "--world", "4x3", "--memory", "ram:1", "--out", str(tmp_path / "g.dot"), "--json")
    assert status == 0, err
    assert (tmp_path / "g.dot").is_file()


def test_solve_on_tiger_names_it(capsys, tmp_path):
    argv = ["solve", "--world", "tiger", "--memory", "ram:3", "--rounds", "1", "--methods", "adam", "--quiet", "--out", str(tmp_path / "s")]
    status, out, err = run(capsys, *argv, "--json")
    assert status == 0, err
    record = json.loads(out)
    assert record["world"] == "tiger" and record["reset"] == pytest.approx(0.05) and record["value"] <= record["upper_bound"] + 1e-9
    saved = json.loads((tmp_path / "s" / "solution.json").read_text())
    assert saved["world"] == "tiger"
    policy = fsc.Policy.load(tmp_path / "s" / "policy.npz")
    assert record["value"] == pytest.approx(float(fsc.evaluate(tasks.Tiger(), policy).value), rel=1e-9)
    status, out, err = run(capsys, "inspect", str(tmp_path / "s" / "policy.npz"), "--world", "tiger", "--json")
    assert status == 0, err
    assert json.loads(out)["gain"] == pytest.approx(float(fsc.evaluate(tasks.Tiger(), policy).gain), rel=1e-9)


def test_train_on_tiger_records_the_name_and_refuses_another_world(capsys, tmp_path):
    out = str(tmp_path / "run")
    argv = ["train", "--world", "tiger", "--memory", "ram:1", "--init", "uniform", "--max-steps", "2", "--out", out, "--quiet"]
    status, printed, err = run(capsys, *argv, "--json")
    assert status == 0, err
    arguments = json.loads((tmp_path / "run" / "run.json").read_text())["arguments"]
    assert arguments["world"] == "tiger" and arguments["reset"] == pytest.approx(0.05) and "mu" not in arguments
    status, printed, err = run(capsys, "train", "--world", "cheese-maze", *argv[3:])
    assert status == 2 and printed == "" and len(err.splitlines()) == 1, err


def test_the_api_takes_a_name_as_world(tmp_path):
    from fsc.train import run_training

    result = run_training(world="tiger", memory="ram:1", init="uniform", max_steps=1, out=tmp_path / "a", quiet=True)
    assert json.loads((tmp_path / "a" / "run.json").read_text())["arguments"]["world"] == "tiger"
    config = TrainingConfig(world="tiger", memory="ram:1", init="uniform", max_steps=1, out=tmp_path / "b", quiet=True)
    assert run_training(config).gain == result.gain
    with pytest.raises(ValueError, match="give the world once"):
        run_training(config, world="tiger")
    with pytest.raises(ValueError, match=r"world must be one of 'two-hypothesis', 'tiger', 'cheese-maze', '4x3', got 'tigre'"):
        TrainingConfig(world="tigre", memory="ram:1", init="uniform", out=tmp_path / "c")


@pytest.mark.parametrize(
    "argv, pattern",
    [
        (["--world", "tigre"], "world must be one of 'two-hypothesis', 'tiger', 'cheese-maze', '4x3', got 'tigre'"),
        (["--world", "tiger", "--pomdp", "tests/data/tiger.pomdp"], "give one world: .*got (--)?world and (--)?pomdp"),
        (["--world", "tiger", "--mu", "0.2"], "mu is the two-hypothesis world's gap: it goes with (--)?world two-hypothesis, not (--)?world tiger"),
        (["--mu", "0.2", "--pomdp", "tests/data/tiger.pomdp"], "give one world: .*got (--)?mu and (--)?pomdp"),
    ],
)
@pytest.mark.parametrize("command", ["evaluate", "simulate", "inspect", "train", "solve"])
def test_a_bad_world_is_one_line_exit_2(capsys, tmp_path, command, argv, pattern):
    """On the command line the message names the option (``--world``), in fsc train the argument (``world``)."""
    import re

    fsc.Policy.uniform(fsc.RAM(1)).save(tmp_path / "p.npz")
    extra = {
        "inspect": [str(tmp_path / "p.npz")],
        "train": ["--memory", "ram:1", "--init", "uniform", "--out", str(tmp_path / "run")],
        "solve": ["--quiet"],
    }.get(command, [])
    status, out, err = run(capsys, command, *extra, *argv)
    assert status == 2 and out == "" and len(err.splitlines()) == 1, err
    assert re.search(pattern, err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.npz"]


def test_the_options_are_declared_once_and_shared():
    """Every command on a world declares the same world options (help and type) as the training table."""
    by_name = {a.name: a for a in TRAINING}
    for declared in WORLD_OPTIONS:
        assert by_name[declared.name].help == declared.help and SWEEP_TYPES[declared.name] == declared.type
        for command in ("evaluate", "simulate", "draw", "inspect", "solve", "train"):
            parser = make_parser(command)._subparsers._group_actions[0].choices[command]
            action = next(a for a in parser._actions if declared.option in a.option_strings)
            assert action.help == declared.help and action.default is None, (command, declared.name)
    assert by_name["memory"].help == MEMORY.help and by_name["memory"].required
