"""One generic core: the architecture registry, worlds of any shape, one read-out, bad input against bugs."""

from __future__ import annotations

import gc
import weakref

import attrs
import numpy as np
import pytest

import fsc
import tasks
from fsc import cli
from fsc.errors import InputError, InputTypeError


@attrs.frozen
class RAM(fsc.RAM):
    """A user's class that happens to be called RAM."""


def test_a_user_class_called_RAM_does_not_replace_the_builtin(tmp_path):
    builtin = fsc.Policy.random(fsc.RAM(2), 1)
    builtin.save(tmp_path / "builtin.npz")
    loaded = fsc.Policy.load(tmp_path / "builtin.npz")
    assert type(loaded.architecture) is fsc.RAM and loaded.architecture == builtin.architecture
    assert fsc.RAM(2).to_dict()["kind"] == "RAM"
    assert RAM(2).to_dict()["kind"] == f"{__name__}.RAM"


def test_an_unregistered_architecture_is_named_when_loading(tmp_path):
    @attrs.frozen
    class Mine(fsc.RAM):
        pass

    fsc.Policy.uniform(Mine(2)).save(tmp_path / "mine.npz")
    kind = f"{__name__}.test_an_unregistered_architecture_is_named_when_loading.<locals>.Mine"
    with pytest.raises(InputError, match=f"unknown memory architecture kind '{kind}'.*fsc.register_architecture"):
        fsc.Policy.load(tmp_path / "mine.npz")
    fsc.register_architecture(Mine)
    fsc.register_architecture(Mine)  # again: harmless
    assert fsc.Policy.load(tmp_path / "mine.npz").architecture == Mine(2)


def test_a_kind_held_by_another_class_is_refused():
    @attrs.frozen
    class Other(fsc.RAM):
        pass

    with pytest.raises(ValueError, match="architecture kind 'RAM' is already registered for fsc.model.memory.RAM"):
        fsc.register_architecture(Other, kind="RAM")
    with pytest.raises(TypeError, match="expects a MemoryArchitecture subclass"):
        fsc.register_architecture(int)
    assert fsc.MemoryArchitecture.from_dict({"kind": "RAM", "M": 2}) == fsc.RAM(2)


def _world_with_a_metric_called_gain() -> fsc.POMDP:
    rng = np.random.default_rng(7)
    S, A, O = 3, 2, 2
    return fsc.POMDP(
        transition=rng.dirichlet(np.ones(S), size=(S, A)),
        observation=rng.dirichlet(np.ones(O), size=(A, S)),
        reward=rng.normal(size=(S, A, S, O)),
        initial=rng.dirichlet(np.ones(S)),
        metrics={"gain": rng.uniform(size=(S, A, S, O)), "first": np.broadcast_to((np.arange(A) == 0)[None, :, None, None], (S, A, S, O))},
    )


def test_a_metric_called_gain_does_not_replace_the_reward_in_simulate():
    world = _world_with_a_metric_called_gain()
    policy = fsc.Policy.random(fsc.RAM(2), 3)
    exact = fsc.evaluate(world, policy, reset=0.05)
    sim = fsc.simulate(world, policy, reset=0.05, steps=400_000, seed=5)
    assert set(sim.metrics) == {"gain", "first"}
    assert abs(sim.gain - float(exact.gain)) < 5 * sim.gain_stderr
    for name in ("gain", "first"):
        assert abs(sim.metrics[name] - float(exact.metrics[name])) < 5 * sim.stderrs[name]
    assert abs(float(exact.gain) - float(exact.metrics["gain"])) > 20 * sim.gain_stderr  # two different quantities


def test_any_object_with_a_pomdp_is_a_world():
    tiger = tasks.Tiger()

    class Plain:  # not a fsc.Task subclass, no paper_metrics
        pomdp = tiger.pomdp

    policy = fsc.Policy.random(fsc.RAM(3, arms=3, observations=2), 2)
    for convention in ("native", "paper"):
        a = fsc.evaluate(Plain(), policy, convention=convention)
        b = fsc.evaluate(tiger.pomdp, policy, convention=convention)
        assert float(a.gain) == float(b.gain) and a.metrics.keys() == b.metrics.keys()
    with pytest.raises(TypeError, match="an object whose .pomdp is one"):
        fsc.evaluate(object(), policy, reset=0.1)


def test_tiger_with_a_metric_of_its_own_agrees_between_evaluation_and_simulation():
    base = tasks.Tiger().pomdp
    listen = base.action_labels.index("listen")
    metric = np.zeros(base.reward.shape[:2] + (base.num_states, base.num_observations))
    metric[:, listen] = 1.0
    world = attrs.evolve(base, metrics={**base.metrics, "listening": metric})
    policy = fsc.Policy.random(fsc.RAM(2, arms=3, observations=2), 4)
    for convention in ("native", "paper"):
        exact = fsc.evaluate(world, policy, reset=0.05, convention=convention)
        sim = fsc.simulate(world, policy, reset=0.05, steps=300_000, seed=9, convention=convention)
        assert abs(sim.gain - float(exact.gain)) < 5 * sim.gain_stderr
        assert abs(sim.metrics["listening"] - float(exact.metrics["listening"])) < 5 * sim.stderrs["listening"]


