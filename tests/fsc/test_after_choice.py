"""The chain after each choice (engine ``choices``): its factors rebuild the chain, its block-triangular
solves are exact."""

import attrs
import numpy as np
import pytest
import torch

import fsc
import tasks
from fsc.engines import kernels
from fsc.model.chain import successor_classes
from fsc.objective import Objective

from .registry import ARCHITECTURES, ids, padded_world


def factors(chain, probs):
    """Dense ``G (K, X, Y)`` and ``Pi (K, Y, X)`` from the tables and from the definition of ``Pi``."""
    t = chain.after_choice
    K, S, X, Y, Q = chain.num_parts, chain.states_per_part, chain.size, t.size, t.num_classes
    N, C = probs.shape
    G = np.zeros(K * X * Y)
    np.add.at(G, (t.g_rows // X) * X * Y + (t.g_rows % X) * Y + t.g_cols % Y, t.g_weight)
    Pi = np.zeros((K, Y, X))
    n, c = np.nonzero(t.class_of >= 0)
    for k in range(K):
        for s in range(S):
            if t.valid[k, s]:
                Pi[k, s * Q + t.class_of[n, c], s * N + n] = probs[n, c]
    return G.reshape(K, X, Y), Pi


def tiger_memento():
    """Tiger (two world states per part, three actions) with a memory of the last two plays: transient
    short histories and more than one world state, where the block-triangular order must hold over both."""
    return tasks.Tiger().pomdp, fsc.Memento(2, arms=3)


@pytest.mark.parametrize(
    ("world", "arch"),
    [(tasks.TwoHypothesis(0.2, arms=a.arms).pomdp, a) for a in ARCHITECTURES[::3]]
    + [(padded_world(), fsc.RAM(2)), (padded_world(), fsc.Memento(2)), (tasks.Tiger().pomdp, fsc.Column(3, arms=3)), tiger_memento()],
    ids=lambda x: ids(x) if isinstance(x, fsc.MemoryArchitecture) else "",
)
def test_the_factors_rebuild_the_chain(world, arch):
    """``G Pi`` plus the padding's self-loops is the chain's ``P``; the LU's matrix is ``I - a Pi G`` on the
    recurrent states, and no step of ``Pi G`` leads from them back to a transient one."""
    chain = fsc.joint_chain(world, arch)
    policy = fsc.Policy.random(arch, 4)
    probs = policy.probs().detach().numpy()
    G, Pi = factors(chain, probs)
    P = chain.dense(policy.probs().detach()).numpy()
    np.testing.assert_allclose(G @ Pi + np.eye(chain.size) * chain.padding[:, None, :], P, rtol=0, atol=1e-15)
    t, a = chain.after_choice, 1 - 0.01
    R = t.recurrent
    B_t = kernels.after_choice_system_t(t.b_index_t, t.b_node_choice, t.b_weight, probs, a, t.b_padding)
    M = Pi @ G
    np.testing.assert_allclose(B_t, np.eye(len(R)) - a * M[:, R][:, :, R].transpose(0, 2, 1), rtol=0, atol=1e-15)
    transient = np.setdiff1d(np.arange(t.size), R)
    assert not M[:, transient][:, :, R].any()
    # The edges out of the transient states are M's, each after every edge into its source.
    E = np.zeros((chain.num_parts * t.size,) * 2)
    np.add.at(E, (t.t_dst, t.t_src), probs.reshape(-1)[t.t_node_choice] * t.t_weight)
    for k in range(chain.num_parts):
        part = slice(k * t.size, (k + 1) * t.size)
        np.testing.assert_allclose(E[part, part][:, transient], M[k][:, transient], rtol=0, atol=1e-15)
    for e, src in enumerate(t.t_src):
        assert not np.isin(t.t_dst[e:], src).any()


def test_the_classes_of_the_paper_architectures():
    """RAM, chain, column: one class per choice and no transient state (their next node is the memory chosen,
    the arm and the observation).  Memento m: the choice and the history without its oldest entry, 2 4^(m-1)
    recurrent classes; the short histories are transient."""
    for arch in (fsc.RAM(3), fsc.Chain(4), fsc.Column(5, arms=3)):
        class_of, nxt = successor_classes(arch)
        assert (class_of[arch.allowed] == np.nonzero(arch.allowed)[1]).all() and (nxt >= 0).all()
        t = fsc.joint_chain(tasks.TwoHypothesis(0.1, arms=arch.arms).pomdp, arch).after_choice
        assert t.size == t.recurrent_size == arch.num_choices and len(t.t_src) == 0  # one world state per part
        assert t.choice_is_class == arch.allowed.all()  # RAM: every choice allowed at every node
    world = tasks.TwoHypothesis(0.1).pomdp
    for m in (1, 2, 3, 4):
        t = fsc.joint_chain(world, fsc.Memento(m)).after_choice
        assert t.recurrent_size == 2 * 4 ** (m - 1) and t.choice_is_class == (m == 1)  # Memento 1: the choice alone
        full = [n for n, label in enumerate(fsc.Memento(m).node_labels) if sum(ch in "AB" for ch in label) == m]  # "AB+-"
        assert len(full) == 4**m and len(np.unique(t.class_of[full])) == 2 * 4 ** (m - 1)


def _automaton(next_node):
    """Three nodes and two choices (one per arm)."""
    return fsc.Automaton.from_tables(
        allowed=np.ones((3, 2), bool), next_node=next_node, choice_action=np.array([0, 1]), reset_mask=np.array([True, False, False]),
        node_labels=("start", "won", "lost"), choice_labels=("A", "B"), actions=2, observations=2,
    )  # fmt: skip


def test_an_automaton_that_forgets_its_node():
    """The node after (c, o) is 1 + o from every node: two classes, one per choice, and the engine agrees with ``dense``."""
    world = tasks.TwoHypothesis(0.1).pomdp
    forgets = _automaton(np.broadcast_to(np.array([1, 2]), (3, 2, 2)))
    class_of, nxt = successor_classes(forgets)
    assert class_of.tolist() == [[0, 1]] * 3 and nxt.tolist() == [[1, 2], [1, 2]]
    policy = fsc.Policy.random(forgets, 1)
    dense, choices = (fsc.evaluate(world, policy, reset=0.1, engine=e) for e in ("dense", "choices"))
    assert choices.engine == "choices"
    assert float(choices.gain) == pytest.approx(float(dense.gain), rel=1e-13)
    torch.testing.assert_close(choices.distribution, dense.distribution, rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    ("world", "arch"),
    [(tasks.TwoHypothesis(0.2, arms=a.arms), a) for a in (fsc.RAM(2), fsc.Column(2), fsc.RAM(2, arms=3), fsc.Chain(3, arms=3), fsc.Memento(2), fsc.Memento(3))]
    + [tiger_memento()],
    ids=lambda x: ids(x) if isinstance(x, fsc.MemoryArchitecture) else "",
)
@pytest.mark.parametrize("output", ["gain-q", "distribution"])
def test_gradcheck(world, arch, output):
    policy = fsc.Policy.random(arch, 11)

    def value(logits, init_logits):
        ev = fsc.evaluate(world, attrs.evolve(policy, logits=logits, init_logits=init_logits), reset=0.05, engine="choices")
        assert ev.engine == "choices"
        if output == "distribution":
            return ev.distribution
        return torch.stack([ev.gain, ev.metrics["q"]]) if "q" in ev.metrics else ev.gain.reshape(1)

    inputs = (policy.logits.clone().requires_grad_(), policy.init_logits.clone().requires_grad_())
    assert torch.autograd.gradcheck(value, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)


def test_the_distribution_alone_has_the_adjoint_gradient():
    """The gradient of the distribution alone (no gain, no metric) on ``choices`` against ``dense``, with autograd."""
    world, arch = tasks.TwoHypothesis(0.1).pomdp, fsc.RAM(3)
    chain = fsc.joint_chain(world, arch)
    policy = fsc.Policy.random(arch, 6).requires_grad_()
    weights = torch.linspace(-1, 1, chain.num_parts * chain.size, dtype=torch.float64).reshape(chain.num_parts, chain.states_per_part, -1)
    grads = []
    for name in ("dense", "choices"):
        ev = fsc.evaluate(world, policy, reset=1e-3, engine=name)
        assert ev.residual < 1e-15 and ev.engine == name
        grads.append(torch.autograd.grad((ev.distribution * weights).sum(), [policy.logits, policy.init_logits]))
    for ref, got in zip(*grads, strict=True):
        torch.testing.assert_close(got, ref, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("memory", ["ram:8", "column:6", "memento:3"])
def test_training_follows_the_dense_curve(memory):
    """The same flow on the two engines: the values differ in their last bits, which the flow amplifies
    and which can flip an accept/reject; q(t) is one curve (Memento 3: 2.1e-6 apart at t = 1e5, where the
    paths have parted by one rejection; ``sparse`` parts from ``dense`` likewise)."""
    world, arch = tasks.TwoHypothesis(0.1), fsc.parse_memory(memory)
    policy = fsc.Policy.random(arch, 3)
    curves = []
    for engine in ("dense", "choices"):
        records = list(fsc.flow(world, policy, reset=1e-3, convention="paper", engine=engine, until_t=1e6))
        assert records[-1].step > 1000 and records[-1].evaluations > records[-1].step + 1  # rejections too
        curves.append((np.array([r.t for r in records]), np.array([r.metrics["q"] for r in records])))
    for t in (1e2, 1e3, 1e4, 1e5, 9.9e5):
        dense, choices = (np.interp(t, *curve) for curve in curves)
        assert choices == pytest.approx(dense, rel=1e-5), t


def test_an_architecture_without_a_smaller_lu_is_refused():
    """Next nodes that depend on the node: each of the 6 choices is its own class, and 6 states are more than
    the chain's 3."""
    world = tasks.TwoHypothesis(0.1)
    rotates = _automaton((np.arange(3)[:, None, None] + np.arange(2)) % 3 * np.ones((1, 2, 1), int))
    assert len(successor_classes(rotates)[1]) == 6
    policy = fsc.Policy.random(rotates, 0)
    with pytest.raises(ValueError, match=r"engine 'choices' needs .*Automaton"):
        fsc.evaluate(world, policy, reset=0.01, engine="choices")
    with pytest.raises(ValueError, match=r"engine 'choices' needs"):
        Objective(world=world, architecture=rotates, reset=0.01, engine="choices")
