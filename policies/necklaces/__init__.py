"""Binary necklaces, Gray-ordered chains of necklaces and their exit words (paper section 4, appendix D.3).

- :mod:`policies.necklaces.words`: words and necklaces (rotations,
  representatives, enumeration, Polya's count, adjacency) and the check of a
  Gray chain, a simple path of adjacent necklaces from ``A^m`` to ``B^m``.
- :mod:`policies.necklaces.gray`: the necklace graph and the search for the
  longest Gray chain, of length ``n(m)`` (Theorem 4.3).
- :mod:`policies.necklaces.exit_words`: the exit words, the moves of the Memento
  memory from a necklace of the chain to its neighbours.

Imports point one way: ``words`` <- ``gray`` <- ``exit_words``.  Every public
name is re-exported here (``policies.necklaces.gray_chain``).
"""

from __future__ import annotations

from .exit_words import Exit, ExitWords, exit_table, exits
from .gray import GrayChain, gray_chain, n_longest
from .words import (
    adjacent,
    check_chain,
    complement,
    count_necklaces,
    is_complement_symmetric,
    necklace,
    necklaces,
    neighbours,
    rotations,
)

__all__ = [
    "Exit",
    "ExitWords",
    "GrayChain",
    "adjacent",
    "check_chain",
    "complement",
    "count_necklaces",
    "exit_table",
    "exits",
    "gray_chain",
    "is_complement_symmetric",
    "n_longest",
    "necklace",
    "necklaces",
    "neighbours",
    "rotations",
]
