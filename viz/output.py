"""Graphviz output of memory transition diagrams (docs/model.md).

:func:`memory_graph` builds the diagram of a policy (:func:`~viz.graph.build_memory_graph`)
and returns it as a :class:`graphviz.Digraph`; :func:`render` writes a digraph or a
:class:`~viz.graph.MemoryGraph` as SVG, PNG (running graphviz's ``dot`` program) or DOT.
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
from fsc.model.architecture import MemoryArchitecture
from fsc.model.policy import Policy

from .graph import MemoryGraph, build_memory_graph

__all__ = ["FORMATS", "memory_graph", "render"]

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


def memory_graph(
    architecture: MemoryArchitecture,
    policy: Policy,
    *,
    threshold: float = 1e-3,
    layout: str = "auto",
    warmup: bool = False,
    occupancy=None,
    title: str | None = None,
) -> graphviz.Digraph:
    """The memory transition diagram of ``policy`` as a :class:`graphviz.Digraph`.

    Nodes are memory states (merged architecture nodes, see
    :mod:`viz.display`), edges the transitions of probability ``>= threshold``,
    labelled by condition and probability.  The column of confidence policy
    is drawn as the paper's two columns (Figure 1C), the necklace policy as
    its chain of necklaces (Figure 3).  Arguments as in
    :func:`build_memory_graph`; write the result with :func:`render`.
    """
    return build_memory_graph(architecture, policy, threshold=threshold, layout=layout, warmup=warmup, occupancy=occupancy, title=title).digraph()


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
