"""The engine for large worlds (fsc.engines.large) and the up-front estimates (fsc.engines.estimate).

References are the dense engine (LAPACK LU of the whole joint chain, an independent path from the world's
dense tables), torch's finite differences (gradcheck), and counts made by building the joint chain itself.
"""

import numpy as np
import pytest
import torch

import fsc
import tasks
from fsc.engines import cost
from fsc.engines import estimate as est
from fsc.engines.large import large_chain
from fsc.engines.registry import ENGINES
from fsc.evaluate import Evaluator

from .registry import ARCHITECTURES, ids, padded_world


def _value_and_gradient(world, policy, reset, engine):
    policy = fsc.Policy(architecture=policy.architecture, logits=policy.logits.clone(), init_logits=policy.init_logits.clone()).requires_grad_()
    ev = fsc.evaluate(world, policy, reset=reset, engine=engine)
    loss = ev.gain + sum(ev.metrics.values()) + (ev.distribution * torch.linspace(0, 1, ev.distribution.numel()).reshape(ev.distribution.shape)).sum()
    loss.backward()
    return ev, policy.logits.grad, policy.init_logits.grad


def _assert_agree(world, arch, reset, seed=3):
    policy = fsc.Policy.random(arch, seed)
    ref, ref_grad, ref_init = _value_and_gradient(world, policy, reset, "dense")
    got, grad, init = _value_and_gradient(world, policy, reset, "large")
    assert got.engine == "large"
    assert got.residual < 1e-12
    assert abs(float(got.gain.detach()) - float(ref.gain.detach())) < 1e-10
    for name, value in ref.metrics.items():
        assert abs(float(got.metrics[name].detach()) - float(value.detach())) < 1e-10, name
    torch.testing.assert_close(got.distribution, ref.distribution, rtol=0, atol=1e-10)
    torch.testing.assert_close(grad, ref_grad, rtol=0, atol=1e-10)
    torch.testing.assert_close(init, ref_init, rtol=0, atol=1e-10)


@pytest.mark.parametrize("arch", ARCHITECTURES, ids=ids)
def test_large_engine_agrees_with_dense_on_the_registry(arch):
    _assert_agree(tasks.TwoHypothesis(0.2, arms=arch.arms).pomdp, arch, 0.02)


@pytest.mark.parametrize("arch", [fsc.RAM(2), fsc.Chain(3), fsc.Column(2), fsc.Memento(2)], ids=ids)
def test_large_engine_agrees_on_a_world_with_padded_parts(arch):
    world = padded_world()
    assert len(world.parts) == 2 and len(world.parts[1]) < len(world.parts[0])
    _assert_agree(world, arch, 0.05)


@pytest.mark.parametrize("world", [tasks.Tiger(), tasks.Grid4x3(), tasks.CheeseMaze()], ids=lambda w: type(w).__name__)
@pytest.mark.parametrize("M", [1, 2])
def test_large_engine_agrees_on_worlds_with_many_observations(world, M):
    pomdp = world.pomdp
    arch = fsc.RAM(M, arms=pomdp.num_actions, observations=pomdp.num_observations)
    _assert_agree(pomdp, arch, 1 - (pomdp.discount or 0.9))


@pytest.mark.parametrize("arch", [fsc.RAM(2), fsc.Memento(2), fsc.Chain(2, arms=3)], ids=ids)
def test_large_engine_gradcheck(arch):
    world = tasks.TwoHypothesis(0.2, arms=arch.arms).pomdp if arch.arms == 3 else padded_world()
    policy = fsc.Policy.random(arch, 7)

    def gain(logits, init_logits):
        p = fsc.Policy(architecture=arch, logits=logits, init_logits=init_logits)
        ev = fsc.evaluate(world, p, reset=0.05, engine="large")
        return ev.gain, *ev.metrics.values(), ev.distribution

    inputs = (policy.logits.clone().requires_grad_(), policy.init_logits.clone().requires_grad_())
    assert torch.autograd.gradcheck(gain, inputs, eps=1e-6, atol=1e-7, rtol=1e-6)


def test_auto_picks_the_large_engine_for_a_large_chain(monkeypatch):
    world = tasks.Grid4x3().pomdp
    arch = fsc.RAM(2, arms=world.num_actions, observations=world.num_observations)
    policy = fsc.Policy.random(arch, 0)
    small = fsc.evaluate(world, policy)
    assert small.engine != "large"
    monkeypatch.setattr(cost, "LARGE_CHAIN_NONZEROS", 10)
    monkeypatch.setattr(Evaluator, "_last", None)  # not the evaluator kept from the call above
    large = fsc.evaluate(world, policy)
    assert large.engine == "large"
    assert abs(float(large.gain.detach()) - float(small.gain.detach())) < 1e-10


