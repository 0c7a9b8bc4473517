"""Training optimisers (fsc.optim): the adaptive gradient flow of docs/model.md, Adam, ascent."""

import math
import statistics
import time

import attrs
import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp

import fsc
import tasks
from fsc.model.chain import joint_chain
from fsc.model.pomdp import as_pomdp
from fsc.objective import Objective
from fsc.optim import Adam, Ascent, GradientFlow, flow, optimize

from .registry import ARCHITECTURES, ids

pytestmark = pytest.mark.usefixtures("one_thread")


def world_for(arch, mu=0.2):
    return tasks.TwoHypothesis(mu, arms=arch.arms)


def autograd_point(world, arch, logits, init_logits, reset, convention):
    """Gain, q and gradient written out in torch (dense solve, autograd): a reference independent of fsc.evaluate."""
    leaf, leaf0 = logits.detach().clone().requires_grad_(True), init_logits.detach().clone().requires_grad_(True)
    policy = fsc.Policy(architecture=arch, logits=leaf, init_logits=leaf0)
    probs, init_probs = policy.probs(), policy.init_probs()
    chain = joint_chain(as_pomdp(world), arch)
    K, X = chain.num_parts, chain.size
    A = torch.eye(X, dtype=torch.float64) - (1 - reset) * chain.dense(probs)
    p = reset * torch.linalg.solve(A, chain.initial(init_probs)[..., None])[..., 0]
    p = p / p.sum(dim=1, keepdim=True)

    def expectation(table):
        per_state = torch.einsum("ksc,nc->ksn", torch.from_numpy(np.array(table, dtype=np.float64)), probs).reshape(K, X)
        return (torch.from_numpy(np.array(chain.part_weights, dtype=np.float64)) * (p * per_state).sum(dim=1)).sum()

    gain, q = expectation(chain.step_reward), expectation(chain.step_metrics["q"])
    if convention == "paper":  # the reward carried by the next state: gain (1 - r); q read from it when the world can
        gain = (1 - reset) * gain
        q = (1 - gain / world.mu) / 2 if hasattr(world, "mu") else (1 - reset) * q
    g, g0 = torch.autograd.grad(gain, [leaf, leaf0])
    return gain.item(), q.item(), g, g0


# ---------------------------------------------------------------------------
# The objective.


@pytest.mark.parametrize("arch", ARCHITECTURES, ids=ids)
def test_adjoint_objective_equals_evaluate_and_autograd(arch):
    world = world_for(arch)
    policy = fsc.Policy.random(arch, 7)
    for convention in ("native", "paper") if arch.arms == 2 else ("native",):
        for reset in (0.3, 1e-3):
            point = Objective(world=world, architecture=arch, reset=reset, engine="dense", convention=convention)(policy.logits, policy.init_logits)
            gain, q, g, g0 = autograd_point(world, arch, policy.logits, policy.init_logits, reset, convention)
            assert abs(point.gain - gain) < 1e-14
            assert abs(point.metrics["q"] - q) < 1e-13
            torch.testing.assert_close(point.grad_logits, g, rtol=0, atol=1e-14)
            torch.testing.assert_close(point.grad_init, g0, rtol=0, atol=1e-14)


def test_adjoint_objective_with_parts_of_different_sizes():
    # World: state 0 alone (a part of one state), states 1 and 2 linked by action 1:
    # the parts are padded to two states, which the adjoint path must handle like fsc.evaluate.
    T = np.zeros((3, 2, 3))
    T[0, :, 0] = 1
    T[1, 0, 1] = T[2, 0, 2] = 1
    T[1, 1, 2] = T[2, 1, 1] = 1
    O = np.array([[[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]], [[0.4, 0.6], [0.9, 0.1], [0.3, 0.7]]])
    R = np.broadcast_to(np.array([1.0, -0.5]), (3, 2, 3, 2))
    world = fsc.POMDP(transition=T, observation=O, reward=R, initial=[0.5, 0.3, 0.2], metrics={"q": R * 0.5})
    arch = fsc.Memento(2)
    policy = fsc.Policy.random(arch, 3)
    for convention in ("native", "paper"):
        point = Objective(world=world, architecture=arch, reset=0.05, engine="dense", convention=convention)(policy.logits, policy.init_logits)
        gain, q, g, g0 = autograd_point(world, arch, policy.logits, policy.init_logits, 0.05, convention)
        assert abs(point.gain - gain) < 1e-14 and abs(point.metrics["q"] - q) < 1e-14
        torch.testing.assert_close(point.grad_logits, g, rtol=0, atol=1e-14)
        torch.testing.assert_close(point.grad_init, g0, rtol=0, atol=1e-14)


@pytest.mark.parametrize("engine", ["dense", "sparse"])
def test_objective_gradient_is_the_finite_difference(engine):
    arch, world, reset = fsc.Column(2), tasks.TwoHypothesis(0.3), 0.02
    policy = fsc.Policy.random(arch, 11)
    objective = Objective(world=world, architecture=arch, reset=reset, engine=engine, convention="paper")
    point = objective(policy.logits, policy.init_logits)
    h = 1e-6
    for which, grad in (("logits", point.grad_logits), ("init", point.grad_init)):
        base = policy.logits if which == "logits" else policy.init_logits
        for index in zip(*np.nonzero(np.ones(tuple(base.shape), dtype=bool)), strict=True):
            step = torch.zeros_like(base)
            step[index] = h
            args = (lambda d: (policy.logits + d, policy.init_logits)) if which == "logits" else (lambda d: (policy.logits, policy.init_logits + d))
            derivative = (objective(*args(step)).gain - objective(*args(-step)).gain) / (2 * h)
            assert abs(derivative - float(grad[index])) < 1e-9, (which, index)


