"""Sizes nobody can afford are refused up front, in one line, before anything is built or written."""

import json
import time

import pytest

import fsc
from fsc.cli import main


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: fsc.Memento(40), r"memento:40 would have 1,611,901,092,819,505,566,274,901 nodes \(estimate\), over the limit of 4,194,304"),
        (lambda: fsc.Memento(16), r"memento:16 would have 5,726,623,061 nodes"),
        (lambda: fsc.Memento(12), r"memento:12 would have 22,369,621 nodes"),
        (lambda: fsc.RAM(100_000), r"ram:100000 would have 500,000 nodes x 200,000 choices = 100,000,000,000 table entries"),
        (lambda: fsc.Column(10**20), r"column:100000000000000000000 would have 500,000,000,000,000,000,000 nodes"),
    ],
)
def test_architectures_too_large_to_hold_are_refused_at_construction(build, message):
    start = time.perf_counter()
    with pytest.raises(ValueError, match=message):
        build()
    assert time.perf_counter() - start < 1.0


def test_the_largest_supported_sizes_still_build():
    assert fsc.Memento(10).m == 10 and fsc.RAM(1000).M == 1000  # construction is lazy: the tables come on first use


CASES = {
    "memento-40": (["evaluate", "--memory", "memento:40"], "memento:40 would have 1,611,901,092,819,505,566,274,901 nodes"),
    "memento-12": (["simulate", "--memory", "memento:12"], "memento:12 would have 22,369,621 nodes"),
    "ram-100000": (["train", "--memory", "ram:100000", "--init", "random", "--until-t", "1", "--out", "{tmp}/run"], "ram:100000 would have 500,000 nodes"),
    "ram-huge": (["evaluate", "--memory", "ram:99999999999999999999"], "ram:99999999999999999999 would have 499,999,999,999,999,999,995 nodes"),
    "walkers": (["simulate", "--walkers", str(10**12)], "argument --walkers: expected an integer in [1, 10000000]"),
    "threads": (
        ["train", "--memory", "ram:2", "--init", "random", "--until-t", "1", "--threads", "100000", "--out", "{tmp}/run"],
        "argument --threads: expected an integer in [1, 256]",
    ),
    "workers": (["sweep", "{tmp}/small.json", "--workers", "1000000", "--out", "{tmp}/sweep"], "argument --workers: expected an integer in [1, 256]"),
    "closed-form-M": (["closed-form", "ccp", "--M", "1000000000"], "argument --M: expected an integer in [1, 1000000]"),
    "spec-points": (["sweep", "{tmp}/big.json", "--out", "{tmp}/sweep"], "expands to 1e+09 points"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_command_line_refuses_in_one_line_and_writes_nothing(name, tmp_path, capsys):
    argv, message = CASES[name]
    (tmp_path / "small.json").write_text(json.dumps({"name": "s", "fixed": {"until_t": 1}, "grid": [{"memory": ["ram:1"], "init": ["random"]}]}))
    big = {
        "name": "b",
        "fixed": {"until_t": 1},
        "grid": [
            {
                "memory": ["ram:1"],
                "init": ["random"],
                "seed": list(range(1000)),
                "mu": [0.1 + i / 1e5 for i in range(1000)],
                "reset": [0.001 + i / 1e7 for i in range(1000)],
            }
        ],
    }
    (tmp_path / "big.json").write_text(json.dumps(big))
    before = sorted(p.name for p in tmp_path.iterdir())
    start = time.perf_counter()
    status = main([a.format(tmp=tmp_path) for a in argv])
    seconds = time.perf_counter() - start
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and message in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before and seconds < 5
