"""q of a policy file by a chain built here, with numpy only, from the paper's definitions: no fsc code runs.

A referee's evaluator. It reads the file as docs/formats.md describes it (``architecture`` JSON, ``logits``
``(N, C)``, ``init_logits`` ``(N,)`` with ``-inf`` where a reset never starts; each row a softmax), builds the
nodes and moves of RAM (Definition 3.1) and Memento (Definition 3.2) from their labels, and solves each
hypothesis's chain with its reset by GTH elimination (no subtraction, so accurate however slowly it mixes).
"""

from __future__ import annotations

import itertools
import json

import numpy as np


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _labels(spec: dict) -> tuple[list[str], list[str], callable]:
    """Node labels, choice labels and ``move(node, choice, o) -> node label`` of a RAM or Memento of two arms."""
    if spec["kind"] == "RAM":
        M = spec["M"]
        nodes = [f"{i}_" for i in range(1, M + 1)] + [f"{i}{x}{o}" for i in range(1, M + 1) for x in "AB" for o in "+-"]
        return nodes, [f"{i}{x}" for i in range(1, M + 1) for x in "AB"], lambda node, choice, o: choice + o
    if spec["kind"] == "Memento":
        m = spec["m"]
        nodes = ["_"]
        for length in range(1, m + 1):  # histories oldest first, symbols in the order A+, A-, B+, B-
            for word in itertools.product(["A+", "A-", "B+", "B-"], repeat=length):
                nodes.append("".join(s[0] for s in word) + "".join(s[1] for s in word))

        def move(node: str, arm: str, o: str) -> str:
            half = 0 if node == "_" else len(node) // 2
            arms, signs = ("", "") if node == "_" else (node[:half], node[half:])
            return (arms + arm)[-m:] + (signs + o)[-m:]

        return nodes, ["A", "B"], move
    raise ValueError(f"no independent chain for {spec['kind']!r}")


def _gth_stationary(A: np.ndarray) -> np.ndarray:
    """Stationary distribution of the row-stochastic ``A`` (A[i, j]: i -> j), Grassmann-Taksar-Heyman."""
    A = A.copy()
    n = len(A)
    for k in range(n - 1, 0, -1):
        s = A[k, :k].sum()
        A[:k, k] /= s
        A[:k, :k] += np.outer(A[:k, k], A[k, :k])
    p = np.zeros(n)
    p[0] = 1.0
    for k in range(1, n):
        p[k] = p[:k] @ A[:k, k]
    return p / p.sum()


def independent_q(path, mu: float, reset: float, convention: str) -> float:
    """The probability of playing the worse arm (``native``), or the paper's ``(1 - r) q + r / 2``, of the file."""
    with np.load(path, allow_pickle=False) as f:
        spec = json.loads(str(f["architecture"]))
        pi, p0 = _softmax(f["logits"]), _softmax(f["init_logits"])
    nodes, choices, move = _labels(spec)
    index = {label: k for k, label in enumerate(nodes)}
    assert pi.shape == (len(nodes), len(choices)) and p0.shape == (len(nodes),)
    q = 0.0
    for better in "AB":  # the two hypotheses, equally likely, each a closed part
        A = np.zeros((len(nodes), len(nodes)))
        worse = np.zeros(len(nodes))
        for n, node in enumerate(nodes):
            for c, choice in enumerate(choices):
                arm = choice[-1]
                pay = (1 + mu) / 2 if arm == better else (1 - mu) / 2
                A[n, index[move(node, choice, "+")]] += pi[n, c] * pay
                A[n, index[move(node, choice, "-")]] += pi[n, c] * (1 - pay)
                worse[n] += pi[n, c] * (arm != better)
        A = (1 - reset) * A + reset * p0[None, :]  # the reset, from every node, to where resets start
        q += 0.5 * float(_gth_stationary(A) @ worse)
    return q if convention == "native" else (1 - reset) * q + reset / 2
