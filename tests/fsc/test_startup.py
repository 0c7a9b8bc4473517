"""What a command imports before it runs: ``fsc --help`` and the commands without torch import neither torch
nor numba; the commands on a world and a memory refuse one nobody can afford before importing them; the
packages' lazy exports (fsc.lazy) are the names they were, in the layers they were.

Times themselves are measured by ``benchmarks/bench_startup.py``, not here.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fsc
import fsc.cli
import policies
import tasks
from fsc.io.pomdp_file import write_pomdp
from tests.test_layers import ROOT_LAYERS, layer_of

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "numba", "scipy", "matplotlib")



def fresh(code: str) -> str:
    """The last line ``code`` prints in a new interpreter that imports this checkout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    return done.stdout.strip().splitlines()[-1]


def heavy_after(argv: list[str]) -> tuple[int, list[str]]:
    """The exit status of ``fsc ARGV`` and the heavy packages it imported."""
    code = f"import json, sys\nfrom fsc.cli import main\nstatus = main({argv!r})\nprint(json.dumps([status, [m for m in {HEAVY!r} if m in sys.modules]]))"
    status, heavy = json.loads(fresh(code))
    return status, heavy


@pytest.mark.parametrize("argv", [["closed-form", "ccp", "--M", "3"], ["necklace", "--m", "3"], ["pomdp", "FILE"]])
def test_the_commands_without_torch_import_none_of_it(argv, tmp_path):
    write_pomdp(tasks.Tiger(), tmp_path / "tiger.POMDP")
    argv = [str(tmp_path / "tiger.POMDP") if word == "FILE" else word for word in argv]
    assert heavy_after(argv) == (0, [])


#: The commands that compute no gradient, on Tiger with ``uniform`` or a saved policy (``POLICY``): they import
#: no torch, and on a chain this small (fsc.engines.small) no numba either; nor matplotlib (draw: graphviz only).
NO_GRADIENT = {
    "evaluate": ["evaluate", "--pomdp", "FILE", "--memory", "ram:2", "--policy", "uniform"],
    "evaluate a policy file": ["evaluate", "--pomdp", "FILE", "--policy", "POLICY", "--json"],
    "simulate": ["simulate", "--pomdp", "FILE", "--memory", "ram:2", "--policy", "uniform", "--steps", "1000"],
    "simulate a policy file": ["simulate", "--pomdp", "FILE", "--policy", "POLICY", "--steps", "1000"],
    "draw": ["draw", "--pomdp", "FILE", "--policy", "POLICY", "--out", "OUT/graph.dot"],
}


def _tiger_and_policy(tmp_path) -> tuple[Path, Path]:
    write_pomdp(tasks.Tiger(), tmp_path / "tiger.POMDP")
    fsc.Policy.random(fsc.RAM(2, arms=3, observations=2), generator=1).save(tmp_path / "policy.npz")
    return tmp_path / "tiger.POMDP", tmp_path / "policy.npz"


def _argv(argv: list[str], tmp_path) -> list[str]:
    named = {"FILE": "tiger.POMDP", "POLICY": "policy.npz"}
    return [str(tmp_path / named[word]) if word in named else word.replace("OUT", str(tmp_path)) for word in argv]


@pytest.mark.parametrize("command", sorted(NO_GRADIENT))
def test_the_commands_without_a_gradient_import_no_torch(command, tmp_path):
    _tiger_and_policy(tmp_path)
    status, heavy = heavy_after(_argv(NO_GRADIENT[command], tmp_path))
    assert (status, set(heavy) - {"scipy"}) == (0, set())  # scipy: the joint chain's tables (not simulate's)


def test_evaluate_imports_torch_for_a_gradient_only_and_numba_for_a_compiled_engine(tmp_path):
    """The check above sees torch when it is imported: ``--grad`` imports it; a named compiled engine loads numba
    (its kernels) but still no torch."""
    _tiger_and_policy(tmp_path)
    evaluate = _argv(NO_GRADIENT["evaluate a policy file"], tmp_path)
    assert heavy_after([*evaluate, "--grad"]) == (0, ["torch", "numba", "scipy"])
    assert heavy_after([*evaluate, "--engine", "choices"]) == (0, ["numba", "scipy"])


