"""Cases whose answer is derived by hand (in the docstrings), not by the code under test."""

import numpy as np
import pytest
import torch

import fsc
import tasks


def win_stay_lose_shift(arch):
    """Memento(1): after a win play the same arm, after a loss the other; the empty history plays 1/2."""
    probs = np.zeros((arch.num_nodes, 2))
    probs[arch.node_index("_")] = 0.5
    probs[arch.node_index("A+"), 0] = probs[arch.node_index("A-"), 1] = 1
    probs[arch.node_index("B+"), 1] = probs[arch.node_index("B-"), 0] = 1
    return fsc.Policy.from_probs(arch, probs)


@pytest.mark.parametrize("mu", [0.1, 0.37, 0.9])
@pytest.mark.parametrize("reset", [1.0, 0.3, 1e-3, 1e-7])
@pytest.mark.parametrize("engine", ["dense", "power"])
def test_win_stay_lose_shift(mu, reset, engine):
    """Under H_A with p = (1 + mu)/2, whatever arm was played, the next arm is B
    with probability 1 - p (A lost, or B won).  After a reset the empty history
    plays B with probability 1/2.  So q = r/2 + (1 - r)(1 - mu)/2 (native),
    gain = mu (1 - 2q) = (1 - r) mu^2, and the paper convention's gain is
    (1 - r) times it: q_paper = (1 - (1 - r)^2 mu) / 2."""
    arch = fsc.Memento(1)
    world, policy = tasks.TwoHypothesis(mu), win_stay_lose_shift(arch)
    native = fsc.evaluate(world, policy, reset=reset, engine=engine)
    assert float(native.metrics["q"]) == pytest.approx(reset / 2 + (1 - reset) * (1 - mu) / 2, rel=1e-12, abs=0)
    assert float(native.gain) == pytest.approx((1 - reset) * mu**2, rel=1e-12, abs=1e-15)
    paper = fsc.evaluate(world, policy, reset=reset, engine=engine, convention="paper")
    assert float(paper.metrics["q"]) == pytest.approx((1 - (1 - reset) ** 2 * mu) / 2, rel=1e-12, abs=0)


@pytest.mark.parametrize("arms", [2, 3, 4])
def test_uniform_policy_plays_the_worse_arm_with_probability_one_minus_one_over_arms(arms):
    arch = fsc.RAM(3, arms=arms)
    result = fsc.evaluate(tasks.TwoHypothesis(0.5, arms=arms), fsc.Policy.uniform(arch), reset=0.01)
    assert float(result.metrics["q"]) == pytest.approx(1 - 1 / arms, rel=1e-13)


def test_ram1_always_a():
    """RAM(1) always playing A: q = 1/2 (H_B), gain = mu/2 * 1 + (-mu)/2... = 0 on average."""
    arch = fsc.RAM(1)
    probs = np.zeros((arch.num_nodes, 2))
    probs[:, 0] = 1
    result = fsc.evaluate(tasks.TwoHypothesis(0.4), fsc.Policy.from_probs(arch, probs), reset=0.2)
    assert float(result.metrics["q"]) == pytest.approx(0.5, abs=1e-15)
    assert float(result.gain) == pytest.approx(0.0, abs=1e-15)
    # Under each hypothesis the stationary mass sits on the reset node (r) and on 1A+ / 1A- as k_A, k_B.
    p = result.distribution[0, 0]  # H_A
    assert float(p[arch.node_index("1_")]) == pytest.approx(0.2, rel=1e-13)
    assert float(p[arch.node_index("1A+")]) == pytest.approx(0.8 * 0.7, rel=1e-13)
    assert float(p[arch.node_index("1A-")]) == pytest.approx(0.8 * 0.3, rel=1e-13)


def test_general_pair_ka_kb():
    """k_A = 0.9, k_B = 0.6 (k_A + k_B != 1), always play A: q = 1/2 and
    gain = (2 k_A - 1 + 2 k_B - 1)/2 = 0.5."""
    arch = fsc.RAM(1)
    probs = np.zeros((arch.num_nodes, 2))
    probs[:, 0] = 1
    result = fsc.evaluate(tasks.TwoHypothesis(k_A=0.9, k_B=0.6), fsc.Policy.from_probs(arch, probs), reset=0.2)
    assert float(result.gain) == pytest.approx(0.5, rel=1e-13)
    assert float(result.metrics["q"]) == pytest.approx(0.5, rel=1e-13)


def test_disallowed_choices_have_zero_probability_and_no_gradient():
    arch = fsc.Column(3)
    policy = fsc.Policy.random(arch, 0).requires_grad_()
    assert (policy.probs()[torch.from_numpy(~arch.allowed)] == 0).all()
    fsc.evaluate(tasks.TwoHypothesis(0.2), policy, reset=0.01).gain.backward()
    assert (policy.logits.grad[torch.from_numpy(~arch.allowed)] == 0).all()
    assert (policy.logits.grad[torch.from_numpy(arch.allowed.copy())] != 0).any()
    assert (policy.init_logits.grad[torch.from_numpy(~arch.reset_mask)] == 0).all()


def test_world_parts_are_the_hypotheses():
    world = tasks.TwoHypothesis(0.2, arms=3).pomdp
    assert world.parts == ((0,), (1,), (2,))


def test_padded_parts_of_unequal_size():
    """A world with a 2-state part and a 1-state part: in the 2-state part the
    state flips every step whatever the action; the reward is +1 in state 1.
    With a single-node memory, the stationary distribution of the flip chain with
    reset to state 0: p1 = (1-r) p0, p0 = r + (1-r) p1 -> p1 = (1-r)/(2-r)."""
    S, A, O = 3, 1, 1
    T = np.zeros((S, A, S))
    T[0, 0, 1] = T[1, 0, 0] = T[2, 0, 2] = 1
    R = np.zeros((S, A, S, O))
    R[:, :, 1, :] = 1  # reward for arriving in state 1
    world = fsc.POMDP(transition=T, observation=np.ones((A, S, O)), reward=R, initial=[0.5, 0, 0.5])
    assert world.parts == ((0, 1), (2,))

    arch = fsc.Memento(1, arms=1, observations=1)
    r = 0.1
    result = fsc.evaluate(world, fsc.Policy.uniform(arch), reset=r)
    # The step from state 0 earns 1 (it arrives in 1): gain = 0.5 * P(state 0 in part 1) + 0 in part 2.
    p0 = 1 - (1 - r) / (2 - r)
    assert float(result.gain) == pytest.approx(0.5 * p0, rel=1e-13)
