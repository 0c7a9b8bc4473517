"""Explicit policies (CCP, necklace) evaluated exactly against the paper's closed forms."""

import itertools
import math

import numpy as np
import pytest
import torch

import fsc
import policies
import tasks
from policies import closed_form
from policies.necklaces import gray_chain, necklace

MUS = (0.1, 0.2, 0.37)


def q_of(world, arch, policy, reset, **kw):
    return float(fsc.evaluate(world, policy, reset=reset, **kw).metrics["q"])


# Column of confidence policy.


@pytest.mark.parametrize("M", [2, 3, 5, 8, 13, 21])
def test_ccp_exact_equals_appendix_c(M):
    worst = 0.0
    for mu, r, eps in itertools.product(MUS, [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6], [1, 0.05, 0.003]):
        arch, policy = policies.ccp(M, eps)
        exact = q_of(tasks.TwoHypothesis(mu), arch, policy, r)
        closed = closed_form.ccp_q(mu, M, r, eps)
        worst = max(worst, abs(exact / closed - 1))
    assert worst < 1e-9, worst


@pytest.mark.parametrize("mu, M, r", [(0.1, 3, 1e-4), (0.2, 5, 1e-5), (0.37, 8, 1e-6), (0.1, 8, 1e-3)])
def test_optimal_eps_minimises_the_exact_q(mu, M, r):
    eps = closed_form.ccp_eps_opt(mu, M, r)
    assert 0 < eps < 1
    world = tasks.TwoHypothesis(mu)
    best = q_of(world, *policies.ccp(M, eps), r)
    for factor in (0.5, 0.9, 0.99, 1.01, 1.1, 2.0):
        assert q_of(world, *policies.ccp(M, min(1.0, eps * factor)), r) > best


@pytest.mark.parametrize("mu, M, r", [(0.1, 4, 1e-4), (0.2, 6, 1e-5), (0.37, 3, 1e-6)])
def test_ccp_optimum_is_a_stationary_point(mu, M, r):
    """At the exact CCP with the optimal eps, the gradient of the gain vanishes in
    every direction that keeps the CCP's structure (the logits of the choices it
    uses; the others are -inf and carry no gradient)."""
    arch, policy = policies.ccp(M, closed_form.ccp_eps_opt(mu, M, r))
    policy = policy.requires_grad_()
    gain = fsc.evaluate(tasks.TwoHypothesis(mu), policy, reset=r).gain
    gain.backward()
    used = torch.isfinite(policy.logits)
    assert float(policy.logits.grad[used].abs().max()) < 1e-8
    # ... while moving eps away from the optimum gives a first-order change.
    arch2, off = policies.ccp(M, 0.5 * closed_form.ccp_eps_opt(mu, M, r))
    off = off.requires_grad_()
    fsc.evaluate(tasks.TwoHypothesis(mu), off, reset=r).gain.backward()
    assert float(off.logits.grad[torch.isfinite(off.logits)].abs().max()) > 1e-6


def test_ccp_tends_to_the_r_to_zero_limit():
    mu, M = 0.2, 4
    errors = []
    for r in (1e-6, 1e-8, 1e-10):
        q = q_of(tasks.TwoHypothesis(mu), *policies.ccp(M, closed_form.ccp_eps_opt(mu, M, r)), r)
        errors.append(q - closed_form.ccp_q_limit(mu, M))
    assert all(e > 0 for e in errors)
    # q - q_limit = O(sqrt(r)): a factor 100 in r is a factor ~10 in the error.
    assert 5 < errors[0] / errors[1] < 20 and 5 < errors[1] / errors[2] < 20


# Necklace policy.


@pytest.mark.parametrize("m", [3, 4])
def test_necklace_exits_are_the_published_ones(m):
    from policies.initial import PAPER_NECKLACE_EXITS

    exits = policies.necklace_exits(m)
    words = set(exits.toward_a.values()) | set(exits.toward_b.values())
    published = {label[:m] for label, (_, which) in PAPER_NECKLACE_EXITS[m].items() if which == "eps1"}
    assert published == words - {"A" * m, "B" * m}


@pytest.mark.parametrize("m", [2, 3, 4, 5, 6, 7])
def test_no_probability_is_trapped_off_the_chain(m):
    """Every full history reaches the chain's end necklaces through moves of
    positive probability (graph search on the policy's transitions)."""
    arch, policy = policies.necklace_policy(m, 1e-3, 1e-2)
    probs = policy.probs().detach().numpy()
    nxt = arch.next_node
    # Reverse reachability from A^m histories.
    target = {n for n, label in enumerate(arch.node_labels) if label[:m] == "A" * m and len(label) == 2 * m}
    reverse = [[] for _ in range(arch.num_nodes)]
    for n in range(arch.num_nodes):
        for c in range(2):
            if probs[n, c] > 0:
                for o in range(2):
                    reverse[nxt[n, c, o]].append(n)
    seen, stack = set(target), list(target)
    while stack:
        for prev in reverse[stack.pop()]:
            if prev not in seen:
                seen.add(prev)
                stack.append(prev)
    assert seen == set(range(arch.num_nodes))


