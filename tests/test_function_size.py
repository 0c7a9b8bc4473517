"""The package reads in short functions: none in ``fsc/`` is longer than 60 lines (from ``def`` to its last
line, docstring included)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MOST_LINES = 60


def long_functions(path: Path, root: Path = ROOT, most: int = MOST_LINES) -> list[str]:
    """``file:line name (lines)`` of every function or method of ``path`` longer than ``most`` lines."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > most:
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_in_fsc_is_longer_than_60_lines():
    files = sorted((ROOT / "fsc").rglob("*.py"))
    assert len(files) >= 60, files
    long = [entry for path in files for entry in long_functions(path)]
    assert not long, long


def test_the_check_sees_a_long_function(tmp_path):
    (tmp_path / "long.py").write_text("def f():\n" + "    x = 1\n" * 60 + "\n\ndef g():\n    return 1\n")
    assert long_functions(tmp_path / "long.py", tmp_path) == ["long.py:1 f (61 lines)"]
