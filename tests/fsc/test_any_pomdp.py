"""Any POMDP: discounted values, classic controllers on RAM, the classic tasks, bounds, the command line."""

import json
from pathlib import Path

import mpmath
import numpy as np
import pytest
import torch

import fsc
import tasks
from fsc.bounds import informed_bound, mdp_bound, two_state_bound
from fsc.cli import main

DATA = Path(__file__).parent.parent / "data"


def random_world(seed: int, discount=None) -> fsc.POMDP:
    rng = np.random.default_rng(seed)
    S, A, O = 4, 3, 2
    T = rng.dirichlet(np.ones(S) * 0.5, size=(S, A))
    return fsc.POMDP(
        transition=T,
        observation=rng.dirichlet(np.ones(O), size=(A, S)),
        reward=rng.normal(size=(S, A, S, O)),
        initial=rng.dirichlet(np.ones(S)),
        discount=discount,
    )


def direct_discounted_sum(world: fsc.POMDP, arch, policy, gamma: float) -> float:
    """sum_t gamma^t E[R_t] by pushing the joint distribution of (state, node) forward, step by step."""
    probs = policy.probs().detach().numpy()  # (N, C)
    d = np.outer(world.initial, policy.init_probs().detach().numpy())  # (S, N)
    R = np.asarray(world.reward)
    total, weight = 0.0, 1.0
    span = np.abs(R).max() / (1 - gamma)
    while weight * span > 1e-14:
        new = np.zeros_like(d)
        for c in range(arch.num_choices):
            a = arch.choice_action[c]
            mass = d * probs[None, :, c]  # (S, N): in (s, n), choose c
            # joint[s, n, s2, o] = mass T[s, a, s2] O[a, s2, o]
            joint = np.einsum("sn,st,to->snto", mass, world.transition[:, a], world.observation[a])
            total += weight * np.einsum("snto,sto->", joint, R[:, a])
            for o in range(arch.num_observations):
                np.add.at(new.T, arch.next_node[:, c, o], joint[:, :, :, o].sum(axis=0))  # rows n -> next node, columns s2
        d, weight = new, weight * gamma
    return total


@pytest.mark.parametrize("gamma", [0.95, 0.75])
@pytest.mark.parametrize("case", ["tiger", "random-1", "random-2"])
def test_value_is_the_discounted_sum(case, gamma):
    world = tasks.Tiger(discount=gamma).pomdp if case == "tiger" else random_world(int(case[-1]))
    arch = fsc.RAM(2, arms=world.num_actions, observations=world.num_observations)
    policy = fsc.Policy.random(arch, 7)
    result = fsc.evaluate(world, policy, discount=gamma)
    expected = direct_discounted_sum(world, arch, policy, gamma)
    assert float(result.value) == pytest.approx(expected, rel=1e-10, abs=1e-10)
    assert float(result.value) == pytest.approx(float(result.gain) / (1 - gamma), rel=1e-15)
    paper = fsc.evaluate(world, policy, discount=gamma, convention="paper")
    assert float(paper.value) == pytest.approx(gamma * expected, rel=1e-10)  # each reward discounted once more


def test_reset_and_discount_are_one_parameter():
    world = random_world(3, discount=0.9)
    arch = fsc.RAM(1, arms=3, observations=2)
    policy = fsc.Policy.random(arch, 0)
    by_world = fsc.evaluate(world, policy)  # the world's discount
    assert float(by_world.gain) == float(fsc.evaluate(world, policy, reset=1 - 0.9).gain)
    assert float(by_world.gain) == float(fsc.evaluate(world, policy, discount=0.9).gain)
    with pytest.raises(ValueError, match="give reset or discount, not both"):
        fsc.evaluate(world, policy, reset=0.1, discount=0.9)
    with pytest.raises(ValueError, match="give reset= or discount=: the world declares no discount"):
        fsc.evaluate(random_world(3), policy)
    with pytest.raises(ValueError, match=r"discount must be in \[0, 1\], got 1.5"):
        fsc.evaluate(world, policy, discount=1.5)
    assert fsc.evaluate(world, policy, discount=1.0, engine="accurate").value is None  # r = 0: the average reward


# ---------------------------------------------------------------- classic controllers


def tiger_counter(margin=2):
    N = 2 * margin + 1
    action = np.zeros(N, dtype=np.int64)
    action[0], action[-1] = 1, 2  # heard right twice more: open the left door; left: the right door
    next_node = np.full((N, 3, 2), margin)
    for q in range(1, N - 1):
        next_node[q, 0] = [q + 1, q - 1]
    return action, next_node


