"""Property tests: random rule-written automata, random worlds, random policies.

Every generated architecture passes ``check_architecture``; every controller
passes ``check_policy`` (engines agree, gradcheck, Monte Carlo within 4
standard errors).  Derandomised, and few examples, to keep the default run short.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fsc
from fsc.testing import check_architecture, check_policy


@st.composite
def automata(draw):
    N = draw(st.integers(1, 6))
    C = draw(st.integers(1, 4))
    A = draw(st.integers(1, 3))
    O = draw(st.integers(1, 3))
    action = draw(st.lists(st.integers(0, A - 1), min_size=C, max_size=C))
    step = draw(st.lists(st.integers(0, N - 1), min_size=N * C * O, max_size=N * C * O))
    mask = draw(st.lists(st.booleans(), min_size=N * C, max_size=N * C))
    first = draw(st.lists(st.integers(0, C - 1), min_size=N, max_size=N))  # one choice always allowed per node
    reset = draw(st.sets(st.integers(0, N - 1), min_size=1, max_size=N))
    prune = draw(st.booleans())
    nodes = [("n", i) for i in range(N)]  # tuple labels
    choices = [f"c{j}" for j in range(C)]
    allowed = np.array(mask).reshape(N, C)
    allowed[np.arange(N), first] = True
    table = np.array(step).reshape(N, C, O)
    arch = fsc.Automaton(
        nodes,
        choices,
        lambda node, choice, obs: nodes[table[node[1], choices.index(choice), obs]],
        action=lambda choice: action[choices.index(choice)],
        actions=A,
        observations=O,
        allowed=lambda node, choice: bool(allowed[node[1], choices.index(choice)]),
        reset=[nodes[i] for i in sorted(reset)],
        prune=prune,
    )
    return arch, (table, allowed, action, sorted(reset), prune)


def random_world(arch, seed: int) -> fsc.POMDP:
    rng = np.random.default_rng(seed)
    S, A, O = int(rng.integers(1, 4)), arch.num_actions, arch.num_observations
    return fsc.POMDP(
        transition=rng.dirichlet(np.ones(S), size=(S, A)),
        observation=rng.dirichlet(np.ones(O), size=(A, S)),
        reward=rng.normal(size=(S, A, S, O)),
        initial=rng.dirichlet(np.ones(S)),
    )


@settings(max_examples=25, derandomize=True, deadline=None)
@given(automata())
def test_generated_automata_pass_the_architecture_checks(generated):
    arch, (table, allowed, action, reset, prune) = generated
    check_architecture(arch)
    # The tables say what the rules say, on the kept nodes.
    index = [label[1] for label in arch.node_labels]
    for n, i in enumerate(index):
        assert np.array_equal(arch.allowed[n], allowed[i])
        for c in np.flatnonzero(allowed[i]):
            assert [index[m] for m in arch.next_node[n, c]] == table[i, c].tolist()
    assert arch.choice_action.tolist() == action
    assert [index[n] for n in np.flatnonzero(arch.reset_mask)] == reset
    if not prune:
        assert arch.num_nodes == table.shape[0]


@settings(max_examples=20, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(automata(), st.integers(0, 2**16))
def test_generated_controllers_agree_across_engines_gradients_and_monte_carlo(generated, seed):
    arch, _ = generated
    world = random_world(arch, seed)
    check_policy(world, fsc.Policy.random(arch, seed), reset=0.1, steps=200_000, seed=seed)