def test_only_bad_input_is_a_one_line_error_a_bug_keeps_its_traceback(monkeypatch, capsys):
    _, options, help_text = cli.COMMANDS["pomdp"]

    def raises(error):
        def command(args):
            raise error

        return command

    monkeypatch.setitem(cli.COMMANDS, "pomdp", (raises(InputError("--x: bad")), options, help_text))
    assert cli.main(["pomdp", "whatever.pomdp"]) == 2
    assert capsys.readouterr().err == "fsc: error: --x: bad\n"
    monkeypatch.setitem(cli.COMMANDS, "pomdp", (raises(InputTypeError("--x: bad type")), options, help_text))
    assert cli.main(["pomdp", "whatever.pomdp"]) == 2
    for bug in (ValueError("a bug deep inside"), TypeError("another bug"), KeyError("k")):
        monkeypatch.setitem(cli.COMMANDS, "pomdp", (raises(bug), options, help_text))
        with pytest.raises(type(bug)):
            cli.main(["pomdp", "whatever.pomdp"])


def test_joint_chains_are_not_kept_alive_beyond_the_budget(monkeypatch):
    from fsc.model import chain as chain_module

    world = tasks.TwoHypothesis(0.1).pomdp
    first = fsc.joint_chain(world, fsc.Memento(2))
    assert fsc.joint_chain(world, fsc.Memento(2)) is first  # reused
    assert not hasattr(first, "cache")  # no mutable scratch dict on a frozen class
    monkeypatch.setattr(chain_module, "MAX_CACHED_NONZEROS", 0)
    ref = weakref.ref(first)
    del first
    fsc.joint_chain(world, fsc.RAM(2))  # over the budget: only the latest chain stays
    gc.collect()
    assert ref() is None


def test_the_sparse_pattern_of_the_system_matches_a_direct_build():
    chain = fsc.joint_chain(tasks.TwoHypothesis(0.2).pomdp, fsc.Memento(2))
    policy = fsc.Policy.random(fsc.Memento(2), 1)
    from fsc.engines.sparse import system_matrices

    values = chain.weight * policy.probs().detach().numpy()[chain.node, chain.choice]
    for k, A in enumerate(system_matrices(chain, values, 0.01)):
        sl = chain.part_slices[k]
        P = np.zeros((chain.size, chain.size))
        np.add.at(P, (chain.rows[sl], chain.cols[sl]), values[sl])
        assert np.allclose(A.toarray(), np.eye(chain.size) - 0.99 * P, rtol=0, atol=1e-15)


def test_the_training_arguments_are_declared_once():
    import inspect

    from fsc import sweep
    from fsc.train import TrainingConfig, run_training
    from fsc.train.arguments import MAY_CHANGE, STOP, SWEEP_TYPES, TRAINING

    # run_training's keywords are the configuration's fields, stated nowhere else; world and policy are Python
    # objects (the API only)
    parameters = inspect.signature(run_training).parameters
    assert set(parameters) == {"config", "world", "policy", "arguments"} and parameters["arguments"].kind is inspect.Parameter.VAR_KEYWORD
    assert [field.name for field in attrs.fields(TrainingConfig)] == [a.name for a in TRAINING]
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_step'"):
        run_training(memory="ram:2", init="random", out="never-written", max_step=3)
    parser = cli.make_parser()
    train = parser._subparsers._group_actions[0].choices["train"]
    options = {o for action in train._actions for o in action.option_strings if o.startswith("--")}
    assert options == {a.option for a in TRAINING} | {"--json", "--help"}
    assert sweep.ARGUMENTS == SWEEP_TYPES and "target" in SWEEP_TYPES and "out" not in SWEEP_TYPES
    assert sweep.spec.STOP_ARGUMENTS == STOP == ("until_t", "max_seconds", "max_steps")
    assert {"until_t", "threads", "quiet"} <= MAY_CHANGE and not {"seed", "memory", "target"} & MAY_CHANGE


def test_a_sweep_passes_target_to_its_points(tmp_path):
    from fsc import sweep

    spec = sweep.Sweep.from_dict({"fixed": {"memory": "ram:2", "init": "random", "until_t": 10, "target": "return"}, "grid": {"seed": [0]}})
    assert "--target=return" in spec.points[0].argv()