def test_auto_engine_is_the_engine_evaluate_would_choose():
    objective = Objective(world=tasks.TwoHypothesis(0.1), architecture=fsc.RAM(2), reset=1e-2)
    assert objective.method == "choices" == fsc.evaluate(tasks.TwoHypothesis(0.1), fsc.Policy.random(fsc.RAM(2), 0), reset=1e-2).engine
    assert Objective(world=tasks.TwoHypothesis(0.1), architecture=fsc.Memento(4), reset=1e-2).method == "choices"
    assert Objective(world=tasks.TwoHypothesis(0.1), architecture=fsc.Memento(6), reset=1e-2).method == "iterative"
    assert Objective(world=tasks.TwoHypothesis(0.1), architecture=fsc.RAM(2), reset=1e-2, engine="dense").method == "dense"


# ---------------------------------------------------------------------------
# The adaptive step, checked against a direct transcription of docs/model.md.


def evaluate_point(world, arch, logits, init_logits, reset, convention):
    """Gain, q and gradient from fsc.evaluate and torch.autograd (engine dense): the rule below is what is checked."""
    leaf, leaf0 = logits.detach().clone().requires_grad_(True), init_logits.detach().clone().requires_grad_(True)
    result = fsc.evaluate(world, fsc.Policy(architecture=arch, logits=leaf, init_logits=leaf0), reset=reset, engine="dense", convention=convention)
    g, g0 = torch.autograd.grad(result.gain, [leaf, leaf0])
    return result.gain.item(), result.metrics["q"].item(), g, g0


def reference_flow(world, arch, policy, reset, convention, max_dgrad, steps):
    """The published rule, written out with fsc.evaluate and autograd (engine dense)."""
    w, w0 = policy.logits.detach().clone(), policy.init_logits.detach().clone()
    gain, q, g, g0 = evaluate_point(world, arch, w, w0, reset, convention)
    dt, t, rows = 1.0, 0.0, [(0.0, 0, 0.0, gain, q)]
    while len(rows) <= steps:
        w_new, w0_new = w + dt * g, w0 + dt * g0
        gain_new, q_new, g_new, g0_new = evaluate_point(world, arch, w_new, w0_new, reset, convention)
        dpi = (g_new - g).abs().max().item()
        dp0 = (g0_new - g0).abs().max().item()
        if gain_new < gain or dpi + dp0 >= max_dgrad:
            dt /= 10
            continue
        t += dt
        rows.append((t, len(rows), dt, gain_new, q_new))
        w, w0, g, g0, gain = w_new, w0_new, g_new, g0_new, gain_new
        if dpi + dp0 < max_dgrad / 2:
            dt *= 1.1
    return rows, w, w0


@pytest.mark.parametrize(
    ("arch", "reset", "convention", "max_dgrad"),
    [(fsc.RAM(3), 1e-2, "paper", 1e-4), (fsc.Memento(2), 1e-3, "paper", 1e-3), (fsc.Column(3), 0.05, "native", 1e-4)],
    ids=["ram3-paper", "memento2-paper", "column3-native"],
)
def test_flow_follows_the_published_rule_bit_for_bit(arch, reset, convention, max_dgrad):
    world = tasks.TwoHypothesis(0.1)
    policy = fsc.Policy.random(arch, 4)
    steps = 60
    expected, w, w0 = reference_flow(world, arch, policy, reset, convention, max_dgrad, steps)
    records = list(flow(world, policy, reset=reset, convention=convention, engine="dense", max_dgrad=max_dgrad, max_steps=steps))
    assert [(r.t, r.step, r.dt, r.gain, r.q) for r in records] == expected
    assert torch.equal(records[-1].state.point.logits, w) and torch.equal(records[-1].state.point.init_logits, w0)
    assert records[-1].stop == "max_steps"


@pytest.mark.parametrize(
    ("world", "memory", "convention", "target", "max_dgrad", "engine"),
    [
        (tasks.TwoHypothesis(0.1), "ram:8", "paper", "gain", 1e-4, "dense"),
        (tasks.TwoHypothesis(0.2), "memento:3", "native", "gain", 1e-3, "dense"),
        (tasks.TwoHypothesis(0.1, arms=3), "chain:4", "native", "return", 1e-4, "dense"),
        ("tiger-listening", "ram:3", "native", "gain", 1e-2, "dense"),
        (tasks.TwoHypothesis(0.1), "ram:8", "paper", "gain", 1e-4, "choices"),
        (tasks.TwoHypothesis(0.1, arms=3), "chain:4", "native", "return", 1e-4, "choices"),
        ("tiger-listening", "ram:3", "native", "gain", 1e-2, "choices"),
    ],
    ids=["ram8-paper", "memento3-native", "chain4-3arms-return", "tiger-native", "choices-ram8-paper", "choices-chain4-3arms-return", "choices-tiger"],
)
def test_the_compiled_step_is_the_python_step_to_the_bit(world, memory, convention, target, max_dgrad, engine):
    """Each dense (or choices) step in one compiled call (LAPACK called from it) against the evaluator's
    Python path: every state equal, rejections and metrics included."""
    if world == "tiger-listening":  # a world with a metric table of its own
        base = tasks.Tiger().pomdp
        listening = np.zeros(base.reward.shape[:2] + (base.num_states, base.num_observations))
        listening[:, base.action_labels.index("listen")] = 1.0
        world = attrs.evolve(base, metrics={"listening": listening})
    arch = fsc.parse_memory(memory, arms=fsc.model.pomdp.as_pomdp(world).num_actions)
    policy = fsc.Policy.random(arch, 5)
    flow_rule = GradientFlow(max_dgrad=max_dgrad)
    runs = []
    for compiled in (True, False):
        objective = Objective(world=world, architecture=arch, reset=1e-2, engine=engine, convention=convention, target=target, compiled=compiled)
        point = objective(policy.logits.detach().clone(), policy.init_logits.detach().clone())
        state = flow_rule.at(point)
        states = [state]
        for _ in range(200):
            state = flow_rule.update(objective, state)
            states.append(state)
        runs.append(states)
    assert runs[0][-1].rejections > 0  # the rejection branch ran
    for a, b in zip(*runs, strict=True):
        assert (a.t, a.dt, a.step, a.evaluations, a.rejections, a.slots) == (b.t, b.dt, b.step, b.evaluations, b.rejections, b.slots)
        assert (a.point.gain, a.point.metrics) == (b.point.gain, b.point.metrics)
        for name in ("logits", "init_logits", "grad_logits", "grad_init"):
            assert torch.equal(getattr(a.point, name), getattr(b.point, name)), name


