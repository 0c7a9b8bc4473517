"""Registry of bad inputs: each must raise a clear error naming the value."""

import math

import numpy as np
import pytest
import torch

import fsc
import tasks

RAM2 = fsc.RAM(2)
WORLD = tasks.TwoHypothesis(0.1)
GOOD = dict(transition=np.ones((2, 1, 2)) / 2, observation=np.ones((1, 2, 1)), reward=np.zeros((2, 1, 2, 1)), initial=[1.0, 0.0])


def pomdp(**change):
    return lambda: fsc.POMDP(**{**GOOD, **change})


def ones(shape):
    return np.ones(shape) / shape[-1]


CASES = [
    # (id, callable, error type, message pattern)
    ("pomdp-transition-shape", pomdp(transition=np.ones((2, 2))), ValueError, r"transition must have shape \(S, A, S\)"),
    ("pomdp-observation-shape", pomdp(observation=np.ones((1, 3, 1))), ValueError, r"observation must have shape \(1, 2, 1\)"),
    ("pomdp-reward-shape", pomdp(reward=np.zeros((2, 1, 2))), ValueError, r"reward must have shape \(2, 1, 2, 1\)"),
    ("pomdp-nan", pomdp(reward=np.full((2, 1, 2, 1), math.nan)), ValueError, "reward must be finite"),
    ("pomdp-negative", pomdp(transition=np.array([[[1.5, -0.5]], [[0.5, 0.5]]])), ValueError, "transition must be non-negative"),
    ("pomdp-not-summing", pomdp(initial=[0.5, 0.6]), ValueError, r"initial must sum to 1.*1\.1"),
    ("pomdp-labels", pomdp(state_labels=("x",)), ValueError, "state_labels must be 2 strings"),
    ("pomdp-metric", pomdp(metrics={"q": np.zeros(3)}), ValueError, r"metric 'q' must have shape"),
    ("ram-zero", lambda: fsc.RAM(0), ValueError, "M must be an int >= 1, got 0"),
    ("ram-float", lambda: fsc.RAM(1.5), TypeError, "M must be an int, got 1.5"),
    ("ram-bool", lambda: fsc.RAM(True), TypeError, "M must be an int, got True"),
    ("chain-arms", lambda: fsc.Chain(2, arms=0), ValueError, "arms must be an int >= 1, got 0"),
    ("memento-negative", lambda: fsc.Memento(-1), ValueError, "m must be an int >= 1, got -1"),
    ("memento-string", lambda: fsc.Memento("3"), TypeError, "m must be an int, got '3'"),
    ("parse-kind", lambda: fsc.parse_memory("tape:3"), ValueError, "memory must be ram:M.*got 'tape:3'"),
    ("parse-size", lambda: fsc.parse_memory("ram:x"), ValueError, "memory size must be an integer >= 1, got 'x'"),
    ("parse-zero", lambda: fsc.parse_memory("memento:0"), ValueError, "memory size must be an integer >= 1, got 0"),
    ("parse-no-colon", lambda: fsc.parse_memory("ram"), ValueError, "got 'ram'"),
    ("task-mu-high", lambda: tasks.TwoHypothesis(1.5), ValueError, r"mu must be in \(0, 1\), got 1.5"),
    ("task-mu-zero", lambda: tasks.TwoHypothesis(0), ValueError, r"mu must be in \(0, 1\), got 0"),
    ("task-mu-nan", lambda: tasks.TwoHypothesis(math.nan), ValueError, r"mu must be in \(0, 1\), got nan"),
    ("task-mu-string", lambda: tasks.TwoHypothesis("0.1"), TypeError, "mu must be a number, got '0.1'"),
    ("task-k-order", lambda: tasks.TwoHypothesis(k_A=0.2, k_B=0.6), ValueError, "k_A must be larger than k_B"),
    ("task-both", lambda: tasks.TwoHypothesis(0.1, k_A=0.6, k_B=0.4), ValueError, "either mu or"),
    ("task-arms", lambda: tasks.TwoHypothesis(0.1, arms=1), ValueError, "arms must be an int >= 2, got 1"),
    (
        "policy-shape",
        lambda: fsc.Policy(architecture=RAM2, logits=np.zeros((3, 4)), init_logits=np.zeros(10)),
        ValueError,
        r"logits must have shape \(10, 4\), got \(3, 4\)",
    ),
    (
        "policy-nan",
        lambda: fsc.Policy(architecture=RAM2, logits=np.full((10, 4), math.nan), init_logits=np.zeros(10)),
        ValueError,
        "logits must not contain NaN",
    ),
    (
        "policy-inf",
        lambda: fsc.Policy(architecture=RAM2, logits=np.full((10, 4), math.inf), init_logits=np.zeros(10)),
        ValueError,
        r"logits must not contain NaN or \+inf",
    ),
    (
        "policy-dead-node",
        lambda: fsc.Policy(architecture=RAM2, logits=np.full((10, 4), -math.inf), init_logits=np.zeros(10)),
        ValueError,
        "node '1_' has no allowed choice",
    ),
    (
        "policy-arch",
        lambda: fsc.Policy(architecture="ram:2", logits=np.zeros((10, 4)), init_logits=np.zeros(10)),
        TypeError,
        "architecture must be a fsc.MemoryArchitecture, got str",
    ),
    ("probs-negative", lambda: fsc.Policy.from_probs(RAM2, np.full((10, 4), -0.25)), ValueError, "probs must be non-negative"),
    ("probs-sum", lambda: fsc.Policy.from_probs(RAM2, np.full((10, 4), 0.3)), ValueError, "probs must sum to 1, got 1.2"),
    ("probs-disallowed", lambda: fsc.Policy.from_probs(fsc.Column(2), ones((10, 4))), ValueError, "disallowed choice '1B' of node '2A\\+'"),
    ("init-not-reset", lambda: fsc.Policy.from_probs(RAM2, ones((10, 4)), np.eye(10)[5]), ValueError, "node '1B-', which is not a reset node"),
    ("random-std", lambda: fsc.Policy.random(RAM2, 0, std=-1), ValueError, "std must be a finite number >= 0, got -1"),
    ("random-generator", lambda: fsc.Policy.random(RAM2, "seed"), TypeError, r"generator \(a torch.Generator or an int seed\) must be an int, got 'seed'"),
    ("evaluate-reset-zero", lambda: fsc.evaluate(WORLD, fsc.Policy.uniform(RAM2), reset=0, engine="dense"), ValueError, "reset = 0.*got 'dense'"),
    ("evaluate-reset-high", lambda: fsc.evaluate(WORLD, fsc.Policy.uniform(RAM2), reset=1.5), ValueError, r"reset must be in \[0, 1\], got 1.5"),
    ("evaluate-reset-nan", lambda: fsc.evaluate(WORLD, fsc.Policy.uniform(RAM2), reset=math.nan), ValueError, "reset must be in"),
    (
        "evaluate-engine",
        lambda: fsc.evaluate(WORLD, fsc.Policy.uniform(RAM2), reset=0.1, engine="magic"),
        ValueError,
        "engine must be 'auto' or one of .*got 'magic'",
    ),
    (
        "evaluate-convention",
        lambda: fsc.evaluate(WORLD, fsc.Policy.uniform(RAM2), reset=0.1, convention="ours"),
        ValueError,
        "convention must be one of .*got 'ours'",
    ),
    (
        "evaluate-extra-positional",
        lambda: fsc.evaluate(WORLD, fsc.Policy.uniform(RAM2), fsc.Policy.uniform(RAM2), 0.1),
        TypeError,
        r"takes 2 positional arguments but 4 were given",
    ),
    (
        "evaluate-world-arms",
        lambda: fsc.evaluate(WORLD, fsc.Policy.uniform(fsc.RAM(2, arms=3)), reset=0.1),
        ValueError,
        "plays 3 actions but the world has 2",
    ),
    (
        "evaluate-world-type",
        lambda: fsc.evaluate("world", fsc.Policy.uniform(RAM2), reset=0.1),
        TypeError,
        r"world must be a fsc.POMDP or an object whose .pomdp is one \(a fsc.Task\), got str",
    ),
    (
        "paper-three-arms",
        lambda: fsc.evaluate(tasks.TwoHypothesis(0.1, arms=3), fsc.Policy.uniform(fsc.RAM(1, arms=3)), reset=0.1, convention="paper"),
        ValueError,
        "two arms, got arms=3",
    ),
    ("simulate-steps", lambda: fsc.simulate(WORLD, fsc.Policy.uniform(RAM2), reset=0.1, steps=0), ValueError, "steps must be an int >= 1, got 0"),
    ("simulate-reset", lambda: fsc.simulate(WORLD, fsc.Policy.uniform(RAM2), reset=0), ValueError, r"reset must be in \(0, 1\], got 0"),
    ("save-suffix", lambda: fsc.Policy.uniform(RAM2).save("/tmp/policy.pkl"), ValueError, "policy files end in .npz or .json, got '/tmp/policy.pkl'"),
    ("from-dict-kind", lambda: fsc.MemoryArchitecture.from_dict({"kind": "Tape"}), ValueError, "unknown memory architecture kind 'Tape'"),
    # The third attack: numbers at the edges, complex logits, sizes nobody can afford, files that are not files.
    ("policy-complex", lambda: fsc.Policy(architecture=RAM2, logits=np.zeros((10, 4)) + 1j, init_logits=np.zeros(10)), TypeError,
     "logits must be an array of real numbers, got complex128"),
    ("policy-complex-tensor", lambda: fsc.Policy(architecture=RAM2, logits=torch.zeros(10, 4, dtype=torch.complex128),
     init_logits=np.zeros(10)), TypeError, "logits must be real numbers, got a complex tensor"),
    ("policy-complex-init", lambda: fsc.Policy(architecture=RAM2, logits=np.zeros((10, 4)), init_logits=np.zeros(10, dtype=complex)),
     TypeError, "init_logits must be an array of real numbers"),
    ("policy-strings", lambda: fsc.Policy(architecture=RAM2, logits=np.full((10, 4), "1"), init_logits=np.zeros(10)), TypeError,
     "logits must be an array of real numbers"),
    ("policy-init-nan", lambda: fsc.Policy(architecture=RAM2, logits=np.zeros((10, 4)), init_logits=np.full(10, math.nan)), ValueError,
     "init_logits must not contain NaN"),
    ("evaluate-reset-tiny", lambda: fsc.evaluate(WORLD, fsc.Policy.uniform(RAM2), reset=1e-300), ValueError,
     r"reset must be at least 2\*\*-53 = 1.11e-16 or exactly 0 .* got 1e-300: below it 1 - reset rounds to 1"),
    ("evaluate-reset-subnormal", lambda: fsc.evaluate(WORLD, fsc.Policy.uniform(RAM2), reset=5e-324), ValueError, "reset must be at least"),
    ("simulate-reset-tiny", lambda: fsc.simulate(WORLD, fsc.Policy.uniform(RAM2), reset=1e-17), ValueError, "reset must be at least"),
    ("simulate-long-episodes", lambda: fsc.simulate(WORLD, fsc.Policy.uniform(RAM2), reset=1e-9), ValueError,
     r"simulate would take about 2.56e\+11 steps .* over the limit of 1e\+10"),
    ("simulate-steps-huge", lambda: fsc.simulate(WORLD, fsc.Policy.uniform(RAM2), reset=0.5, steps=10**20), ValueError, "over the limit"),
    ("ram-table", lambda: fsc.RAM(2000, observations=10), ValueError, r"ram:2000 would have 42,000 nodes x 4,000 choices = 168,000,000 table entries"),
    ("memento-observations", lambda: fsc.Memento(1, arms=300, observations=300), ValueError, r"memento:1 would have 90,001 nodes x 300 choices"),
    ("ram-huge-count", lambda: fsc.RAM(10**100), ValueError, r"about 10\^100 nodes"),
    ("parse-long", lambda: fsc.parse_memory("ram:" + "x" * 10**6), ValueError, r"\.\.\. \(1,000,006 characters\)"),
    ("load-fifo", lambda: fsc.Policy.load(_special("fifo.npz")), ValueError, "is a FIFO"),
    ("load-dir", lambda: fsc.Policy.load(_special("dir.json")), ValueError, "is a directory, not a regular file"),
    ("load-device", lambda: fsc.Policy.load(_special("zero.npz")), ValueError, "is a character device"),
    ("pomdp-device", lambda: fsc.read_pomdp(_special("zero.POMDP")), ValueError, "is a character device"),
    ("pomdp-fifo", lambda: fsc.read_pomdp(_special("fifo.POMDP")), ValueError, "is a FIFO"),
    ("pomdp-digits", lambda: _parse_pomdp("states: " + "9" * 5000 + "\n", source="x"), ValueError,
     "x:1: expected a number of states, got a number of 5,000 digits"),
    ("pomdp-index-digits", lambda: _parse_pomdp("states: 2\nactions: 1\nobservations: 1\nT: 0 : " + "1" * 13 + " : 0 1\n", source="x"),
     ValueError, "x:4: expected a state index below 2, got a number of 13 digits"),
    # The fourth attack (issue 51): numbers at the edges of the solver, a tolerance that cannot mean converged, sizes
    # written as int() alone would read them.
    ("solve-rewards-1e160", lambda: fsc.solve(_tiger_scaled(1e160), "ram:1", seconds=5), ValueError,
     r"the world's rewards over r = 0.05 reach 2e\+163 in size, over the 1e\+150 .* divide the rewards by a power of ten"),
    ("solve-rewards-1e307", lambda: fsc.solve(_tiger_scaled(1e305), "ram:1", seconds=5), ValueError,
     "the world's rewards over r = 0.05 overflow float64"),
    ("rosenbrock-tolerance-1", lambda: fsc.optim.Rosenbrock(tolerance=1.0), ValueError, r"tolerance must be in \(0, 0.01\], got 1.0"),
    ("rosenbrock-tolerance-huge", lambda: fsc.optim.Rosenbrock(tolerance=1e10), ValueError, r"tolerance must be in \(0, 0.01\]"),
    ("rosenbrock-tolerance-nan", lambda: fsc.optim.Rosenbrock(tolerance=math.nan), ValueError, "tolerance must be in"),
    ("parse-underscore", lambda: fsc.parse_memory("ram:1_0"), ValueError, "memory size must be an integer >= 1, got '1_0'"),
    ("parse-plus", lambda: fsc.parse_memory("chain:+2"), ValueError, "memory size must be an integer >= 1, got '\\+2'"),
    ("parse-other-digits", lambda: fsc.parse_memory("ram:\u0663"), ValueError, "memory size must be an integer >= 1"),
    ("solve-start-fifo", lambda: fsc.Policy.load(_special("fifo2.npz")), ValueError, "is a FIFO"),
    ("rosenbrock-dt-below-min-dt", lambda: fsc.optim.Rosenbrock(dt=1e-40), ValueError, r"dt must be at least min_dt = 1e-30, got 1e-40"),
]


