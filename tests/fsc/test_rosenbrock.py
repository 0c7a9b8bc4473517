"""The Rosenbrock integrator of the gradient flow (fsc.optim.Rosenbrock, docs/model.md "Fewer steps"): it
follows the flow that an independent solver (scipy's solve_ivp) computes on the same gradient field, its local
error control behaves as documented, it resumes exactly, and it takes few steps where the flow is stiff."""

import math

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp

import fsc
import tasks
from fsc.errors import InputError, InputTypeError
from fsc.objective import Objective
from fsc.optim import Rosenbrock, make_optimizer, optimize

pytestmark = pytest.mark.usefixtures("one_thread")

WORLD, RESET = tasks.TwoHypothesis(0.3), 0.1


def masked_policy():
    """RAM 2 from a random start, with one choice and one initial node at probability 0 (``-inf`` logits)."""
    policy = fsc.Policy.random(fsc.RAM(2), 5)
    logits, init_logits = policy.logits.detach().clone(), policy.init_logits.detach().clone()
    logits[3, 1] = -math.inf
    init_logits[4] = -math.inf
    return fsc.Policy(architecture=policy.architecture, logits=logits, init_logits=init_logits)


class Field:
    """The flow's right-hand side on the finite logits, for solve_ivp: the gradient of the gain."""

    def __init__(self, policy, world=WORLD, reset=RESET, convention="native"):
        self.objective = Objective(world=world, architecture=policy.architecture, reset=reset, convention=convention)
        self.logits, self.init_logits = policy.logits.detach().numpy(), policy.init_logits.detach().numpy()
        self.mask, self.init_mask = np.isfinite(self.logits), np.isfinite(self.init_logits)

    def vector(self, logits, init_logits):
        return np.concatenate([np.asarray(logits)[self.mask], np.asarray(init_logits)[self.init_mask]])

    def __call__(self, t, y):
        logits, init_logits = self.logits.copy(), self.init_logits.copy()
        logits[self.mask], init_logits[self.init_mask] = y[: self.mask.sum()], y[self.mask.sum() :]
        point = self.objective(torch.from_numpy(logits), torch.from_numpy(init_logits))
        return self.vector(point.grad_logits.numpy(), point.grad_init.numpy())

    def solve(self, y0, t0, t1, **options):
        return solve_ivp(self, (t0, t1), y0, method="DOP853", rtol=1e-12, atol=1e-12, **options)


def test_rosenbrock_follows_the_flow_that_solve_ivp_computes():
    """Global error on the logits at every accepted step, against DOP853 at 1e-12 on the same field, about
    a third of the tolerance, and a hundred times smaller at a tolerance a hundred times smaller."""
    policy = masked_policy()
    field = Field(policy)
    exact = field.solve(field.vector(policy.logits.numpy(), policy.init_logits.numpy()), 0.0, 300.0, dense_output=True)
    errors = {}
    for tolerance in (1e-4, 1e-6):
        records = list(optimize(WORLD, policy, reset=RESET, optimizer="rosenbrock", tolerance=tolerance, until_t=300.0))
        assert records[-1].stop == "until_t" and records[-1].t >= 300.0
        errors[tolerance] = max(np.abs(field.vector(r.state.point.logits.numpy(), r.state.point.init_logits.numpy()) - exact.sol(r.t)).max() for r in records)
        last = records[-1].state.point
        assert last.logits[3, 1] == -math.inf and last.init_logits[4] == -math.inf  # probability 0 stays 0
    moved = np.abs(exact.y[:, -1] - exact.y[:, 0]).max()
    assert moved > 0.5, moved  # the weights really moved
    assert errors[1e-4] < 1e-4 and errors[1e-6] < 1e-6, errors
    assert errors[1e-6] < errors[1e-4] / 30, errors


def test_each_accepted_step_is_within_the_tolerance_and_steps_scale_as_its_cube_root():
    """The documented control: each accepted step's local error (the step against solve_ivp from the same point
    over the same h) stays within the tolerance on every logit; the next h follows (tolerance / estimate)^(1/3),
    so a tolerance 1000 times smaller takes about 10 times more steps."""
    policy = fsc.Policy.random(fsc.RAM(2), 3)
    field = Field(policy)
    tolerance = 1e-5
    records = list(optimize(WORLD, policy, reset=RESET, optimizer="rosenbrock", tolerance=tolerance, max_steps=15))
    local = []
    for before, after in zip(records, records[1:], strict=False):
        start = field.vector(before.state.point.logits.numpy(), before.state.point.init_logits.numpy())
        exact = field.solve(start, before.t, after.t).y[:, -1]
        local.append(np.abs(field.vector(after.state.point.logits.numpy(), after.state.point.init_logits.numpy()) - exact).max())
    assert max(local) <= tolerance, local
    assert max(local) > tolerance / 1e4, local  # the steps are as long as the control allows, not needlessly short
    steps = {}
    for tol in (1e-5, 1e-8):
        steps[tol] = list(optimize(WORLD, policy, reset=RESET, optimizer="rosenbrock", tolerance=tol, until_t=200.0))[-1].step
    assert 5 < steps[1e-8] / steps[1e-5] < 20, steps


