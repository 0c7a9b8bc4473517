"""Checks a user can run on their own architectures and policies.

Each check raises ``AssertionError`` with a message saying what is wrong,
and returns ``None`` when everything holds::

    from fsc.testing import check_architecture, check_policy
    check_architecture(MyCounter(3))
    check_policy(tasks.TwoHypothesis(0.2), Policy.random(MyCounter(3), 0), reset=0.05)
"""

from __future__ import annotations

import numpy as np
import torch

from fsc.evaluate import evaluate
from fsc.model.architecture import MemoryArchitecture
from fsc.model.chain import joint_chain
from fsc.model.policy import Policy
from fsc.model.pomdp import POMDP, Task, as_pomdp
from fsc.simulate import simulate

__all__ = ["check_architecture", "check_policy"]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def check_architecture(arch: MemoryArchitecture) -> None:
    """Check the tables of a memory architecture.

    Shapes and dtypes, indices in range, every node has an allowed choice,
    at least one reset node, unique labels, equality and hashing by value, and
    a round trip through :meth:`MemoryArchitecture.to_dict`.
    """
    _require(isinstance(arch, MemoryArchitecture), f"expected a MemoryArchitecture, got {type(arch).__name__}")
    N, C = arch.num_nodes, arch.num_choices
    A, O = arch.num_actions, arch.num_observations
    allowed, nxt, action, reset = arch.allowed, arch.next_node, arch.choice_action, arch.reset_mask
    _require(allowed.dtype == np.bool_ and allowed.shape == (N, C), f"allowed must be bool of shape (N, C), got {allowed.dtype} {allowed.shape}")
    _require(np.issubdtype(nxt.dtype, np.integer) and nxt.shape == (N, C, O), f"next_node must be integers of shape {(N, C, O)}, got {nxt.dtype} {nxt.shape}")
    _require(bool(((nxt >= 0) & (nxt < N)).all()), f"next_node must be in [0, {N}), got values from {nxt.min()} to {nxt.max()}")
    _require(
        np.issubdtype(action.dtype, np.integer) and action.shape == (C,), f"choice_action must be integers of shape ({C},), got {action.dtype} {action.shape}"
    )
    _require(bool(((action >= 0) & (action < A)).all()), f"choice_action must be in [0, {A})")
    _require(reset.dtype == np.bool_ and reset.shape == (N,), f"reset_mask must be bool of shape ({N},), got {reset.dtype} {reset.shape}")
    _require(bool(reset.any()), "reset_mask must mark at least one node")
    dead = np.flatnonzero(~allowed.any(axis=1))
    _require(len(dead) == 0, f"nodes with no allowed choice: {[arch.node_labels[n] for n in dead[:5]]}")
    for name, labels, size in (("node_labels", arch.node_labels, N), ("choice_labels", arch.choice_labels, C)):
        _require(len(labels) == size, f"{name} must have {size} entries, got {len(labels)}")
        _require(len(set(labels)) == size, f"{name} must be unique")
    copy = MemoryArchitecture.from_dict(arch.to_dict())
    _require(copy == arch and hash(copy) == hash(arch), "an architecture must compare and hash by value (to_dict/from_dict round trip)")
    for table in (allowed, nxt, action, reset):
        _require(not table.flags.writeable, "tables must be read-only arrays")


def check_policy(
    world: POMDP | Task,
    policy: Policy,
    *,
    reset: float = 0.05,
    engines: tuple[str, ...] = ("dense", "power"),
    gradcheck: bool = True,
    monte_carlo: bool = True,
    steps: int = 400_000,
    seed: int = 0,
) -> None:
    """Check a controller end to end in ``world``.

    - probabilities are non-negative, sum to 1, vanish on disallowed choices
      and outside the reset nodes;
    - the columns of the joint transition matrix sum to 1;
    - the ``engines`` agree to 1e-10 on the gain and metrics;
    - ``torch.autograd.gradcheck`` passes on the gain (small chains only);
    - Monte Carlo agrees with exact evaluation within 4 standard errors.
    """
    arch = policy.architecture
    probs, init = policy.probs().detach(), policy.init_probs().detach()
    _require(
        bool((probs >= 0).all()) and torch.allclose(probs.sum(1), torch.ones(arch.num_nodes, dtype=torch.float64)), "probs must be a distribution per node"
    )
    _require(bool((probs[torch.from_numpy(~arch.allowed)] == 0).all()), "disallowed choices must have probability 0")
    _require(bool((init[torch.from_numpy(~arch.reset_mask)] == 0).all()), "initial probability outside the reset nodes must be 0")
    _require(abs(float(init.sum()) - 1) < 1e-12, "initial probabilities must sum to 1")
    chain = joint_chain(as_pomdp(world), arch)
    columns = chain.dense(probs).sum(dim=1)
    _require(bool(torch.allclose(columns, torch.ones_like(columns), atol=1e-12)), "the joint transition matrix must be column stochastic")

    results = {name: evaluate(world, policy, reset=reset, engine=name) for name in engines}
    first = results[engines[0]]
    for name, other in results.items():
        for key in ("gain", *first.metrics):
            a = float(first.gain if key == "gain" else first.metrics[key])
            b = float(other.gain if key == "gain" else other.metrics[key])
            _require(abs(a - b) <= 1e-10 * max(1.0, abs(a)), f"engines {engines[0]} and {name} disagree on {key}: {a!r} vs {b!r}")

    if gradcheck:

        def gain(logits, init_logits):
            candidate = Policy(architecture=arch, logits=logits, init_logits=init_logits)
            return evaluate(world, candidate, reset=reset, engine=engines[0]).gain

        logits = policy.logits.detach().clone().requires_grad_(True)
        init_logits = policy.init_logits.detach().clone().requires_grad_(True)
        finite = torch.isfinite(logits).all() and torch.isfinite(init_logits).all()
        if finite:
            _require(torch.autograd.gradcheck(gain, (logits, init_logits), eps=1e-6, atol=1e-8, rtol=1e-5), "gradcheck failed")

    if monte_carlo:
        sim = simulate(world, policy, reset=reset, steps=steps, seed=seed)
        exact = float(first.gain)
        _require(abs(sim.gain - exact) <= 4 * sim.gain_stderr, f"Monte Carlo gain {sim.gain:.6g} +- {sim.gain_stderr:.2g} is far from the exact {exact:.6g}")
        for key, value in sim.metrics.items():
            exact = float(first.metrics[key])
            _require(abs(value - exact) <= 4 * sim.stderrs[key], f"Monte Carlo {key} {value:.6g} +- {sim.stderrs[key]:.2g} is far from the exact {exact:.6g}")
