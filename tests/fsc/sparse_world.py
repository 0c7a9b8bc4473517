"""A random sparse world as `.POMDP` text, of any size: the tests' and the benchmarks' world whose graph has no
structure (an expander), where a sparse LU of its chains fills in the most."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fsc.solver.graph import Model


def sparse_world_text(S: int = 2000, A: int = 4, O: int = 30, fanout: int = 3, seed: int = 0) -> str:
    """``S`` states: from each state each action reaches ``fanout`` states drawn at random (Dirichlet weights), with a
    normal reward; each end state gives 2 of the ``O`` observations, each with probability 0.5; the start is state 0."""
    rng = np.random.default_rng(seed)
    lines = [f"discount: 0.95\nvalues: reward\nstates: {S}\nactions: {A}\nobservations: {O}\nstart: 0"]
    for s in range(S):
        for a in range(A):
            targets, weights = rng.choice(S, fanout, replace=False), rng.dirichlet(np.ones(fanout))
            lines += [f"T: {a} : {s} : {t} {float(w)!r}" for t, w in zip(targets, weights, strict=True)]
            lines.append(f"R: {a} : {s} : * : * {float(rng.normal())!r}")
    for s in range(S):
        o1, o2 = rng.choice(O, 2, replace=False)
        lines.append(f"O: * : {s} : {o1} 0.5\nO: * : {s} : {o2} 0.5")
    return "\n".join(lines) + "\n"


def random_model(rng: np.random.Generator, S: int = 6, A: int = 3, O: int = 4) -> tuple[Model, np.ndarray, np.ndarray]:
    """A small random world's tables for belief computations (discount 0.9, uniform start), with zeros in its
    transitions and observations, and its dense transition ``(A, S, S)`` and observation ``(A, S, O)`` tables."""
    transition = rng.random((A, S, S)) * (rng.random((A, S, S)) < 0.5) + np.eye(S)[None]
    transition /= transition.sum(axis=2, keepdims=True)
    observation = rng.random((A, S, O)) * (rng.random((A, S, O)) < 0.6) + np.eye(O)[None, np.arange(S) % O]
    observation /= observation.sum(axis=2, keepdims=True)
    backward = tuple(sp.csr_matrix(t) for t in transition)
    world = Model(discount=0.9, reward=rng.normal(size=(S, A)), forward=tuple(t.T.tocsr() for t in backward), backward=backward,
                  observation=observation, initial=np.full(S, 1 / S))  # fmt: skip
    return world, transition, observation
