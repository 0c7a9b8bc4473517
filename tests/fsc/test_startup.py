"""What a command imports before it runs: ``fsc --help`` and the commands without torch import neither torch
nor numba; the packages' lazy exports (fsc.lazy) are the names they were, in the layers they were.

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
    assert {o for a in choices["pomdp"]._actions for o in a.option_strings} == {"-h", "--help", "--json", "--require-discount"}
    assert {o for a in choices["evaluate"]._actions for o in a.option_strings} == {"-h", "--help"}


def test_the_train_help_is_the_trainers():
    from fsc.train.command import HELP

    assert fsc.cli.COMMANDS["train"][2] == HELP


def test_a_command_that_computes_runs_in_float64(capsys):
    import torch

    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    try:
        assert fsc.cli.main(["evaluate", "--memory", "ram:2", "--json"]) == 0
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