# Estimates.


@pytest.mark.parametrize("arch", [fsc.RAM(3), fsc.Chain(2), fsc.Memento(2), fsc.Column(3, arms=3)], ids=ids)
def test_sizes_count_the_chains_exactly(arch):
    """The joint chain's nonzeros as counted from the world's tables are those the chain stores; the entries
    of the chain after each choice bound its pattern within a factor 2 (its diagonal is counted apart); the
    step G and the map to the entries of B hold at most the entries counted for them."""
    world = (padded_world() if arch.arms == 2 else tasks.TwoHypothesis(0.2, arms=3).pomdp)
    sizes = cost.world_sizes(world, arch)
    chain = fsc.joint_chain(world, arch)
    assert sizes.chain_nonzeros == chain.nnz
    assert (sizes.parts, sizes.states_per_part, sizes.nodes) == (chain.num_parts, chain.states_per_part, arch.num_nodes)
    large = large_chain(world, arch)
    assert large.nnz <= sizes.large_nonzeros <= 2 * large.nnz
    G, GT = large.steps[0]
    assert G.nnz == GT.nnz <= sizes.step_nonzeros and (large.value_maps[0] is None or large.value_maps[0].nnz <= sizes.step_nonzeros)


def _one_state_start(world):
    """``world`` started in its state 0 alone: fewer states in parts than the file declares."""
    initial = np.zeros(world.num_states)
    initial[0] = 1.0
    return fsc.POMDP(transition=world.transition, observation=world.observation, reward=world.reward, initial=initial, discount=world.discount)


@pytest.mark.parametrize("arch", [fsc.RAM(1), fsc.RAM(3), fsc.Chain(2), fsc.Memento(2), fsc.Column(3, arms=3)], ids=ids)
@pytest.mark.parametrize("start", ["uniform", "one state"])
def test_the_declared_lower_bounds_are_at_most_the_worlds_sizes(arch, start):
    """What check_declared compares with the limit, from the declared sizes alone, is at most what the full
    check computes on the world: every size, check_sizes' need and every engine's estimate."""
    world = padded_world() if arch.arms == 2 else tasks.TwoHypothesis(0.2, arms=3).pomdp
    world = _one_state_start(world) if start == "one state" else world
    started = int(np.count_nonzero(world.initial))
    full = cost.world_sizes(world, arch)
    least = est.least_sizes(world.num_states, world.num_actions, world.num_observations, arch, started=started)
    for field in ("states", "actions", "observations", "parts", "states_per_part", "nodes", "choices", "classes", "transitions",
                  "largest_action_classes", "chain_nonzeros", "large_nonzeros", "step_nonzeros", "placed"):  # fmt: skip
        assert getattr(least, field) <= getattr(full, field), field
    assert least.placed * least.nodes <= full.placed * full.nodes
    for name, engine in ENGINES.items():
        assert engine.estimate(least).bytes <= engine.estimate(full).bytes, name
    assert est.least_bytes(least).bytes == min(engine.estimate(least).bytes for engine in ENGINES.values())


def test_every_engine_estimates_under_its_name():
    world = tasks.Grid4x3().pomdp
    sizes = cost.world_sizes(world, fsc.RAM(2, arms=world.num_actions, observations=world.num_observations))
    for name, engine in ENGINES.items():
        estimate = engine.estimate(sizes)
        assert estimate.engine == name and estimate.bytes > 0 and estimate.seconds > 0, name


def test_the_world_sizes_estimates_are_those_of_the_parts():
    """placed_states left out is K S_part: the estimates of a world are what they were before the field."""
    world = tasks.Grid4x3().pomdp
    arch = fsc.RAM(2, arms=world.num_actions, observations=world.num_observations)
    sizes = cost.world_sizes(world, arch)
    assert sizes.placed_states is None and sizes.placed == sizes.parts * sizes.states_per_part
    K, X = sizes.parts, sizes.joint_states
    build = cost.CHAIN_BYTES_PER_CELL * sizes.states_per_part * sizes.allowed_pairs * sizes.observations  # one world state's table of the build
    tables = 8 * (12 * K * X + 4 * arch.num_nodes * arch.num_choices) + 100 * sizes.chain_nonzeros
    assert ENGINES["dense"].estimate(sizes).bytes == tables + build + 8 * K * X * X


