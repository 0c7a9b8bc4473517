"""``--memory FILE.py:NAME``: a user's architecture on the command line."""

import json

import pytest

import fsc
import tasks
from fsc.cli import main

SOURCE = '''
import fsc

wsls = fsc.Automaton(
    ["start"] + [(x, o) for x in "AB" for o in "+-"],
    ["A", "B"],
    lambda node, choice, obs: (choice, "+-"[obs]),
    action="AB".index,
    actions=2,
    observations=2,
)


def memento():
    return fsc.Memento(2)


not_an_architecture = 42
'''


@pytest.fixture
def memory_file(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(SOURCE)
    return path


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_evaluate_an_automaton_from_a_file(capsys, memory_file):
    status, out, _ = run(capsys, "evaluate", "--memory", f"{memory_file}:wsls", "--policy", "random", "--seed", "2", "--json")
    assert status == 0
    namespace = {}
    exec(SOURCE, namespace)
    arch = namespace["wsls"]
    want = fsc.evaluate(tasks.TwoHypothesis(0.1), fsc.Policy.random(arch, 2), reset=1e-3)
    assert json.loads(out)["q"] == pytest.approx(float(want.metrics["q"]), rel=1e-12) and json.loads(out)["nodes"] == 5  # numpy on a tiny chain


def test_a_function_returning_an_architecture(capsys, memory_file):
    status, out, _ = run(capsys, "evaluate", "--memory", f"{memory_file}:memento", "--json")
    assert status == 0 and json.loads(out)["nodes"] == fsc.Memento(2).num_nodes


@pytest.mark.parametrize(
    "suffix, message",
    [
        (":nothing", "defines no 'nothing'"),
        (":not_an_architecture", "is not a fsc.MemoryArchitecture (nor a function returning one), got int"),
        (":2x", "must name a Python global after the colon"),
    ],
)
def test_bad_names_are_one_line_and_status_2(capsys, memory_file, suffix, message):
    status, out, err = run(capsys, "evaluate", "--memory", f"{memory_file}{suffix}")
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1 and message in err


def test_missing_and_failing_files(capsys, tmp_path):
    status, _, err = run(capsys, "evaluate", "--memory", f"{tmp_path / 'absent.py'}:x")
    assert status == 2 and "does not exist" in err and len(err.strip().splitlines()) == 1
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    status, _, err = run(capsys, "evaluate", "--memory", f"{broken}:x")
    assert status == 2 and "failed to run: RuntimeError: boom" in err and len(err.strip().splitlines()) == 1


def test_training_records_the_tables_so_a_changed_file_is_refused(capsys, memory_file, tmp_path):
    out = tmp_path / "run"
    args = ["train", "--memory", f"{memory_file}:wsls", "--init", "random", "--until-t", "50", "--out", out, "--quiet", "--json"]
    status, first, _ = run(capsys, *args)
    assert status == 0
    assert json.loads((out / "run.json").read_text())["arguments"]["memory"]["kind"] == "Automaton"
    status, again, _ = run(capsys, *args)  # finished: the same result
    assert status == 0 and json.loads(again)["q"] == json.loads(first)["q"]
    memory_file.write_text(SOURCE.replace('actions=2,\n    observations=2,\n)', 'actions=2,\n    observations=2,\n    reset=[("A", "+")],\n)'))
    status, _, err = run(capsys, *args[:-4], "--until-t", "80", "--out", out, "--quiet")
    assert status == 2 and len(err.strip().splitlines()) == 1 and "memory: <" in err and len(err) < 400


def test_a_sweep_spec_takes_a_file_architecture(capsys, memory_file, tmp_path, monkeypatch):
    """A spec names the file like the command line does; each point trains on the file's automaton."""
    monkeypatch.chdir(tmp_path)
    spec = {
        "name": "file-memory",
        "out": "out",
        "fixed": {"mu": 0.2, "until_t": 50, "reset": 1e-2},
        "grid": [{"memory": [f"{memory_file.name}:wsls", "ram:2"], "init": ["random"], "seed": [0]}],
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    status, _, err = run(capsys, "sweep", "spec.json", "--workers", "1", "--quiet")
    assert status == 0, err
    results = sorted((tmp_path / "out" / "runs").glob("memory=*/init=random/seed=0/result.json"))
    assert len(results) == 2
    runs = {path.parts[-4]: json.loads((path.parent / "run.json").read_text()) for path in results}
    assert runs["memory=mine.py-wsls"]["arguments"]["memory"]["kind"] == "Automaton"
    assert runs["memory=ram-2"]["arguments"]["memory"] == "ram:2"
