"""Reference lines are drawn in the convention of the curves beside them."""

import importlib.util
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

import fsc
from fsc import sweep
from fsc.sweep import summary
from policies import closed_form, necklace_probs
from policies.asymmetric import asymmetric_ccp_optimum, asymmetric_ccp_probs
from policies.ccp import ccp_probs
from policies.reference import necklace_optimum, reference_lines
from tasks import TwoHypothesis

ROOT = Path(__file__).resolve().parents[2]


def _exact(memory: str, probs_init, mu: float, reset: float, convention: str) -> float:
    kind, size = memory.split(":")
    arch = fsc.RAM(int(size)) if kind == "ram" else fsc.Memento(int(size))
    policy = fsc.Policy.from_probs(arch, *probs_init(arch))
    return float(fsc.evaluate(TwoHypothesis(mu), policy, reset=reset, convention=convention).metrics["q"])


def _exact_lines(memory, mu, reset, convention):
    """Exact evaluation of the explicit policies each line stands for, in ``convention``."""
    size = int(memory.split(":")[1])
    eps = min(1.0, closed_form.ccp_eps_opt(mu, size, reset))
    o = asymmetric_ccp_optimum(mu, size, reset)
    return (_exact(memory, lambda a: ccp_probs(a, eps), mu, reset, convention),
            _exact(memory, lambda a: asymmetric_ccp_probs(a, o.eps_A, o.eps_B, o.split), mu, reset, convention))  # fmt: skip


@pytest.mark.parametrize("convention", ["native", "paper"])
@pytest.mark.parametrize(("memory", "reset"), [("ram:8", 1e-3), ("ram:4", 1e-2)])
def test_ram_lines_equal_exact_evaluation_in_the_curves_convention(memory, reset, convention):
    lines = list(reference_lines(memory, 0.1, reset, convention).values())
    assert lines == pytest.approx(_exact_lines(memory, 0.1, reset, convention), abs=1e-11)
    other = "native" if convention == "paper" else "paper"
    # the two conventions differ by (r/2)(1 - 2q): 3.9e-4 at M = 8, r = 1e-3
    assert abs(lines[0] - list(reference_lines(memory, 0.1, reset, other).values())[0]) > 1e-4


def test_necklace_line_is_the_exact_necklace_policy_at_r():
    for convention in ("native", "paper"):
        q, e0, e1 = necklace_optimum(0.1, 3, 1e-3, convention)
        assert q == pytest.approx(_exact("memento:3", lambda a, e0=e0, e1=e1: necklace_probs(a, e0, e1), 0.1, 1e-3, convention), abs=1e-13)
    native, paper = necklace_optimum(0.1, 3, 1e-3, "native")[0], necklace_optimum(0.1, 3, 1e-3, "paper")[0]
    assert paper == pytest.approx(0.999 * native + 5e-4, rel=1e-6)  # same minimiser up to the optimiser's tolerance


@pytest.mark.parametrize("convention", ["native", "paper"])
def test_sweep_summary_lines_follow_the_points_convention(convention):
    points = [sweep.Point(name=f"s{seed}", arguments={"memory": "ram:8", "reset": 1e-3, "mu": 0.1, "convention": convention, "seed": seed}, grid_keys=("seed",))
              for seed in range(2)]  # fmt: skip
    assert list(summary._references(points).values()) == pytest.approx(_exact_lines("ram:8", 0.1, 1e-3, convention), abs=1e-11)
    other = "native" if convention == "paper" else "paper"
    mixed = [*points, sweep.Point(name="x", arguments={"memory": "ram:8", "reset": 1e-3, "convention": other}, grid_keys=())]
    assert summary._references(mixed) == {}


def test_figure4_lines_follow_the_runs_convention():
    spec = importlib.util.spec_from_file_location("figure4_example", ROOT / "examples" / "figure4.py")
    figure4 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(figure4)
    for convention in ("native", "paper"):
        lines = list(figure4.reference("ram:8", 1e-3, 0.1, convention).values())
        assert lines == pytest.approx(_exact_lines("ram:8", 0.1, 1e-3, convention), abs=1e-11)


def test_report_training_panel_lines_follow_its_runs_convention(tmp_path, monkeypatch):
    """The report's panel: every reference line equals the exact q, in the convention its runs were trained in."""
    import viz
    from fsc import train
    from fsc.report import paper

    seen = {"conventions": set(), "references": []}

    def fake_training(*, memory, init, seed, reset, until_t, out, convention, quiet):
        seen["conventions"].add(convention)
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "trajectory.csv").write_text("t,step,q\n1,0,0.3\n2,1,0.2\n")  # as runs made before trajectory.npz
        return SimpleNamespace(q=0.2)

    def fake_curves(curves, ax=None, *, reference=None, title=None, **kw):
        seen["references"].append((title, dict(reference or {})))
        return ax

    monkeypatch.setattr(train, "run_training", fake_training)
    monkeypatch.setattr(viz, "q_curves", fake_curves)
    (tmp_path / "figures").mkdir()
    paper.section_training(tmp_path, lambda message: None)
    (convention,) = seen["conventions"]
    ram = next(ref for title, ref in seen["references"] if title.startswith("ram:4"))
    assert list(ram.values()) == pytest.approx(_exact_lines("ram:4", 0.1, 1e-2, convention), abs=1e-11)
    memento = next(ref for title, ref in seen["references"] if title.startswith("memento:3"))
    at_r = [value for label, value in memento.items() if "r -> 0" not in label]
    assert at_r == [pytest.approx(necklace_optimum(0.1, 3, 1e-3, convention)[0], abs=1e-14)]
    assert all(math.isfinite(v) for v in memento.values())