@pytest.mark.parametrize("memory", ["ram:1", "ram:2"])
def test_a_world_just_under_the_declared_bound_is_handled_as_before(memory, monkeypatch, tmp_path):
    """With the limit just over the declared lower bound the file is read (the same tables) and the full
    estimate decides as it did without the bound (here: refuses, in the same words); with the limit just over
    the full estimate, it evaluates as it did; just under the lower bound, the bound refuses and so does the full
    estimate."""
    from fsc.io.pomdp_file import write_pomdp
    from fsc.resolve import resolve_memory, resolve_world, resolve_world_and_memory

    path = write_pomdp(tasks.Grid4x3().pomdp, tmp_path / "grid.POMDP")
    world = resolve_world(pomdp=str(path)).world
    arch = resolve_memory(memory, world)
    started = int(np.count_nonzero(world.initial))  # the file's start belief
    least = est.least_bytes(est.least_sizes(world.num_states, world.num_actions, world.num_observations, arch, started=started)).bytes
    full = min(ENGINES[engine].estimate(cost.world_sizes(world, arch)).bytes for engine in ("large", "iterative"))
    assert least < full

    def outcome():
        monkeypatch.setattr(Evaluator, "_last", None)
        try:
            return float(fsc.evaluate(world, fsc.Policy.uniform(arch), reset=0.05).value)
        except ValueError as error:
            return str(error)

    expected = outcome()
    for available in (int(least / cost.MEMORY_SHARE) + 1, int(full / cost.MEMORY_SHARE) + 1):
        monkeypatch.setattr(cost, "available_bytes", lambda available=available: available)
        before = outcome()
        named, built = resolve_world_and_memory(memory, pomdp=str(path))
        assert built == arch
        for name in ("transition", "observation", "reward", "initial"):
            assert np.array_equal(getattr(named.world, name), getattr(world, name)), name
        assert outcome() == before
        if available < full / cost.MEMORY_SHARE:
            assert isinstance(before, str) and "this machine has available" in before
        else:  # the large engine, the only one that fits: the value of the engine auto picks on the whole machine
            assert isinstance(before, float) and before == pytest.approx(expected, rel=1e-10, abs=0)
    monkeypatch.setattr(cost, "available_bytes", lambda: int(least / cost.MEMORY_SHARE) - 1)
    with pytest.raises(ValueError, match=r"^memory \(--memory\) RAM.* on the declared S=11, A=4, O=6 needs at least .*; choose a smaller memory or world$"):
        resolve_world_and_memory(memory, pomdp=str(path))
    assert isinstance(outcome(), str)  # the full estimate refuses too


def test_ten_million_states_and_three_actions_are_refused_from_the_declared_sizes(monkeypatch, tmp_path):
    """The file of docs/large-worlds.md with ram:1, on a machine with 24 GB available: refused before its body,
    whose first entry here names an action the file does not have (the error reading it would give)."""
    from fsc.resolve import resolve_world_and_memory

    monkeypatch.setattr(cost, "available_bytes", lambda: 24 * 10**9)
    path = tmp_path / "big.POMDP"
    path.write_text("discount: 0.9\nvalues: reward\nstates: 10000000\nactions: 3\nobservations: 2\nT: nowhere identity\n")
    with pytest.raises(ValueError, match=r"needs at least 25.8 GB \(the lightest engine's estimate, 'large'\), over the 19.2 GB"):
        resolve_world_and_memory("ram:1", pomdp=str(path))
    with pytest.raises(ValueError, match="expected a action name or index"):
        fsc.read_pomdp(path)


def test_an_engine_that_does_not_fit_is_refused_in_one_line(monkeypatch):
    world = tasks.Grid4x3().pomdp
    arch = fsc.RAM(3, arms=world.num_actions, observations=world.num_observations)
    need = ENGINES["dense"].estimate(cost.world_sizes(world, arch)).bytes
    monkeypatch.setattr(cost, "available_bytes", lambda: int(need / cost.MEMORY_SHARE / 2))
    with pytest.raises(ValueError) as error:
        fsc.evaluate(world, fsc.Policy.uniform(arch), engine="dense")
    message = str(error.value)
    assert "\n" not in message
    assert "--engine" in message and "GB" in message and "'dense'" in message
    assert "--engine large fits" in message  # the large engine needs far less, and is named