def _same_records(a, b):
    return (a.t, a.step, a.dt, a.evaluations, a.gain, a.metrics, a.grad_norm, a.stop) == (
        b.t, b.step, b.dt, b.evaluations, b.gain, b.metrics, b.grad_norm, b.stop
    ) and a.state.slots == b.state.slots and a.state.rejections == b.state.rejections and torch.equal(
        a.state.point.logits, b.state.point.logits
    ) and torch.equal(a.state.point.grad_init, b.state.point.grad_init)  # fmt: skip


@pytest.mark.parametrize(
    ("memory", "engine", "convention", "stop"),
    [
        ("ram:8", "dense", "paper", {"until_t": 1e5}),
        ("ram:8", "choices", "paper", {"until_t": 1e5}),
        ("memento:3", "dense", "native", {"max_steps": 300}),
        ("ram:3", "sparse", "paper", {"until_t": 1e4}),  # no compiled step: one step per call, the same records
        ("ram:3", "dense", "native", {"until_t": 1e4, "min_grad_norm": 1e-9}),  # a gradient-norm stop keeps every record
    ],
)
def test_skipping_records_keeps_the_path_to_the_bit(memory, engine, convention, stop):
    """optimize(skip_until=...) yields some of the records of the same flow, equal to the bit: between two
    of them, the dense engine takes all steps in one compiled call (kernels.flow_run)."""
    world, arch = tasks.TwoHypothesis(0.1), fsc.parse_memory(memory)
    policy = fsc.Policy.random(arch, 2)
    every = list(optimize(world, policy, reset=1e-3, convention=convention, engine=engine, **stop))
    edges = iter(np.geomspace(1.0, 1e5, 8))
    due = [0.0]

    def skip_until():  # the next edge above the last time seen, as fsc train's thinning does
        return due[0]

    some = []
    for record in optimize(world, policy, reset=1e-3, convention=convention, engine=engine, skip_until=skip_until, **stop):
        some.append(record)
        while due[0] <= record.t:
            due[0] = next(edges, math.inf)
    by_step = {r.step: r for r in every}
    assert all(_same_records(r, by_step[r.step]) for r in some)
    assert _same_records(some[-1], every[-1]) and some[0].step == 0
    assert all(r.skipped is None for r in some)
    skipped = engine in ("dense", "choices") and "min_grad_norm" not in stop
    assert (len(some) < len(every) / 4) if skipped else (len(some) == len(every))
    for r in some[1:-1]:  # a record comes at each edge crossed (or after MOST_STEPS steps)
        before = by_step[r.step - 1]
        assert any(before.t < e <= r.t for e in np.geomspace(1.0, 1e5, 8)) or r.step % fsc.optim.MOST_STEPS == 0 or not skipped


@attrs.frozen
class _FloatsOnly(fsc.Task):
    """The two-hypothesis world with a paper read-out written for floats: ``math`` refuses an array."""

    @property
    def pomdp(self) -> fsc.POMDP:
        return tasks.TwoHypothesis(0.1).pomdp

    def paper_metrics(self, gain):
        return {"q": math.exp(-gain), "half": gain / 2}


@attrs.frozen
class _NotElementwise(_FloatsOnly):
    """A read-out that takes an array of gains without complaint but does not read it row by row."""

    def paper_metrics(self, gain):
        return {"q": 2 * gain - np.mean(gain)}  # the gain itself, for one gain


