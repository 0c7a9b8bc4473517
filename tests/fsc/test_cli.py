"""The fsc command: outputs, JSON fields, and bad input (one line, exit 2, nothing written)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fsc
import policies
import tasks
import viz
from fsc.cli import main, make_parser


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_evaluate_json_matches_library(capsys):
    status, out, _ = run(capsys, "evaluate", "--mu", "0.2", "--memory", "memento:2", "--policy", "random", "--seed", "3", "--reset", "0.01", "--json")
    assert status == 0
    record = json.loads(out)
    assert {"q", "gain", "engine", "nodes", "seconds", "residual"} <= record.keys()
    arch = fsc.Memento(2)
    expected = fsc.evaluate(tasks.TwoHypothesis(0.2), policies.initial_policy("random", arch, seed=3), reset=0.01)
    assert record["q"] == pytest.approx(float(expected.metrics["q"]), rel=1e-12)  # the CLI: numpy on a tiny chain (fsc.engines.small)
    assert record["nodes"] == arch.num_nodes and (record["engine"], expected.engine) == ("numpy", "choices")


def test_evaluate_grad_norm(capsys):
    status, out, _ = run(capsys, "evaluate", "--memory", "ram:3", "--policy", "random", "--engine", "power", "--grad", "--json")
    assert status == 0
    record = json.loads(out)
    assert record["engine"] == "power" and record["grad_norm"] > 0


def test_evaluate_table(capsys):
    status, out, _ = run(capsys, "evaluate", "--memory", "chain:2")
    assert status == 0 and out.splitlines()[0].startswith("q ")


def test_simulate_json(capsys):
    status, out, _ = run(capsys, "simulate", "--memory", "ram:2", "--policy", "random", "--reset", "0.05", "--steps", "100000", "--json")
    assert status == 0
    record = json.loads(out)
    assert {"q", "q_stderr", "gain", "gain_stderr"} <= record.keys()
    assert 0 < record["q_stderr"] < 0.05


def test_policy_file(capsys, tmp_path):
    arch = fsc.Column(3)
    fsc.Policy.random(arch, 5).save(tmp_path / "p.npz")
    status, out, _ = run(capsys, "evaluate", "--memory", "column:3", "--policy", str(tmp_path / "p.npz"), "--json")
    assert status == 0
    expected = fsc.evaluate(tasks.TwoHypothesis(0.1), fsc.Policy.random(arch, 5), reset=1e-3)
    assert json.loads(out)["q"] == pytest.approx(float(expected.metrics["q"]), rel=1e-12)


DATA = Path(__file__).parent.parent / "data"


def test_a_policy_file_brings_its_memory(capsys, tmp_path):
    """``--policy RUN/policy.npz`` without ``--memory``: the file's architecture, on any world."""
    world = fsc.read_pomdp(DATA / "tiger.pomdp")
    arch = fsc.RAM(2, arms=world.num_actions, observations=world.num_observations)
    policy = fsc.Policy.random(arch, 7)
    policy.save(tmp_path / "policy.npz")
    status, out, err = run(capsys, "evaluate", "--pomdp", str(DATA / "tiger.pomdp"), "--policy", str(tmp_path / "policy.npz"), "--json")
    assert status == 0, err
    record, expected = json.loads(out), fsc.evaluate(world, policy)
    assert record["value"] == pytest.approx(float(expected.value), rel=1e-12) and record["nodes"] == arch.num_nodes
    svg = tmp_path / "policy.svg"
    argv = ["draw", "--pomdp", str(DATA / "tiger.pomdp"), "--policy", str(tmp_path / "policy.npz"), "--out", str(svg), "--json"]
    status, out, err = run(capsys, *argv)
    assert status == 0, err
    graph = viz.memory_graph(policy, occupancy=fsc.evaluate(world, policy))
    assert json.loads(out)["edges"] == graph.num_edges and svg.read_text().lstrip().startswith("<")
    status, out, err = run(capsys, *argv[:5], "--memory", "ram:2", *argv[5:])  # the same memory, given: agrees
    assert status == 0, err


