"""The evaluation engines: agreement, gradients, accuracy, r = 0, checked convergence (issue 6)."""

import json
import warnings

import attrs
import mpmath
import numba
import numpy as np
import pytest
import scipy.sparse as sp
import torch

import fsc
import tasks
from fsc.engines import builtin, kernels
from fsc.engines.accurate import gth, recurrent_class
from fsc.engines.engine import Engine
from fsc.engines.iterative import ConvergenceError, Iterative, observation_aggregates
from fsc.engines.registry import ENGINES, choose_engine
from fsc.engines.sparse import SparseLU

from .registry import ARCHITECTURES, ids, padded_world

NEW_ENGINES = ("sparse", "iterative", "accurate")


def world_for(arch):
    return tasks.TwoHypothesis(0.2, arms=arch.arms)


def _numbers(world, arch, policy, reset, engine, **kwargs):
    ev = fsc.evaluate(world, policy, reset=reset, engine=engine, **kwargs)
    return ev, {"gain": float(ev.gain), **{k: float(v) for k, v in ev.metrics.items()}}


# Agreement over the registry.


@pytest.mark.parametrize("arch", ARCHITECTURES, ids=ids)
@pytest.mark.parametrize("reset", [0.02, 1e-4])
def test_engines_agree_on_the_registry(arch, reset):
    world = world_for(arch)
    policy = fsc.Policy.random(arch, 3)
    chain = fsc.joint_chain(world.pomdp, arch)
    engines = ["dense", *NEW_ENGINES] + (["power"] if chain.size <= 400 else []) + (["choices"] if chain.after_choice is not None else [])
    ref_ev, ref = _numbers(world, arch, policy, reset, "dense")
    for engine in engines[1:]:
        ev, got = _numbers(world, arch, policy, reset, engine)
        assert ev.engine == engine
        assert ev.residual < 1e-12
        for name, value in ref.items():
            assert got[name] == pytest.approx(value, rel=1e-9, abs=1e-12), (engine, name)
        torch.testing.assert_close(ev.distribution, ref_ev.distribution, rtol=0, atol=1e-10)


def test_engines_agree_on_a_world_with_padded_parts():
    world = padded_world()
    arch = fsc.RAM(2)
    chain = fsc.joint_chain(world, arch)
    assert chain.padding.any()
    policy = fsc.Policy.random(arch, 5)
    ref = fsc.evaluate(world, policy, reset=0.01, engine="dense")
    for engine in ("power", "choices", *NEW_ENGINES):
        ev = fsc.evaluate(world, policy, reset=0.01, engine=engine)
        assert float(ev.gain) == pytest.approx(float(ref.gain), rel=1e-10)
        torch.testing.assert_close(ev.distribution, ref.distribution, rtol=0, atol=1e-12)


@pytest.mark.parametrize("m", [4, 6])
def test_engines_agree_on_a_near_deterministic_memento_policy(m):
    world = tasks.TwoHypothesis(0.1)
    arch, policy = oldest_arm_policy(m, eps=1e-3)
    ref = float(fsc.evaluate(world, policy, reset=1e-5, engine="sparse").metrics["q"])
    for engine in ("iterative", "accurate") if m == 4 else ("iterative",):
        q = float(fsc.evaluate(world, policy, reset=1e-5, engine=engine).metrics["q"])
        assert q == pytest.approx(ref, rel=1e-9)


def oldest_arm_policy(m, eps):
    """Memento: at a full history play its oldest arm with probability 1 - eps, the other with eps."""
    arch = fsc.Memento(m)
    probs = np.full((arch.num_nodes, 2), 0.5)
    for n, label in enumerate(arch.node_labels):
        if len(label) == 2 * m:
            oldest = "AB".index(label[0])
            probs[n, oldest], probs[n, 1 - oldest] = 1 - eps, eps
    return arch, fsc.Policy.from_probs(arch, probs)


# Gradients.

