"""The report's 'Beyond the paper' section: asymmetric CCP table, anatomies of the committed learned policies, Memento table."""

import pytest

from fsc.report.paper import section_beyond_the_paper


def test_section(tmp_path):
    (tmp_path / "figures").mkdir()  # as build_report makes it
    section = section_beyond_the_paper(tmp_path, lambda message: None)
    numbers = section.numbers
    assert all(numbers[f"gain M={M} r={r:g}"] > 0 for M in (4, 8, 20) for r in (1e-2, 1e-3, 1e-4, 1e-6))
    assert numbers["gain M=8 r=0.001"] == pytest.approx(3.478e-5, rel=1e-3)
    ram = numbers["anatomy RAM 8 trained from near-CCP (r = 1e-3, native)"]
    assert ram["family"] == "asymmetric CCP" and ram["split"] > 0.99 and ram["eps_A"] > ram["eps_B"]
    assert numbers["anatomy best learned Memento 3 (r = 1e-5)"]["nearest"] == "necklace"
    rows = {(int(r["m"]), float(r["reset"])): r for r in numbers["memento"]}
    assert set(rows) == {(m, r) for m in (3, 4) for r in (1e-3, 1e-5, 1e-7)}
    # the necklace policy with the learned after-reset rows is below the optimised necklace everywhere
    assert all(float(r["necklace_with_learned_start_q"]) < float(r["necklace_q_at_r"]) for r in rows.values())
    assert "The Memento question" in section.body and "asymmetric CCP" in section.body
    assert (tmp_path / "figures" / "best-m3-r1e-05.svg").is_file() and "figures/best-m3-r1e-05.svg" in section.body
