"""``fsc train`` without torch: a new run of the gradient flow (or plain ascent) from ``uniform`` or a policy file
runs on numpy arrays (fsc.train.run.without_torch) and ends on the same bits as the same run on torch's tensors
(the API's fsc.Policy), on the dense and the choices engines and on the Python path of an engine without
compiled steps; a run resumed from a checkpoint (torch's tensors) continues it bit for bit."""

import json

import numpy as np
import pytest

import fsc
import fsc.cli
import tasks
from fsc.errors import InputTypeError
from fsc.io.pomdp_file import write_pomdp
from fsc.model.policy import Weights
from fsc.objective import Objective
from fsc.optim import optimize
from fsc.train import run_training
from fsc.train.arguments import TrainingConfig
from fsc.train.run import without_torch
from fsc.train.setting import resolve_setting
from tests.fsc.test_startup import heavy_after

#: The trajectory's columns that are numbers of the run (not of the clock).
NUMBERS = ("t", "step", "gain", "dt", "grad_norm", "evaluations")


def _files(out) -> dict[str, np.ndarray]:
    """The numbers a run wrote: its trajectory's columns (but the clock's), its final policy, its checkpoint's point."""
    with np.load(out / "trajectory.npz") as data:
        found = {name: data[name] for name in data.files if name in NUMBERS or name.startswith("q")}
    with np.load(out / "policy.npz") as data:
        found |= {f"policy {name}": data[name] for name in ("logits", "init_logits")}
    with np.load(out / "checkpoint.npz") as data:
        found |= {f"checkpoint {name}": data[name] for name in ("logits", "init_logits", "grad_logits", "grad_init", "gain", "t", "dt")}
    return found


def _same_bits(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].tobytes() == b[name].tobytes(), name


CASES = {
    "flow, two-hypothesis, dense": ["--mu", "0.1", "--memory", "ram:2", "--init", "uniform", "--max-steps", "60"],
    "flow, until t, rows thinned": ["--mu", "0.2", "--memory", "ram:3", "--init", "uniform", "--until-t", "300", "--rows-per-decade", "4"],
    "flow, Tiger, choices, a policy file": ["--pomdp", "TIGER", "--memory", "ram:2", "--init", "POLICY", "--max-steps", "40"],
    "flow, Python steps (sparse engine)": ["--mu", "0.1", "--memory", "ram:2", "--init", "uniform", "--max-steps", "15", "--engine", "sparse"],
    "ascent": ["--mu", "0.1", "--memory", "ram:2", "--init", "uniform", "--max-steps", "20", "--optimizer", "ascent", "--lr", "3"],
}


def _argv(words: list[str], tmp_path) -> list[str]:
    write_pomdp(tasks.Tiger(), tmp_path / "tiger.POMDP")
    fsc.Policy.random(fsc.RAM(2, arms=3, observations=2), generator=3).save(tmp_path / "policy.npz")
    named = {"TIGER": str(tmp_path / "tiger.POMDP"), "POLICY": str(tmp_path / "policy.npz")}
    return [named.get(word, word) for word in words]


def _tensor_run(argv: list[str], out) -> fsc.train.TrainingResult:
    """The run ``fsc train ARGV`` describes, by the API from the initial policy as a :class:`fsc.Policy` (torch)."""
    config = TrainingConfig.from_namespace(fsc.cli.make_parser("train").parse_args(["train", *argv, "--out", str(out), "--quiet"]))
    start = fsc.Policy.uniform(resolve_setting(config).arch) if config.init == "uniform" else fsc.Policy.load(config.init)
    return run_training(config, policy=start)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_run_on_numpy_arrays_ends_on_the_bits_of_the_run_on_tensors(case, tmp_path, capsys):
    argv = _argv(CASES[case], tmp_path)
    assert fsc.cli.main(["train", *argv, "--out", str(tmp_path / "arrays"), "--quiet", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    tensors = _tensor_run(argv, tmp_path / "tensors")
    assert isinstance(tensors.policy, fsc.Policy)  # the API's run: on torch's tensors
    assert (summary["steps"], summary["gain"], summary["evaluations"]) == (tensors.steps, tensors.gain, tensors.evaluations)
    _same_bits(_files(tmp_path / "arrays"), _files(tmp_path / "tensors"))


def test_fsc_train_from_uniform_or_a_file_imports_no_torch_and_a_resumed_run_continues_it_bit_for_bit(tmp_path):
    """A new run imports no torch (numba and scipy: the compiled steps); resumed from its checkpoint (torch's
    tensors) to more steps, it ends on the bits of a run of as many steps at once."""
    argv = _argv(CASES["flow, Tiger, choices, a policy file"], tmp_path)
    half = [word if word != "40" else "20" for word in argv]
    assert heavy_after(["train", *half, "--out", str(tmp_path / "resumed"), "--quiet"]) == (0, ["numba", "scipy"])
    assert heavy_after(["train", *argv, "--out", str(tmp_path / "resumed"), "--quiet"]) == (0, ["torch", "numba", "scipy"])
    assert heavy_after(["train", *argv, "--out", str(tmp_path / "whole"), "--quiet"]) == (0, ["numba", "scipy"])
    _same_bits(_files(tmp_path / "resumed"), _files(tmp_path / "whole"))


@pytest.mark.parametrize(("words", "expected"), [
    (["--init", "uniform"], True), (["--init", "POLICY"], True), (["--init", "uniform", "--optimizer", "ascent"], True),
    (["--init", "random"], False), (["--init", "uniform", "--optimizer", "adam"], False), (["--init", "uniform", "--optimizer", "rosenbrock"], False),
])  # fmt: skip
def test_which_runs_need_no_torch(words, expected, tmp_path):
    argv = _argv(["--mu", "0.1", "--memory", "ram:2", *words, "--out", str(tmp_path / "run")], tmp_path)
    config = TrainingConfig.from_namespace(fsc.cli.make_parser("train").parse_args(["train", *argv]))
    assert without_torch(config) is expected


def test_adam_refuses_a_policy_s_numpy_weights():
    arch = fsc.RAM(2)
    weights = Weights(arch, np.zeros((arch.num_nodes, arch.num_choices)), np.zeros(arch.num_nodes))
    with pytest.raises(InputTypeError, match="adam optimizer keeps torch tensors"):
        optimize(tasks.TwoHypothesis(0.1), weights, reset=1e-3, optimizer="adam")


def test_a_point_on_numpy_arrays_has_the_numbers_of_the_point_on_tensors():
    """One evaluation from numpy logits and from the same logits as tensors: the same bits, of each kind."""
    policy = fsc.Policy.random(fsc.RAM(3), generator=2)
    objective = Objective(world=tasks.TwoHypothesis(0.2), architecture=policy.architecture, reset=1e-2)
    on_arrays = objective(policy.logits.numpy().copy(), policy.init_logits.numpy().copy())
    on_tensors = objective(policy.logits, policy.init_logits)
    assert isinstance(on_arrays.grad_logits, np.ndarray) and not isinstance(on_tensors.grad_logits, np.ndarray)
    assert on_arrays.gain == on_tensors.gain and on_arrays.grad_norm == on_tensors.grad_norm
    for name in ("grad_logits", "grad_init"):
        assert getattr(on_arrays, name).tobytes() == getattr(on_tensors, name).numpy().tobytes()
    assert isinstance(on_arrays.policy(), Weights) and isinstance(on_tensors.policy(), fsc.Policy)
