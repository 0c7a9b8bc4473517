"""A Rosenbrock run that stops as converged is at a stationary point (issue 51): its tolerance is bounded, so that
accepted steps cannot leap to a saturated point of another basin where the gain merely stops changing."""

from __future__ import annotations

import numpy as np
import pytest

import tasks
from fsc.objective import Objective
from fsc.optim import MAX_ROSENBROCK_TOLERANCE, Rosenbrock

#: The stated bound: at a converged point no node gains more than this, per unit of probability moved, by any
#: choice over its current mixture (the first-order optimality residual on the simplices; the rewards lie in [0, 1]).
STATIONARY = 1e-5


def stationarity(world, policy, reset: float) -> float:
    """``max_n (max_c g(n, c) - sum_c pi(c | n) g(n, c))`` over the nodes and the initial node, with ``g`` the
    gradient of the gain in the probabilities (:meth:`fsc.objective.Objective.look`): 0 at a stationary point of
    the gain on the product of simplices, positive where a choice of probability near 0 would gain (there the
    gradient in the logits vanishes however far the point is from stationary)."""
    objective = Objective(world=world, architecture=policy.architecture, reset=reset)
    probs, init = policy.probs().detach().numpy(), policy.init_probs().detach().numpy()
    look = objective.look(probs, init)
    grad = np.where(policy.architecture.allowed, look.grad, -np.inf)
    nodes = (grad.max(axis=1) - (probs * look.grad).sum(axis=1)).max()
    mask = policy.architecture.reset_mask
    return float(max(nodes, look.grad_init[mask].max() - (init[mask] * look.grad_init[mask]).sum()))


@pytest.mark.parametrize("tolerance", [MAX_ROSENBROCK_TOLERANCE, 1e-3, 1e-5])
def test_a_converged_run_is_at_a_stationary_point(tmp_path, tolerance):
    from fsc.train import run_training

    world = tasks.TwoHypothesis(0.1)
    gains = []
    for seed in (0, 1, 2):
        result = run_training(memory="ram:2", init="random", seed=seed, optimizer="rosenbrock", tolerance=tolerance,
                              out=tmp_path / f"run{seed}", quiet=True, max_steps=20_000)  # fmt: skip
        assert result.stop == "converged"
        assert stationarity(world, result.policy, 1e-3) <= STATIONARY
        gains.append(result.gain)
    assert max(gains) - min(gains) <= 1e-10  # the three starts end at the same point, whatever the tolerance


def test_the_tolerance_is_bounded():
    Rosenbrock(tolerance=MAX_ROSENBROCK_TOLERANCE)
    for tolerance in (MAX_ROSENBROCK_TOLERANCE * (1 + 1e-12), 1.0, 100.0, 1e10):
        with pytest.raises(ValueError, match=r"tolerance must be in \(0, 0.01\]"):
            Rosenbrock(tolerance=tolerance)