@pytest.mark.parametrize("m", [4, 6])
def test_off_chain_necklaces_lose_their_mass(m):
    chain = set(gray_chain(m).chain)
    arch, policy = policies.necklace_policy(m, 1e-4, 1e-2)
    p = fsc.evaluate(tasks.TwoHypothesis(0.1), policy, reset=1e-9).distribution
    off = [n for n, label in enumerate(arch.node_labels) if len(label) == 2 * m and necklace(label[:m]) not in chain]
    assert off  # m = 4 and 6 have necklaces off the longest chain
    assert float(p[:, :, off].sum()) < 1e-6


@pytest.mark.parametrize("m", [3, 4, 5])
def test_theorem_4_3(m):
    """q of the necklace policy tends to q* = (1 + alpha^(m (1 - n(m))))^-1 when
    r << eps0 << eps1 -> 0; the excess shrinks about linearly in eps1."""
    mu = 0.1
    q_star = closed_form.necklace_q_star(mu, m)
    ratios = []
    for eps1 in (1e-2, 1e-3, 1e-4):
        eps0 = eps1**2
        arch, policy = policies.necklace_policy(m, eps0, eps1)
        ratios.append(q_of(tasks.TwoHypothesis(mu), arch, policy, eps0 * 1e-6) / q_star)
    assert all(x > 1 for x in ratios)
    assert ratios[0] > ratios[1] > ratios[2]
    assert ratios[-1] - 1 < {3: 1e-3, 4: 5e-3, 5: 0.15}[m]


# Initialisations.


@pytest.mark.parametrize(
    "name, arch, reset, q_published",
    [("near-ccp", fsc.RAM(8), 1e-3, 0.172167), ("near-necklace", fsc.Memento(4), 1e-5, 0.164731)],
)
def test_paper_starts_at_t0_match_the_published_code(name, arch, reset, q_published):
    policy = policies.initial_policy(name, arch, mu=0.1, reset=reset, published=True)
    for engine in ("dense", "power"):
        q = q_of(tasks.TwoHypothesis(0.1), arch, policy, reset, convention="paper", engine=engine)
        assert round(q, 6) == q_published


@pytest.mark.parametrize("name", ["random", "linear", "columns", "near-ccp"])
@pytest.mark.parametrize("arch", [fsc.RAM(1), fsc.RAM(3), fsc.Chain(4), fsc.Column(5)])
def test_ram_initialisations(name, arch):
    policy = policies.initial_policy(name, arch, mu=0.2, reset=1e-3, seed=1)
    probs = policy.probs().detach().numpy()
    assert np.allclose(probs.sum(axis=1), 1)
    again = policies.initial_policy(name, arch, mu=0.2, reset=1e-3, seed=1)
    assert torch.equal(again.logits, policy.logits)  # seeded
    if name in ("linear", "columns"):
        shape = (fsc.Chain if name == "linear" else fsc.Column)(arch.M).allowed
        assert probs[~shape].max(initial=0) < 1e-3  # only the 1e-4 noise outside the shape


@pytest.mark.parametrize("name", ["random", "cycles", "near-necklace"])
@pytest.mark.parametrize("m", [2, 3, 4, 5])
def test_memento_initialisations(name, m):
    arch = fsc.Memento(m)
    for convention in ("native", "paper"):
        policy = policies.initial_policy(name, arch, reset=1e-4, published=convention == "paper")
        assert np.allclose(policy.probs().detach().numpy().sum(axis=1), 1)
        assert 0 < q_of(tasks.TwoHypothesis(0.1), arch, policy, 1e-4, convention=convention) < 1


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda: policies.initial_policy("warm", fsc.RAM(2)), "initialisation must be one of"),
        (lambda: policies.initial_policy("near-ccp", fsc.Memento(2)), "needs a RAM, Chain or Column memory"),
        (lambda: policies.initial_policy("cycles", fsc.RAM(2)), "needs a two-arm Memento memory"),
        (lambda: policies.initial_policy("near-ccp", fsc.RAM(2), reset=0), r"reset must be in \(0, 1\]"),
        (lambda: policies.ccp(3, 0), r"eps must be in \(0, 1\], got 0.0"),
        (lambda: policies.ccp(3, 1.5), r"eps must be in \(0, 1\], got 1.5"),
        (lambda: policies.necklace_policy(1, 0.1, 0.1), "needs m >= 2"),
        (lambda: policies.necklace_policy(3, 0.1, math.nan), r"eps1 must be in \(0, 1\]"),
        (lambda: policies.ccp_probs(fsc.Memento(2), 0.1), "needs a RAM-like architecture"),
    ],
)
def test_bad_input(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


def test_published_takes_the_published_near_necklace_start():
    arch = fsc.Memento(3)
    published = policies.initial_policy("near-necklace", arch, reset=1e-5, published=True)
    assert not torch.equal(published.logits, policies.initial_policy("near-necklace", arch, reset=1e-5).logits)