def _tiger_scaled(factor: float) -> fsc.POMDP:
    """Tiger (discount 0.95: r = 0.05) with every reward multiplied by ``factor``."""
    import attrs

    tiger = fsc.model.pomdp.as_pomdp(tasks.Tiger())
    return attrs.evolve(tiger, reward=np.asarray(tiger.reward) * factor, metrics={})

_SPECIAL = {}


def _special(name: str):
    """A special file in a fresh directory: a FIFO, a directory, or a link to /dev/zero."""
    import os
    import tempfile
    from pathlib import Path

    if "root" not in _SPECIAL:
        _SPECIAL["root"] = Path(tempfile.mkdtemp(prefix="fsc-special-"))
    path = _SPECIAL["root"] / name
    if not os.path.lexists(path):
        if name.startswith("fifo"):
            os.mkfifo(path)
        elif name.startswith("dir"):
            path.mkdir()
        else:
            os.symlink("/dev/zero", path)
    return path


@pytest.mark.parametrize("build, error, pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(build, error, pattern):
    with pytest.raises(error, match=pattern):
        build()


def test_registry_is_large_enough():
    assert len(CASES) >= 70


def _parse_pomdp(text: str, source: str):
    from fsc.io.pomdp_file import parse_pomdp

    return parse_pomdp(text, source=source)