def test_a_policy_file_evaluated_without_torch_gives_the_numbers_of_fsc_evaluate(tmp_path):
    """``fsc evaluate`` of a saved policy (numpy arrays, the numpy path) and ``fsc.evaluate`` of the policy loaded
    with torch (the compiled engine auto chooses) agree to rounding."""
    _, path = _tiger_and_policy(tmp_path)
    record = json.loads(fresh(f"from fsc.cli import main\nmain({_argv(NO_GRADIENT['evaluate a policy file'], tmp_path)!r})"))
    expected = fsc.evaluate(tasks.Tiger(), fsc.Policy.load(path), reset=0.05)
    assert record["engine"] == "numpy" and expected.engine != "numpy"
    assert record["gain"] == pytest.approx(float(expected.gain), rel=1e-12)
    assert record["value"] == pytest.approx(float(expected.value), rel=1e-12)


#: A 99-byte file declaring 30 actions and 120,000 observations: ``ram:1`` on it has 3,600,001 nodes, whose table of
#: node x choice (108 million entries) is over fsc.limits.MAX_TABLE_ENTRIES.
HUGE_MEMORY = "discount: 0.9\nvalues: reward\nstates: 3\nactions: 30\nobservations: 120000\nT: * identity\nO: * uniform\n"
#: Ten million states and 3,000 actions: the reader refuses the tables (S*A rows) before building any.
HUGE_WORLD = "discount: 0.9\nvalues: reward\nstates: 10000000\nactions: 3000\nobservations: 2\nT: * identity\nO: * uniform\n"
HUGE = {"memory": (HUGE_MEMORY, "over the limit of 67,108,864 entries"), "world": (HUGE_WORLD, "over the limit of 2 GiB")}

#: Each command on a world and a memory (fsc.cli.TORCH_AFTER_INPUT), and python -m fsc.train (what a sweep runs).
REFUSING = {
    "evaluate": ("fsc.cli", ["evaluate", "--policy", "uniform"]),
    "simulate": ("fsc.cli", ["simulate", "--policy", "uniform"]),
    "draw": ("fsc.cli", ["draw", "--out", "OUT/graph.svg"]),
    "train": ("fsc.cli", ["train", "--init", "uniform", "--out", "OUT/run"]),
    "solve": ("fsc.cli", ["solve", "--max-seconds", "5", "--out", "OUT/solved"]),
    "python -m fsc.train": ("fsc.train.command", ["--init", "uniform", "--out", "OUT/run"]),
}


def test_every_command_on_a_world_and_a_memory_is_tried():
    assert {argv[0] for module, argv in REFUSING.values() if module == "fsc.cli"} == fsc.cli.TORCH_AFTER_INPUT
    assert not fsc.cli.TORCH_AFTER_INPUT & fsc.cli.WITHOUT_TORCH


@pytest.mark.parametrize("huge", sorted(HUGE))
@pytest.mark.parametrize("command", sorted(REFUSING))
def test_a_world_nobody_can_afford_is_refused_in_one_line_before_torch(command, huge, tmp_path):
    """The world is read and the memory built before torch, numba, scipy and the engines are imported: a file
    declaring more than the machine can hold is refused with status 2 and one line naming the limit, with none
    of them imported and nothing written."""
    text, limit = HUGE[huge]
    line = _refused(command, text, tmp_path)
    assert line.startswith("fsc: error: ") and limit in line, line