def mpmath_tiger_counter(gamma: float) -> mpmath.mpf:
    """The counting controller's value from its value equations, solved at 40 digits.

    State (q, s): node q in 0..4 (count + 2), tiger s. Listen in 1..3 pays -1, hears s with 0.85;
    node 0 opens the left door (-100 if the tiger is left, else +10), node 4 the right door; both go to node 2
    with the tiger uniform.
    """
    mpmath.mp.dps = 40
    g, p = mpmath.mpf(gamma), mpmath.mpf("0.85")
    index = {(q, s): 2 * q + s for q in range(5) for s in range(2)}
    M, b = mpmath.zeros(10, 10), mpmath.zeros(10, 1)
    for (q, s), i in index.items():
        M[i, i] += 1
        if q in (0, 4):
            b[i] = (-100 if (q == 0) == (s == 0) else 10) if True else 0
            for s2 in range(2):
                M[i, index[2, s2]] -= g / 2
        else:
            b[i] = -1
            hear_left = p if s == 0 else 1 - p
            M[i, index[q + 1, s]] -= g * hear_left
            M[i, index[q - 1, s]] -= g * (1 - hear_left)
    V = mpmath.lu_solve(M, b)
    return (V[index[2, 0]] + V[index[2, 1]]) / 2


@pytest.mark.parametrize("gamma", [0.95, 0.75])
def test_hand_built_tiger_controllers(gamma):
    task = tasks.Tiger(discount=gamma)
    one = fsc.RAM(1, arms=3, observations=2)
    stay = np.zeros((1, 3, 2), dtype=np.int64)
    listen, open_door = -1 / (1 - gamma), -45 / (1 - gamma)  # opening pays (10 - 100) / 2 on average
    for action, expected in ((0, listen), (1, open_door), (2, open_door)):
        value = float(fsc.evaluate(task, fsc.Policy.from_controller(one, [action], stay)).value)
        assert value == pytest.approx(expected, rel=1e-13)
    five = fsc.RAM(5, arms=3, observations=2)
    action, next_node = tiger_counter()
    value = float(fsc.evaluate(task, fsc.Policy.from_controller(five, action, next_node, initial=2)).value)
    assert value == pytest.approx(float(mpmath_tiger_counter(gamma)), rel=1e-12, abs=1e-12)
    # Nothing is worth more than the optimum; the counter is optimal to the bound's resolution.
    bound = two_state_bound(task, gamma, points=20_001)
    assert value <= bound + 1e-12 and bound - value < 1e-7


def test_skeleton_reads_back_the_controller():
    rng = np.random.default_rng(0)
    for N, A, O in ((1, 3, 2), (3, 2, 3), (4, 4, 2)):
        arch = fsc.RAM(N, arms=A, observations=O)
        action, next_node, initial = rng.integers(A, size=N), rng.integers(N, size=(N, A, O)), int(rng.integers(N))
        skeleton = fsc.Policy.from_controller(arch, action, next_node, initial).skeleton()
        assert np.array_equal(skeleton.action, action) and skeleton.initial == initial
        played = next_node[np.arange(N), action]
        # Entries after an action the node does not play are never used; the played ones read back.
        assert np.array_equal(skeleton.next_node[np.arange(N), action], played)
        assert skeleton.min_prob == 1.0


