"""Node splitting (fsc.solver.nodesplit): monotone by exact value, a hand-derived split, the flat start, the portfolio's name.

The values the tests compare are computed here by a dense linear solve of the RAM controller's Bellman equations
(:func:`tests.fsc.test_bpi.ram_values`), independent of the engines the method runs on.
"""

from __future__ import annotations

import numpy as np

import fsc
import tasks
from fsc.choices import SOLVER_METHODS
from fsc.io.pomdp_file import parse_pomdp
from fsc.model.memory import RAM, Memento
from fsc.model.pomdp import as_pomdp
from fsc.objective import Objective
from fsc.solver import METHODS, Budget, NodeSplit, Portfolio
from fsc.solver.nodesplit import start_state, step, trial_graph
from tests.fsc.corridor import corridor_text
from tests.fsc.test_bpi import ram_values

GAMMA = 0.95


def _objective(world, M: int) -> tuple[Objective, RAM]:
    pomdp = as_pomdp(world)
    arch = RAM(M, arms=pomdp.num_actions, observations=pomdp.num_observations)
    return Objective(world=world, architecture=arch, reset=1 - GAMMA, target="return"), arch


def _dense_value(world, arch, probs: np.ndarray, init: np.ndarray) -> float:
    """The value at the start belief: ``b0 . V[:, n]`` averaged over the start nodes, by the dense solve."""
    values = ram_values(world, probs, arch, GAMMA)
    return float(as_pomdp(world).initial @ values @ init)


def _worlds():
    yield tasks.Tiger(), 2
    yield tasks.CheeseMaze(), 2
    yield tasks.Grid4x3(), 2
    yield parse_pomdp(corridor_text(6)), 3


def test_a_split_never_lowers_the_exact_value():
    """From random controllers (stochastic, and rounded to deterministic) on Tiger, the cheese maze, 4x3 and a corridor,
    every split kept raises the value by the independent dense evaluation, the state's value is that evaluation's,
    and the method's result is never worse than its start; some split is kept on every world."""
    for world, M in _worlds():
        objective, arch = _objective(world, M)
        kept = 0
        for seed in range(3):
            policy = fsc.Policy.random(arch, seed)
            probs, init = policy.probs().detach().numpy(), policy.init_probs().detach().numpy()
            for start in (probs, np.eye(arch.num_choices)[probs.argmax(axis=1)]):
                state = start_state(objective, fsc.Policy.from_probs(arch, start, init))
                before = _dense_value(world, arch, start, init)
                assert abs(state.point.value - before) <= 1e-9 * max(1.0, abs(before))
                for _ in range(6):
                    new = step(objective, state, tries=8)
                    if new is None:
                        break
                    after = _dense_value(world, arch, new.point.probs, new.point.init_probs)
                    assert abs(new.point.value - after) <= 1e-9 * max(1.0, abs(after))
                    assert after > before
                    state, before, kept = new, after, kept + 1
        assert kept > 0, type(world).__name__


def _two_doors() -> fsc.POMDP:
    """States L, R (the start belief 0.6, 0.4) and D (done, absorbing, nothing more to earn).  ``look`` (0) shows L or
    R and costs nothing; ``goL`` (1) pays 1 in L and -1 in R, ``goR`` (2) the reverse, and both end in D, which shows
    ``oD``."""
    T = np.zeros((3, 3, 3))
    T[:, 0] = np.eye(3)  # look: stay
    T[:, 1, 2] = T[:, 2, 2] = 1.0  # go: done
    O = np.zeros((3, 3, 3))
    O[0, 0, 0] = O[0, 1, 1] = 1.0  # look: oL in L, oR in R
    O[:, 2, 2] = 1.0  # in D: oD
    O[1:, :2, 2] = 1.0  # (never reached: a go never ends in L or R)
    R = np.zeros((3, 3, 1, 1))
    R[0, 1], R[1, 1], R[0, 2], R[1, 2] = 1.0, -1.0, -1.0, 1.0
    return fsc.POMDP(transition=T, observation=O, reward=R, initial=np.array([0.6, 0.4, 0.0]), discount=GAMMA)


