"""Generic tests over the registry of architectures and random policies."""

import numpy as np
import pytest
import torch

import fsc
import tasks
from fsc.testing import check_architecture, check_policy

from .registry import ARCHITECTURES, ids

RESET = 0.05


def world_for(arch):
    return tasks.TwoHypothesis(0.2, arms=arch.arms)


@pytest.mark.parametrize("arch", ARCHITECTURES, ids=ids)
def test_architecture_tables(arch):
    check_architecture(arch)


@pytest.mark.parametrize("arch", ARCHITECTURES, ids=ids)
def test_joint_chain_is_stochastic(arch):
    policy = fsc.Policy.random(arch, 1)
    chain = fsc.joint_chain(world_for(arch).pomdp, arch)
    P = chain.dense(policy.probs())
    # P[k, x2, x]: every column (the distribution of the next state) sums to 1.
    torch.testing.assert_close(P.sum(dim=1), torch.ones(chain.num_parts, chain.size), rtol=0, atol=1e-13)
    assert (P >= 0).all()


@pytest.mark.parametrize("arch", ARCHITECTURES, ids=ids)
def test_dense_and_power_agree(arch):
    world = world_for(arch)
    policy = fsc.Policy.random(arch, 2)
    for reset in (1e-1, 1e-3):
        dense = fsc.evaluate(world, policy, reset=reset, engine="dense")
        power = fsc.evaluate(world, policy, reset=reset, engine="power")
        assert abs(float(dense.gain) - float(power.gain)) < 1e-10
        assert abs(float(dense.metrics["q"]) - float(power.metrics["q"])) < 1e-10
        torch.testing.assert_close(dense.distribution, power.distribution, rtol=0, atol=1e-10)
        assert dense.residual < 1e-12 and power.residual < 1e-12


@pytest.mark.parametrize("arch", ARCHITECTURES, ids=ids)
def test_gain_is_mu_times_one_minus_two_q(arch):
    # Two-hypothesis identity: E[reward] = k_A (1 - q) + k_B q mapped to +-1.
    world = world_for(arch)
    result = fsc.evaluate(world, fsc.Policy.random(arch, 3), reset=RESET)
    q = float(result.metrics["q"])
    expected = (1 - q) * (2 * world.k_A - 1) + q * (2 * world.k_B - 1)
    assert abs(float(result.gain) - expected) < 1e-13


def _gradient_check(arch, world, policy, engine):
    def gain(logits, init_logits):
        candidate = fsc.Policy(architecture=arch, logits=logits, init_logits=init_logits)
        return fsc.evaluate(world, candidate, reset=RESET, engine=engine).gain

    logits = policy.logits.detach().clone().requires_grad_(True)
    init_logits = policy.init_logits.detach().clone().requires_grad_(True)
    if logits.numel() <= 300:
        assert torch.autograd.gradcheck(gain, (logits, init_logits), eps=1e-6, atol=1e-9, rtol=1e-5)
        return
    # Larger: autograd against central differences along random directions.
    value = gain(logits, init_logits)
    g_logits, g_init = torch.autograd.grad(value, (logits, init_logits))
    generator = torch.Generator().manual_seed(0)
    for _ in range(3):
        d1 = torch.randn(logits.shape, generator=generator, dtype=torch.float64)
        d2 = torch.randn(init_logits.shape, generator=generator, dtype=torch.float64)
        h = 1e-5
        with torch.no_grad():
            plus = gain(logits + h * d1, init_logits + h * d2)
            minus = gain(logits - h * d1, init_logits - h * d2)
        numeric = float((plus - minus) / (2 * h))
        analytic = float((g_logits * d1).sum() + (g_init * d2).sum())
        assert abs(numeric - analytic) <= 1e-7 * max(1.0, abs(analytic))


@pytest.mark.parametrize("arch", ARCHITECTURES, ids=ids)
def test_gradients(arch):
    _gradient_check(arch, world_for(arch), fsc.Policy.random(arch, 4), "dense")


@pytest.mark.parametrize("arch", [a for a in ARCHITECTURES if a.num_nodes <= 40], ids=ids)
def test_gradients_power_engine(arch):
    _gradient_check(arch, world_for(arch), fsc.Policy.random(arch, 4), "power")


@pytest.mark.parametrize("arch", ARCHITECTURES, ids=ids)
def test_monte_carlo_agrees(arch):
    world = world_for(arch)
    policy = fsc.Policy.random(arch, 5)
    exact = fsc.evaluate(world, policy, reset=RESET)
    sim = fsc.simulate(world, policy, reset=RESET, steps=200_000, seed=6)
    assert abs(sim.metrics["q"] - float(exact.metrics["q"])) <= 4 * sim.stderrs["q"]
    assert abs(sim.gain - float(exact.gain)) <= 4 * sim.gain_stderr
    assert sim.stderrs["q"] < 0.01  # the check has power


@pytest.mark.parametrize("arch", [fsc.RAM(2), fsc.Memento(2)], ids=ids)
def test_monte_carlo_agrees_paper_convention(arch):
    world = tasks.TwoHypothesis(0.3)
    policy = fsc.Policy.random(arch, 7)
    exact = fsc.evaluate(world, policy, reset=0.1, convention="paper")
    sim = fsc.simulate(world, policy, reset=0.1, steps=400_000, seed=8, convention="paper")
    assert abs(sim.gain - float(exact.gain)) <= 4 * sim.gain_stderr
    assert abs(sim.metrics["q"] - float(exact.metrics["q"])) <= 4 * sim.stderrs["q"]


def test_public_policy_checker_passes_on_a_small_controller():
    arch = fsc.Column(2)
    check_policy(tasks.TwoHypothesis(0.3), fsc.Policy.random(arch, 9), reset=0.1, steps=200_000)


def test_public_policy_checker_catches_a_wrong_engine(monkeypatch):
    from fsc.engines.builtin import Dense
    from fsc.engines.registry import ENGINES
    from fsc.engines.sparse import DenseLU

    class WrongLU(DenseLU):
        def solve(self):
            return np.roll(super().solve(), 1, axis=1)

    class Wrong(Dense):
        name = "wrong"
        auto = False

        def backend(self, chain, values, p0, reset, probs):
            return WrongLU(chain, values, p0, reset)

        def fused_constants(self, *args):
            return None  # the Python path, through backend

    monkeypatch.setitem(ENGINES, "wrong", Wrong())
    arch = fsc.RAM(2)
    with pytest.raises(AssertionError, match="disagree"):
        check_policy(tasks.TwoHypothesis(0.3), fsc.Policy.random(arch, 9), reset=0.1, engines=("dense", "wrong"), monte_carlo=False)
