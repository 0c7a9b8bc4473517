"""Graphviz output of memory transition diagrams (docs/model.md).

:func:`render` writes a :class:`~viz.graph.MemoryGraph` (:func:`~viz.graph.memory_graph`) or any
:class:`graphviz.Digraph` as SVG, PNG (running graphviz's ``dot`` program) or DOT.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import graphviz

from fsc.errors import InputError, InputTypeError
from fsc.files import atomic_write

from .graph import MemoryGraph

__all__ = ["FORMATS", "render"]

#: Output formats of :func:`render`.
FORMATS = ("svg", "png", "dot")


def _run_graphviz(source: str, engine: str, fmt: str, timeout: float) -> bytes:
    """``dot -K<engine> -T<fmt>`` on ``source``; on a timeout, once more with straight edges."""
    program = shutil.which("dot")
    if program is None:
        raise RuntimeError("graphviz's dot program is missing: install graphviz (apt-get install graphviz)")
    attempts = [source]
    if "splines" in source:
        attempts.append(re.sub(r"splines=(\"?)(true|curved|spline)\1", "splines=line", source))
    for k, text in enumerate(attempts):
        try:
            done = subprocess.run([program, f"-K{engine}", f"-T{fmt}"], input=text.encode(), capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            if k + 1 < len(attempts):
                continue
            raise RuntimeError(f"graphviz did not finish within {timeout:g} s") from None
        if done.returncode != 0:
            raise RuntimeError(f"graphviz failed (status {done.returncode}): {done.stderr.decode(errors='replace').strip()}")
        return done.stdout
    raise AssertionError("unreachable")  # pragma: no cover


def render(graph: graphviz.Digraph | MemoryGraph, path: str | os.PathLike, format: str | None = None, *, timeout: float = 60.0) -> Path:
    """Write ``graph`` to ``path`` as SVG, PNG or DOT, atomically.

    The format is ``format`` if given, else the suffix of ``path``
    (``.svg``, ``.png``, ``.dot`` or ``.gv``).  SVG and PNG run graphviz's
    ``dot`` program (with the graph's engine), stopped after ``timeout``
    seconds; if graphviz's spline router does not finish in time (it can
    loop forever on some pinned layouts), the edges are drawn again as
    straight lines.  Returns the path written.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise InputError(f"timeout must be a number of seconds > 0, got {timeout!r}")
    if isinstance(graph, MemoryGraph):
        graph = graph.digraph()
    if not isinstance(graph, graphviz.Digraph):
        raise InputTypeError(f"graph must be a graphviz.Digraph or a viz.MemoryGraph, got {type(graph).__name__}")
    path = Path(path)
    fmt = format if format is not None else path.suffix.lstrip(".")
    if not isinstance(fmt, str):
        raise InputTypeError(f"format must be a str, got {fmt!r}")
    fmt = {"gv": "dot"}.get(fmt.lower(), fmt.lower())
    if fmt not in FORMATS:
        raise InputError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r} (for {str(path)!r})")
    data = graph.source.encode() if fmt == "dot" else _run_graphviz(graph.source, graph.engine, fmt, timeout)
    atomic_write(path, lambda f: f.write(data))
    return path