def test_the_split_of_a_node_serving_two_beliefs_finds_the_hand_derived_controller():
    """On RAM(2): look, then ``goL`` whatever it saw: one node (0, goL) reached in L (after oL) and in R (after oR),
    worth ``gamma (0.6 - 0.4) = 0.19``.  Its two beliefs want different actions; one split gives the ``R`` edge a node of
    ``goR``, in the free choice (0, goR): ``gamma * 1 = 0.95``, the optimum (every reward is at most 1, and the first
    step must look), by the dense evaluation too."""
    world = _two_doors()
    objective, arch = _objective(world, 2)
    A = 3
    look, go_left, go_right = 0, 1, 2  # the choices (memory 0, action)
    probs = np.zeros((arch.num_nodes, arch.num_choices))
    probs[:, look] = 1.0  # blanks, and every row of D: look (nothing more to earn)
    node = lambda i, a, o: arch.M + (i * A + a) * 3 + o  # noqa: E731
    probs[node(0, look, 0), go_left] = probs[node(0, look, 1), go_left] = 1.0
    probs[node(0, look, 0), look] = probs[node(0, look, 1), look] = 0.0
    init = np.zeros(arch.num_nodes)
    init[0] = 1.0
    assert abs(_dense_value(world, arch, probs, init) - GAMMA * 0.2) < 1e-12
    state = start_state(objective, fsc.Policy.from_probs(arch, probs, init))
    assert abs(state.point.value - GAMMA * 0.2) < 1e-12
    new = step(objective, state, tries=1)
    assert new is not None and new.slots["splits"] == 1
    assert abs(new.point.value - GAMMA) < 1e-12
    assert abs(_dense_value(world, arch, new.point.probs, new.point.init_probs) - GAMMA) < 1e-12
    assert new.point.probs[node(0, look, 1), go_right] == 1.0 and new.point.probs[node(0, look, 0), go_left] == 1.0
    assert step(objective, new, tries=8) is None  # optimal: no split raises it


def test_the_method_returns_its_start_where_it_does_not_apply_and_is_in_the_portfolio():
    """On a memory whose next node depends on more than the choice and the observation it returns its start; it is
    a method of the portfolio by name, with its settings from fsc.choices, and its result never falls below the start."""
    world = tasks.Tiger()
    pomdp = as_pomdp(world)
    arch = Memento(2, arms=pomdp.num_actions, observations=pomdp.num_observations)
    objective = Objective(world=world, architecture=arch, reset=1 - GAMMA, target="return")
    start = fsc.Policy.random(arch, 0)
    assert NodeSplit().solve(objective, start, Budget.of(5, 10), np.random.default_rng(0)) is start
    assert isinstance(METHODS["nodesplit"], NodeSplit)
    assert (NodeSplit().tries, NodeSplit().steps) == (SOLVER_METHODS["nodesplit"]["tries"], SOLVER_METHODS["nodesplit"]["steps"])
    objective, arch = _objective(world, 3)
    start = fsc.Policy.random(arch, 1)
    out = NodeSplit().solve(objective, start, Budget.of(20, 30), np.random.default_rng(0))
    assert objective.value_of(out) > objective.value_of(start)
    solution = Portfolio(seconds=30, rounds=1, methods=["nodesplit"]).solve(world, "ram:2")
    assert solution.value >= fsc.evaluate(world, fsc.Policy.uniform(solution.policy.architecture), discount=GAMMA).value - 1e-9


def _corridor_with_a_pit(S: int = 8) -> fsc.POMDP:
    """A corridor of ``S`` states with ``right``, ``left`` (each moves with probability 0.9) and ``wait``: arriving at
    the right end pays 1, at the left end -1; the ends are seen, the middle is not; it starts three from the right end."""
    lines = [f"discount: {GAMMA}\nvalues: reward\nstates: {S}\nactions: right left wait\nobservations: first middle last\nstart: {S - 3}"]
    for s in range(S):
        for action, to in (("right", min(s + 1, S - 1)), ("left", max(s - 1, 0))):
            lines.append(f"T: {action} : {s} : {to} 0.9\nT: {action} : {s} : {s} 0.1" if to != s else f"T: {action} : {s} : {s} 1.0")
    lines.append(f"T: wait\nidentity\nO: * : * : middle 1.0\nO: * : 0\n1 0 0\nO: * : {S - 1}\n0 0 1")
    lines.append(f"R: * : * : {S - 1} : * 1.0\nR: * : * : 0 : * -1.0")
    return parse_pomdp("\n".join(lines) + "\n")


def test_the_trial_graph_is_exact_and_leaves_the_flat_controller():
    """The graph of backups along QMDP runs evaluates to its own vectors (each node's successors are those its backup
    chose), so its value is a controller's; on a corridor with a reward at
    one end and a cost at the other, "always wait" is flat (0), and the method's start from there is the trial
    graph's controller on RAM(2), worth more (by the dense evaluation too)."""
    world = _corridor_with_a_pit()
    graph = trial_graph(world, 1 - GAMMA, np.random.default_rng(0), runs=2)
    assert graph.value > 0
    objective, arch = _objective(world, 2)
    probs = np.zeros((arch.num_nodes, arch.num_choices))
    probs[:, 2] = 1.0  # always wait: collects nothing
    init = np.zeros(arch.num_nodes)
    init[0] = 1.0
    flat = fsc.Policy.from_probs(arch, probs, init)
    assert objective.flat(objective.value_of(flat))
    state = start_state(objective, flat)
    assert state.slots["flat"]
    state = step(objective, state, tries=8, rng=np.random.default_rng(0))
    assert state.point.value > 0 and not state.slots["flat"]
    assert abs(state.point.value - _dense_value(world, arch, state.point.probs, state.point.init_probs)) < 1e-9