def test_stochastic_controller_and_its_skeleton():
    arch = fsc.RAM(2, arms=2, observations=2)
    action = np.array([[0.7, 0.3], [0.2, 0.8]])
    next_node = np.zeros((2, 2, 2, 2))
    next_node[..., 0], next_node[..., 1] = 0.9, 0.1
    next_node[1, :, 1] = [0.25, 0.75]
    policy = fsc.Policy.from_controller(arch, action, next_node, initial=[0.4, 0.6])
    probs = policy.probs().detach().numpy()
    # Node (1, B, -) [index 2 + 1*4 + 1*2 + 1 = 9]: to (q, a') with eta(q | 1, B, -) psi(a' | q).
    assert np.allclose(probs[9], [0.25 * 0.7, 0.25 * 0.3, 0.75 * 0.2, 0.75 * 0.8], rtol=0, atol=1e-15)
    skeleton = policy.skeleton()
    assert skeleton.next_node[1, 1, 1] == 1 and skeleton.next_prob[1, 1, 1] == pytest.approx(0.75)
    assert skeleton.initial == 1 and skeleton.initial_prob == pytest.approx(0.6)
    assert list(skeleton.action) == [0, 1]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda arch: fsc.Policy.from_controller(fsc.Memento(2), [0], [[[0]]]), "a classic controller lives on RAM"),
        (lambda arch: fsc.Policy.from_controller(arch, [0, 5], np.zeros((2, 3, 2), int)), r"action must hold indices in \[0, 3\)"),
        (lambda arch: fsc.Policy.from_controller(arch, [0, 1], np.zeros((2, 3), int)), r"next_node must be integers of shape \(2, 3, 2\)"),
        (lambda arch: fsc.Policy.from_controller(arch, [0, 1], np.zeros((2, 3, 2), int), initial=2), r"initial must hold indices in \[0, 2\)"),
        (lambda arch: fsc.Policy.from_controller(arch, [0, 1], np.zeros((2, 3, 2), int), mix=1.0), r"mix must be a number in \[0, 1\)"),
    ],
)
def test_bad_controllers(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call(fsc.RAM(2, arms=3, observations=2))


# ---------------------------------------------------------------- tasks and bounds


def test_tiger_file_is_the_task():
    world, task = fsc.read_pomdp(DATA / "tiger.pomdp"), tasks.Tiger().pomdp
    assert world.reward.strides[2:] == (0, 0)  # rewards of (s, a) only are read compactly, as a broadcast view
    for name in ("transition", "observation", "reward", "initial"):
        assert np.array_equal(np.asarray(getattr(world, name)), np.asarray(getattr(task, name))), name
    assert (world.state_labels, world.action_labels, world.observation_labels, world.discount) == (
        task.state_labels,
        task.action_labels,
        task.observation_labels,
        task.discount,
    )


def test_cheese_maze_by_hand():
    world = tasks.CheeseMaze().pomdp
    assert (world.num_states, world.num_actions, world.num_observations) == (11, 4, 7)
    N, S, E, W = range(4)
    T = world.transition
    assert T[0, E, 1] == 1 and T[0, W, 0] == 1 and T[0, S, 5] == 1 and T[2, S, 6] == 1 and T[6, S, 10] == 1
    assert np.allclose(T[10, N], np.r_[np.full(10, 0.1), 0])  # the cheese restarts in an ordinary cell
    labels = world.observation_labels
    seen = [labels[int(world.observation[0, s].argmax())] for s in range(11)]
    assert seen == ["NW", "NS", "N", "NS", "NE", "EW", "EW", "EW", "EWS", "EWS", "cheese"]
    assert np.asarray(world.reward)[10, :, :, :].min() == 1 and np.asarray(world.reward)[:10].max() == 0


def test_grid4x3_by_hand():
    world = tasks.Grid4x3().pomdp
    assert (world.num_states, world.num_actions, world.num_observations) == (11, 4, 6)
    N, S, E, W = range(4)
    T = world.transition
    # s7 (bottom left) going north: 0.8 to s4, 0.1 east to s8, 0.1 west into the wall (stay).
    assert np.allclose(T[7, N], np.eye(11)[4] * 0.8 + np.eye(11)[8] * 0.1 + np.eye(11)[7] * 0.1, rtol=0, atol=1e-15)
    # s4 going east: the obstacle, so it stays with 0.8; north s0 0.1, south s7 0.1.
    assert np.allclose(T[4, E], np.eye(11)[4] * 0.8 + np.eye(11)[0] * 0.1 + np.eye(11)[7] * 0.1, rtol=0, atol=1e-15)
    labels = world.observation_labels
    assert labels[int(world.observation[0, 4].argmax())] == "both" and labels[int(world.observation[0, 3].argmax())] == "good"
    R = np.asarray(world.reward)
    assert R[3].min() == R[3].max() == 1 and R[6].max() == -1 and R[0].max() == pytest.approx(-0.04)


def test_tasks_without_paper_metrics_instantiate_and_scale_in_the_paper_convention():
    task = tasks.Tiger()
    arch = fsc.RAM(1, arms=3, observations=2)
    policy = fsc.Policy.uniform(arch)
    native, paper = (fsc.evaluate(task, policy, convention=c) for c in ("native", "paper"))
    assert float(paper.gain) == pytest.approx(0.95 * float(native.gain), rel=1e-15)


def test_mdp_bound_of_tiger_by_hand():
    # Seeing the tiger, always open the other door: 10 per step.
    assert mdp_bound(tasks.Tiger(), 0.95) == pytest.approx(10 / 0.05, rel=1e-12)


@pytest.mark.parametrize("task", [tasks.Tiger(), tasks.CheeseMaze(), tasks.Grid4x3()], ids=["tiger", "cheese", "grid4x3"])
def test_no_controller_beats_the_bounds(task):
    world = task.pomdp
    informed, full = informed_bound(task, 0.95), mdp_bound(task, 0.95)
    assert informed <= full + 1e-12
    best = -np.inf
    for seed in range(20):
        arch = fsc.RAM(1 + seed % 3, arms=world.num_actions, observations=world.num_observations)
        policy = fsc.Policy.random(arch, seed, std=3.0)
        best = max(best, float(fsc.evaluate(task, policy).value))
    assert best <= informed + 1e-12


# ---------------------------------------------------------------- the command line


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_evaluate_a_file_world(capsys):
    status, out, _ = run(capsys, "evaluate", "--pomdp", DATA / "tiger.pomdp", "--memory", "ram:1", "--policy", "uniform", "--discount", "0.75", "--json")
    record = json.loads(out)
    assert status == 0 and "q" not in record
    assert record["value"] == pytest.approx((-1 - 45 - 45) / 3 / 0.25, rel=1e-13) and record["nodes"] == 7


@pytest.mark.parametrize(
    "argv, message",
    [
        (["evaluate", "--reset", "0.1", "--discount", "0.9"], "give reset or discount, not both"),
        (["evaluate", "--pomdp", DATA / "tiger.pomdp", "--mu", "0.2"], "give one"),
        (["evaluate", "--pomdp", "missing.pomdp"], "missing.pomdp"),
        (["evaluate", "--pomdp", DATA / "tiger.pomdp", "--memory", "ram:0"], "memory size must be an integer >= 1"),
    ],
)
def test_bad_world_options(capsys, argv, message):
    status, _, err = run(capsys, *argv)
    assert status == 2 and message in err and err.count("\n") == 1


def test_train_a_file_world_until_converged(capsys, tmp_path):
    world = tmp_path / "tiger.pomdp"
    world.write_text((DATA / "tiger.pomdp").read_text())
    out = tmp_path / "run"
    args = ["train", "--pomdp", world, "--memory", "ram:3", "--init", "random", "--seed", "0", "--max-seconds", "60", "--out", out, "--quiet", "--json"]
    status, printed, err = run(capsys, *args)
    result = json.loads(printed)
    assert status == 0, err
    assert "q" not in result and result["stop"] == "converged"
    policy = fsc.Policy.load(out / "policy.npz")
    exact = float(fsc.evaluate(tasks.Tiger(), policy).value)
    assert result["value"] == pytest.approx(exact, rel=1e-12)
    assert result["value"] <= two_state_bound(tasks.Tiger(), 0.95, points=20_001) + 1e-9
    recorded = json.loads((out / "run.json").read_text())
    assert len(recorded["arguments"]["pomdp"]) == 64 and recorded["pomdp_path"] == str(world)
    world.write_text(world.read_text().replace("discount: 0.95", "discount: 0.9"))
    status, _, err = run(capsys, *args)
    assert status == 2 and "holds a run with other arguments (pomdp:" in err


def test_draw_a_file_world(capsys, tmp_path):
    five = fsc.RAM(5, arms=3, observations=2)
    action, next_node = tiger_counter()
    fsc.Policy.from_controller(five, action, next_node, initial=2, mix=1e-6).save(tmp_path / "counter.npz")
    svg = tmp_path / "counter.svg"
    status, out, err = run(capsys, "draw", "--pomdp", DATA / "tiger.pomdp", "--memory", "ram:5", "--policy", tmp_path / "counter.npz", "--out", svg, "--json")
    assert status == 0, err
    assert json.loads(out)["value"] == pytest.approx(float(mpmath_tiger_counter(0.95)), rel=1e-4)
    text = svg.read_text()
    assert "listen" in text or "L" in text


torch.set_default_dtype(torch.float64)


# ---------------------------------------------------------------- Storm, a second opinion


@pytest.mark.parametrize("gamma", [0.95, 0.75])
@pytest.mark.parametrize("case", ["tiger-2", "tiger-5", "random-4", "random-5", "cheese-1"])
def test_storm_agrees(case, gamma):
    stormpy = pytest.importorskip("stormpy", reason="the storm extra (make test installs it)")
    assert stormpy is not None
    from fsc.storm import storm_values

    name, size = case.split("-")
    world = {"tiger": lambda: tasks.Tiger(discount=gamma).pomdp, "cheese": lambda: tasks.CheeseMaze(discount=gamma).pomdp}.get(
        name, lambda: random_world(int(size))
    )()
    N = int(size) if name != "random" else 2
    arch = fsc.RAM(N, arms=world.num_actions, observations=world.num_observations)
    policy = fsc.Policy.random(arch, N, std=2.0)
    ours = fsc.evaluate(world, policy, discount=gamma)
    storm = storm_values(world, policy, gamma)
    assert storm["value"] == pytest.approx(float(ours.value), rel=1e-9, abs=1e-9)
    assert storm["gain"] == pytest.approx(float(ours.gain), rel=1e-9, abs=1e-9)
