"""The layers of the code: every import points down, and the import graph has no cycle.

Each module of the four packages has a layer; a module may import its own layer or a lower one, never a
higher one.  Imports inside functions count too (they are how cycles hide).  Importing a package root
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
    0: {"fsc.errors", "fsc.checks", "fsc.limits", "fsc.files"},
    1: {"fsc.model.*", "tasks.*"},
    2: {"fsc.engines.*"},
    3: {"fsc.evaluate", "fsc.simulate", "fsc.objective", "fsc.optim", "fsc.bounds", "fsc.testing", "fsc.storm", "fsc.io.*"},
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


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``name`` imports (at any depth of the file)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
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
    return {module for module in out if module in known and module != name}


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
