"""The numpy path of tiny chains (fsc.engines.small), which ``fsc evaluate`` and ``fsc draw`` take without loading
a compiled kernel: the same numbers as the compiled engines, a closed form and a referee's evaluator written
apart (tests/independent_chain.py); chosen by the dense engine's estimate, and only for ``auto`` without a gradient."""

import math

import numpy as np
import pytest

import fsc
import tasks
from fsc.engines import small
from fsc.evaluate import evaluate_weights
from fsc.model.policy import Weights, read_policy_file
from fsc.resolve import resolve_policy
from policies import closed_form
from tests.independent_chain import independent_q


def weights_of(policy: fsc.Policy) -> Weights:
    return Weights(policy.architecture, policy.logits.detach().numpy().copy(), policy.init_logits.detach().numpy().copy())


CASES = {
    "two-hypothesis RAM 2": (lambda: tasks.TwoHypothesis(mu=0.2), lambda: fsc.RAM(2), 1e-2),
    "two-hypothesis Memento 2": (lambda: tasks.TwoHypothesis(mu=0.1), lambda: fsc.Memento(2), 1e-3),
    "Tiger RAM 2": (lambda: tasks.Tiger(), lambda: fsc.RAM(2, arms=3, observations=2), 0.05),
    "two-hypothesis Column 3": (lambda: tasks.TwoHypothesis(mu=0.3), lambda: fsc.Column(3), 0.2),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("engine", ["dense", "choices", "accurate"])
@pytest.mark.parametrize("convention", ["native", "paper"])
def test_numpy_agrees_with_the_compiled_engines(case, engine, convention):
    make_world, make_memory, reset = CASES[case]
    world, arch = make_world(), make_memory()
    assert small.fits(fsc.as_pomdp(world), arch, reset)
    policy = fsc.Policy.random(arch, generator=3)
    tiny = evaluate_weights(world, weights_of(policy), reset=reset, convention=convention)
    assert tiny.engine == "numpy"
    other = fsc.evaluate(world, policy, reset=reset, engine=engine, convention=convention)
    assert tiny.gain == pytest.approx(float(other.gain), rel=1e-11, abs=1e-13)
    assert tiny.value == pytest.approx(float(other.value), rel=1e-11, abs=1e-13)
    assert tiny.metrics.keys() == other.metrics.keys()
    for name, value in other.metrics.items():
        assert tiny.metrics[name] == pytest.approx(float(value), rel=1e-11, abs=1e-13), name
    np.testing.assert_allclose(tiny.distribution, other.distribution.numpy(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(tiny.part_weights, other.part_weights.numpy(), rtol=0, atol=0)
    assert tiny.residual < 1e-13


@pytest.mark.parametrize("M, reset", [(2, 1e-2), (3, 1e-3), (4, 1e-1)])
def test_numpy_gives_the_closed_form_of_the_column_of_confidence_policy(M, reset):
    """Appendix C's q of the column of confidence policy, from its formula (no chain solved)."""
    mu = 0.1
    policy = resolve_policy("ccp", fsc.RAM(M), mu=mu, reset=reset)
    eps = closed_form.ccp_eps_best(mu, M, reset)
    result = evaluate_weights(tasks.TwoHypothesis(mu=mu), weights_of(policy), reset=reset)
    assert result.engine == "numpy"
    assert result.metrics["q"] == pytest.approx(closed_form.ccp_q(mu, M, reset, eps), rel=1e-9)


@pytest.mark.parametrize("convention", ["native", "paper"])
def test_numpy_gives_the_referees_q_of_a_policy_file(convention, tmp_path):
    """The referee builds the chain from the file's labels by the paper's definitions and solves it by GTH."""
    path = tmp_path / "policy.npz"
    fsc.Policy.random(fsc.Memento(3), generator=5).save(path)
    result = evaluate_weights(tasks.TwoHypothesis(mu=0.2), read_policy_file(path), reset=1e-2, convention=convention)
    assert result.engine == "numpy"
    assert result.metrics["q"] == pytest.approx(independent_q(path, 0.2, 1e-2, convention), rel=1e-9)


def test_auto_goes_to_numpy_only_for_tiny_chains_and_a_named_engine_is_obeyed():
    world = tasks.TwoHypothesis(mu=0.1)
    uniform = Weights(fsc.RAM(2), np.zeros((fsc.RAM(2).num_nodes, fsc.RAM(2).num_choices)), np.zeros(fsc.RAM(2).num_nodes))
    assert evaluate_weights(world, uniform, reset=0.01).engine == "numpy"
    assert evaluate_weights(world, uniform, reset=0.01, engine="dense").engine == "dense"
    big = fsc.Memento(9)  # 1,023 nodes: a dense LU of 2 x 2,046 states is far over NUMPY_SECONDS
    assert not small.fits(fsc.as_pomdp(world), big, 0.01)
    assert not small.fits(fsc.as_pomdp(world), fsc.RAM(2), 0.0)  # r = 0: I - P is singular


def test_a_tiny_chains_evaluation_loads_no_compiled_kernel():
    """In a fresh interpreter: ``fsc.evaluate.evaluate_weights`` on a tiny chain imports neither numba nor torch."""
    from tests.fsc.test_startup import fresh

    code = (
        "import sys, numpy as np, tasks, fsc.model.memory as m\n"
        "from fsc.evaluate import evaluate_weights\nfrom fsc.model.policy import Weights\n"
        "a = m.RAM(2)\nw = Weights(a, np.zeros((a.num_nodes, a.num_choices)), np.zeros(a.num_nodes))\n"
        "r = evaluate_weights(tasks.TwoHypothesis(mu=0.1), w, reset=0.01)\n"
        "print(r.engine, 'numba' in sys.modules, 'torch' in sys.modules, r.metrics['q'])"
    )
    engine, numba, torch, q = fresh(code).split()
    assert (engine, numba, torch) == ("numpy", "False", "False")
    assert math.isfinite(float(q))
