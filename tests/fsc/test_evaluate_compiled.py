"""``fsc.evaluate`` on the dense and choices engines runs the training path's compiled passes (issue 40).

The reference is the evaluator's Python path (:meth:`fsc.evaluate.Evaluator.forward` then
:meth:`~fsc.evaluate.Evaluator.backward` on the engine's own backend), which training's compiled call is
tested against elsewhere; here the compiled forward pass and the compiled adjoint pass on its factors must
give the same bits, and the public gradient of the gain must be the training path's own.
"""

import numpy as np
import pytest
import torch

import fsc
import tasks
from fsc.evaluate import Evaluator, Light
from fsc.objective import Objective

CASES = [("ram:3", "choices"), ("ram:3", "dense"), ("memento:2", "choices"), ("memento:2", "dense"), ("column:2", "dense")]


def _setup(memory, engine, convention):
    world, arch = tasks.TwoHypothesis(0.2), fsc.parse_memory(memory)
    policy = fsc.Policy.random(arch, 3)
    return world, arch, policy, Evaluator(world, arch, 0.05, engine, convention)


@pytest.mark.parametrize(("memory", "engine"), CASES)
@pytest.mark.parametrize("convention", ["native", "paper"])
def test_compiled_passes_give_the_python_path_bits(memory, engine, convention):
    world, arch, policy, evaluator = _setup(memory, engine, convention)
    w_pi, w_0 = policy.logits.numpy(), policy.init_logits.numpy()
    python, compiled = evaluator.forward(w_pi, w_0), evaluator.forward_compiled(w_pi, w_0)
    assert evaluator.engine == engine and type(compiled.backend) is not type(python.backend)
    assert (compiled.gain, compiled.metrics) == (python.gain, python.metrics)
    assert np.array_equal(compiled.p_hat, python.p_hat) and np.array_equal(compiled.p, python.p)
    assert compiled.residual == pytest.approx(python.residual, abs=1e-15) and compiled.residual < 1e-13
    seed = np.random.default_rng(0).standard_normal(python.p_hat.shape)
    for weights in ({"gain": 1.0}, {"gain": 0.5, "value": -2.0, "metrics": {"q": 3.0}, "distribution": seed}):
        for on in ("logits", "probs"):
            expected, got = evaluator.backward(python, **weights, on=on), evaluator.backward(compiled, **weights, on=on)
            assert all(np.array_equal(a, b) for a, b in zip(expected, got, strict=True))


@pytest.mark.parametrize(("memory", "engine"), CASES)
def test_public_gradient_is_the_training_paths_to_the_bit(memory, engine):
    world, arch, policy, _ = _setup(memory, engine, "paper")
    point = Objective(world=world, architecture=arch, reset=0.05, engine=engine, convention="paper")(policy.logits, policy.init_logits)
    leaves = policy.requires_grad_()
    result = fsc.evaluate(world, leaves, reset=0.05, engine=engine, convention="paper")
    result.gain.backward()
    assert result.engine == engine and float(result.gain.detach()) == point.gain
    assert torch.equal(leaves.logits.grad, point.grad_logits) and torch.equal(leaves.init_logits.grad, point.grad_init)