def test_auto_picks_the_engine_that_fits(monkeypatch):
    world = tasks.Grid4x3().pomdp
    arch = fsc.RAM(3, arms=world.num_actions, observations=world.num_observations)
    sizes = cost.world_sizes(world, arch)
    large, choices = ENGINES["large"].estimate(sizes).bytes, ENGINES["choices"].estimate(sizes).bytes
    assert large < choices
    monkeypatch.setattr(cost, "available_bytes", lambda: int((large + choices) / 2 / cost.MEMORY_SHARE))
    assert fsc.evaluate(world, fsc.Policy.uniform(arch), reset=0.1).engine == "large"


def test_a_memory_whose_vectors_do_not_fit_is_refused(monkeypatch):
    world = tasks.Grid4x3().pomdp
    arch = fsc.RAM(2, arms=world.num_actions, observations=world.num_observations)
    monkeypatch.setattr(cost, "available_bytes", lambda: 1000)
    with pytest.raises(ValueError, match=r"^memory \(--memory\) .* over the .* this machine has available"):
        fsc.evaluate(world, fsc.Policy.uniform(arch))


# The world's expectations, from its sparse tables.


def test_expected_step_is_the_dense_sum():
    world = tasks.CheeseMaze().pomdp
    rng = np.random.default_rng(0)
    table = rng.normal(size=world.reward.shape)
    dense = np.einsum("sat,ato,sato->sa", world.transition, world.observation, table)
    np.testing.assert_allclose(world.expected_step(table), dense, rtol=0, atol=1e-14)
    compact = np.broadcast_to(rng.normal(size=(world.num_states, world.num_actions, 1, 1)), world.reward.shape)
    np.testing.assert_array_equal(world.expected_step(compact), compact[:, :, 0, 0])


def test_parts_are_the_linked_states_with_initial_mass():
    transition = np.zeros((5, 1, 5))
    transition[[0, 1, 2, 3, 4], 0, [1, 0, 2, 4, 3]] = 1.0  # {0, 1}, {2}, {3, 4}
    observation = np.ones((1, 5, 1))
    world = fsc.POMDP(transition=transition, observation=observation, reward=np.zeros((5, 1, 1, 1)), initial=np.array([0.0, 0.5, 0.0, 0.0, 0.5]))
    assert world.parts == ((0, 1), (3, 4))


def test_the_time_budget_counts_the_set_up(tmp_path, monkeypatch):
    """A set-up that takes the whole budget leaves time for the first evaluation only."""
    import time

    import fsc.train.run as run_module
    from fsc.train import run_training

    set_up = run_module._set_up

    def slow(config, inputs):
        time.sleep(0.6)
        return set_up(config, inputs)

    monkeypatch.setattr(run_module, "_set_up", slow)
    result = run_training(mu=0.2, memory="ram:2", init="uniform", out=tmp_path / "run", max_seconds=0.5, quiet=True)
    assert result.stop == "max_seconds"
    assert result.steps == 0


@pytest.mark.parametrize("world", [tasks.Tiger(), tasks.Grid4x3(), tasks.CheeseMaze()], ids=lambda w: type(w).__name__)
def test_sparse_bounds_are_the_dense_iterations(world):
    """The bounds iterate on sparse tables; the same iterations written on dense tables give the same numbers."""
    from fsc.bounds import informed_bound, mdp_bound

    pomdp, gamma = world.pomdp, 0.9
    rbar = np.einsum("sat,ato,sato->sa", pomdp.transition, pomdp.observation, np.asarray(pomdp.reward))
    step = np.einsum("sat,ato->saot", pomdp.transition, pomdp.observation)
    V, Q = np.zeros(pomdp.num_states), np.zeros_like(rbar)
    for _ in range(400):
        V = (rbar + gamma * pomdp.transition @ V).max(axis=1)
        Q = rbar + gamma * (step @ Q).max(axis=3).sum(axis=2)
    assert mdp_bound(world, gamma, tolerance=1e-13) == pytest.approx(float(pomdp.initial @ V), abs=1e-11)
    assert informed_bound(world, gamma, tolerance=1e-13) == pytest.approx(float((pomdp.initial @ Q).max()), abs=1e-11)