GRADCHECK_CASES = [
    fsc.RAM(2),
    fsc.Memento(2),
    fsc.Column(2),
    fsc.RAM(2, arms=3),
    fsc.Memento(1, arms=3),
    fsc.Column(2, arms=3),
]


def _gradcheck(arch, engine, reset, metric="q"):
    world = world_for(arch)
    policy = fsc.Policy.random(arch, 11)

    def value(logits, init_logits):
        candidate = attrs.evolve(policy, logits=logits, init_logits=init_logits)
        ev = fsc.evaluate(world, candidate, reset=reset, engine=engine)
        return torch.stack([ev.gain, ev.metrics[metric]])

    inputs = (policy.logits.clone().requires_grad_(), policy.init_logits.clone().requires_grad_())
    assert torch.autograd.gradcheck(value, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("arch", GRADCHECK_CASES, ids=ids)
@pytest.mark.parametrize("engine", NEW_ENGINES)
def test_gradcheck(arch, engine):
    _gradcheck(arch, engine, 0.05)


@pytest.mark.parametrize("arch", GRADCHECK_CASES, ids=ids)
def test_gradcheck_accurate_at_zero_reset(arch):
    _gradcheck(arch, "accurate", 0.0)


@pytest.mark.parametrize("engine", NEW_ENGINES)
def test_gradient_matches_dense_at_small_reset(engine):
    world, arch = tasks.TwoHypothesis(0.1), fsc.Memento(3)
    policy = fsc.Policy.random(arch, 2)
    grads = {}
    for name in ("dense", engine):
        p = policy.requires_grad_()
        fsc.evaluate(world, p, reset=1e-4, engine=name).metrics["q"].backward()
        grads[name] = (p.logits.grad, p.init_logits.grad)
    for ref, got in zip(grads["dense"], grads[engine], strict=True):
        torch.testing.assert_close(got, ref, rtol=1e-7, atol=1e-10)


# The accurate engine: relative accuracy against mpmath, r = 0.


def _memento1_matrix(policy_probs, k_good, k_bad):
    """``P[x2, x]`` of Memento(1) under hypothesis H_A, built from the definition (not from fsc.model.chain).

    Nodes ``_, A+, A-, B+, B-``; arm A pays + with k_good, B with k_bad.
    """
    labels = ["_", "A+", "A-", "B+", "B-"]
    pay = {"A": k_good, "B": k_bad}
    P = [[mpmath.mpf(0)] * 5 for _ in range(5)]
    for x, _ in enumerate(labels):
        for c, arm in enumerate("AB"):
            for sign in "+-":
                o = pay[arm] if sign == "+" else 1 - pay[arm]
                P[labels.index(arm + sign)][x] += mpmath.mpf(policy_probs[x][c]) * o
    # The off-diagonal entries are the data; the self-loop is what is left (float probabilities do not
    # sum to 1 exactly, and a leak of 1e-16 would matter next to transitions of 1e-15).
    for x in range(5):
        P[x][x] = 1 - sum(P[y][x] for y in range(5) if y != x)
    return mpmath.matrix(P)


def _mp_stationary(P, reset, p0):
    n = P.rows
    if reset == 0:
        # Solve (I - P) p = 0 with sum p = 1 on the states 1..4 (the empty history is transient).
        A = mpmath.eye(4) - P[1:, 1:]
        for j in range(4):
            A[3, j] = 1
        b = mpmath.matrix([0, 0, 0, 1])
        return [mpmath.mpf(0)] + list(mpmath.lu_solve(A, b))
    A = mpmath.eye(n) - (1 - mpmath.mpf(reset)) * P  # 1 - r in float would move r by 5e-4 at r = 1e-13
    return list(mpmath.lu_solve(A, mpmath.matrix([reset * v for v in p0])))


@pytest.mark.parametrize("reset", [0.0, 1e-13])
def test_accurate_engine_has_small_relative_error_where_lu_does_not(reset):
    mpmath.mp.dps = 60
    # Stay on A after A+ (and leave it after A- with a tiny probability), leave B eagerly: under H_A
    # the states of arm B have probabilities near 1e-19 at r = 0, 1e-14 at r = 1e-13.
    tiny = 1e-18
    probs = [[0.5, 0.5], [1.0, 0.0], [1 - tiny, tiny], [0.3, 0.7], [0.9, 0.1]]
    mu = 0.2
    world = tasks.TwoHypothesis(mu)
    arch = fsc.Memento(1)
    policy = fsc.Policy.from_probs(arch, np.array(probs))
    P = _memento1_matrix(policy.probs().tolist(), (1 + mu) / 2, (1 - mu) / 2)
    ref = _mp_stationary(P, reset, [1, 0, 0, 0, 0])
    order = [arch.node_labels.index(label) for label in ["_", "A+", "A-", "B+", "B-"]]
    ev = fsc.evaluate(world, policy, reset=reset, engine="accurate")
    got = ev.distribution[0, 0, order].numpy()
    for value, exact in zip(got, ref, strict=True):
        if exact == 0:
            assert value == 0
        else:
            assert abs(value - float(exact)) <= 1e-13 * float(exact)
    if reset == 0:
        assert float(min(ref[3:])) < 1e-18  # far below the unit roundoff
    else:
        lu = fsc.evaluate(world, policy, reset=reset, engine="dense").distribution[0, 0, order].numpy()
        worst = max(abs(v - float(e)) / float(e) for v, e in zip(lu[3:], ref[3:], strict=True))
        assert worst > 1e-5  # LU has lost digits (documents why the accurate engine exists; about 1e-3 here)


def test_gth_on_hand_derived_chains():
    # Two states: rates a (0 -> 1) and b (1 -> 0): pi = (b, a) / (a + b), even with extreme rates.
    for a, b in [(0.3, 0.6), (1e-300, 1.0), (1e-200, 1e-100)]:
        pi, _ = gth(sp.csr_matrix(np.array([[0.0, a], [b, 0.0]])))
        assert pi[1] == pytest.approx(a / (a + b), rel=1e-15)
        assert pi[0] == pytest.approx(b / (a + b), rel=1e-15)
    # A cycle 0 -> 1 -> ... -> n-1 -> 0 with rates w_i: pi_i proportional to 1 / w_i.
    rng = np.random.default_rng(0)
    n = 3000
    w = 10.0 ** rng.uniform(-12, 0, n)
    R = sp.csr_matrix((w, (np.arange(n), (np.arange(n) + 1) % n)), shape=(n, n))
    pi, facts = gth(R, dense_size=200)
    ref = (1 / w) / (1 / w).sum()
    np.testing.assert_allclose(pi, ref, rtol=1e-12)
    assert facts["gth_levels"] > 0  # the sparse phase ran


def test_zero_reset_needs_one_recurrent_class():
    # Memento(1) repeating its arm forever: "always A" and "always B" are two closed classes.
    arch = fsc.Memento(1)
    probs = np.array([[0.5, 0.5], [1, 0], [1, 0], [0, 1], [0, 1]], dtype=float)
    order = [arch.node_labels.index(label) for label in ["_", "A+", "A-", "B+", "B-"]]
    table = np.zeros((5, 2))
    table[order] = probs
    policy = fsc.Policy.from_probs(arch, table)
    with pytest.raises(ValueError, match="single recurrent class.*got 2"):
        fsc.evaluate(tasks.TwoHypothesis(0.2), policy, reset=0, engine="accurate")
    with pytest.raises(ValueError, match="reset = 0"):
        fsc.evaluate(tasks.TwoHypothesis(0.2), policy, reset=0, engine="sparse")


def test_recurrent_class_drops_transient_states():
    # 0 -> 1 <-> 2; 0 is transient.
    P = sp.csc_matrix(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))
    np.testing.assert_array_equal(recurrent_class(P, np.array([1.0, 0.0, 0.0])), [1, 2])