@pytest.mark.parametrize("engine", ["choices", "dense"])
def test_gradient_kept_by_the_forward_pass_is_handed_out_once(engine):
    """``gain.backward()`` twice (``retain_graph``): the leaves hold twice the gradient, the second computed again
    (the first may be the leaves' own ``.grad``, added to in place); ``3 * gain`` takes the general adjoint pass."""
    world, arch, policy, _ = _setup("ram:3", engine, "paper")
    point = Objective(world=world, architecture=arch, reset=0.05, engine=engine, convention="paper")(policy.logits, policy.init_logits)
    leaves = policy.requires_grad_()
    gain = fsc.evaluate(world, leaves, reset=0.05, engine=engine, convention="paper").gain
    gain.backward(retain_graph=True)
    gain.backward(retain_graph=True)
    assert torch.equal(leaves.logits.grad, 2 * point.grad_logits) and torch.equal(leaves.init_logits.grad, 2 * point.grad_init)
    leaves.logits.grad = leaves.init_logits.grad = None
    (3 * gain).backward()
    torch.testing.assert_close(leaves.logits.grad, 3 * point.grad_logits, rtol=1e-14, atol=1e-15)
    torch.testing.assert_close(leaves.init_logits.grad, 3 * point.grad_init, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize(("memory", "engine"), CASES[:4])
def test_any_weights_of_the_outputs_give_the_python_paths_bits(memory, engine):
    """Under autograd the forward pass keeps only the read-out, ``p_hat`` and the gain's gradient (a ``Light``
    pass); any other weights of the gain, the metrics and the distribution take the adjoint pass on the
    factors computed again, and give the evaluator's Python path to the bit; so does the residual."""
    world, arch, policy, evaluator = _setup(memory, engine, "paper")
    w_pi, w_0 = policy.logits.numpy().copy(), policy.init_logits.numpy().copy()
    python = evaluator.forward(w_pi, w_0)
    seed = np.random.default_rng(1).standard_normal(python.p_hat.shape)
    expected = evaluator.backward(python, gain=0.5, metrics={"q": 3.0}, distribution=seed)
    leaves = policy.requires_grad_()
    result = fsc.evaluate(world, leaves, reset=0.05, engine=engine, convention="paper")
    assert isinstance(result._run, Light) and result.info == {}
    torch.autograd.backward([result.gain, result.metrics["q"], result.distribution],
                            [torch.tensor(0.5), torch.tensor(3.0), torch.from_numpy(seed.reshape(result.distribution.shape))])  # fmt: skip
    assert np.array_equal(leaves.logits.grad.numpy(), expected[0]) and np.array_equal(leaves.init_logits.grad.numpy(), expected[1])
    assert result.residual == pytest.approx(python.residual, abs=1e-15) and result.residual < 1e-13
    assert np.array_equal(result.distribution.detach().numpy().reshape(python.p_hat.shape), python.p_hat)


@pytest.mark.parametrize("engine", ["choices", "dense"])
def test_gradcheck_of_every_output_and_no_second_derivative(engine):
    """torch's gradcheck on the gain, q and the distribution (unit weights: the gain's gradient handed over,
    the others by the adjoint pass); a second derivative is refused, not silently zero."""
    world, arch, policy, _ = _setup("ram:2", engine, "native")

    def outputs(logits, init_logits):
        result = fsc.evaluate(world, fsc.Policy(architecture=arch, logits=logits, init_logits=init_logits), reset=0.05, engine=engine)
        return result.gain, result.metrics["q"], result.distribution

    inputs = (policy.logits.clone().requires_grad_(), policy.init_logits.clone().requires_grad_())
    assert torch.autograd.gradcheck(outputs, inputs, eps=1e-6, atol=1e-8, rtol=1e-5)
    (first,) = torch.autograd.grad(outputs(*inputs)[0], inputs[0], create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable|does not require grad"):
        first.sum().backward()


@pytest.mark.parametrize(("memory", "engine"), CASES)
@pytest.mark.parametrize("convention", ["native", "paper"])
def test_gradient_without_autograd_is_the_training_paths_to_the_bit(memory, engine, convention):
    """``fsc.evaluate(..., gradient=True)``: the gain's gradient outside autograd, the training path's own bits;
    nothing it returns carries a graph, even from leaves that require a gradient."""
    world, arch, policy, _ = _setup(memory, engine, convention)
    point = Objective(world=world, architecture=arch, reset=0.05, engine=engine, convention=convention)(policy.logits, policy.init_logits)
    result = fsc.evaluate(world, policy.requires_grad_(), reset=0.05, engine=engine, convention=convention, gradient=True)
    assert result.engine == engine and float(result.gain) == point.gain
    assert torch.equal(result.grad_logits, point.grad_logits) and torch.equal(result.grad_init_logits, point.grad_init)
    assert not any(t.requires_grad for t in (result.gain, result.distribution, *result.metrics.values()))


@pytest.mark.parametrize("engine", ["accurate", "iterative", "large", "power", "sparse"])
@pytest.mark.parametrize("memory", ["ram:2", "memento:2"])
def test_gradient_without_autograd_on_every_other_engine_is_what_backward_gives(memory, engine):
    """On the engines without a compiled pass, ``gradient=True`` runs the adjoint solve ``gain.backward()``
    runs: the same bits (after a first call, which lays out what the large engine keeps from call to call)."""
    world, arch = tasks.TwoHypothesis(0.2), fsc.parse_memory(memory)
    policy = fsc.Policy.random(arch, 5)
    fsc.evaluate(world, policy, reset=0.05, engine=engine)
    leaves = policy.requires_grad_()
    found = fsc.evaluate(world, policy, reset=0.05, engine=engine, gradient=True)
    fsc.evaluate(world, leaves, reset=0.05, engine=engine).gain.backward()
    assert found.engine == engine
    assert torch.equal(found.grad_logits, leaves.logits.grad) and torch.equal(found.grad_init_logits, leaves.init_logits.grad)
    plain = fsc.evaluate(world, policy, reset=0.05, engine=engine)
    assert plain.grad_logits is None and plain.grad_init_logits is None


def test_gradient_without_autograd_matches_central_differences():
    """An independent check: central differences of the gain in every logit (step 1e-6) on RAM 2 and the task's
    hand-sized chain, to 1e-8."""
    world, arch = tasks.TwoHypothesis(0.3), fsc.parse_memory("ram:2")
    policy = fsc.Policy.random(arch, 7)
    found = fsc.evaluate(world, policy, reset=0.1, gradient=True)

    def gain(logits, init_logits):
        moved = fsc.Policy(architecture=arch, logits=logits, init_logits=init_logits)
        return float(fsc.evaluate(world, moved, reset=0.1).gain)

    h = 1e-6
    for name, tensor, grad in (("logits", policy.logits, found.grad_logits), ("init", policy.init_logits, found.grad_init_logits)):
        flat = tensor.reshape(-1)
        for i in range(flat.numel()):
            if not torch.isfinite(flat[i]):
                assert grad.reshape(-1)[i] == 0
                continue
            up, down = tensor.clone(), tensor.clone()
            up.reshape(-1)[i] += h
            down.reshape(-1)[i] -= h
            args_up = (up, policy.init_logits) if name == "logits" else (policy.logits, up)
            args_down = (down, policy.init_logits) if name == "logits" else (policy.logits, down)
            assert float(grad.reshape(-1)[i]) == pytest.approx((gain(*args_up) - gain(*args_down)) / (2 * h), abs=1e-8)


def test_gradient_flag_must_be_a_bool():
    world, arch = tasks.TwoHypothesis(0.2), fsc.parse_memory("ram:2")
    with pytest.raises(TypeError, match="gradient must be True or False, got 'yes'"):
        fsc.evaluate(world, fsc.Policy.uniform(arch), reset=0.05, gradient="yes")
