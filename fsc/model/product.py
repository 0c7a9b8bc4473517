"""Products of memory architectures: two memories updated side by side."""

from __future__ import annotations

import numpy as np

from fsc.errors import InputError, InputTypeError
from fsc.model.architecture import Automaton, MemoryArchitecture

__all__ = ["product"]


def product(a: MemoryArchitecture, b: MemoryArchitecture) -> Automaton:
    """Two memories updated side by side by the same action and observation.

    A node is a pair ``(node of a, node of b)``; a choice is a pair of choices
    that play the same world action, allowed when both are; after it and
    observation ``o`` each memory moves as it would alone.  Resets start in
    pairs of reset nodes.  Only the pairs a reset reaches are kept.

    Raises:
        TypeError: arguments that are not architectures.
        ValueError: different action or observation counts, or a reached pair
            with no allowed choice.
    """
    for name, arch in (("a", a), ("b", b)):
        if not isinstance(arch, MemoryArchitecture):
            raise InputTypeError(f"product({name}=...) needs a fsc.MemoryArchitecture, got {type(arch).__name__}")
    if a.num_actions != b.num_actions or a.num_observations != b.num_observations:
        raise InputError(
            f"a product needs the same actions and observations, got {a.num_actions} and {b.num_actions} actions, "
            f"{a.num_observations} and {b.num_observations} observations"
        )
    pairs = [(ca, cb) for ca in range(a.num_choices) for cb in range(b.num_choices) if a.choice_action[ca] == b.choice_action[cb]]
    ca, cb = (np.array([pair[i] for pair in pairs], dtype=np.int64) for i in (0, 1))
    Nb, O = b.num_nodes, a.num_observations
    starts = [na * Nb + nb for na in np.flatnonzero(a.reset_mask) for nb in np.flatnonzero(b.reset_mask)]
    index = {code: i for i, code in enumerate(starts)}
    order = list(starts)
    rows_allowed, rows_next = [], []
    i = 0
    while i < len(order):
        na, nb = divmod(order[i], Nb)
        allowed = a.allowed[na, ca] & b.allowed[nb, cb]
        if not allowed.any():
            raise InputError(f"node {(a.node_labels[na], b.node_labels[nb])!r} of the product has no allowed choice")
        codes = a.next_node[na, ca] * Nb + b.next_node[nb, cb]  # (C, O)
        codes = np.where(allowed[:, None], codes, order[i])
        row = np.empty(codes.shape, dtype=np.int64)
        for flat, code in enumerate(codes.ravel().tolist()):
            j = index.get(code)
            if j is None:
                j = index[code] = len(order)
                order.append(code)
            row.flat[flat] = j
        rows_allowed.append(allowed)
        rows_next.append(row)
        i += 1
    reset = np.zeros(len(order), dtype=bool)
    reset[: len(starts)] = True
    return Automaton.from_tables(
        node_labels=[(a.node_labels[code // Nb], b.node_labels[code % Nb]) for code in order],
        choice_labels=[(a.choice_labels[x], b.choice_labels[y]) for x, y in pairs],
        allowed=np.array(rows_allowed).reshape(len(order), len(pairs)),
        next_node=np.array(rows_next).reshape(len(order), len(pairs), O),
        choice_action=a.choice_action[ca],
        reset_mask=reset,
        actions=a.num_actions,
        observations=O,
    )
