"""The chain after each choice (engine ``choices``): its factors rebuild the chain, its solves are exact."""

import attrs
import numpy as np
import pytest
import torch

import fsc
import tasks
from fsc.engines import kernels
from fsc.model.chain import after_choice_next
from fsc.objective import Objective

from .registry import ARCHITECTURES, ids, padded_world

QUALIFIED = [arch for arch in ARCHITECTURES if not isinstance(arch, fsc.Memento)]


def factors(chain, probs):
    """Dense ``G (K, X, Y)`` and ``Pi (K, Y, X)`` from the tables and from the definition of ``Pi``."""
    t = chain.after_choice
    K, S, X, Y = chain.num_parts, chain.states_per_part, chain.size, t.size
    N, C = probs.shape
    G = np.zeros(K * X * Y)
    np.add.at(G, (t.g_rows // X) * X * Y + (t.g_rows % X) * Y + t.g_cols % Y, t.g_weight)
    Pi = np.zeros((K, Y, X))
    for k in range(K):
        for s in range(S):
            if t.valid[k, s]:
                Pi[k, s * C : (s + 1) * C, s * N : (s + 1) * N] = probs.T
    return G.reshape(K, X, Y), Pi


@pytest.mark.parametrize(
    ("world", "arch"),
    [(tasks.TwoHypothesis(0.2, arms=a.arms).pomdp, a) for a in QUALIFIED[::3]] + [(padded_world(), fsc.RAM(2)), (tasks.Tiger().pomdp, fsc.Column(3, arms=3))],
    ids=lambda x: ids(x) if isinstance(x, fsc.MemoryArchitecture) else "",
)
def test_the_factors_rebuild_the_chain(world, arch):
    """``G Pi`` plus the padding's self-loops is the chain's ``P``; ``B^T`` is ``I - a (Pi G)^T``."""
    chain = fsc.joint_chain(world, arch)
    policy = fsc.Policy.random(arch, 4)
    probs = policy.probs().detach().numpy()
    G, Pi = factors(chain, probs)
    P = chain.dense(policy.probs().detach()).numpy()
    np.testing.assert_allclose(G @ Pi + np.eye(chain.size) * chain.padding[:, None, :], P, rtol=0, atol=1e-15)
    t, a = chain.after_choice, 1 - 0.01
    B_t = kernels.after_choice_system_t(t.b_index_t, t.b_node_choice, t.b_weight, probs, a, t.b_padding)
    np.testing.assert_allclose(B_t, np.eye(t.size) - a * (Pi @ G).transpose(0, 2, 1), rtol=0, atol=1e-15)


def test_which_architectures_have_a_chain_after_each_choice():
    world = tasks.TwoHypothesis(0.1).pomdp
    for arch in (fsc.RAM(3), fsc.Chain(4), fsc.Column(5, arms=3)):
        nxt = after_choice_next(arch)
        assert nxt is not None and (nxt >= 0).all()
        chain = fsc.joint_chain(tasks.TwoHypothesis(0.1, arms=arch.arms).pomdp, arch)
        assert chain.after_choice.size == arch.num_choices  # one world state per part
    assert after_choice_next(fsc.Memento(2)) is None  # the next history shifts the node's own
    assert fsc.joint_chain(world, fsc.Memento(2)).after_choice is None

    # Automata of three nodes and two choices (one per arm): the node after (c, o) is 1 + o from every
    # node, or it depends on the node.
    def automaton(next_node):
        return fsc.Automaton.from_tables(
            allowed=np.ones((3, 2), bool), next_node=next_node, choice_action=np.array([0, 1]), reset_mask=np.array([True, False, False]),
            node_labels=("start", "won", "lost"), choice_labels=("A", "B"), actions=2, observations=2,
        )  # fmt: skip

    forgets = automaton(np.broadcast_to(np.array([1, 2]), (3, 2, 2)))
    assert after_choice_next(forgets).tolist() == [[1, 2], [1, 2]]
    assert after_choice_next(automaton((np.arange(3)[:, None, None] + np.arange(2)) % 3 * np.ones((1, 2, 1), int))) is None
    policy = fsc.Policy.random(forgets, 1)
    dense, choices = (fsc.evaluate(world, policy, reset=0.1, engine=e) for e in ("dense", "choices"))
    assert float(choices.gain) == pytest.approx(float(dense.gain), rel=1e-13)
    torch.testing.assert_close(choices.distribution, dense.distribution, rtol=0, atol=1e-15)


@pytest.mark.parametrize("arch", [fsc.RAM(2), fsc.Column(2), fsc.RAM(2, arms=3), fsc.Chain(3, arms=3)], ids=ids)
@pytest.mark.parametrize("output", ["gain-q", "distribution"])
def test_gradcheck(arch, output):
    world = tasks.TwoHypothesis(0.2, arms=arch.arms)
    policy = fsc.Policy.random(arch, 11)

    def value(logits, init_logits):
        ev = fsc.evaluate(world, attrs.evolve(policy, logits=logits, init_logits=init_logits), reset=0.05, engine="choices")
        assert ev.engine == "choices"
        return torch.stack([ev.gain, ev.metrics["q"]]) if output == "gain-q" else ev.distribution

    inputs = (policy.logits.clone().requires_grad_(), policy.init_logits.clone().requires_grad_())
    assert torch.autograd.gradcheck(value, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)


def test_the_distribution_alone_has_the_adjoint_gradient():
    """``ENGINES["choices"]`` (the distribution for whoever needs it alone) against ``dense``, with autograd."""
    world, arch = tasks.TwoHypothesis(0.1).pomdp, fsc.RAM(3)
    chain = fsc.joint_chain(world, arch)
    policy = fsc.Policy.random(arch, 6).requires_grad_()
    weights = torch.linspace(-1, 1, chain.num_parts * chain.size, dtype=torch.float64).reshape(chain.num_parts, chain.size)
    grads = []
    for name in ("dense", "choices"):
        solution = fsc.engines.solve.ENGINES[name](chain, policy.probs(), policy.init_probs(), 1e-3)
        assert solution.residual < 1e-15 and solution.info["engine"] == name
        grads.append(torch.autograd.grad((solution.distribution * weights).sum(), [policy.logits, policy.init_logits]))
    for ref, got in zip(*grads, strict=True):
        torch.testing.assert_close(got, ref, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("memory", ["ram:8", "column:6"])
def test_training_follows_the_dense_curve(memory):
    """The same flow on the two engines: the values differ in their last bits, which the flow amplifies
    and which can flip an accept/reject; q(t) is one curve."""
    world, arch = tasks.TwoHypothesis(0.1), fsc.parse_memory(memory)
    policy = fsc.Policy.random(arch, 3)
    curves = []
    for engine in ("dense", "choices"):
        records = list(fsc.flow(world, policy, reset=1e-3, convention="paper", engine=engine, until_t=1e6))
        assert records[-1].step > 1000 and records[-1].evaluations > records[-1].step + 1  # rejections too
        curves.append((np.array([r.t for r in records]), np.array([r.metrics["q"] for r in records])))
    for t in (1e2, 1e3, 1e4, 1e5, 9.9e5):
        dense, choices = (np.interp(t, *curve) for curve in curves)
        assert choices == pytest.approx(dense, rel=1e-6), t


def test_an_architecture_without_it_is_refused():
    world = tasks.TwoHypothesis(0.1)
    policy = fsc.Policy.random(fsc.Memento(2), 0)
    with pytest.raises(ValueError, match=r"engine 'choices' needs .*Memento\(m=2"):
        fsc.evaluate(world, policy, reset=0.01, engine="choices")
    with pytest.raises(ValueError, match=r"engine 'choices' needs"):
        Objective(world=world, architecture=fsc.Memento(2), reset=0.01, engine="choices")