@pytest.mark.parametrize(
    ("memory", "engine", "stop", "world", "convention"),
    [
        ("ram:8", "choices", {"until_t": 3e4}, tasks.TwoHypothesis(0.1), "paper"),  # several compiled calls of MOST_STEPS steps, and a last one
        ("memento:3", "dense", {"max_steps": 300}, tasks.TwoHypothesis(0.1), "paper"),
        ("ram:3", "sparse", {"until_t": 1e4}, tasks.TwoHypothesis(0.1), "paper"),  # no compiled run: a record per step, nothing skipped
        ("ram:4", "choices", {"max_steps": 2500}, tasks.TwoHypothesis(0.1), "native"),  # the native tables, as they are
        ("ram:4", "dense", {"max_steps": 2500}, tasks.TwoHypothesis(0.3).pomdp, "paper"),  # no paper_metrics: metrics times 1 - r
        ("ram:4", "choices", {"max_steps": 2500}, _FloatsOnly(), "paper"),  # read row by row
        ("ram:4", "choices", {"max_steps": 2500}, _NotElementwise(), "paper"),  # read row by row
    ],
    ids=["ram8-paper", "memento3-paper", "sparse-paper", "native", "pomdp-paper", "floats-only", "not-elementwise"],
)
def test_skipped_steps_are_the_records_of_every_step(memory, engine, stop, world, convention):
    """optimize(skip_until=inf, keep_skipped=True): the steps between two records, as the compiled run recorded
    them, hold the numbers of those steps' own records to the bit (their wall times aside), whatever the world's
    read-out of its metrics."""
    arch = fsc.parse_memory(memory)
    policy = fsc.Policy.random(arch, 2)
    every = list(optimize(world, policy, reset=1e-3, convention=convention, engine=engine, **stop))
    some = list(optimize(world, policy, reset=1e-3, convention=convention, engine=engine, skip_until=lambda: math.inf, keep_skipped=True, **stop))
    rows = []
    for record in some:
        if record.skipped is not None:
            skipped = record.skipped
            names = ("t", "step", "dt", "gain", "grad_norm", "seconds", "evaluations")
            rows.extend({**dict(zip(names, values, strict=True)), "metrics": {name: skipped["metrics"][name][i] for name in skipped["metrics"]}}
                        for i, values in enumerate(zip(*(skipped[name] for name in names), strict=True)))  # fmt: skip
        rows.append({"t": record.t, "step": record.step, "dt": record.dt, "gain": record.gain, "grad_norm": record.grad_norm,
                     "seconds": record.seconds, "evaluations": record.evaluations, "metrics": record.metrics})  # fmt: skip
    assert [row["step"] for row in rows] == [r.step for r in every]
    for row, r in zip(rows, every, strict=True):
        numbers = (row["t"], row["dt"], row["gain"], row["grad_norm"], row["evaluations"], row["metrics"])
        assert numbers == (r.t, r.dt, r.gain, r.grad_norm, r.evaluations, r.metrics)
    seconds = [row["seconds"] for row in rows]
    assert seconds == sorted(seconds) and seconds[0] >= 0
    compiled = engine != "sparse"
    assert (len(some) <= 2 + len(every) // fsc.optim.MOST_STEPS) if compiled else (len(some) == len(every))
    assert any(r.skipped is not None for r in some) == compiled


@pytest.mark.parametrize("engine", ["dense", "sparse"])
def test_first_stop_ends_a_compiled_run_on_the_step_it_names(engine):
    """optimize(first_stop=...): the caller names the first skipped step it stops at (here the first with
    step >= 1500, inside the second compiled run); the flow yields that step as a record, with the steps before
    it as its skipped ones, the numbers of the same steps taken one record at a time."""
    world, arch = tasks.TwoHypothesis(0.1), fsc.parse_memory("ram:4")
    policy = fsc.Policy.random(arch, 2)
    every = {r.step: r for r in optimize(world, policy, reset=1e-3, engine=engine, max_steps=1600)}
    seen = []

    def first_stop(skipped):
        seen.append(len(skipped["step"]))
        return next((i for i, step in enumerate(skipped["step"]) if step >= 1500), None)

    records = optimize(world, policy, reset=1e-3, engine=engine, max_steps=1600, skip_until=lambda: math.inf, keep_skipped=True, first_stop=first_stop)
    for record in records:
        if record.step >= 1500:
            break
    compiled = engine != "sparse"
    assert record.step == 1500 and (record.t, record.gain, record.metrics) == (every[1500].t, every[1500].gain, every[1500].metrics)
    if compiled:  # the run taken again up to step 1500: its skipped steps end just before it
        assert record.skipped["step"][-1] == 1499 and record.skipped["t"][-1] == every[1499].t
    assert bool(seen) == compiled  # the sparse engine takes one step per call: no skipped steps to ask about
    with pytest.raises(TypeError, match="first_stop"):
        optimize(world, policy, reset=1e-3, skip_until=lambda: math.inf, first_stop=first_stop)


@pytest.mark.parametrize("engine", ["dense", "sparse"])
@pytest.mark.parametrize("skip", [False, True], ids=["every-step", "compiled-run"])
def test_a_step_too_small_to_move_t_stalls_the_flow(engine, skip):
    """Far out in t, a step with t + dt == t ends the run (``stalled``), on the step the float arithmetic of
    t predicts.  The path does not depend on t, so the dt of each step comes from the same run started at
    t = 0; at t = 2^57 (half a float spacing: 16) it moves t until a rejection shrinks dt below 16."""
    world, arch = tasks.TwoHypothesis(0.1), fsc.parse_memory("ram:4")
    policy = fsc.Policy.random(arch, 0)
    flow_ = GradientFlow(dt=100.0, max_dgrad=1e-5)
    near = list(optimize(world, policy, reset=1e-3, convention="paper", engine=engine, optimizer=flow_, max_steps=400))
    t, expected = 2.0**57, None
    for record in near[1:]:
        if t + record.dt == t:
            expected = record.step
            break
        t += record.dt
    assert expected is not None and 20 < expected < 400 and near[expected - 1].dt > 16 > near[expected].dt
    far = attrs.evolve(near[0].state, t=2.0**57)
    skip_until = (lambda: math.inf) if skip else None
    records = list(optimize(world, policy, reset=1e-3, convention="paper", engine=engine, optimizer=flow_, state=far, skip_until=skip_until, max_steps=400))
    last = records[-1]
    assert last.stop == "stalled" and last.step == expected and last.t == t
    assert all(r.stop is None and r.t > 2.0**57 for r in records[1:-1])
    assert torch.equal(last.state.point.logits, near[expected].state.point.logits)
    assert (len(records) < 10) if skip and engine == "dense" else (len(records) == expected + 1)


@pytest.mark.parametrize("engine", ["dense", "sparse"])
def test_a_max_dgrad_below_the_gradients_resolution_stalls_the_flow(engine):
    """With ``max_dgrad = 1e-320``, far below the last bit of a gradient of about 1e-3, the rule would accept only
    steps that leave the gradient unchanged to the last bit, each moving ``t`` by about 1e-14, for ever.  The flow
    stops as stalled at its first try refused for the gradient, before any step."""
    world, arch = tasks.TwoHypothesis(0.1), fsc.parse_memory("ram:3")
    policy = fsc.Policy.random(arch, 0)
    flow_ = GradientFlow(max_dgrad=1e-320)
    records = list(optimize(world, policy, reset=1e-2, convention="paper", engine=engine, optimizer=flow_, max_steps=100_000))
    assert [(r.step, r.stop) for r in records] == [(0, None), (0, "stalled")]
    assert torch.equal(records[-1].state.point.logits, policy.logits)


def test_the_rule_cannot_move_the_point_in_two_cases():
    """:func:`kernels.flow_cannot_move` on hand-made numbers: a try refused for the gradient alone, with
    ``max_dgrad`` at or below the gradient's last bit, or with a next try that rounds to the same weights."""
    from fsc.engines import kernels

    w, w0, none = np.array([[1.0, -2.0]]), np.array([0.5]), np.zeros(1)
    tiny = np.array([[1e-20, -1e-20]])  # 1 + 1e-20 == 1: no try of dt <= 1 moves these weights
    assert kernels.flow_cannot_move(1.0, 0.5, 1e-10, 1e-12, w, w0, tiny, none, 1.0)
    assert not kernels.flow_cannot_move(1.0, 0.5, 1e-10, 1e-12, w, w0, tiny, none, 1e5)  # 1 + 1e-15 moves
    assert not kernels.flow_cannot_move(0.4, 0.5, 1e-10, 1e-12, w, w0, tiny, none, 1.0)  # the gain fell
    assert not kernels.flow_cannot_move(1.0, 0.5, 1e-13, 1e-12, w, w0, tiny, none, 1.0)  # not refused
    unit = np.array([[1.0, 0.25]])  # the largest entry 1 is resolved to 2**-52
    assert kernels.flow_cannot_move(1.0, 0.5, 1e-10, 2.0**-52, w, w0, unit, none, 1.0)
    assert not kernels.flow_cannot_move(1.0, 0.5, 1e-10, 2.0**-51, w, w0, unit, none, 1.0)


def test_the_change_of_the_gradient_is_numpys_largest_difference():
    """The compiled step's ``dpi`` and ``dp0`` (four running maxima, then the largest): ``np.abs(x - y).max()`` on
    every length around a multiple of four, and a NaN where there is one, wherever it is."""
    from fsc.engines import kernels

    rng = np.random.default_rng(0)
    for n in range(1, 14):
        x, y = rng.normal(size=n), rng.normal(size=n)
        y[rng.integers(n)] = x[0] + 0.0  # ties and zeros
        assert kernels._max_abs_difference(x, y) == np.abs(x - y).max()
        for i in range(n):
            z = x.copy()
            z[i] = np.nan
            assert np.isnan(kernels._max_abs_difference(z, y))
    assert kernels._max_abs_difference(np.zeros(0), np.zeros(0)) == 0.0


def test_the_compiled_run_is_so_many_compiled_steps():
    """kernels.flow_run against flow_step called in a loop: arrays, times and counts to the bit."""
    from fsc.engines import kernels

    world, arch = tasks.TwoHypothesis(0.1), fsc.parse_memory("ram:5")
    policy = fsc.Policy.random(arch, 1)
    objective = Objective(world=world, architecture=arch, reset=1e-3, engine="dense", convention="paper")
    point = objective(policy.logits.detach().clone(), policy.init_logits.detach().clone())
    start = [x.numpy() for x in (point.logits, point.init_logits, point.grad_logits, point.grad_init)]
    factor, fused = objective._evaluator.factor, objective._fused
    w, w0, g, g0 = start
    gain, dt, t, tries, rejections = point.gain, 1.0, 0.0, 0, 0
    steps = []  # what the run records of each step: t, step, dt, gradient norm, tries so far, expectations
    for step in range(1, 151):
        _, w, w0, g, g0, expected, used, dt, tried, rejected = kernels.flow_step(w, w0, g, g0, gain, dt, 1e-4, 1e-30, factor, fused)
        gain, t, tries, rejections = factor * expected[0], t + used, tries + tried, rejections + rejected
        steps.append([t, step, used, float(np.sqrt(np.sum(g**2) + np.sum(g0**2))), tries, *expected])
    rows = np.full((1000, kernels.ROW_EXPECTED + len(expected)), np.nan)
    for table in (np.zeros((0, 0)), rows):
        run = kernels.flow_run(*start, point.gain, 1.0, 1e-4, 1e-30, factor, fused, 0.0, 0, math.inf, 150, 1000, table)
        status, rw, rw0, rg, rg0, r_expected, r_used, r_dt, r_t, r_step, r_tries, r_rejections = run
        assert (status, r_step, r_t, r_dt, r_used, r_tries, r_rejections) == (0, 150, t, dt, used, tries, rejections) and rejections > 0
        assert all(np.array_equal(a, b) for a, b in ((rw, w), (rw0, w0), (rg, g), (rg0, g0), (r_expected, expected)))
    recorded = np.delete(rows[:150], kernels.ROW_CLOCK, axis=1)
    steps = np.array(steps)
    assert np.array_equal(np.delete(recorded, kernels.ROW_GRAD_NORM, axis=1), np.delete(steps, kernels.ROW_GRAD_NORM, axis=1))
    assert np.allclose(recorded[:, kernels.ROW_GRAD_NORM], steps[:, kernels.ROW_GRAD_NORM], rtol=1e-14, atol=0)  # numpy sums pairwise
    clock = rows[:150, kernels.ROW_CLOCK]
    assert np.all(np.diff(clock) >= 0) and abs(clock[-1] - time.clock_gettime(time.CLOCK_MONOTONIC)) < 60
    assert np.isnan(rows[150:]).all()


def test_flow_rejects_steps_that_lower_the_gain_or_change_the_gradient_too_much():
    arch, world = fsc.RAM(2), tasks.TwoHypothesis(0.2)
    records = list(flow(world, fsc.Policy.random(arch, 2, std=2.0), reset=1e-2, max_dgrad=1e-3, max_steps=150))
    assert records[-1].evaluations > records[-1].step + 1  # some tentative steps were rejected
    gains = [r.gain for r in records]
    assert all(b >= a for a, b in zip(gains, gains[1:], strict=False))
    t = 0.0
    for previous, record in zip(records, records[1:], strict=False):
        t += record.dt
        assert record.t == t
        if previous.dt > 0:
            # dt grows by 1.1, stays, or was divided by 10 (maybe after growing) some times.
            ratio = record.dt / previous.dt
            k = round(-math.log10(ratio / 1.1)) if ratio < 0.99 else 0
            assert any(math.isclose(ratio, f * 10.0**-j, rel_tol=1e-12) for f in (1.0, 1.1) for j in (k - 1, k, k + 1) if j >= 0)


def test_flow_integrates_the_gradient_ode():
    """Euler with the adaptive step converges to the solution of dw/dt = grad gain (first order in max_dgrad)."""
    arch, world, reset = fsc.RAM(1), tasks.TwoHypothesis(0.3), 0.1
    policy = fsc.Policy.random(arch, 5)
    objective = Objective(world=world, architecture=arch, reset=reset)
    N, C = arch.num_nodes, arch.num_choices

    def split(y):
        return torch.from_numpy(y[: N * C].reshape(N, C).copy()), torch.from_numpy(y[N * C :].copy())

    def rhs(t, y):
        point = objective(*split(y))
        return np.concatenate([point.grad_logits.numpy().ravel(), point.grad_init.numpy()])

    y0 = np.concatenate([policy.logits.numpy().ravel(), policy.init_logits.numpy()])
    errors = []
    for max_dgrad in (1e-4, 1e-5):
        *_, last = flow(world, policy, reset=reset, max_dgrad=max_dgrad, until_t=100.0)
        exact = solve_ivp(rhs, (0, last.t), y0, method="DOP853", rtol=1e-11, atol=1e-11).y[:, -1]
        w = np.concatenate([last.state.point.logits.numpy().ravel(), last.state.point.init_logits.numpy()])
        assert np.abs(exact - y0).max() > 0.5  # the weights really moved
        errors.append(np.abs(w - exact).max())
    assert errors[1] < 1e-3 and errors[1] < 0.2 * errors[0], errors


def test_climbing_the_return_is_the_same_flow_in_slower_time():
    """target='return' climbs G = gain / r (paper eq. (4)): gradients 1/r larger, w_G(t) = w_gain(t / r)."""
    arch, world, reset = fsc.RAM(1), tasks.TwoHypothesis(0.3), 0.1
    policy = fsc.Policy.random(arch, 5)
    gain_point = Objective(world=world, architecture=arch, reset=reset)(policy.logits, policy.init_logits)
    return_point = Objective(world=world, architecture=arch, reset=reset, target="return")(policy.logits, policy.init_logits)
    assert return_point.gain == gain_point.gain
    torch.testing.assert_close(return_point.grad_logits, gain_point.grad_logits / reset, rtol=1e-15, atol=0)
    by_gain = list(flow(world, policy, reset=reset, max_dgrad=1e-5, until_t=100.0))
    by_return = list(flow(world, policy, reset=reset, max_dgrad=1e-5 / reset, until_t=10.0, target="return"))
    for t in (1.0, 3.0, 10.0):
        q_return = np.interp(t, [r.t for r in by_return], [r.q for r in by_return])
        q_gain = np.interp(t / reset, [r.t for r in by_gain], [r.q for r in by_gain])
        assert abs(q_return - q_gain) < 1e-4, (t, q_return, q_gain)


# ---------------------------------------------------------------------------
# Adam and plain ascent.


def test_ascent_is_euler_with_a_fixed_step():
    arch, world = fsc.Chain(2), tasks.TwoHypothesis(0.2)
    policy = fsc.Policy.random(arch, 1)
    records = list(optimize(world, policy, reset=0.05, optimizer="ascent", lr=3.0, max_steps=5))
    w, w0 = policy.logits.clone(), policy.init_logits.clone()
    for k, record in enumerate(records):
        assert record.t == pytest.approx(3.0 * k, rel=1e-15) and record.step == k
        point = record.state.point
        assert torch.equal(point.logits, w) and torch.equal(point.init_logits, w0)
        w, w0 = w + 3.0 * point.grad_logits, w0 + 3.0 * point.grad_init


def test_adam_matches_torch_optim_adam():
    arch, world, reset = fsc.RAM(2), tasks.TwoHypothesis(0.2), 0.05
    policy = fsc.Policy.random(arch, 8)
    records = list(optimize(world, policy, reset=reset, optimizer=Adam(lr=0.05), engine="dense", max_steps=25))
    leaf, leaf0 = policy.logits.clone().requires_grad_(True), policy.init_logits.clone().requires_grad_(True)
    reference = torch.optim.Adam([leaf, leaf0], lr=0.05, betas=(0.9, 0.999), eps=1e-8, maximize=True)
    for record in records:
        torch.testing.assert_close(record.state.point.logits, leaf.detach(), rtol=0, atol=1e-12)
        torch.testing.assert_close(record.state.point.init_logits, leaf0.detach(), rtol=0, atol=1e-12)
        reference.zero_grad()
        gain = fsc.evaluate(world, fsc.Policy(architecture=arch, logits=leaf, init_logits=leaf0), reset=reset).gain
        gain.backward()
        reference.step()
    assert records[-1].t == pytest.approx(25 * 0.05) and records[-1].gain > records[0].gain


# ---------------------------------------------------------------------------
# Stop conditions and continuation.


def test_stop_conditions():
    arch, world = fsc.RAM(2), tasks.TwoHypothesis(0.2)
    policy = fsc.Policy.random(arch, 3)
    run = lambda **kw: list(flow(world, policy, reset=0.05, **kw))
    records = run(until_t=30.0)
    assert records[-1].stop == "until_t" and records[-1].t >= 30.0 > records[-2].t
    assert all(r.stop is None for r in records[:-1])
    assert run(max_steps=7)[-1].step == 7
    assert run(until_t=0.0)[-1].step == 0
    norm = records[10].grad_norm
    last = run(min_grad_norm=norm)[-1]
    assert last.stop == "min_grad_norm" and last.grad_norm <= norm
    start = time.perf_counter()
    last = run(max_seconds=0.05)[-1]
    assert last.stop == "max_seconds" and last.seconds >= 0.05 and time.perf_counter() - start < 5
    stalled = list(optimize(world, policy, reset=0.05, optimizer=GradientFlow(dt=1e-3, min_dt=1e-2)))
    assert stalled[-1].stop == "stalled" and stalled[-1].step == 0


@pytest.mark.parametrize("optimizer", [GradientFlow(max_dgrad=1e-4), Adam(lr=0.03), Ascent(lr=2.0)], ids=["flow", "adam", "ascent"])
def test_continuing_from_a_state_gives_the_same_path(optimizer):
    arch, world = fsc.Memento(2), tasks.TwoHypothesis(0.2)
    policy = fsc.Policy.random(arch, 6)
    whole = list(optimize(world, policy, reset=0.01, optimizer=optimizer, max_steps=40))
    first = list(optimize(world, policy, reset=0.01, optimizer=optimizer, max_steps=15))
    rest = list(optimize(world, policy, reset=0.01, optimizer=optimizer, max_steps=40, state=first[-1].state))
    joined = first + rest[1:]
    assert [(r.t, r.step, r.dt, r.gain, r.evaluations) for r in joined] == [(r.t, r.step, r.dt, r.gain, r.evaluations) for r in whole]
    assert torch.equal(joined[-1].state.point.logits, whole[-1].state.point.logits)


def test_flow_prints_nothing(capsys):
    list(flow(tasks.TwoHypothesis(0.2), fsc.Policy.random(fsc.RAM(2), 0), reset=0.1, max_steps=3))
    assert capsys.readouterr() == ("", "")


# ---------------------------------------------------------------------------
# Bad input: (arguments, error type, message pattern).

_policy = fsc.Policy.random(fsc.RAM(2), 0)
_world = tasks.TwoHypothesis(0.2)
BAD = [
    (dict(reset=0.0), ValueError, r"reset must be in \(0, 1\], got 0.0"),
    (dict(reset=1.5), ValueError, r"reset must be in .*1.5"),
    (dict(reset="x"), TypeError, r"reset must be a number.*'x'"),
    (dict(convention="published"), ValueError, r"convention must be one of .*'published'"),
    (dict(engine="gpu"), ValueError, r"engine must be .*'gpu'"),
    (dict(target="reward"), ValueError, r"target must be one of 'gain', 'return', got 'reward'"),
    (dict(optimizer="sgd"), ValueError, r"optimizer must be one of .*'sgd'"),
    (dict(optimizer=3), TypeError, r"optimizer must be a name .*3"),
    (dict(optimizer="flow", lr=0.1), ValueError, r"takes no lr, got lr=0.1"),
    (dict(optimizer="adam", max_dgrad=1e-4), ValueError, r"max_dgrad belongs to the flow optimizer.*0.0001"),
    (dict(optimizer="adam", lr=-1.0), ValueError, r"lr must be in \(0, inf\), got -1.0"),
    (dict(max_dgrad=0.0), ValueError, r"max_dgrad must be in \(0, inf\), got 0.0"),
    (dict(max_dgrad=math.nan), ValueError, r"max_dgrad must be .*nan"),
    (dict(until_t=-1.0), ValueError, r"until_t must be a finite number >= 0, got -1.0"),
    (dict(until_t=math.inf), ValueError, r"until_t must be a finite number >= 0, got inf"),
    (dict(max_steps=2.5), TypeError, r"max_steps must be an int, got 2.5"),
    (dict(max_steps=True), TypeError, r"max_steps must be an int, got True"),
    (dict(max_seconds=0), ValueError, r"max_seconds must be in \(0, inf\), got 0.0"),
    (dict(min_grad_norm=-1e-3), ValueError, r"min_grad_norm must be .*-0.001"),
    (dict(policy="ram:2"), TypeError, r"policy must be a fsc.Policy, got str"),
    (dict(world="two-hypothesis"), TypeError, r"world must be a fsc.POMDP or an object whose .pomdp is one \(a fsc.Task\), got str"),
    (dict(state="checkpoint.npz"), TypeError, r"state must be a fsc.optim.State, got str"),
]


@pytest.mark.parametrize(("kwargs", "error", "pattern"), BAD, ids=[str(b[0]) for b in BAD])
def test_bad_input(kwargs, error, pattern):
    arguments = dict(world=_world, policy=_policy, reset=0.1) | kwargs
    world, policy = arguments.pop("world"), arguments.pop("policy")
    with pytest.raises(error, match=pattern):
        optimize(world, policy, **arguments)  # raises at the call, before any evaluation


def test_bad_optimizer_hyperparameters():
    with pytest.raises(ValueError, match=r"beta1 must be in \(0, 1.0\), got 1.0"):
        Adam(beta1=1.0)
    with pytest.raises(TypeError, match=r"lr must be a number, got '0.1'"):
        Ascent(lr="0.1")
    other = list(flow(_world, fsc.Policy.random(fsc.RAM(3), 0), reset=0.1, max_steps=1))[-1].state
    with pytest.raises(ValueError, match=r"state has logits of shape \(15, 6\), not those of RAM"):
        optimize(_world, _policy, reset=0.1, state=other)


# ---------------------------------------------------------------------------
# The paper's runs (need the `policies` package, imported lazily).


def _policies():
    return pytest.importorskip("policies")


@pytest.mark.parametrize(
    ("memory", "init", "reset", "published_q"),
    [("ram:8", "near-ccp", 1e-3, 0.172167), ("memento:4", "near-necklace", 1e-5, 0.164731)],
)
def test_paper_starts_match_the_published_code_at_t0(memory, init, reset, published_q):
    policies = _policies()
    arch = fsc.parse_memory(memory)
    policy = policies.initial_policy(init, arch, mu=0.1, reset=reset, seed=0, published=True)
    first = next(flow(tasks.TwoHypothesis(0.1), policy, reset=reset, convention="paper"))
    assert first.t == 0 and round(first.q, 6) == published_q


def test_figure4_ordering_of_initialisations():
    """Figure 4 (RAM M = 8, r = 1e-3, paper convention): median q at t = 1e5 over 5 seeds is
    random > linear > columns > near-CCP, and near-CCP stays above the asymmetric CCP (policies.asymmetric), the local
    optimum it moves to when run long (t ~ 1e7, test_training_reaches_the_asymmetric_ccp); the symmetric CCP is a saddle."""
    policies = _policies()
    arch, world, reset = fsc.RAM(8), tasks.TwoHypothesis(0.1), 1e-3
    medians = {}
    for init in ("random", "linear", "columns", "near-ccp"):
        finals = []
        for seed in range(5):
            policy = policies.initial_policy(init, arch, mu=0.1, reset=reset, seed=seed, published=True)
            *_, last = flow(world, policy, reset=reset, convention="paper", until_t=1e5)
            finals.append(last.q)
        medians[init] = statistics.median(finals)
        if init == "near-ccp":
            from policies.asymmetric import asymmetric_ccp_optimum

            q_asymmetric = asymmetric_ccp_optimum(0.1, 8, reset, convention="paper").q
            assert min(finals) >= q_asymmetric - 1e-9, (finals, q_asymmetric)
    assert medians["random"] > medians["linear"] > medians["columns"] > medians["near-ccp"], medians


def test_dense_and_power_engines_give_the_same_curve():
    """The adaptive path is chaotic in rounding (accept/reject), but q(t) is one curve whatever the engine."""
    policies = _policies()
    arch, world, reset = fsc.RAM(8), tasks.TwoHypothesis(0.1), 1e-3
    policy = policies.initial_policy("near-ccp", arch, mu=0.1, reset=reset, seed=0, published=True)
    curves = {}
    for engine in ("dense", "power"):
        records = list(flow(world, policy, reset=reset, convention="paper", engine=engine, until_t=1e5))
        curves[engine] = (np.array([r.t for r in records]), np.array([r.q for r in records]))
    for t in (1e2, 1e3, 1e4, 1e5):
        a, b = (np.interp(t, *curves[e]) for e in curves)
        assert abs(a - b) < 1e-4 * a, (t, a, b)


@pytest.mark.parametrize("name", list(fsc.optim.OPTIMIZERS))
def test_every_optimiser_is_a_step_and_optimize_is_the_loop_over_its_updates(name):
    """init then update, by hand, pass through the points of optimize's records, bit for bit."""
    arch = fsc.RAM(2)
    world, policy = world_for(arch), fsc.Policy.random(arch, 3)
    rule = fsc.optim.make_optimizer(name)
    assert isinstance(rule, fsc.optim.Step) and rule.name == name
    objective = Objective(world=world, architecture=arch, reset=0.1)
    state = rule.init(objective, policy)
    states = [state]
    for _ in range(4):
        state = rule.update(objective, state)
        states.append(state)
    records = [record for record, _ in zip(optimize(world, policy, reset=0.1, optimizer=rule), range(5), strict=False)]
    assert [(r.gain, r.t, r.step, r.evaluations) for r in records] == [(s.point.gain, s.t, s.step, s.evaluations) for s in states]
    assert all(torch.equal(r.state.point.logits, s.point.logits) for r, s in zip(records, states, strict=True))
