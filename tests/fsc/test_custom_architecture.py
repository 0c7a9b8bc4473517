"""The user-written architecture of examples/custom_architecture.py works with the whole framework."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import fsc
import tasks
from fsc.testing import check_architecture, check_policy

spec = importlib.util.spec_from_file_location("custom_architecture", Path(__file__).parents[2] / "examples" / "custom_architecture.py")
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)


@pytest.mark.parametrize("K", [0, 1, 3])
@pytest.mark.parametrize("arms", [2, 3])
def test_streak_passes_the_public_checks(K, arms):
    arch = example.streak(K, arms=arms)
    check_architecture(arch)
    check_policy(tasks.TwoHypothesis(0.3, arms=arms), fsc.Policy.random(arch, K), reset=0.05, steps=200_000)


def test_streak_zero_is_win_stay_lose_shift():
    """K = 0 with 'stay after a win' is win-stay lose-shift: q = r/2 + (1 - r)(1 - mu)/2 (hand-derived,
    see tests/fsc/test_hand_derived.py)."""
    arch = example.streak(1)
    probs = np.zeros((arch.num_nodes, 2))
    probs[arch.node_index("start")] = 0.5
    for x, arm in enumerate("AB"):
        probs[arch.node_index((arm, 1)), x] = 1  # won last time: stay
        probs[arch.node_index((arm, 0)), 1 - x] = 1  # lost: switch
    r, mu = 0.02, 0.3
    result = fsc.evaluate(tasks.TwoHypothesis(mu), fsc.Policy.from_probs(arch, probs), reset=r)
    assert float(result.metrics["q"]) == pytest.approx(r / 2 + (1 - r) * (1 - mu) / 2, rel=1e-13)


def test_streak_policy_files_round_trip(tmp_path):
    arch = example.streak(2)
    fsc.Policy.random(arch, 0).save(tmp_path / "p.json")
    assert fsc.Policy.load(tmp_path / "p.json").architecture == arch


def test_streak_is_written_in_at_most_25_lines():
    import inspect

    assert len(inspect.getsource(example.streak).splitlines()) <= 25