@pytest.mark.parametrize("arch", [fsc.RAM(3), fsc.Memento(3)], ids=ids)
def test_gmres_on_an_incomplete_lu_agrees_with_the_complete_lu(arch):
    """Where the complete factor would not fit, the large engine solves by GMRES on an incomplete LU: the
    same value, distribution and gradient."""
    from fsc.engines import large

    world = tasks.TwoHypothesis(0.2, arms=arch.arms).pomdp
    chain = large.large_chain(world, arch)
    policy = fsc.Policy.random(arch, 2)
    probs, init = policy.probs().detach().numpy(), policy.init_probs().detach().numpy()
    frame = chain.frame
    p0 = (frame.initial_world[:, :, None] * init).reshape(frame.num_parts, -1)
    lu = large.LargeLU(chain, None, p0, 0.01, probs=probs, krylov=False)
    krylov = large.LargeLU(chain, None, p0, 0.01, probs=probs, krylov=True)
    assert krylov.info["solver"] == "gmres" and lu.info["solver"] == "lu"
    p, q = lu.solve(), krylov.solve()
    np.testing.assert_allclose(q, p, rtol=0, atol=1e-12)
    g = np.random.default_rng(0).normal(size=p.shape)
    np.testing.assert_allclose(krylov.solve_adjoint(g), lu.solve_adjoint(g), rtol=0, atol=1e-10)
    assert krylov.residual(q) < 1e-12


@pytest.mark.parametrize("world", [tasks.CheeseMaze(), tasks.Grid4x3()], ids=lambda w: type(w).__name__)
def test_the_entries_of_b_by_one_product_are_those_of_the_blocks(world):
    """For RAM every class can follow every class, and ``B``'s entries come from one product with the policy
    (``value_maps``) in the order of its data: the same numbers as the blocks' entries placed by their slots."""
    pomdp = world.pomdp
    arch = fsc.RAM(3, arms=pomdp.num_actions, observations=pomdp.num_observations)
    chain = large_chain(pomdp, arch)
    assert chain.value_maps[0] is not None
    W = chain.class_weights(fsc.Policy.random(arch, 5).probs().detach().numpy())
    _, _, slot, _, nnz = chain.pattern[0]
    placed = np.zeros(nnz)
    np.add.at(placed, slot, np.concatenate([chain.block_values(b, W) for b in chain.blocks]))
    np.testing.assert_allclose(chain.entries(0, W), placed, rtol=0, atol=1e-15)
    assert large_chain(pomdp, fsc.Memento(2, arms=pomdp.num_actions, observations=pomdp.num_observations)).value_maps[0] is None


@pytest.mark.parametrize("arch", [fsc.RAM(2), fsc.Chain(3)], ids=ids)
def test_a_world_stored_sparse_evaluates_as_the_same_world_dense(arch):
    """The large engine on a world holding SparseTable s (as a large .POMDP file is read) against the dense
    engine on the same world held in dense arrays."""
    from fsc.model.pomdp import SparseTable

    world = padded_world()
    reward = np.array(world.reward)  # every (s, a, s2, o): the reward table's widest form
    dense = fsc.POMDP(transition=world.transition, observation=world.observation, reward=reward, initial=world.initial)
    sparse = fsc.POMDP(
        transition=SparseTable.from_dense(world.transition),
        observation=SparseTable.from_dense(world.observation),
        reward=SparseTable.from_dense(reward, columns=2),
        initial=world.initial,
    )
    assert sparse.is_sparse and not dense.is_sparse
    policy = fsc.Policy.random(arch, 4)
    ref, ref_grad, ref_init = _value_and_gradient(dense, policy, 0.05, "dense")
    got, grad, init = _value_and_gradient(sparse, policy, 0.05, "large")
    assert abs(float(got.gain.detach()) - float(ref.gain.detach())) < 1e-10
    torch.testing.assert_close(grad, ref_grad, rtol=0, atol=1e-10)
    torch.testing.assert_close(init, ref_init, rtol=0, atol=1e-10)


def test_later_factorisations_reuse_the_first_ordering_and_agree():
    """The first factorisation finds B's ordering (COLAMD) and keeps it on the chain; later ones factor the
    permuted B in that order: the same fill, and the same numbers as the dense engine."""
    world = tasks.CheeseMaze().pomdp
    arch = fsc.RAM(3, arms=world.num_actions, observations=world.num_observations)
    chain = large_chain(world, arch)
    chain.orderings.clear()
    first = fsc.evaluate(world, fsc.Policy.random(arch, 1), engine="large")
    assert len(chain.orderings) == 1
    for seed in (2, 3):
        policy = fsc.Policy.random(arch, seed)
        _assert_agree(world, arch, 1 - world.discount, seed=seed)
        again = fsc.evaluate(world, policy, engine="large")
        assert again.info["fill"] == first.info["fill"] and again.residual < 1e-12