@pytest.mark.parametrize(
    "argv, pattern",
    [
        (["--memory", "ram:3"], r"policy file '.*p.npz' is for RAM\(M=2.*not for memory RAM\(M=3"),
        (["--memory", "column:2"], r"policy file '.*p.npz' is for RAM\(M=2.*not for memory Column\(M=2"),
        (["--pomdp", str(DATA / "tiger.pomdp")], r"policy file '.*p.npz' is for RAM\(M=2.*2 actions.*the world 3"),
    ],
)
@pytest.mark.parametrize("command", ["evaluate", "draw"])
def test_a_policy_file_on_another_memory_is_one_line_exit_2(capsys, tmp_path, command, argv, pattern):
    import re

    fsc.Policy.random(fsc.RAM(2), 0).save(tmp_path / "p.npz")
    out = ["--out", str(tmp_path / "p.svg")] if command == "draw" else []
    status, printed, err = run(capsys, command, "--policy", str(tmp_path / "p.npz"), *argv, *out)
    assert status == 2 and printed == "" and len(err.strip().splitlines()) == 1
    assert re.search(pattern, err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.npz"]


@pytest.mark.parametrize("name", policies.POLICY_NAMES)
def test_policy_takes_every_name_of_named_policy(capsys, name):
    memory = "memento:3" if name in ("necklace", "cycles", "near-necklace") else "column:3"
    status, out, err = run(capsys, "evaluate", "--memory", memory, "--policy", name, "--reset", "0.01", "--json")
    assert status == 0, err
    policy = policies.named_policy(name, fsc.parse_memory(memory), mu=0.1, reset=0.01)
    assert json.loads(out)["q"] == pytest.approx(float(fsc.evaluate(tasks.TwoHypothesis(0.1), policy, reset=0.01).metrics["q"]), rel=1e-12)


def test_policy_help_lists_the_names():
    evaluate = make_parser()._subparsers._group_actions[0].choices["evaluate"]
    text = "".join(evaluate.format_help().split())  # argparse wraps lines at hyphens
    assert all(f"{name}," in text or f"{name}:" in text for name in policies.POLICY_NAMES)


BAD = [
    ("mu-range", ["evaluate", "--mu", "1.5"], r"mu must be in \(0, 1\), got 1.5"),
    ("mu-text", ["evaluate", "--mu", "abc"], "argument --mu: expected a number, got 'abc'"),
    ("mu-nan", ["evaluate", "--mu", "nan"], "expected a finite number"),
    ("memory", ["evaluate", "--memory", "tape:3"], "memory must be ram:M"),
    ("memory-size", ["simulate", "--memory", "ram:0"], "memory size must be an integer >= 1, got 0"),
    ("reset-zero-dense", ["evaluate", "--reset", "0", "--engine", "dense"], "reset = 0"),
    ("reset-range", ["simulate", "--reset", "2"], r"reset must be in \(0, 1\], got 2.0"),
    ("engine", ["evaluate", "--engine", "magic"], "engine must be 'auto' or one of"),
    ("convention", ["evaluate", "--convention", "ours"], "argument --convention: invalid choice"),
    ("policy-file", ["evaluate", "--policy", "missing.npz"], "policy file 'missing.npz' does not exist"),
    ("policy-name", ["evaluate", "--policy", "best"], "policy must be one of"),
    ("steps", ["simulate", "--steps", "0"],
     "argument --steps: expected an integer in \\[1, 9007199254740992\\] \\(2\\*\\*53: the largest count kept exact\\), got '0'"),
    ("unknown-flag", ["evaluate", "--bogus"], "unrecognized arguments: --bogus"),
    ("unknown-command", ["fly"], "invalid choice: 'fly'"),
    ("no-command", [], "required: COMMAND"),
    ("report-out-file", ["report", "--out", "README.md"], "--out must be a directory"),
]


@pytest.mark.parametrize("argv, pattern", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_one_line_exit_2(capsys, tmp_path, monkeypatch, argv, pattern):
    import re

    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("a file, not a directory")
    before = sorted(p.name for p in tmp_path.iterdir())
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert re.search(pattern, err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_installed_command_exits_2():
    exe = Path(sys.executable).with_name("fsc")
    assert exe.exists(), "the fsc console script is installed by `make setup`"
    done = subprocess.run([str(exe), "evaluate", "--mu", "-1"], capture_output=True, text=True, env={**os.environ})
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1


def test_a_reader_that_leaves_ends_the_command_quietly(tmp_path):
    """``fsc pomdp FILE --json | head -c 1``: the reader closes the pipe before the command writes; the command ends
    by SIGPIPE's status, 141, as the other commands of a pipe do, with nothing on stderr (no "Broken pipe")."""
    names = [f"state{i}" for i in range(20_000)]  # a summary far longer than a pipe's buffer
    path = tmp_path / "wide.pomdp"
    path.write_text(f"states: {' '.join(names)}\nactions: 1\nobservations: 1\nstart: uniform\nT: 0\nidentity\nO: 0\nuniform\n")
    child = subprocess.Popen([sys.executable, "-m", "fsc", "pomdp", str(path), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()  # before the command can have written anything
    err = child.stderr.read().decode()
    assert child.wait(timeout=60) == 141 and err == ""


def test_report_writes_index(tmp_path, capsys):
    status, _, _ = run(capsys, "report", "--out", str(tmp_path / "rep"), "--quiet")
    assert status == 0
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "<table>" in page and "Monte Carlo" in page
    assert [p.name for p in tmp_path.iterdir()] == ["rep"]  # no temporary folder left
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / "rep").stat().st_mode & 0o777 == 0o777 & ~mask  # not mkdtemp's 0700
    (tmp_path / "rep" / "index.html").write_text("old")
    status, _, _ = run(capsys, "report", "--out", str(tmp_path / "rep"), "--quiet")  # a report of ours: replaced
    assert status == 0 and (tmp_path / "rep" / "index.html").read_text() != "old"


def test_report_never_deletes_what_it_did_not_write(tmp_path, capsys, monkeypatch):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep").write_text("x")
    status, _, err = run(capsys, "report", "--out", str(mine), "--quiet")
    assert status == 2 and err.count("\n") == 1 and "holds files that are not an fsc report" in err
    assert [p.name for p in mine.iterdir()] == ["keep"] and sorted(p.name for p in tmp_path.iterdir()) == ["mine"]
    monkeypatch.chdir(mine)
    for out in (".", str(tmp_path)):
        status, _, err = run(capsys, "report", "--out", out, "--quiet")
        assert status == 2 and "is the current directory or above it" in err
    assert [p.name for p in mine.iterdir()] == ["keep"] and (mine / "keep").read_text() == "x"


def test_an_interrupt_while_libraries_import_is_taken_when_they_are_in():
    """SIGINT inside :func:`fsc.console.interrupts_after` does not stop the block (a compiled import would end the
    process on it: torch's with status -6); it is raised as KeyboardInterrupt when the block ends, and SIGINT is
    Python's own again after.  Where SIGINT is ignored (a background job), the block leaves it so."""
    import os
    import signal
    import time

    from fsc.console import interrupts_after

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        finished = False
        with pytest.raises(KeyboardInterrupt):
            with interrupts_after():
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(100):  # the handler runs between bytecodes, within these sleeps
                    time.sleep(0.001)
                finished = True
        assert finished and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with interrupts_after():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
