"""Sizes nobody can afford are refused up front, in one line, before anything is built or written."""

import json
import time

import pytest

import fsc
from fsc.cli import main


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: fsc.Memento(40), r"Memento\(m=40, .*\) would have 1.61e\+24 nodes"),
        (lambda: fsc.Memento(16), r"would have 5.73e\+09 nodes"),
        (lambda: fsc.Memento(12), r"would have 2.24e\+07 nodes"),
        (lambda: fsc.RAM(100_000), r"RAM\(M=100000, .*\) would have 5e\+05 nodes and 1e\+11 node-choice pairs"),
        (lambda: fsc.Column(10**20), r"would have 5e\+20 nodes"),
    ],
)
def test_architectures_too_large_to_hold_are_refused_at_construction(build, message):
    start = time.perf_counter()
    with pytest.raises(ValueError, match=message):
        build()
    assert time.perf_counter() - start < 1.0


def test_the_largest_supported_sizes_still_build():
    assert fsc.Memento(11).m == 11 and fsc.RAM(5000).M == 5000  # construction is lazy: the tables come on first use


CASES = {
    "memento-40": (["evaluate", "--memory", "memento:40"], "would have 1.61e+24 nodes"),
    "memento-12": (["simulate", "--memory", "memento:12"], "would have 2.24e+07 nodes"),
    "ram-100000": (["train", "--memory", "ram:100000", "--init", "random", "--until-t", "1", "--out", "{tmp}/run"], "would have 5e+05 nodes"),
    "ram-huge": (["evaluate", "--memory", "ram:99999999999999999999"], "would have 5e+20 nodes"),
    "walkers": (["simulate", "--walkers", str(10**12)], "walkers must be at most 1e+07"),
    "threads": (
        ["train", "--memory", "ram:2", "--init", "random", "--until-t", "1", "--threads", "100000", "--out", "{tmp}/run"],
        "threads must be at most 8 times",
    ),
    "workers": (["sweep", "{tmp}/small.json", "--workers", "1000000", "--out", "{tmp}/sweep"], "--workers must be at most 8 times"),
    "closed-form-M": (["closed-form", "ccp", "--M", "1000000000"], "expected at most 1e+06 memories"),
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