def test_a_stiff_stall_takes_a_fraction_of_the_published_steps_on_the_same_curve():
    """Figure 2's RAM 2, mu = 0.2, r = 0.01 from near the CCP: the flow stalls on a stiff direction (curvature
    5e-2 against 1e-7 along the slow ones), where the published rule's Euler steps stay near its stability limit.
    The Rosenbrock integrator follows Radau (an implicit solver at 1e-10) within 1e-5 in q, in a fifth of the
    published steps or fewer."""
    world, reset = tasks.TwoHypothesis(0.2), 0.01
    arch = fsc.RAM(2)
    import policies

    policy = policies.named_policy("near-ccp", arch, mu=0.2, reset=reset, published=True)
    until_t = 1e5
    published = list(optimize(world, policy, reset=reset, convention="paper", until_t=until_t, skip_until=lambda: math.inf))[-1]
    records = list(optimize(world, policy, reset=reset, convention="paper", until_t=until_t, optimizer="rosenbrock"))
    assert records[-1].step * 5 <= published.step, (records[-1].step, published.step)
    field = Field(policy, world, reset, "paper")
    y0 = field.vector(policy.logits.numpy(), policy.init_logits.numpy())
    times = [r.t for r in records[:: max(1, len(records) // 12)]] + [records[-1].t]
    radau = solve_ivp(field, (0.0, records[-1].t), y0, method="Radau", rtol=1e-10, atol=1e-12, t_eval=times)
    by_t = {r.t: r.q for r in records}
    for t, y in zip(radau.t, radau.y.T, strict=True):
        logits, init_logits = field.logits.copy(), field.init_logits.copy()
        logits[field.mask], init_logits[field.init_mask] = y[: field.mask.sum()], y[field.mask.sum() :]
        q = field.objective(torch.from_numpy(logits), torch.from_numpy(init_logits)).metrics["q"]
        assert abs(by_t[t] - q) < 1e-5, (t, by_t[t], q)


def test_a_resumed_run_takes_the_same_steps():
    """The optimiser's state (next step, the Hessian's stiff part and its age) carries everything: a run continued
    from a state passes through the same states, to the last bit, as one that never stopped."""
    policy = fsc.Policy.random(fsc.RAM(2), 9)
    whole = list(optimize(WORLD, policy, reset=RESET, optimizer="rosenbrock", max_steps=25))
    first = list(optimize(WORLD, policy, reset=RESET, optimizer="rosenbrock", max_steps=12))
    rest = list(optimize(WORLD, policy, reset=RESET, optimizer="rosenbrock", max_steps=25, state=first[-1].state))
    assert [(r.t, r.gain, r.evaluations) for r in first[:-1] + rest] == [(r.t, r.gain, r.evaluations) for r in whole]
    assert torch.equal(rest[-1].state.point.logits, whole[-1].state.point.logits)


def test_the_trainer_runs_and_resumes_it(tmp_path):
    """fsc train --optimizer rosenbrock --tolerance: the settings recorded, the checkpoint (with the stiff part)
    resumed to the same end as a run that was never interrupted."""
    from fsc.train import run_training

    common = dict(mu=0.2, memory="ram:2", init="random", seed=1, reset=0.05, optimizer="rosenbrock", tolerance=1e-4, quiet=True)
    whole = run_training(out=tmp_path / "whole", max_steps=30, **common)
    run_training(out=tmp_path / "parts", max_steps=14, checkpoint_seconds=0.0, **common)
    parts = run_training(out=tmp_path / "parts", max_steps=30, **common)
    assert parts.resumed and (parts.t, parts.q, parts.steps, parts.evaluations) == (whole.t, whole.q, whole.steps, whole.evaluations)
    assert "rosenbrock" in (tmp_path / "whole" / "run.json").read_text()


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        (dict(tolerance=0.0), InputError, r"tolerance must be in \(0, 0.01\], got 0.0"),
        (dict(tolerance="small"), InputTypeError, r"tolerance must be a number, got 'small'"),
        (dict(krylov=0), InputError, r"krylov must be an int >= 1, got 0"),
        (dict(refresh=2.5), InputTypeError, r"refresh must be an int, got 2.5"),
        (dict(max_dgrad=1e-3), InputError, r"max_dgrad belongs to the flow optimizer; the rosenbrock optimizer takes no max_dgrad"),
    ],
)
def test_bad_settings_are_refused_naming_them(settings, error, match):
    with pytest.raises(error, match=match):
        make_optimizer("rosenbrock", **settings)


def test_the_published_rule_stays_the_default():
    from fsc.train.arguments import TrainingConfig

    assert TrainingConfig(memory="ram:2", init="random", out="x").optimizer == "flow"
    assert Rosenbrock().to_dict()["name"] == "rosenbrock"
    with pytest.raises(InputError, match="tolerance belongs to the rosenbrock optimizer"):
        make_optimizer("flow", tolerance=1e-5)


def test_a_sweep_spec_chooses_it():
    from fsc import sweep

    fixed = {"memory": "ram:2", "init": "random", "until_t": 10, "optimizer": "rosenbrock", "tolerance": 1e-6}
    spec = sweep.Sweep.from_dict({"fixed": fixed, "grid": {"seed": [0]}})
    assert {"--optimizer=rosenbrock", "--tolerance=1e-06"} <= set(spec.points[0].argv())


def test_every_engine_takes_the_same_steps():
    """The compiled evaluation (dense, choices) and the Python one (sparse, accurate) give the integrator gradients
    equal to rounding: the same steps, and q within 1e-10 at the end."""
    policy = fsc.Policy.random(fsc.RAM(2), 9)
    ends = {
        engine: list(optimize(WORLD, policy, reset=RESET, optimizer="rosenbrock", engine=engine, until_t=300.0))[-1]
        for engine in ("dense", "choices", "sparse", "accurate")
    }
    assert len({(end.step, end.evaluations) for end in ends.values()}) == 1, {e: (end.step, end.evaluations) for e, end in ends.items()}
    assert max(end.q for end in ends.values()) - min(end.q for end in ends.values()) < 1e-10