def test_zero_reset_matches_the_limit_of_small_reset():
    world, arch = tasks.TwoHypothesis(0.3), fsc.Column(3)
    policy = fsc.Policy.random(arch, 4)
    q0 = float(fsc.evaluate(world, policy, reset=0, engine="accurate").metrics["q"])
    q_small = float(fsc.evaluate(world, policy, reset=1e-10, engine="accurate").metrics["q"])
    assert q0 == pytest.approx(q_small, rel=1e-7)
    ev = fsc.evaluate(world, policy, reset=0)
    assert ev.engine == "accurate" and ev.residual < 1e-14


def test_ccp_limit_at_zero_reset():
    # Hand-derived (paper appendix D): CCP at r = 0 has q^-1 - 1 = (1-k_B)/(1-k_A) ((1/k_B-1)/(1/k_A-1))^(M-1) ... as eps -> 0
    # gives the closed form q = alpha^(2M-1) / (alpha^(2M-1) + 1).
    from policies.ccp import ccp

    mu, M = 0.2, 3
    arch, policy = ccp(M, 1e-9)
    q = float(fsc.evaluate(tasks.TwoHypothesis(mu), policy, reset=0, engine="accurate").metrics["q"])
    alpha = (1 - mu) / (1 + mu)
    assert q == pytest.approx(alpha ** (2 * M - 1) / (alpha ** (2 * M - 1) + 1), rel=1e-6)


