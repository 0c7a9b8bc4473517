"""Architectures written as rules: Automaton, restrict, product.

Reference values come from hand derivations (in the docstrings), from the
vectorised table builders the rules replace, and from brute-force
enumeration of action/observation sequences, never from the tabulation
under test.
"""

import itertools
import json

import numpy as np
import pytest
import torch

import fsc
import tasks
from fsc.model.architecture import label_text
from fsc.testing import check_architecture, check_policy

ARMS = "ABCD"


def wsls(k: int) -> fsc.Automaton:
    """Win-stay, lose-shift on the last arm and reward, with ``k`` arms."""
    return fsc.Automaton(
        nodes=["start"] + [(x, o) for x in ARMS[:k] for o in "+-"],
        choices=list(ARMS[:k]),
        step=lambda node, choice, obs: (choice, "+-"[obs]),
        action=ARMS.index,
        actions=k,
        observations=2,
    )


def wsls_policy(arch: fsc.Automaton, k: int) -> fsc.Policy:
    """Start: any arm.  After a win the same arm; after a loss one of the others, uniformly."""
    probs = np.zeros((arch.num_nodes, k))
    for n, label in enumerate(arch.node_labels):
        if label == "start":
            probs[n] = 1 / k
        else:
            x = ARMS.index(label[0])
            probs[n] = (np.arange(k) != x) / (k - 1) if label[1] == "-" else np.arange(k) == x
    return fsc.Policy.from_probs(arch, probs)


def wsls_q(mu: float, k: int, r: float) -> float:
    """By hand.  Under H_A the arm played is good (G) or worse (B), a two-state chain:
    G -> B when A loses, a = (1 - mu)/2; B -> G when a worse arm loses and the
    shift picks A, b = (1 + mu)/2 / (k - 1).  The first step after a reset is
    worse with probability P0 = (k - 1)/k; then P(B at t) = pi + (P0 - pi) lam^t
    with pi = a / (a + b), lam = 1 - a - b.  Native q = r sum_t (1-r)^t P(B at t)
    = pi + (P0 - pi) r / (1 - (1 - r) lam).  (k = 2: q = r/2 + (1 - r)(1 - mu)/2.)"""
    a, b = (1 - mu) / 2, (1 + mu) / 2 / (k - 1)
    pi, lam, p0 = a / (a + b), 1 - a - b, (k - 1) / k
    return pi + (p0 - pi) * r / (1 - (1 - r) * lam)


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("reset", [1.0, 0.1, 1e-3, 1e-6])
def test_wsls_written_as_rules_matches_the_hand_formula(k, reset):
    arch = wsls(k)
    world, policy = tasks.TwoHypothesis(0.2, arms=k), wsls_policy(arch, k)
    for engine in ("dense", "power"):
        q = float(fsc.evaluate(world, policy, reset=reset, engine=engine).metrics["q"])
        assert q == pytest.approx(wsls_q(0.2, k, reset), rel=1e-12, abs=0)
    if k == 2:
        assert wsls_q(0.2, 2, reset) == pytest.approx(reset / 2 + (1 - reset) * 0.4, rel=1e-14)


@pytest.mark.parametrize("k", [2, 3])
def test_wsls_monte_carlo_within_four_standard_errors(k):
    arch = wsls(k)
    sim = fsc.simulate(tasks.TwoHypothesis(0.2, arms=k), wsls_policy(arch, k), reset=0.05, steps=400_000, seed=k)
    assert abs(sim.metrics["q"] - wsls_q(0.2, k, 0.05)) <= 4 * sim.stderrs["q"]
    assert sim.stderrs["q"] < 0.01


def test_labels_keep_their_python_values_and_print_as_text():
    arch = wsls(2)
    assert arch.node_labels[2] == ("A", "-") and arch.node_labels[0] == "start"
    assert arch.node_names[:4] == ("start", "A+", "A-", "B+")
    assert arch.node_index(("B", "+")) == 3
    assert label_text((12, "A", "+")) == "12,A,+" and label_text((1, None, None)) == "1__"
    check_architecture(arch)


# Restrictions: Chain and Column are RAM with a rule.


