"""Sizes nobody can afford, refused before anything is allocated.

Estimates are computed from the arguments alone (exact integer arithmetic, stopping as soon as the limit is
passed, so absurd sizes cost nothing) and compared with a fixed limit; the error names the option, the
estimate and the limit.
"""

from __future__ import annotations

__all__ = ["MAX_NODES", "check_memento_nodes", "memento_nodes"]

#: The largest memory (number of nodes) any architecture may have. A policy alone holds ``N * C`` float64
#: logits and every engine several vectors of length ``N * states``; ``memento:11`` (5.6 million nodes) is
#: the first Memento above this limit.
MAX_NODES = 2**22


def memento_nodes(m: int, symbols: int, *, stop_above: int | None = None) -> int:
    """``N = sum_{l=0}^m symbols**l`` (paper Definition 3.2), or the first partial sum above ``stop_above``."""
    total, term = 0, 1
    for _ in range(m + 1):
        total += term
        if stop_above is not None and total > stop_above:
            return total
        term *= symbols
    return total


def check_memento_nodes(m: int, arms: int, observations: int, *, limit: int = MAX_NODES) -> None:
    """Raise ``ValueError`` when ``memento:m`` would have more than ``limit`` nodes."""
    if memento_nodes(m, arms * observations, stop_above=limit) <= limit:
        return
    # Past the limit: give the exact count when it is cheap to write down, a bound otherwise.
    shown = f"{memento_nodes(m, arms * observations):,}" if m <= 64 else f"more than {limit:,}"
    raise ValueError(
        f"memory memento:{m} would have {shown} nodes (estimate), over the limit of {limit:,} nodes; "
        "choose a smaller m"
    )