def _refused(command: str, text: str, tmp_path) -> str:
    """Run ``command`` on a file holding ``text`` with ``--memory ram:1`` in a fresh process; assert it exits with
    status 2, one line on stderr, none of torch, numba, scipy imported and nothing written; return that line."""
    (tmp_path / "huge.POMDP").write_text(text)
    module, argv = REFUSING[command]
    argv = [word.replace("OUT", str(tmp_path)) for word in argv] + ["--pomdp", str(tmp_path / "huge.POMDP"), "--memory", "ram:1"]
    code = (
        f"import json, sys\nfrom {module} import main\nstatus = main({argv!r})\n"
        f"print(json.dumps([status, [m for m in {HEAVY!r} if m in sys.modules]]))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    status, heavy = json.loads(done.stdout.strip().splitlines()[-1])
    lines = done.stderr.splitlines()
    assert (status, heavy, len(lines)) == (2, [], 1), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["huge.POMDP"]
    return lines[0]


#: Ten million states, 3 actions and 100 observations: the reader takes the preamble (30 million rows), but the
#: lightest engine needs at least 290 GB with ram:1 (96 bytes for each of 10 million x 301 joint states).  The first
#: entry names an action the file does not have: reading the body would stop there with another error.
DECLARED = "discount: 0.9\nvalues: reward\nstates: 10000000\nactions: 3\nobservations: 100\nT: nowhere identity\nO: * uniform\n"


@pytest.mark.parametrize("command", sorted(set(REFUSING) - {"simulate"}))
def test_a_world_no_engine_can_hold_is_refused_from_its_declared_sizes(command, tmp_path):
    """The commands that evaluate on the joint chain refuse, from the sizes the file declares and before its first
    T, O or R entry is read, a world and memory whose lightest engine does not fit (fsc.engines.estimate.check_declared):
    status 2, one line naming the estimate and the limit, nothing written, none of torch, numba, scipy imported."""
    line = _refused(command, DECLARED, tmp_path)
    assert line.startswith("fsc: error: memory (--memory) RAM(M=1, arms=3, observations=100) on the declared S=10,000,000, A=3, O=100 "), line
    assert "(the joint chain's vectors and next nodes), over the " in line and line.endswith("choose a smaller memory or world"), line


def test_simulate_refuses_a_world_whose_dense_tables_do_not_fit_from_its_declared_sizes(tmp_path):
    """simulate builds no joint chain but the world's dense tables (S x A x S transitions): refused from the sizes the
    file declares, before its body (whose first entry is wrong), in one line naming the table and the limit."""
    line = _refused("simulate", DECLARED, tmp_path)
    expected = "fsc: error: simulate needs the world's dense transition table, 10,000,000 x 3 x 10,000,000 = 300,000,000,000,000 numbers "
    assert line.startswith(expected) and "over the limit of 268,435,456" in line, line


def test_a_sparse_world_refuses_a_dense_table_it_cannot_hold():
    """A world read sparse builds its dense tables on demand, and refuses one over the limit (fsc.limits.MAX_DENSE_WORLD_NUMBERS)
    in one ValueError, as fsc.simulate does, instead of asking numpy for terabytes."""
    from fsc.io.pomdp_file import parse_pomdp
    from fsc.limits import MAX_DENSE_WORLD_NUMBERS

    states = 20_000  # 20,000 x 1 x 20,000 = 4e8 numbers, over 2**28 = 2.7e8; the sparse tables hold 20,000 entries
    world = parse_pomdp(f"discount: 0.9\nvalues: reward\nstates: {states}\nactions: 1\nobservations: 1\nT: * identity\nO: * uniform\n")
    assert world.is_sparse and states * states > MAX_DENSE_WORLD_NUMBERS
    with pytest.raises(ValueError, match=r"dense transition table, 20,000 x 1 x 20,000 = 400,000,000 numbers .*over the limit of 268,435,456"):
        _ = world.transition
    assert world.observation.shape == (1, states, 1)  # 20,000 numbers: built
    with pytest.raises(ValueError, match="fsc.simulate needs the world's dense transition table"):
        fsc.simulate(world, fsc.Policy.uniform(fsc.RAM(1, arms=1, observations=1)), reset=0.5, steps=10)


def test_the_names_declared_without_torch_are_those_of_the_modules_that_use_them():
    """The options are declared before torch is imported, from names kept apart (fsc.choices, policies.names,
    fsc.cli.controller.DRAW_FORMATS): they are the names and defaults of the code that computes with them."""
    import attrs

    import viz
    from fsc import choices, objective, optim
    from fsc.cli.controller import DRAW_FORMATS
    from policies import initial, names

    assert tuple(optim.OPTIMIZERS) == choices.OPTIMIZER_NAMES and objective.TARGETS is choices.TARGETS
    assert attrs.fields(optim.GradientFlow).max_dgrad.default == choices.FLOW_MAX_DGRAD
    assert attrs.fields(optim.Rosenbrock).tolerance.default == choices.ROSENBROCK_TOLERANCE
    assert DRAW_FORMATS == viz.FORMATS
    assert initial.POLICY_NAMES is names.POLICY_NAMES is policies.POLICY_NAMES


def test_help_imports_nothing_heavy_and_lists_every_command():
    code = f"import sys\nfrom fsc.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\nprint([m for m in {HEAVY!r} if m in sys.modules])"
    assert fresh(code) == "[]"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    text = subprocess.run([sys.executable, "-m", "fsc", "--help"], env=env, capture_output=True, text=True, check=True).stdout
    assert all(name in text for name in fsc.cli.COMMANDS)


def test_every_command_entry_names_functions_and_a_command_parses_only_its_options():
    for name, (run, add_options, help_text) in fsc.cli.COMMANDS.items():
        assert callable(fsc.cli.load(run)) and callable(fsc.cli.load(add_options)) and help_text, name
    parser = fsc.cli.make_parser("pomdp")
    choices = parser._subparsers._group_actions[0].choices
    assert {o for a in choices["pomdp"]._actions for o in a.option_strings} == {"-h", "--help", "--json", "--require-discount", "--write"}
    assert {o for a in choices["evaluate"]._actions for o in a.option_strings} == {"-h", "--help"}


def test_the_train_help_is_the_trainers():
    from fsc.train.command import HELP

    assert fsc.cli.COMMANDS["train"][2] == HELP


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--memory", "ram:2", "--grad"],
        ["simulate", "--memory", "ram:2", "--policy", "random", "--steps", "1000"],
        ["draw", "--memory", "ram:2", "--policy", "ccp", "--out", "OUT/graph.dot"],
        ["train", "--memory", "ram:2", "--init", "random", "--max-steps", "1", "--out", "OUT/run", "--quiet"],
        ["solve", "--memory", "ram:1", "--rounds", "1", "--methods", "adam", "--quiet"],
    ],
    ids=lambda argv: argv[0],
)
def test_a_command_that_computes_runs_in_float64(argv, capsys, tmp_path):
    """Those that import torch themselves once their world and memory are built (fsc.cli.TORCH_AFTER_INPUT) too
    (evaluate for a gradient, simulate and draw for a policy built with torch: without, they import none)."""
    import torch

    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    try:
        assert fsc.cli.main([word.replace("OUT", str(tmp_path)) for word in argv] + ["--json"]) == 0
        assert torch.get_default_dtype() == torch.float64
    finally:
        torch.set_default_dtype(previous)
    capsys.readouterr()


