"""Seed s draws the published code's initial policy for seed s, laid onto our node order.

The reference below is written from the published script's description, not from our code: its state and
action names (RAM ``"00  "``, ``"03A+"``, ``"03A"``; Memento ``" A +"``, ``"AB+-"``), its tensor order, its
calls (``torch.manual_seed``, ``torch.randn(states, actions)`` then ``torch.randn(initial states)``, float64
by default) and its arithmetic; the two are compared through the node *labels*, to the bit.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import fsc
from policies import initial_policy


def published_states(kind: str, size: int) -> tuple[list[str], list[str], int]:
    arms = ("A", "B")
    if kind == "ram":
        memory = [f"{i:02d}" for i in range(size)]
        actions = ["".join(p) for p in itertools.product(memory, arms)]
        states = [m + "  " for m in memory] + ["".join(p) for p in itertools.product(memory, arms, "+-")]
        return states, actions, size
    states = []
    for n in range(size + 1):
        pad = " " * (size - n)
        states += [pad + "".join(h) + pad + "".join(o) for h in itertools.product(arms, repeat=n) for o in itertools.product("+-", repeat=n)]
    return states, list(arms), 1


def published_start(kind: str, size: int, init: str, seed: int) -> tuple[list[str], list[str], torch.Tensor, torch.Tensor]:
    states, actions, n_init = published_states(kind, size)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        torch.manual_seed(seed)
        pi = torch.randn(len(states), len(actions)).mul(1.0)
        if init in ("randn_lin", "randn_u"):
            pi = pi.softmax(1)
            for i, s in enumerate(states):
                for j, a in enumerate(actions):
                    if abs(int(s[:2]) - int(a[:2])) > 1:
                        pi[i, j] = 0.0
                    if init == "randn_u" and s[2] != " " and s[2] != a[2] and int(s[:2]) > 0:
                        pi[i, j] = 0.0
            pi = (pi / pi.sum(1, True) + 1e-4).log()
        elif init == "randn_cycles":
            pi = pi.softmax(1)
            for i, s in enumerate(states):
                if s[0] == " ":
                    continue
                x = torch.tensor([{"A": 1.0, "B": -1.0, "+": 1.0, "-": -1.0, " ": 0.0}[c] for c in s])
                if (x[:size] * x[size:]).var() > 0.0:
                    pi[i] = 0.0
                    pi[i, actions.index(s[0])] = 1.0
            pi = pi + 1e-4
            pi = pi.log()
        p0 = torch.randn(n_init).mul(1.0)
    finally:
        torch.set_default_dtype(previous)
    return states, actions, pi, p0


def our_label(kind: str, name: str) -> str:
    """A published state or action name as our label: RAM memories count from 1, blanks become ``_``."""
    if kind == "ram":
        return f"{int(name[:2]) + 1}{name[2:].strip() or '_'}"
    return name.replace(" ", "") or "_"


CASES = [("ram", M, "random", "randn") for M in (1, 2, 8, 20)] + [
    ("ram", 8, "linear", "randn_lin"),
    ("ram", 20, "linear", "randn_lin"),
    ("ram", 8, "columns", "randn_u"),
    ("ram", 20, "columns", "randn_u"),
] + [("memento", m, "random", "randn") for m in (1, 2, 3, 4)] + [("memento", m, "cycles", "randn_cycles") for m in (2, 3, 4)]


@pytest.mark.parametrize(("kind", "size", "ours", "theirs"), CASES)
@pytest.mark.parametrize("seed", [0, 1, 7, 19])
def test_seed_by_seed_the_published_start(kind, size, ours, theirs, seed):
    arch = fsc.RAM(size) if kind == "ram" else fsc.Memento(size)
    policy = initial_policy(ours, arch, seed=seed)
    states, actions, pi, p0 = published_start(kind, size, theirs, seed)
    nodes = {label: n for n, label in enumerate(arch.node_labels)}
    choices = {label: c for c, label in enumerate(arch.choice_labels)}
    assert sorted(nodes) == sorted(our_label(kind, s) for s in states)  # the same memory, named two ways
    rows = [nodes[our_label(kind, s)] for s in states]
    columns = [choices[our_label(kind, a)] for a in actions]
    logits = policy.logits.detach().numpy()
    assert np.array_equal(logits[np.ix_(rows, columns)], pi.numpy())
    initial = policy.init_logits.detach().numpy()[rows[: len(p0)]]
    assert np.array_equal(initial, p0.numpy())
    assert arch.reset_mask[rows[: len(p0)]].all() and arch.reset_mask.sum() == len(p0)


def test_the_draws_depend_on_the_seed_and_only_on_it():
    a, b = (initial_policy("random", fsc.Memento(3), seed=s).logits for s in (0, 1))
    assert not torch.equal(a, b)
    assert torch.equal(a, initial_policy("random", fsc.Memento(3), seed=0).logits)
