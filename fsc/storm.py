"""A second opinion from the Storm model checker (``pip install fsc[storm]``, stormpy).

The joint chain of a controller in a world, built here directly from the
world's tables and the policy (not through :mod:`fsc.model.chain`), is written in
Storm's explicit DRN format and checked by Storm:

- ``R=? [F "stop"]`` on the chain that stops with probability ``1 - gamma``
  each step (an absorbing state ``stop``): the expected total reward before
  stopping is the discounted return ``sum_t gamma^t E[R_t]``.  (Storm's own
  ``Cdiscount`` runs value iteration that stopped 5e-7 short here; the
  reachability reward needs rewards >= 0, so they are
  shifted by their minimum ``m``, which adds ``m / (1 - gamma)``.)
- ``R=? [LRA]`` on the chain with resets (probability ``r`` per step back to
  the initial distribution): the gain.

State ``(s, n)`` carries the expected reward of the step taken there,
``sum_c pi[n, c] sum_{s2, o} T[s, a_c, s2] O[a_c, s2, o] R[s, a_c, s2, o]``.
Storm solves both by state elimination, a direct method: its iterative
solvers (the default, Eigen, gmm++), even asked for a precision of 1e-15,
stopped 1e-8 to 1e-6 short on these chains.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

from fsc.errors import InputError
from fsc.model.pomdp import as_pomdp

__all__ = ["joint_tables", "storm_values"]


def joint_tables(world, policy) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(P, reward, start)`` of the joint chain, dense: ``P[x, x2]`` with ``x = s * N + n``."""
    pomdp = as_pomdp(world)
    arch = policy.architecture
    probs = policy.probs().detach().numpy()
    S, N = pomdp.num_states, arch.num_nodes
    R = np.asarray(pomdp.reward)
    P = np.zeros((S, N, S, N))
    reward = np.zeros((S, N))
    for c in range(arch.num_choices):
        a = arch.choice_action[c]
        for o in range(arch.num_observations):
            step = pomdp.transition[:, a, :] * pomdp.observation[a, None, :, o]  # (s, s2)
            reward += probs[None, :, c] * (step * R[:, a, :, o]).sum(axis=1)[:, None]
            for n in range(N):
                if probs[n, c] > 0:
                    P[:, n, :, arch.next_node[n, c, o]] += probs[n, c] * step
    start = np.outer(pomdp.initial, policy.init_probs().detach().numpy())
    return P.reshape(S * N, S * N), reward.reshape(-1), start.reshape(-1)


def _drn(P: np.ndarray, reward: np.ndarray, start: np.ndarray, stop: int | None = None) -> str:
    lines = [
        "// written by fsc.storm",
        "@type: DTMC",
        "@parameters",
        "",
        "@reward_models",
        "r",
        "@nr_states",
        str(len(P)),
        "@nr_choices",
        str(len(P)),
        "@model",
    ]
    for x in range(len(P)):
        labels = (" init" if start[x] > 0 else "") + (" stop" if x == stop else "")
        lines.append(f"state {x} [{float(reward[x])!r}]{labels}")
        lines.append("\taction 0")
        lines.extend(f"\t\t{int(x2)} : {float(P[x, x2])!r}" for x2 in np.flatnonzero(P[x]))
    return "\n".join(lines) + "\n"


def _check(P: np.ndarray, reward: np.ndarray, start: np.ndarray, formula: str, stop: int | None = None) -> np.ndarray:
    import stormpy

    fd, path = tempfile.mkstemp(suffix=".drn")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(_drn(P, reward, start, stop))
        model = stormpy.build_model_from_drn(path)
    finally:
        os.unlink(path)
    from stormpy.environments import EquationSolverType

    environment = stormpy.Environment()
    environment.solver().set_linear_equation_solver_type(EquationSolverType.ELIMINATION)
    native = environment.solver().native()
    native.precision = stormpy.Rational("1e-15")
    native.relative_termination_criterion = False
    native.maximal_number_of_iterations = 10**8
    result = stormpy.model_checking(model, stormpy.parse_properties(formula)[0], environment=environment)
    return np.array(result.get_value_vector())


def storm_values(world, policy, discount: float) -> dict[str, float]:
    """Storm's ``value`` (discounted return from the initial distribution) and ``gain`` (long-run average with reset ``1 - discount``)."""
    if not 0 < discount < 1:
        raise InputError(f"discount must be in (0, 1), got {discount!r}")
    P, reward, start = joint_tables(world, policy)
    # Storm wants rows that sum to 1 in its own tolerance; ours sum to 1 to rounding.
    P = P / P.sum(axis=1, keepdims=True)
    X = len(P)
    stopping = np.zeros((X + 1, X + 1))
    stopping[:X, :X] = discount * P
    stopping[:X, X] = 1 - discount
    stopping[X, X] = 1.0
    # Storm's total rewards must be >= 0: shift them by their minimum m, which adds m / (1 - gamma).
    m = min(float(reward.min()), 0.0)
    shifted = _check(stopping, np.append(reward - m, 0.0), np.append(start, 0.0), 'R=? [F "stop"]', stop=X)[:X]
    value = float(start @ shifted) + m / (1 - discount)
    r = 1 - discount
    with_reset = (1 - r) * P + r * start[None, :]
    gain = _check(with_reset, reward, start, "R=? [LRA]")
    return {"value": value, "gain": float(start @ gain)}