# The iterative engine checks its residual.


def _system(world, arch, seed=0):
    """The joint chain, the nonzeros of ``P`` and the reset distributions ``p0`` of a random policy: what a solver is built from."""
    chain = fsc.joint_chain(world.pomdp, arch)
    policy = fsc.Policy.random(arch, seed)
    probs, init = policy.probs().detach().numpy(), policy.init_probs().detach().numpy()
    p0 = (chain.initial_world[:, :, None] * init).reshape(chain.num_parts, chain.size)
    return chain, probs, probs.reshape(-1)[chain.node_choice] * chain.weight, p0


def test_iterative_falls_back_and_says_so():
    world, arch = tasks.TwoHypothesis(0.1), fsc.Memento(3)
    chain, probs, values, p0 = _system(world, arch)
    solver = Iterative(chain, values, p0, 1e-4, maxiter=1)
    with pytest.warns(RuntimeWarning, match="falling back to the sparse LU engine"):
        p = solver.solve()
    assert solver.info["fallback"] == "sparse"
    ref = ENGINES["dense"].factor(chain, probs, p0, 1e-4).solve()
    np.testing.assert_allclose(p, ref, rtol=0, atol=1e-12)
    assert solver.residual(p) < 1e-15


def test_iterative_raises_when_it_cannot_fall_back():
    world, arch = tasks.TwoHypothesis(0.1), fsc.Memento(3)
    chain, _, values, p0 = _system(world, arch)
    with pytest.raises(ConvergenceError, match="too large for the sparse LU fallback"):
        Iterative(chain, values, p0, 1e-4, maxiter=1, fallback_states=10).solve()


def test_iterative_reports_iterations_and_residuals():
    world, arch = tasks.TwoHypothesis(0.1), fsc.Memento(5)
    policy = fsc.Policy.random(arch, 0).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ev = fsc.evaluate(world, policy, reset=1e-5, engine="iterative")
        ev.metrics["q"].backward()
    assert ev.engine == "iterative" and ev.residual < 1e-14
    assert all(0 < n < 60 for n in ev.info["forward_iterations"] + ev.info["adjoint_iterations"])
    assert "fallback" not in ev.info
    assert json.loads(json.dumps(ev.summary()))["info"]["forward_iterations"] == ev.info["forward_iterations"]