@pytest.mark.parametrize("package", [fsc, policies])
def test_lazy_exports_are_there_and_come_from_lower_layers(package):
    exports = package.__dict__["_exports"]
    assert list(exports) == package.__all__ and set(package.__all__) <= set(dir(package))
    for name, source in exports.items():
        assert getattr(package, name) is not None, name
        assert layer_of(source) <= ROOT_LAYERS[package.__name__], (name, source)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        package.nothing  # noqa: B018


def test_importing_a_submodule_keeps_the_exported_function():
    """``fsc.evaluate`` is the function even after ``import fsc.evaluate`` binds the submodule, as before."""
    code = "import fsc.evaluate, fsc.simulate, fsc\nfrom fsc import *\nprint(type(fsc.evaluate).__name__, simulate.__module__, fsc.RAM.__name__)"
    assert fresh(code) == "function fsc.simulate RAM"
    assert fresh("import fsc, sys\nprint('torch' in sys.modules, fsc.__version__)") == f"False {fsc.__version__}"


@pytest.mark.parametrize(
    "spec",
    [{"kind": "RAM", "M": 2, "arms": 2, "observations": 2}, {"kind": "Memento", "m": 1, "arms": 2, "observations": 2}],
    ids=lambda spec: spec["kind"],
)
def test_a_built_in_kind_reads_back_in_a_fresh_process(spec):
    """``fsc.MemoryArchitecture.from_dict`` in a process that imported nothing but ``fsc``: the built-in kinds are
    registered with the model package, not only once ``fsc.model.memory`` happens to be imported."""
    code = f"import fsc\nprint(repr(fsc.MemoryArchitecture.from_dict({spec!r})))"
    arguments = ", ".join(f"{key}={value}" for key, value in spec.items() if key != "kind")
    assert fresh(code) == f"{spec['kind']}({arguments})"