def reference_tables(M: int, arms: int):
    """Chain and Column masks built the vectorised way (independent of rules over labels)."""
    O = 2
    memory = np.concatenate([np.arange(M), np.repeat(np.arange(M), arms * O)])
    arm = np.concatenate([-np.ones(M, dtype=int), np.tile(np.repeat(np.arange(arms), O), M)])
    c = np.arange(M * arms)
    chain = np.abs(memory[:, None] - (c // arms)[None, :]) <= 1
    column = chain & (((memory == 0) | (arm < 0))[:, None] | (arm[:, None] == (c % arms)[None, :]))
    return chain, column


@pytest.mark.parametrize("arms", [2, 3])
@pytest.mark.parametrize("M", range(1, 9))
def test_ram_restricted_equals_chain_and_column_table_for_table(M, arms):
    ram = fsc.RAM(M, arms=arms)
    chain = ram.restrict(lambda node, choice: abs(node[0] - choice[0]) <= 1)
    column = ram.restrict(lambda node, choice: abs(node[0] - choice[0]) <= 1 and (node[0] == 1 or node[1] in (None, choice[1])))
    want_chain, want_column = reference_tables(M, arms)
    for restricted, builtin, want in ((chain, fsc.Chain(M, arms=arms), want_chain), (column, fsc.Column(M, arms=arms), want_column)):
        assert np.array_equal(builtin.allowed, want)
        for table in ("allowed", "next_node", "choice_action", "reset_mask"):
            assert np.array_equal(getattr(restricted, table), getattr(builtin, table)), table
        assert restricted.node_labels == builtin.node_labels and restricted.choice_labels == builtin.choice_labels


def test_restrict_refuses_a_node_left_without_choice():
    with pytest.raises(ValueError, match=r"node '2A\+' has no allowed choice"):
        fsc.RAM(2).restrict(lambda node, choice: node != (2, "A", "+"))


def test_memento_values_are_its_histories():
    arch = fsc.Memento(2)
    assert arch.node_values[0] == () and arch.node_values[1] == (("A", "+"),)
    assert arch.node_values[arch.node_index("AB+-")] == (("A", "+"), ("B", "-"))
    only_a_after_a_loss = arch.restrict(lambda h, arm: not h or h[-1] != ("A", "-") or arm == "A")
    assert only_a_after_a_loss.allowed.sum() == arch.allowed.sum() - 5  # 'A-' and the four '?A?-' histories


# Memento written as a rule equals the built-in one.


def memento_rule(m: int, arms: str = "AB") -> fsc.Automaton:
    symbols = [(x, o) for x in arms for o in "+-"]
    nodes = [()]
    for length in range(1, m + 1):
        nodes += list(itertools.product(symbols, repeat=length))
    return fsc.Automaton(
        nodes, list(arms), lambda h, arm, obs: (h + ((arm, "+-"[obs]),))[-m:], action=arms.index, actions=len(arms), observations=2, reset=[()]
    )


@pytest.mark.parametrize("m, arms", [(1, "AB"), (2, "AB"), (3, "AB"), (4, "AB"), (2, "ABC")])
def test_memento_as_rules_equals_the_builtin(m, arms):
    rules, builtin = memento_rule(m, arms), fsc.Memento(m, arms=len(arms))
    for table in ("allowed", "next_node", "choice_action", "reset_mask"):
        assert np.array_equal(getattr(rules, table), getattr(builtin, table)), table
    assert rules.node_labels == builtin.node_values


# Pruning and validation.


def test_unreachable_nodes_are_pruned_unless_asked():
    def step(node, choice, obs):
        return "a" if node == "start" else node

    kwargs = dict(action=lambda c: 0, actions=1, observations=2)
    assert fsc.Automaton(["start", "a", "island"], ["go"], step, **kwargs).node_labels == ("start", "a")
    kept = fsc.Automaton(["start", "a", "island"], ["go"], step, prune=False, **kwargs)
    assert kept.node_labels == ("start", "a", "island") and kept.next_node[2, 0, 1] == 2


BAD = [
    (dict(step=lambda n, c, o: "nowhere"), ValueError, r"step\('s', 'x', 0\) returned 'nowhere', which is not a declared node"),
    (dict(allowed=lambda n, c: n != "t"), ValueError, r"node 't' has no allowed choice"),
    (dict(action=lambda c: 2), ValueError, r"action\('x'\) must be in \[0, 2\), got 2"),
    (dict(action=lambda c: "A"), TypeError, r"action\('x'\) must be an int"),
    (dict(reset=["u"]), ValueError, r"reset node 'u' is not a declared node"),
    (dict(reset=[]), ValueError, "reset must name at least one node"),
    (dict(nodes=["s", "t", "s"]), ValueError, r"node labels must be distinct, got 's' twice"),
    (dict(nodes=["s", ["t"]]), TypeError, r"node labels must be hashable, got \['t'\]"),
    (dict(choices=[]), ValueError, "at least one choice"),
    (dict(actions=0), ValueError, "actions must be >= 1, got 0"),
    (dict(observations=True), TypeError, "observations must be an int"),
]


@pytest.mark.parametrize("change, error, message", BAD)
def test_bad_automata_are_refused_naming_node_choice_and_observation(change, error, message):
    arguments = dict(nodes=["s", "t"], choices=["x", "y"], step=lambda n, c, o: "t", action=lambda c: 0 if c == "x" else 1, actions=2, observations=2)
    arguments.update(change)
    with pytest.raises(error, match=message):
        fsc.Automaton(arguments.pop("nodes"), arguments.pop("choices"), arguments.pop("step"), **arguments)


# Files: an automaton is saved as its tables.


def test_policy_on_an_automaton_round_trips_through_npz_and_json(tmp_path):
    arch = memento_rule(2)
    policy = fsc.Policy.random(arch, 4)
    for name in ("p.npz", "p.json"):
        policy.save(tmp_path / name)
        loaded = fsc.Policy.load(tmp_path / name)
        assert loaded.architecture == arch and hash(loaded.architecture) == hash(arch)
        assert loaded.architecture.node_labels == arch.node_labels  # tuples come back as tuples
        assert torch.equal(loaded.logits, policy.logits)
    json.dumps(arch.to_dict())


def test_labels_that_json_cannot_hold_are_refused_when_saving():
    arch = fsc.Automaton([frozenset({1}), 2], ["c"], lambda n, c, o: 2, action=lambda c: 0, actions=1, observations=1)
    with pytest.raises(TypeError, match="labels made of strings, numbers, None and tuples"):
        arch.to_dict()


# Products.


def reachable_pairs(a, b, depth: int) -> set:
    """Pairs of nodes reached by some allowed sequence of (action, observation), by enumeration."""
    O = a.num_observations
    frontier = {(int(na), int(nb)) for na in np.flatnonzero(a.reset_mask) for nb in np.flatnonzero(b.reset_mask)}
    seen = set(frontier)
    for _ in range(depth):
        new = set()
        for na, nb in frontier:
            for ca in np.flatnonzero(a.allowed[na]):
                for cb in np.flatnonzero(b.allowed[nb]):
                    if a.choice_action[ca] == b.choice_action[cb]:
                        new |= {(int(a.next_node[na, ca, o]), int(b.next_node[nb, cb, o])) for o in range(O)}
        frontier = new - seen
        seen |= new
    return {(a.node_labels[x], b.node_labels[y]) for x, y in seen}


@pytest.mark.parametrize(
    "a, b, size",
    [
        # Memento(1) twice: both remember the last (arm, reward), so only equal pairs: start + 4.
        (fsc.Memento(1), fsc.Memento(1), 5),
        # Memento(1) is a function of Memento(2)'s history (its newest symbol): 21 nodes.
        (fsc.Memento(2), fsc.Memento(1), 21),
        # A Column node (i, arm, reward) determines Memento(1)'s; 3 blank pairs + 12.
        (fsc.Column(3), fsc.Memento(1), 15),
        (fsc.Memento(2), fsc.Chain(2), None),
        (fsc.Column(2, arms=3), fsc.Memento(1, arms=3), None),
    ],
)
def test_product_keeps_exactly_the_reachable_pairs(a, b, size):
    prod = fsc.product(a, b)
    pairs = reachable_pairs(a, b, depth=a.num_nodes * b.num_nodes)
    assert set(prod.node_labels) == pairs and prod.num_nodes == len(pairs)
    if size is not None:
        assert prod.num_nodes == size
    check_architecture(prod)


def test_product_evaluation_and_simulation_agree():
    arch = fsc.product(fsc.Memento(1), fsc.Column(2))
    check_policy(tasks.TwoHypothesis(0.3), fsc.Policy.random(arch, 1), reset=0.05, steps=300_000)


def test_product_of_memento_with_itself_evaluates_like_memento():
    """Memento(1) x Memento(1) is Memento(1) with paired labels: a policy that
    reads only the first factor gives Memento(1)'s q exactly."""
    single, prod = fsc.Memento(1), fsc.product(fsc.Memento(1), fsc.Memento(1))
    policy = fsc.Policy.random(single, 2)
    probs = policy.probs().detach().numpy()
    lifted = np.zeros((prod.num_nodes, prod.num_choices))
    for n, (x, _) in enumerate(prod.node_labels):
        for c, (arm, _) in enumerate(prod.choice_labels):
            lifted[n, c] = probs[single.node_index(x), single.choice_index(arm)]
    world = tasks.TwoHypothesis(0.2)
    want = float(fsc.evaluate(world, policy, reset=0.01).metrics["q"])
    got = float(fsc.evaluate(world, fsc.Policy.from_probs(prod, lifted), reset=0.01).metrics["q"])
    assert got == pytest.approx(want, rel=1e-12)


def test_product_needs_matching_worlds():
    with pytest.raises(ValueError, match="same actions and observations"):
        fsc.product(fsc.Memento(1), fsc.Memento(1, arms=3))
    with pytest.raises(TypeError, match="needs a fsc.MemoryArchitecture"):
        fsc.product(fsc.Memento(1), "ram:2")


def test_product_draws(tmp_path):
    import viz

    arch = fsc.product(fsc.Memento(1), fsc.Column(2))
    built = viz.memory_graph(fsc.Policy.random(arch, 0))
    viz.render(built, tmp_path / "p.svg", format="svg")
    assert "A+,1A+" in (tmp_path / "p.svg").read_text()