@pytest.mark.parametrize("bad", [{"tol": 0.0}, {"tol": 1}, {"restart": 0}, {"maxiter": True}, {"pre": -1}])
def test_iterative_rejects_bad_options(bad):
    chain, _, values, p0 = _system(tasks.TwoHypothesis(0.1), fsc.Memento(2))
    with pytest.raises((ValueError, TypeError), match=f"{next(iter(bad))} must be"):
        Iterative(chain, values, p0, 0.1, **bad)


def test_sparse_rejects_a_bad_ordering():
    chain, _, values, p0 = _system(tasks.TwoHypothesis(0.1), fsc.Memento(2))
    with pytest.raises(ValueError, match="permc_spec must be one of .*got 'magic'"):
        SparseLU(chain, values, p0, 0.1, permc_spec="magic")


# Structure.


def test_observation_aggregates():
    arch = fsc.Memento(3)
    labels = observation_aggregates(arch)
    assert labels.max() + 1 == 1 + 2 + 4 + 8  # the words of arms of length 0..3
    words = {}
    for n, node in enumerate(arch.node_labels):
        arms = node[: len(node) // 2] if node != "_" else ""
        words.setdefault(labels[n], set()).add(arms)
    assert all(len(w) == 1 for w in words.values())
    ram = observation_aggregates(fsc.RAM(2))
    assert ram.max() + 1 == 2 + 2 * 2  # blank nodes, then (i, arm)


def test_choose_engine_keeps_choices_below_the_dense_limit(monkeypatch):
    world = tasks.TwoHypothesis(0.1).pomdp
    monkeypatch.setattr(builtin, "DENSE_MAX_STATES", 16)  # RAM M has 2 M states after each choice
    monkeypatch.setattr(builtin, "CHOICES_SPARSE_STATES", 8)
    assert choose_engine(world, fsc.RAM(8), 1e-3).name == "choices"
    assert choose_engine(world, fsc.RAM(9), 1e-3).name == "dense"
    assert choose_engine(world, fsc.Memento(2), 1e-3).name == "choices"  # 8 recurrent states, a sparse block
    assert choose_engine(world, fsc.Memento(3), 1e-3).name == "dense"


def test_choose_engine():
    world = tasks.TwoHypothesis(0.1).pomdp

    def pick(arch, reset=1e-3):
        return choose_engine(world, arch, reset).name

    assert pick(fsc.RAM(8)) == "choices" and pick(fsc.RAM(64)) == "choices" and pick(fsc.Column(20)) == "choices"
    assert pick(fsc.Memento(3)) == "choices" and pick(fsc.Memento(4)) == "choices" and pick(fsc.Memento(5)) == "choices"
    assert pick(fsc.Memento(6)) == "iterative"  # 2048 recurrent states after each choice, a sparse block
    assert pick(fsc.Memento(2), reset=0) == "accurate"
    assert set(ENGINES) == {"dense", "choices", "power", "sparse", "iterative", "accurate", "large"}
    assert {name for name, engine in ENGINES.items() if engine.zero_reset} == {"accurate"}
    assert {name for name, engine in ENGINES.items() if type(engine).fused_constants is not Engine.fused_constants} == {"dense", "choices"}


def test_chain_tables_are_compact_and_sorted():
    chain = fsc.joint_chain(tasks.TwoHypothesis(0.1).pomdp, fsc.Memento(4))
    assert chain.rows.dtype == np.int32
    key = chain.parts.astype(np.int64) * chain.size + chain.cols
    assert (np.diff(key) >= 0).all()  # sorted by (part, column): CSC slices


# The softmax's exponential (compiled, vectorised).


@numba.njit
def _exp_each(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = kernels.exp_nonpositive(x[i])
    return out


def test_softmax_exp_is_within_0_54_ulp_of_mpmath():
    rng = np.random.default_rng(11)
    x = np.concatenate([-rng.exponential(1.0, 3000), rng.uniform(-708.0, 0.0, 3000), -rng.uniform(0.0, 1e-9, 300),
                        -np.arange(64) * np.log(2) / 64])  # fmt: skip
    mpmath.mp.prec = 120
    exact = [mpmath.exp(mpmath.mpf(float(v))) for v in x]
    ulps = [abs(mpmath.mpf(float(ours)) - e) / float(np.spacing(float(e))) for ours, e in zip(_exp_each(x), exact, strict=True)]
    assert max(ulps) <= 0.54
    # Below 2^-1022 the result is rounded twice (the mantissa, then onto the subnormal grid): within 0.75 ulp.
    tiny = rng.uniform(-745.0, -708.4, 1000)
    ulps = [abs(mpmath.mpf(float(ours)) - mpmath.exp(mpmath.mpf(float(v)))) / 2.0**-1074 for ours, v in zip(_exp_each(tiny), tiny, strict=True)]
    assert max(ulps) <= 0.75


def test_softmax_exp_edges():
    x = np.array([0.0, -0.0, -np.inf, np.nan, -746.0, -745.2, -745.1, -1e-300])
    got = _exp_each(x)
    assert got[0] == got[1] == got[7] == 1.0
    assert got[2] == got[4] == got[5] == 0.0  # exp(-745.2) < 2^-1075: rounds to 0
    assert np.isnan(got[3])
    assert got[6] == 2.0**-1074  # exp(-745.1) lies between 2^-1075 and 2^-1074


def test_policy_probs_against_mpmath_softmax():
    rng = np.random.default_rng(3)
    w_pi, w_0 = rng.normal(0.0, 30.0, (6, 9)), rng.normal(0.0, 30.0, 6)
    allowed = rng.random((6, 9)) < 0.7
    allowed[:, 0] = True
    reset_mask = np.array([True, False, True, True, False, True])
    w_pi[~allowed] = 1e3  # never read: the softmax is over the allowed choices only
    probs, init = kernels.policy_probs(w_pi, allowed, w_0, reset_mask)
    mpmath.mp.prec = 120

    def softmax(values, mask):
        """Exact, of the arguments shifted in float as the kernel shifts them (``w - max w`` loses up to half an
        ulp of a difference of 80, which exp turns into a relative error of 7e-15 in any implementation)."""
        shifted = values - values[mask].max()
        weights = [mpmath.exp(mpmath.mpf(float(v))) if m else mpmath.mpf(0) for v, m in zip(shifted, mask, strict=True)]
        return np.array([float(w / sum(weights)) for w in weights])

    for n in range(6):  # an exp within 0.54 ulp, a sum of up to 9 terms and a division
        np.testing.assert_allclose(probs[n], softmax(w_pi[n], allowed[n]), rtol=1.5e-15, atol=0)
        assert np.all(probs[n][~allowed[n]] == 0.0)
    np.testing.assert_allclose(init, softmax(w_0, reset_mask), rtol=1.5e-15, atol=0)
    assert np.all(init[~reset_mask] == 0.0)


# Large sizes (run by the benchmark, not by default).


@pytest.mark.slow
def test_memento_8_gradient_against_finite_differences():
    world, arch = tasks.TwoHypothesis(0.1), fsc.Memento(8)
    policy = fsc.Policy.random(arch, 0).requires_grad_()
    ev = fsc.evaluate(world, policy, reset=1e-3)
    assert ev.engine == "iterative"
    ev.metrics["q"].backward()
    grad = policy.logits.grad
    generator = torch.Generator().manual_seed(1)
    for _ in range(3):
        direction = torch.randn(policy.logits.shape, generator=generator, dtype=torch.float64)
        h = 1e-4
        values = []
        for sign in (1, -1):
            moved = attrs.evolve(policy.detach(), logits=policy.logits.detach() + sign * h * direction)
            values.append(float(fsc.evaluate(world, moved, reset=1e-3).metrics["q"]))
        fd = (values[0] - values[1]) / (2 * h)
        assert float((grad * direction).sum()) == pytest.approx(fd, rel=1e-5)
