"""The layers of the code: every import points down, and the import graph has no cycle.

Each module of the four packages has a layer; a module may import its own layer or a lower one, never a
higher one.  Imports inside functions count too (they are how cycles hide), and so do imports by name:
``importlib.import_module("x")``, ``runpy.run_module("x")``, ``__import__("x")`` and a command line
``[..., "-m", "x", ...]``, with the name written out or held by a module-level constant.  Importing a package root
(``import fsc``, ``from fsc.sweep import run_sweep``) is an import of what the root re-exports, so a root
is checked by what it imports itself and is no one's dependency.  The layers follow the tree: the
foundations and the model at the bottom, then the engines, the algorithms and the file formats, the
policies and drawings built on them, the runs on disk, and the command line on top, imported by nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fsc", "policies", "tasks", "viz")

#: Layer of each module (package.module), lowest first; a subpackage's modules share its layer.
LAYERS = {
    0: {"fsc.errors", "fsc.checks", "fsc.choices", "fsc.limits", "fsc.files", "fsc.console", "fsc.provenance", "fsc.lazy", "fsc.pool"},
    1: {"fsc.model.*", "tasks.*"},
    2: {"fsc.engines.*"},
    3: {"fsc.evaluate", "fsc.simulate", "fsc.objective", "fsc.optim", "fsc.bounds", "fsc.testing", "fsc.storm", "fsc.io.*", "fsc.solver.*"},
    4: {"policies.*", "viz.*", "fsc.resolve"},
    5: {"fsc.train.*", "fsc.sweep.*", "fsc.report.*"},
    6: {"fsc.cli.*", "fsc.__main__"},
}


#: The layer of a top-level package root: what it re-exports (``fsc``: the public API, up to the algorithms).
ROOT_LAYERS = {"fsc": 3, "policies": 4, "tasks": 1, "viz": 4}


def layer_of(module: str) -> int | None:
    if module in ROOT_LAYERS:
        return ROOT_LAYERS[module]
    for layer, patterns in LAYERS.items():
        for pattern in patterns:
            if module == pattern or (pattern.endswith(".*") and (module + ".").startswith(pattern[:-1])):
                return layer
    return None


def modules() -> dict[str, Path]:
    """Every module of the four packages (``fsc.sweep.driver``); a package's ``__init__`` is the package."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def roots() -> set[str]:
    return {name for name, path in modules().items() if path.name == "__init__.py"}


#: Calls that import the module named by their first argument.
DYNAMIC = {("importlib", "import_module"), ("runpy", "run_module"), (None, "__import__")}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``name`` imports (at any depth of the file), by statement or by name."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                out.add(candidate if candidate in known else base)
        elif isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
    out |= dynamic_imports(tree)
    return {module for module in out if module in known and module != name}


def dynamic_imports(tree: ast.Module) -> set[str]:
    """The modules ``tree`` imports by name: the first argument of an importing call (:data:`DYNAMIC`), and the
    word after ``"-m"`` in a list or tuple (a command line), each a string or a module-level string constant."""
    constants = {
        target.id: node.value.value
        for node in tree.body if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets if isinstance(target, ast.Name)
    }  # fmt: skip

    def text(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return constants.get(node.id) if isinstance(node, ast.Name) else None

    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            function = node.func
            owner = function.value.id if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) else None
            called = function.attr if isinstance(function, ast.Attribute) else function.id if isinstance(function, ast.Name) else None
            if (owner, called) in DYNAMIC:
                found.add(text(node.args[0]))
        elif isinstance(node, (ast.List, ast.Tuple)):
            words = [text(element) for element in node.elts]
            found |= {words[i + 1] for i, word in enumerate(words[:-1]) if word == "-m"}
    return {module for module in found if module}


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports(name, path, set(found)) for name, path in found.items()}


def test_every_module_has_a_layer():
    assert not [m for m in modules() if layer_of(m) is None], sorted(m for m in modules() if layer_of(m) is None)


def test_imports_point_down_and_make_no_cycle():
    g = graph()
    edges = {(a, b) for a, targets in g.items() for b in targets}
    upward = sorted((a, b) for a, b in edges if layer_of(b) > layer_of(a))
    assert not upward, f"imports pointing up: {upward}"
    # No cycle: repeatedly remove the modules that import nothing left.
    left = {a for a, _ in edges} | {b for _, b in edges}
    while True:
        sinks = {m for m in left if not any(a == m and b in left for a, b in edges)}
        if not sinks:
            break
        left -= sinks
    assert not left, f"an import cycle among (or below) these modules: {sorted(left)}"


def test_nothing_imports_the_command_line():
    g = graph()
    inside = lambda m: m == "fsc.cli" or m.startswith("fsc.cli.") or m == "fsc.__main__"
    users = sorted(a for a, targets in g.items() for b in targets if inside(b) and not inside(a))
    assert not users, f"the command line is imported by {users}"


def test_the_check_sees_an_upward_import_and_a_cycle(tmp_path):
    """The walker itself: an upward import and a two-module cycle written to files are both found."""
    (tmp_path / "low.py").write_text("def f():\n    from fsc.cli import main\n")
    (tmp_path / "a.py").write_text("from fsc.sweep import spec\n")
    known = set(modules())
    assert imports("fsc.evaluate", tmp_path / "low.py", known) == {"fsc.cli"}
    assert layer_of("fsc.cli") > layer_of("fsc.evaluate")
    assert imports("fsc.sweep.summary", tmp_path / "a.py", known) == {"fsc.sweep.spec"}


def test_the_check_sees_imports_by_name(tmp_path):
    """A module loaded by name, through importlib, runpy, ``__import__`` or ``python -m``, is an import too."""
    known = set(modules())
    cases = {
        "importlib.py": "import importlib\n\ndef f():\n    importlib.import_module('fsc.cli')\n",
        "runpy.py": "import runpy\nTRAINER = 'fsc.cli'\n\ndef f():\n    runpy.run_module(TRAINER, run_name='__main__')\n",
        "dunder.py": "def f():\n    return __import__('fsc.cli')\n",
        "command.py": "import sys\nCOMMAND = [sys.executable, '-m', 'fsc.cli', 'train']\n",
    }
    for file, source in cases.items():
        (tmp_path / file).write_text(source)
        assert imports("fsc.sweep.worker", tmp_path / file, known) == {"fsc.cli"}, file
    (tmp_path / "plain.py").write_text("import importlib\nNAME = 'fsc.cli'\nimportlib.import_module(name_given_later)\n")
    assert imports("fsc.sweep.worker", tmp_path / "plain.py", known) == set()


def test_the_layout_page_lists_every_module_of_fsc():
    """docs/layout.md's tree names every file of ``fsc/`` in its folder, and nothing that is not there."""
    text = (ROOT / "docs" / "layout.md").read_text()
    tree = text[text.index("```\n") + 4 : text.index("```", text.index("```\n") + 4)]
    listed, folders = set(), []
    for line in tree.splitlines():
        name = line.split()[0] if line.strip() else ""
        depth = (len(line) - len(line.lstrip())) // 2
        if not name or depth == 0 and name != "fsc/":
            folders = []
            continue
        folders = folders[:depth]
        if name.endswith("/"):
            folders.append(name.rstrip("/"))
        else:
            listed.add("/".join([*folders, name]))
    present = {str(p.relative_to(ROOT)) for p in (ROOT / "fsc").rglob("*.py") if p.name not in ("__init__.py", "__main__.py")}
    assert listed == present, f"missing from docs/layout.md: {sorted(present - listed)}; listed but absent: {sorted(listed - present)}"
