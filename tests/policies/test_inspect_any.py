"""``fsc inspect`` describes every controller the framework builds: the paper's architectures, the star, products,
restrictions and automata whose labels are tuples, strings or integers; outside the known families it says so."""

import json

import numpy as np
import pytest

import fsc
import tasks
from fsc.cli import main
from fsc.io.pomdp_file import write_pomdp
from policies import ccp_probs, star_architecture
from policies.anatomy import KNOWN_FAMILIES, anatomy, describe


def streak(K: int) -> fsc.Automaton:
    """Tuple labels: the last arm and its run of wins (docs/composing.md)."""

    def step(node, arm, obs):
        if obs == 1:
            return (arm, 0)
        return (arm, min(node[1] + 1 if node != "start" and node[0] == arm else 1, K))

    nodes = ["start", *[(x, k) for x in "AB" for k in range(K + 1)]]
    return fsc.Automaton(nodes=nodes, choices=list("AB"), step=step, action="AB".index, actions=2, observations=2)


def counter(n: int) -> fsc.Automaton:
    """Integer labels: a counter of losses modulo n; choices 0 and 1 are the arms."""
    return fsc.Automaton(nodes=range(n), choices=[0, 1], step=lambda node, arm, obs: (node + obs) % n, action=lambda c: c, actions=2, observations=2)


def words() -> fsc.Automaton:
    """String labels, and choices named after what they do."""
    return fsc.Automaton(nodes=["calm", "alert"], choices=["stay", "switch"], step=lambda node, c, obs: "alert" if obs == 1 else "calm",
                         action={"stay": 0, "switch": 1}.__getitem__, actions=2, observations=2)  # fmt: skip


def neighbours(node, choice):
    return abs(node[0] - choice[0]) <= 1


ARCHITECTURES = {
    "ram": fsc.RAM(3),
    "chain": fsc.Chain(3),
    "column": fsc.Column(3),
    "memento-1": fsc.Memento(1),
    "memento-2": fsc.Memento(2),
    "star": star_architecture(2, 2),
    "restricted-ram": fsc.RAM(4).restrict(neighbours),
    "product": fsc.product(fsc.Memento(1), fsc.RAM(2)),
    "tuple-labels": streak(2),
    "integer-labels": counter(3),
    "string-labels": words(),
    "product-of-automata": fsc.product(streak(1), counter(2)),
}


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_inspect_describes_every_architecture(name, tmp_path, capsys):
    arch = ARCHITECTURES[name]
    path = tmp_path / "policy.npz"
    fsc.Policy.random(arch, 3).save(path)
    assert main(["inspect", str(path), "--reset", "0.01", "--json"]) == 0, capsys.readouterr().err
    record = json.loads(capsys.readouterr().out)
    # the mass is a distribution over the architecture's nodes, named as text; the skeleton names allowed choices
    assert set(record["mass"]) <= set(arch.node_names) and sum(record["mass"].values()) == pytest.approx(1.0, abs=arch.num_nodes * 1e-6)
    assert set(record["skeleton"]) == set(record["mass"])
    for label, choice in record["skeleton"].items():
        allowed = {arch.choice_names[c] for c in np.flatnonzero(arch.allowed[arch.node_names.index(label)])}
        assert (choice in allowed) if isinstance(choice, str) else set(choice) <= allowed
    exact = fsc.evaluate(tasks.TwoHypothesis(0.1), fsc.Policy.load(path), reset=0.01)
    assert (record["q"], record["gain"]) == (pytest.approx(float(exact.metrics["q"])), pytest.approx(float(exact.gain)))
    assert main(["inspect", str(path), "--reset", "0.01"]) == 0
    text = capsys.readouterr().out
    assert "family: " in text and "stationary mass" in text
    assert (KNOWN_FAMILIES in text) == (name not in ("ram", "chain", "column", "memento-2"))  # no nearest family to measure against


def test_inspect_recognises_a_family_and_names_tuple_choices(capsys, tmp_path):
    arch = fsc.Column(4)
    path = tmp_path / "ccp.npz"
    fsc.Policy.from_probs(arch, *ccp_probs(arch, 0.05)).save(path)
    assert main(["inspect", str(path), "--reset", "1e-3"]) == 0
    assert "family: symmetric CCP" in capsys.readouterr().out
    # the same probabilities on the automaton the restriction builds (tuple values, text names): no family claimed
    a = anatomy(fsc.Policy.from_probs(fsc.RAM(4).restrict(neighbours), *ccp_probs(arch, 0.05)), reset=1e-3)
    assert a.family is None and a.nearest is None and KNOWN_FAMILIES in describe(a)


def test_inspect_in_another_world_gives_the_gain(tmp_path, capsys):
    world = tasks.Tiger()
    arch = fsc.Automaton(nodes=[0, 1], choices=[("listen", 0), ("open", 1), ("open", 2)], step=lambda n, c, o: o, action=lambda c: c[1],
                         actions=3, observations=2)  # fmt: skip
    policy_path, world_path = tmp_path / "p.npz", tmp_path / "tiger.POMDP"
    fsc.Policy.random(arch, 0).save(policy_path)
    write_pomdp(world, world_path)
    assert main(["inspect", str(policy_path), "--pomdp", str(world_path), "--json"]) == 0, capsys.readouterr().err
    record = json.loads(capsys.readouterr().out)
    exact = fsc.evaluate(world, fsc.Policy.load(policy_path), reset=1 - world.pomdp.discount)
    assert record["q"] is None and record["gain"] == pytest.approx(float(exact.gain)) and record["family"] is None
    assert set(record["mass"]) <= {"0", "1"}
    # the same policy in the two-hypothesis world: its 3 actions do not fit, one line and status 2
    assert main(["inspect", str(policy_path)]) == 2
    assert "3 actions" in capsys.readouterr().err


def test_inspect_says_what_is_wrong_with_the_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a short path, quoted whole whatever the length of pytest's tmp_path
    assert main(["inspect", "missing.npz"]) == 2
    assert capsys.readouterr().err == "fsc: error: policy file 'missing.npz' does not exist\n"
    assert main(["inspect", str(tmp_path)]) == 2
    assert "directory" in capsys.readouterr().err