def test_training_on_any_world_records_its_metrics(tmp_path):
    """A world object, metrics of its own (one called gain), no q: the trajectory's columns are its metrics."""
    from fsc.train import read_trajectory, run_training

    base = tasks.Tiger().pomdp
    listening = np.zeros((base.num_states, base.num_actions, base.num_states, base.num_observations))
    listening[:, base.action_labels.index("listen")] = 1.0
    world = attrs.evolve(base, metrics={"listening": listening, "gain": listening})
    result = run_training(world=world, memory="ram:2", init="random", seed=1, until_t=200.0, out=tmp_path / "run", quiet=True)
    columns = read_trajectory(tmp_path / "run")
    assert list(columns) == ["t", "step", "listening", "metric:gain", "gain", "dt", "seconds", "grad_norm", "evaluations"]
    assert np.array_equal(columns["listening"], columns["metric:gain"])
    last = fsc.evaluate(world, fsc.Policy.load(tmp_path / "run" / "policy.npz"))  # at the world's discount, as trained
    # One evaluator: training's last record and evaluate agree to the last bit.
    assert columns["listening"][-1] == float(last.metrics["listening"])
    assert columns["gain"][-1] == float(last.gain)
    summary = result.summary()
    assert "q" not in summary and summary["listening"] == columns["listening"][-1] and summary["metric:gain"] == columns["listening"][-1]
    again = run_training(world=world, memory="ram:2", init="random", seed=1, until_t=400.0, out=tmp_path / "run", quiet=True)
    assert again.resumed and again.t >= 400
    other = attrs.evolve(base, metrics={"listening": 1 - listening})
    with pytest.raises(ValueError, match="other arguments"):
        run_training(world=other, memory="ram:2", init="random", seed=1, until_t=400.0, out=tmp_path / "run", quiet=True)


def test_the_command_line_prints_every_metric_of_the_world():
    world = _world_with_a_metric_called_gain()
    policy = fsc.Policy.random(fsc.RAM(2), 3)
    record = cli.options.world_record(fsc.evaluate(world, policy, reset=0.05))
    exact = fsc.evaluate(world, policy, reset=0.05)
    assert list(record) == ["gain", "value", "metric:gain", "first"]
    assert record["gain"] == float(exact.gain) and record["metric:gain"] == float(exact.metrics["gain"])


# ---------------------------------------------------------------------------
# One evaluator: evaluate's backward pass is the adjoint training runs.


@pytest.mark.parametrize("engine", ["dense", "sparse", "power", "iterative", "accurate"])
@pytest.mark.parametrize("convention", ["native", "paper"])
def test_every_output_of_evaluate_has_the_exact_gradient(engine, convention):
    """gradcheck (central differences) on the gain, the value, q and the distribution at once."""
    import torch

    arch, world, reset = fsc.Memento(2), tasks.TwoHypothesis(0.2), 0.05
    start = fsc.Policy.random(arch, 5)
    weights = torch.randn(2, 4, arch.num_nodes, generator=torch.Generator().manual_seed(1), dtype=torch.float64)

    def outputs(logits, init_logits):
        result = fsc.evaluate(world, fsc.Policy(architecture=arch, logits=logits, init_logits=init_logits), reset=reset, engine=engine, convention=convention)
        return result.gain, result.value, result.metrics["q"], (weights[:, : result.distribution.shape[1]] * result.distribution).sum()

    leaves = (start.logits.clone().requires_grad_(True), start.init_logits.clone().requires_grad_(True))
    assert torch.autograd.gradcheck(outputs, leaves, eps=1e-6, atol=1e-9, rtol=1e-6)


@pytest.mark.parametrize("memory", ["ram:3", "memento:4"])
def test_training_and_evaluate_run_the_same_computation(memory):
    """The objective's value and gradient equal evaluate + backward to the last bit (dense and sparse engines)."""
    import torch

    from fsc.objective import Objective

    arch, world = fsc.parse_memory(memory), tasks.TwoHypothesis(0.1)
    policy = fsc.Policy.random(arch, 2).requires_grad_()
    for convention in ("native", "paper"):
        for target in ("gain", "return"):
            point = Objective(world=world, architecture=arch, reset=1e-3, convention=convention, target=target)(policy.logits, policy.init_logits)
            result = fsc.evaluate(world, policy, reset=1e-3, convention=convention)
            g, g0 = torch.autograd.grad(result.gain if target == "gain" else result.value, [policy.logits, policy.init_logits])
            assert point.gain == result.gain.item() and point.metrics["q"] == result.metrics["q"].item()
            assert torch.equal(point.grad_logits, g) and torch.equal(point.grad_init, g0)
    assert not hasattr(fsc.optim, "DenseAdjoint")


def test_the_gradient_with_respect_to_probabilities_is_the_finite_difference():
    """Evaluator.backward(on="probs"): each probability moved alone (the table need not stay stochastic)."""
    from fsc.evaluate import Evaluator

    arch, world, reset = fsc.RAM(2), tasks.TwoHypothesis(0.3), 0.1
    policy = fsc.Policy.random(arch, 4)
    probs, init = policy.probs().detach().numpy(), policy.init_probs().detach().numpy()
    evaluator = Evaluator(world, arch, reset, "dense", "native")
    d_probs, _ = evaluator.backward(evaluator.forward_probs(probs, init), metrics={"q": 1.0}, on="probs")
    h = 1e-6
    for n, c in np.ndindex(*probs.shape):
        if not arch.allowed[n, c]:
            continue
        up, down = probs.copy(), probs.copy()
        up[n, c] += h
        down[n, c] -= h
        numeric = (evaluator.forward_probs(up, init).metrics["q"] - evaluator.forward_probs(down, init).metrics["q"]) / (2 * h)
        assert abs(numeric - d_probs[n, c]) < 1e-8
