"""Adding an engine is one class and one registry line: a toy engine (numpy's dense solve) runs through
``fsc.evaluate`` by name and by ``auto``, and matches the dense engine (LAPACK through the compiled kernels)."""

import numpy as np
import pytest
import torch

import fsc
import tasks
from fsc.engines.cost import Estimate
from fsc.engines.engine import JointEngine
from fsc.engines.registry import ENGINES, register_engine, unregister_engine
from fsc.engines.sparse import Backend
from fsc.evaluate import Evaluator


class NumpySolve(Backend):
    """``A = I - (1 - r) P`` of each part as a dense numpy array; ``numpy.linalg.solve`` with ``A`` and ``A^T``."""

    def __init__(self, chain, values, p0, reset):
        self.A = [np.eye(chain.size) - (1 - reset) * P.toarray() for P in chain.matrices(values)]
        self.b, self.info = reset * p0, {}

    def solve(self):
        return np.stack([np.linalg.solve(A, b) for A, b in zip(self.A, self.b, strict=True)])

    def solve_adjoint(self, g):
        return np.stack([np.linalg.solve(A.T, gk) for A, gk in zip(self.A, g, strict=True)])

    def residual(self, p):
        return max(float(np.abs(A @ pk - b).max()) for A, pk, b in zip(self.A, p, self.b, strict=True))


class Toy(JointEngine):
    name = "toy"

    def estimate(self, sizes):
        return Estimate(self.name, 1, 1e-9)  # lighter and faster than any engine

    def auto_cost(self, chain, reset):
        return 0.5 if reset > 0 else None  # before choices (1), dense (2), sparse (3), iterative (4)

    def backend(self, chain, values, p0, reset, probs):
        return NumpySolve(chain, values, p0, reset)


@pytest.fixture
def toy(monkeypatch):
    before = dict(ENGINES)
    monkeypatch.setattr(Evaluator, "_last", None)
    register_engine(Toy())  # the one line that adds an engine
    yield ENGINES["toy"]
    unregister_engine("toy")
    assert ENGINES == before


def _value_and_gradient(world, policy, engine):
    policy = fsc.Policy(architecture=policy.architecture, logits=policy.logits.clone(), init_logits=policy.init_logits.clone()).requires_grad_()
    ev = fsc.evaluate(world, policy, reset=0.03, engine=engine)
    weights = torch.linspace(-1, 1, ev.distribution.numel(), dtype=torch.float64).reshape(ev.distribution.shape)
    (ev.gain + sum(ev.metrics.values()) + (ev.distribution * weights).sum()).backward()
    return ev, policy.logits.grad, policy.init_logits.grad


@pytest.mark.parametrize("arch", [fsc.RAM(2), fsc.Memento(2)], ids=repr)
@pytest.mark.parametrize("engine", ["toy", "auto"])
def test_a_registered_engine_runs_by_name_and_by_auto(toy, arch, engine):
    world = tasks.TwoHypothesis(0.2)
    policy = fsc.Policy.random(arch, 4)
    got, grad, grad_init = _value_and_gradient(world, policy, engine)
    ref, ref_grad, ref_init = _value_and_gradient(world, policy, "dense")
    assert got.engine == "toy" and ref.engine == "dense"
    assert got.residual < 1e-15
    assert float(got.gain.detach()) == pytest.approx(float(ref.gain.detach()), rel=0, abs=1e-12)
    for name, value in ref.metrics.items():
        assert float(got.metrics[name].detach()) == pytest.approx(float(value.detach()), rel=0, abs=1e-12), name
    torch.testing.assert_close(got.distribution, ref.distribution, rtol=0, atol=1e-12)
    torch.testing.assert_close(grad, ref_grad, rtol=0, atol=1e-12)
    torch.testing.assert_close(grad_init, ref_init, rtol=0, atol=1e-12)


def test_auto_keeps_its_pick_without_the_toy_and_refuses_zero_reset_on_it(toy):
    world, policy = tasks.TwoHypothesis(0.2), fsc.Policy.random(fsc.RAM(2), 1)
    assert fsc.evaluate(world, policy, reset=0).engine == "accurate"  # the toy does not take reset = 0
    with pytest.raises(ValueError, match=r"^reset = 0 .* needs one of the engines \['accurate'\], got 'toy'$"):
        fsc.evaluate(world, policy, reset=0, engine="toy")
    unregister_engine("toy")
    assert fsc.evaluate(world, policy, reset=0.03).engine == "choices"
    register_engine(Toy())


def test_an_unknown_engine_is_one_line_naming_the_registry(toy):
    world, policy = tasks.TwoHypothesis(0.2), fsc.Policy.random(fsc.RAM(2), 1)
    with pytest.raises(ValueError, match=r"^engine must be 'auto' or one of \[.*'toy'.*\], got 'nope'$"):
        fsc.evaluate(world, policy, reset=0.03, engine="nope")


def test_register_engine_refuses_a_name_taken_or_not_an_engine(toy):
    with pytest.raises(ValueError, match="engine name must be a new name other than 'auto', got 'toy'"):
        register_engine(Toy())
    with pytest.raises(TypeError, match="engine must be a fsc.engines.engine.Engine, got str"):
        register_engine("toy")


def test_the_evaluator_cache_forgets_an_engine_taken_out_of_the_registry(toy):
    """``Evaluator.of`` reuses the last evaluator for the same arguments, but not across a change of the registry:
    an engine unregistered (or replaced under its name) no longer runs."""
    world, policy = tasks.TwoHypothesis(0.2), fsc.Policy.random(fsc.RAM(2), 1)
    assert fsc.evaluate(world, policy, reset=0.03).engine == "toy"
    unregister_engine("toy")
    assert fsc.evaluate(world, policy, reset=0.03).engine == "choices"
    register_engine(Toy())
    assert fsc.evaluate(world, policy, reset=0.03).engine == "toy"
