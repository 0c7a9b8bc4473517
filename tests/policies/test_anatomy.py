"""Policy anatomy recognises the explicit families and claims none for random policies."""

import json

import pytest

import fsc
from fsc.cli import main
from policies import ccp_probs, necklace_probs
from policies.anatomy import anatomy, describe
from policies.asymmetric import asymmetric_ccp_probs


@pytest.mark.parametrize("arch", [fsc.Column(8), fsc.RAM(8), fsc.RAM(3)])
def test_symmetric_ccp(arch):
    a = anatomy(fsc.Policy.from_probs(arch, *ccp_probs(arch, 0.044)), reset=1e-3)
    assert a.family == "symmetric CCP" and a.distance < 1e-12
    assert a.parameters == {"eps_A": pytest.approx(0.044), "eps_B": pytest.approx(0.044), "split": 0.5}
    top = arch.M
    assert set(list(a.mass)[:4]) == {f"{top}A+", f"{top}B+", f"{top}A-", f"{top}B-"}  # the tops carry the mass
    assert a.skeleton[f"{top}A+"] == f"{top}A"


def test_asymmetric_ccp():
    arch = fsc.RAM(8)
    a = anatomy(fsc.Policy.from_probs(arch, *asymmetric_ccp_probs(arch, 0.0455, 0.043, 1.0)), reset=1e-3)
    assert a.family == "asymmetric CCP" and a.distance < 1e-12
    assert (a.parameters["eps_A"], a.parameters["eps_B"], a.parameters["split"]) == (pytest.approx(0.0455), pytest.approx(0.043), 1.0)
    assert a.q == pytest.approx(0.1076992, abs=1e-7)


@pytest.mark.parametrize(("m", "eps0", "eps1"), [(3, 2.3e-3, 0.185), (4, 4.7e-3, 0.57), (2, 1e-2, 0.1)])
def test_necklace(m, eps0, eps1):
    arch = fsc.Memento(m)
    a = anatomy(fsc.Policy.from_probs(arch, *necklace_probs(arch, eps0, eps1)), reset=1e-5)
    assert a.family == "necklace" and a.distance < 1e-12
    assert a.parameters == {"eps0": pytest.approx(eps0), "eps1": pytest.approx(eps1)}
    # most mass on the two constant necklaces (the ends of the chain)
    assert set(list(a.details["mass_by_necklace"])[:2]) == {"A" * m, "B" * m}


@pytest.mark.parametrize("arch", [fsc.RAM(8), fsc.Memento(3), fsc.Column(4)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_policy_has_no_family(arch, seed):
    a = anatomy(fsc.Policy.random(arch, generator=seed, std=1.0), reset=1e-3)
    assert a.family is None and a.distance > 0.3
    assert a.nearest is not None
    assert "family: none" in describe(a)


def test_a_perturbed_ccp_is_near_but_a_far_one_is_not():
    arch = fsc.RAM(4)
    probs, init = ccp_probs(arch, 0.1)
    mixed = 0.9 * probs + 0.1 * arch.allowed / arch.allowed.sum(axis=1, keepdims=True)
    a = anatomy(fsc.Policy.from_probs(arch, mixed, init), reset=1e-2)
    assert a.family is None and 0.05 < a.distance < 0.11
    assert anatomy(fsc.Policy.from_probs(arch, mixed, init), reset=1e-2, tol=0.2).family == "symmetric CCP"


def test_inspect_command(tmp_path, capsys):
    arch = fsc.RAM(8)
    path = tmp_path / "p.npz"
    fsc.Policy.from_probs(arch, *asymmetric_ccp_probs(arch, 0.0455, 0.043, 1.0)).save(path)
    assert main(["inspect", str(path), "--reset", "1e-3", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["family"] == "asymmetric CCP" and record["q"] == pytest.approx(0.1076992, abs=1e-7)
    assert main(["inspect", str(path), "--reset", "1e-3", "--convention", "paper"]) == 0
    assert "asymmetric CCP" in capsys.readouterr().out
    assert main(["inspect", str(tmp_path / "missing.npz")]) == 2
    assert "missing.npz" in capsys.readouterr().err
    assert main(["inspect", str(path), "--reset", "-1"]) == 2
    assert "-1" in capsys.readouterr().err
