"""Policy graphs: finite-state controllers whose nodes carry an action, a successor per observation and the
exact value of each state in that node (an alpha vector), as point-based methods make them.

A :class:`PolicyGraph` plays ``action[n]`` in node ``n``, sees ``o`` and moves to ``successor[n, o]``; it
starts in ``initial``.  Its node values solve one linear system on the pairs (node, state),

.. math::

    V(n, s) = R(s, a_n) + \\gamma \\sum_{s', o} T(s, a_n, s') O(a_n, s', o) V(\\mathrm{succ}(n, o), s'),

and its value is ``V(initial) . b0``.  The transposed system gives the discounted occupancy of each pair
from the start, hence the belief in which each node is reached (:func:`occupancy`), which
:func:`compress` uses to keep the ``K`` nodes a controller on ``ram:K`` can hold.  :func:`as_policy` maps a
graph onto the framework's policy on ``RAM(K)`` (:func:`fsc.model.controller.controller_probs`).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time

import attrs
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import LinearOperator, bicgstab, splu

from fsc.errors import InputError, InputTypeError
from fsc.limits import TimeUp
from fsc.model.architecture import MemoryArchitecture
from fsc.model.chain import reached_from
from fsc.model.memory import RAM
from fsc.model.policy import Policy

__all__ = [
    "Model", "PolicyGraph", "as_policy", "closed_graph", "compress", "evaluate_graph", "from_policy", "improve", "kick", "merge", "minimal", "minimise",
    "occupancy", "polish", "reachable", "until",
]  # fmt: skip

#: :func:`merge` chooses each merge among six, valued by a few sweeps each, for a graph that needs at most ``MERGES`` merges
#: to fit, others it merges by an estimate first; :func:`compress` merges graphs of at most ``MERGE_PAIRS`` pairs
#: (node, state) with each merged node moving as the kept one did.
MERGES = 8
MERGE_PAIRS = 200_000

#: :func:`compress` also compresses a graph of at most ``STEPPED_PAIRS`` pairs in steps: onto these multiples of the
#: memories (each rounded up, those the graph does not fit), then onto the memories, each step's best the next one's
#: start, when the steps' expected price (as many times the direct compression's seconds as there are steps) is at most
#: ``STEPPED_SHARE`` of the time left before the enclosing :func:`until` limit.  From Perseus's graph after 20 s, seeds
#: 0 to 2, onto ``ram:8`` directly and in these steps: tiger-grid 2.2076, 2.2006, 2.2020 against 2.2235, 2.2296,
#: 2.2083; milos-aaai97 49.076, 48.821, 48.901 against 48.662, 49.198, 48.898; hallway (seeds 0 and 1) 0.9632, 0.9630
#: against 0.9747, 0.9661.  Unpriced, in every size of a solve, two ladders of steps ((4, 2) too) cost cit and sunysb
#: (discount 0.99) more time than they gained: 0.659 and 0.513 against 0.796 and 0.636 at 60 s.
STEPS = (3, 2, 1.5)
STEPPED_PAIRS = 50_000
STEPPED_SHARE = 0.5

#: :func:`compress` also merges graphs of at most ``UNION_PAIRS`` pairs with each merged node moving, after each
#: observation, as the node that hears it more did: RockSample[7,8], whose observations show the position, has plans
#: of 500 to 1,200 nodes on 12,800 states, merged to fit ``ram:8`` with little lost (a plan of 931 nodes, 12 million
#: pairs, worth 20.599: 20.719 on ``ram:8`` in 8.6 s).
UNION_PAIRS = 32_000_000

#: How closely :func:`compress`, :func:`merge` and :func:`improve` solve for the discounted visits (:func:`occupancy`,
#: relative to the largest): they rank merges and place beliefs, where a digit more changes nothing, and a graph of
#: millions of pairs settles in a third of the sweeps 1e-13 takes.  :func:`merge` solves the graphs on its way to it
#: too (:func:`evaluate_graph`'s ``ranking``), the last one exactly.
RANKING_TOLERANCE = 1e-8

#: :func:`backup` scores the beliefs after each observation as a dense matrix when it has at most this many entries
#: (beliefs x observations x states reached), else as a sparse one: against one product per observation, 2 times as
#: fast on tiger-grid and hallway (dense), 1.2 and 1.5 times on Tag and RockSample[7,8] (sparse), 0.7 to 0.9 on
#: machine and RockSample[5,5] (their backups take milliseconds).
DENSE_AFTER = 20_000

#: Beliefs backed up at once when a graph is closed (:func:`closed_graph`), between two looks at the deadline.
CHUNK = 16

#: Sweeps of the fixed-point iteration of a graph's values (one with a cycle, :func:`_cyclic`) before BiCGSTAB
#: (:func:`_krylov`) takes over from where they stand.  ``benchmarks/bench_solve.py compress``, Perseus's graph after 20
#: CPU-s, evaluation and compression onto ``ram:8`` against the sweeps alone: hallway (619 nodes) 0.77 -> 0.29 s and
#: 20.3 -> 12.0 s, tiger-grid (684) 0.19 -> 0.06 s and 5.9 -> 3.3 s, Tag (194) 0.24 -> 0.16 s and 1.53 -> 1.47 s.
#: RockSample's merged graphs have cycles and one entry a row (moves and observations certain): a plan of 711 nodes
#: compressed onto ``ram:8`` in 17.8 s with the sweeps alone, 10.2 s with BiCGSTAB; its plans have none and are swept.
KRYLOV_AFTER = 32

#: The most iterations of that BiCGSTAB (two products each): where it stalls (a discount near 1), the sweeps go on.
KRYLOV_ITERATIONS = 250

#: Sweeps of the fixed-point iteration after BiCGSTAB before a solve without a limit takes over (a discount near 1).
SWEEPS = 2000

#: Beliefs with at most this share of nonzero entries are scored against vectors sparse (:func:`_scores`), and a backup
#: moves them through the transitions sparse when they also fill :data:`SPARSE_MOVES` entries (:func:`_reached_entries`).
SPARSE_SCORES = 0.25

#: A backup's batch of beliefs (beliefs x states) of at least this many entries, sparse (:data:`SPARSE_SCORES`), is moved
#: through the transitions as sparse matrices; smaller, the dense product costs less than the sparse one's overhead.
#: ``benchmarks/bench_solve.py backup``, batches of 8: RockSample[7,8] (12,545 states, 1.1% nonzero) 13.0 -> 10.5 ms,
#: Tag (870 states, 3%) 0.79 -> 0.92 ms.
SPARSE_MOVES = 50_000

#: The sweeps look at how far they moved every this many sweeps (a look costs as much as the sweep: RockSample[7,8]'s
#: plans of 900 nodes spent more time in looks than in the products).
LOOKS = 8

#: A graph of at most this many (node, state) pairs is solved by a sparse LU instead when its discount is too near 1
#: for :data:`SWEEPS` sweeps to settle, or when they did not: exact to rounding, where BiCGSTAB can stall (a world of
#: discount 0.99999 ran a 5 s solve for 70 s in one graph's merges), and at most 4,000^2 entries filled in.
DIRECT_PAIRS = 4000

#: Nodes :func:`polish` moves at random in one kick (each after one observation), and the most rounds of node
#: improvement it gives a graph (each round keeps the graph only if its exact value rose).  ``benchmarks/bench_solve.py
#: polish``, Perseus's graph after 120 stages (seed 0) compressed onto ``ram:8`` and improved until no round gains, then
#: 40 CPU-s of kicks: tiger-grid 2.2402 -> 2.2503 (215 kicks), hallway 0.9742 -> 0.9787 (364).
KICKS = 3
POLISH_ROUNDS = 100

#: The ``time.monotonic()`` reading past which a graph's evaluation raises :class:`fsc.limits.TimeUp` (:func:`until`).
_UNTIL: contextvars.ContextVar[float] = contextvars.ContextVar("fsc_graph_until", default=math.inf)


@contextlib.contextmanager
def until(deadline: float):
    """A block in which every graph evaluation (:func:`evaluate_graph`, :func:`occupancy`, and so everything built on
    them: :func:`compress`, :func:`closed_graph`) raises :class:`fsc.limits.TimeUp` once ``deadline`` (a
    ``time.monotonic()`` reading, or an enclosing block's if earlier) has passed, between two sweeps."""
    token = _UNTIL.set(min(deadline, _UNTIL.get()))
    try:
        yield
    finally:
        _UNTIL.reset(token)


def _in_time(*_) -> None:
    if time.monotonic() >= _UNTIL.get():
        raise TimeUp("a policy graph's evaluation")


@attrs.frozen(kw_only=True, eq=False)
class Model:
    """A world as belief computations read it (built by :func:`fsc.solver.pointbased.model`).

    Attributes:
        discount: ``gamma = 1 - r``.
        reward: ``(S, A)``, the expected reward of playing ``a`` in ``s``.
        forward: per action ``a``, ``T_a`` transposed as CSR ``(S, S)``: ``forward[a] @ b`` is ``b T_a``.
        backward: per action ``a``, ``T_a`` as CSR ``(S, S)``: ``backward[a] @ v`` is ``sum_s2 T(s, a, s2) v(s2)``.
        observation: ``(A, S, O)``, ``P(o | a, s2)``.
        initial: ``(S,)``, the start belief.
    """

    discount: float
    reward: np.ndarray
    forward: tuple
    backward: tuple
    observation: np.ndarray
    initial: np.ndarray
    _emitters: dict = attrs.field(factory=dict, repr=False, alias="emitters")  # action -> its columns, by :meth:`emitters`
    _emissions: dict = attrs.field(factory=dict, repr=False, alias="emissions")  # action -> its CSR table, by :meth:`emission`
    _steps: dict = attrs.field(factory=dict, repr=False, alias="steps")  # action -> its rows of a graph's operator, by :meth:`step_rows`
    _produced: list = attrs.field(factory=list, repr=False, alias="produced")  # the table of :meth:`produces`, once made

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(S, A, O)``."""
        A, S, O = self.observation.shape
        return S, A, O

    def emitters(self, action: int) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """Per observation ``o`` that ``action`` can produce: ``(o, states, P(o | s2, a))`` over the states ``s2``
        that produce it (most worlds' observation tables are sparse: a backup costs their entries, not ``S x O``)."""
        if action not in self._emitters:
            table = self.observation[action]
            self._emitters[action] = [(o, np.flatnonzero(table[:, o] > 0), table[table[:, o] > 0, o]) for o in range(table.shape[1]) if (table[:, o] > 0).any()]
        return self._emitters[action]

    def emission(self, action: int) -> sp.csr_matrix:
        """``P(o | s2, a)`` as CSR ``(S, O)``, its entries those the table holds (every row has one: it sums to 1)."""
        if action not in self._emissions:
            self._emissions[action] = sp.csr_matrix(self.observation[action])
        return self._emissions[action]

    def produces(self) -> np.ndarray:
        """``(A, O)`` bool: the observations each action can produce (made once: 30 ms on RockSample[7,8]'s table, and
        every graph's evaluation asks for it)."""
        if not self._produced:
            self._produced.append(self.observation.max(axis=1) > 0)
        return self._produced[0]

    def step_rows(self, action: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The rows of a graph's operator (:func:`_operator`) for a node of ``action``, by state ``s``: how many entries
        each row has ``(S,)``, and per entry in row order its observation ``o``, next state ``s2`` and weight
        ``T(s, a, s2) O(a, s2, o)`` (those that are not 0)."""
        if action not in self._steps:
            t = self.backward[action].tocoo()
            weight = t.data[:, None] * self.observation[action, t.col, :]  # (entries of T_a, O)
            entry, o = np.nonzero(weight > 0)
            order = np.argsort(t.row[entry], kind="stable")
            entry, o = entry[order], o[order]
            self._steps[action] = (np.bincount(t.row[entry], minlength=self.shape[0]), o, t.col[entry], weight[entry, o])
        return self._steps[action]

    def reached(self, beliefs: np.ndarray, action: int) -> np.ndarray:
        """``P(s2 | b, a)`` for each belief of ``beliefs`` ``(k, S)``: ``(k, S)``."""
        return np.asarray((self.forward[action] @ beliefs.T).T)


@attrs.frozen(kw_only=True, eq=False)
class PolicyGraph:
    """A deterministic controller of ``N`` nodes with the exact value of each node.

    Attributes:
        action: ``(N,)`` the action of each node.
        successor: ``(N, O)`` the next node after each observation.
        initial: the node a run starts in.
        vectors: ``(N, S)`` the exact discounted value of each state in each node.
        value: ``vectors[initial] . b0``, the controller's value at the start belief.
    """

    action: np.ndarray
    successor: np.ndarray
    initial: int
    vectors: np.ndarray
    value: float
    _step: sp.csr_matrix | None = attrs.field(default=None, repr=False, alias="step")  # M of its system, for occupancy

    @property
    def size(self) -> int:
        return len(self.action)


def _operator(model: Model, action: np.ndarray, successor: np.ndarray) -> sp.csr_matrix:
    """``M`` on the pairs ``(n, s)`` (index ``n * S + s``): ``M[(n, s), (succ(n, o), s2)] = T(s, a_n, s2) O(a_n, s2, o)``,
    built row by row from each action's rows (:meth:`Model.step_rows`): a node's rows are its action's, their columns
    moved to its successors' blocks, then the entries of two observations that lead to one pair summed (the same matrix
    as one COO build, in less than half its time: hallway's graph of 536 nodes, 2.2 million entries, 0.06 against 0.14
    to 0.39 s)."""
    S, A, _ = model.shape
    N = len(action)
    rows = {int(a): model.step_rows(int(a)) for a in np.unique(action)}
    entries = np.zeros(A, dtype=np.int64)  # a node's entries, by its action
    for a, (_, o, _, _) in rows.items():
        entries[a] = len(o)
    start = np.concatenate([[0], np.cumsum(entries[action])])
    counts = np.empty((N, S), dtype=np.int64)
    indices, data = np.empty(start[-1], dtype=np.int64), np.empty(start[-1])
    for a, (per_row, o, s2, weight) in rows.items():
        nodes = np.flatnonzero(action == a)
        where = start[nodes][:, None] + np.arange(len(o))[None]
        indices[where] = successor[nodes][:, o] * S + s2[None]
        data[where] = weight[None]
        counts[nodes] = per_row[None]
    indptr = np.concatenate([[0], np.cumsum(counts.reshape(-1))])
    operator = sp.csr_matrix((data, indices, indptr), shape=(N * S, N * S))
    operator.sum_duplicates()
    return operator


def _system(model: Model, action: np.ndarray, successor: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """The graph's equations ``x = source + discount * step @ x`` on the pairs ``(n, s)``: ``step`` (:func:`_operator`)
    and the reward of each node's action in each state."""
    return _operator(model, action, successor), np.ascontiguousarray(model.reward[:, action].T).reshape(-1)


def _fixed_point(step: sp.csr_matrix, discount: float, source: np.ndarray, guess: np.ndarray, tolerance: float = 1e-13, cyclic: bool = True) -> np.ndarray:
    """``x = source + discount * step @ x``: iterated from ``guess`` (a contraction) until it moves by less than
    ``tolerance`` of its size: for a ``cyclic`` graph (:func:`_cyclic`), :data:`KRYLOV_AFTER` sweeps (a guess near
    the values, a merge's, settles in them), then BiCGSTAB from there (:func:`_krylov`); sweeps until it settles;
    after :data:`SWEEPS` of those (a discount near 1, where BiCGSTAB can stall) solved from there: by a sparse LU on at
    most :data:`DIRECT_PAIRS` pairs (at once when the sweeps could not settle), else by BiCGSTAB without a limit."""
    x, direct = guess, len(guess) <= DIRECT_PAIRS
    if not (direct and discount**SWEEPS > tolerance):
        if cyclic:
            x, settled = _swept(step, discount, source, x, KRYLOV_AFTER, tolerance)
            if settled:
                return x
            x = _krylov(step, discount, source, x, tolerance)
        x, settled = _swept(step, discount, source, x, SWEEPS, tolerance)
        if settled:
            return x
    _in_time()
    system = sp.identity(len(x), format="csr") - discount * step
    if direct:
        return splu(system.tocsc()).solve(source)
    solved, _ = bicgstab(system, source, x0=x, rtol=max(tolerance, 1e-14), maxiter=100 * SWEEPS, callback=_in_time)
    return solved


def _cyclic(model: Model, action: np.ndarray, successor: np.ndarray) -> bool:
    """Whether a graph has a cycle through two nodes or more (a node that moves to itself aside), following only the
    observations each node's action can produce: without one, its values settle in as many sweeps as it is deep (a
    Perseus plan).  The successors after observations an action cannot produce are placeholders (a plan's point to
    node 0 or to itself): counted, they made every RockSample[7,8] plan look cyclic."""
    N = len(successor)
    heard = model.produces()[action]  # (N, O): the observations each node's action can produce
    rows = np.repeat(np.arange(N), successor.shape[1])[heard.reshape(-1)]
    links = sp.csr_matrix((np.ones(rows.size), (rows, successor[heard])), shape=(N, N))
    return connected_components(links, directed=True, connection="strong")[0] < N


def _swept(step: sp.csr_matrix, discount: float, source: np.ndarray, x: np.ndarray, sweeps: int, tolerance: float) -> tuple[np.ndarray, bool]:
    """``x`` after at most ``sweeps`` sweeps of ``x <- source + discount * step @ x``, and whether it settled: at a look
    (every :data:`LOOKS` sweeps and after the last), it moved by at most ``tolerance`` of its size."""
    for sweep in range(1, sweeps + 1):
        _in_time()
        new = step @ x
        new *= discount
        new += source
        if (sweep % LOOKS == 0 or sweep == sweeps) and np.abs(new - x).max() <= tolerance * max(1.0, float(np.abs(new).max())):
            return new, True
        x = new
    return x, False


def _krylov(step: sp.csr_matrix, discount: float, source: np.ndarray, x: np.ndarray, tolerance: float) -> np.ndarray:
    """BiCGSTAB on ``(I - discount * step) y = source`` from ``x``, at most :data:`KRYLOV_ITERATIONS` iterations (two
    products each), to ``tolerance`` of the residual's norm; ``x`` itself when it ends farther from the fixed point (a
    residual larger in the largest entry)."""
    n = len(x)
    system = LinearOperator((n, n), matvec=lambda v: v - discount * (step @ v), dtype=np.float64)
    solved, _ = bicgstab(system, source, x0=x, rtol=tolerance, maxiter=KRYLOV_ITERATIONS, callback=_in_time)
    if not np.isfinite(solved).all():
        return x
    return solved if np.abs(source - system.matvec(solved)).max() < np.abs(source - system.matvec(x)).max() else x


def evaluate_graph(model: Model, action, successor, initial: int | None = None, guess: np.ndarray | None = None,
                   ranking: bool = False) -> PolicyGraph:  # fmt: skip
    """The graph with its exact node values; ``initial`` None: the node of the best value at the start belief.
    ``guess``: values ``(N, S)`` to start the iteration from (the alpha vectors the nodes came from).  ``ranking``: a
    graph on :func:`merge`'s way, whose values only rank the next merges: solved to :data:`RANKING_TOLERANCE` on the
    pairs a run from ``initial`` reaches (they hold among themselves; RockSample[7,8]'s merged graphs reach 1% of
    theirs), ``guess`` kept on the others; never a graph's exact value.

    Raises:
        InputError: tables of the wrong shape or nodes out of range.
    """
    S, A, O = model.shape
    action, successor = np.asarray(action, dtype=np.int64), np.asarray(successor, dtype=np.int64)
    N = len(action)
    if action.shape != (N,) or successor.shape != (N, O) or N == 0:
        raise InputError(f"a policy graph needs actions (N,) and successors (N, {O}), got {action.shape} and {successor.shape}")
    if action.min() < 0 or action.max() >= A or successor.min() < 0 or successor.max() >= N:
        raise InputError(f"a policy graph's actions must lie in [0, {A}) and its successors in [0, {N})")
    if ranking and initial is None:
        raise InputError("a graph evaluated for ranking needs its initial node")
    step, source = _system(model, action, successor)
    guess = source if guess is None else np.asarray(guess, dtype=np.float64).reshape(-1)
    cyclic = _cyclic(model, action, successor)
    if ranking:
        reached = np.flatnonzero(reached_from(step, initial * S + np.flatnonzero(model.initial > 0)))
        vectors = guess.copy()
        vectors[reached] = _fixed_point(step[reached][:, reached], model.discount, source[reached], guess[reached], RANKING_TOLERANCE, cyclic)
        vectors = vectors.reshape(N, S)
    else:
        vectors = _fixed_point(step, model.discount, source, guess, cyclic=cyclic).reshape(N, S)
    if initial is None:
        initial = int(np.argmax(vectors @ model.initial))
    value = float(vectors[initial] @ model.initial)
    return PolicyGraph(action=action, successor=successor, initial=int(initial), vectors=vectors, value=value, step=step)


def occupancy(model: Model, graph: PolicyGraph, tolerance: float = 1e-13) -> tuple[np.ndarray, np.ndarray]:
    """The discounted visits of each node from the start ``(N,)`` (they sum to ``1 / (1 - gamma)``) and the
    belief each node is reached in, on average over its visits ``(N, S)`` (the start belief where never reached),
    solved to ``tolerance`` of the largest, on the pairs a run can reach (:func:`fsc.model.chain.reached_from`) alone:
    the others are never visited (RockSample[7,8]'s plans of 500 nodes reach 3% of their 6.4 million pairs)."""
    S, N = model.shape[0], graph.size
    step = graph._step if graph._step is not None else _operator(model, graph.action, graph.successor)
    start = np.zeros(N * S)
    start[graph.initial * S : (graph.initial + 1) * S] = model.initial
    pairs = np.zeros(N * S)
    reached = np.flatnonzero(reached_from(step, np.flatnonzero(start)))  # the pairs a run reaches: the others stay 0
    inside = start[reached]
    cyclic = _cyclic(model, graph.action, graph.successor)
    pairs[reached] = np.maximum(_fixed_point(step[reached][:, reached].T.tocsr(), model.discount, inside, inside, tolerance, cyclic), 0.0)
    pairs = pairs.reshape(N, S)
    visits = pairs.sum(axis=1)
    beliefs = np.where(visits[:, None] > 0, pairs / np.where(visits > 0, visits, 1.0)[:, None], model.initial[None])
    return visits, beliefs


def _best_after(model: Model, beliefs: np.ndarray, action: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """``(k, O)``: for each belief and its action, the vector of ``vectors`` best at each next belief.

    An observation the belief cannot produce is scored on the states that can produce it, equally weighted.
    """
    _, _, O = model.shape
    best = np.zeros((len(beliefs), O), dtype=np.int64)
    for a in np.unique(action):
        rows = np.flatnonzero(action == a)
        reached = model.reached(beliefs[rows], int(a))
        for o, states, chance in model.emitters(int(a)):
            after = reached[:, states] * chance
            after = np.where(after.sum(axis=1, keepdims=True) > 0, after, chance[None])
            best[rows, o] = (after @ vectors[:, states].T).argmax(axis=1)
    return best


def backup(model: Model, vectors: np.ndarray, beliefs: np.ndarray, by_state: np.ndarray | None = None,
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """The point-based backup of ``vectors`` ``(n, S)`` at each of ``beliefs`` ``(k, S)``: the value ``(k,)``, the
    action ``(k,)``, the vector ``(k, S)`` (its value there) and the vector chosen after each observation ``(k, O)``.

    The vector of action ``a`` is ``R_a + gamma T_a sum_o O_a[:, o] alpha_(a, o)``, ``alpha_(a, o)`` the vector
    of ``vectors`` best at the belief after ``a`` and ``o`` (the first of equals; the first vector where the belief
    cannot hear ``o``); the action is the best one at the belief.  The beliefs after every observation are one
    matrix on the states some belief reaches (:meth:`Model.emission`; sparse, or dense when small:
    :data:`DENSE_AFTER`), scored against the vectors in one
    product: sparse beliefs stay cheap, and no loop runs over the observations.  ``by_state``: ``vectors.T`` as a
    C-contiguous ``(S, n)`` array, given by a caller backing up many batches against the same vectors (made here
    otherwise).
    """
    S, A, O = model.shape
    k, n = len(beliefs), len(vectors)
    by_state = np.ascontiguousarray(vectors.T) if by_state is None else by_state
    value, action, choice = np.full(k, -np.inf), np.zeros(k, dtype=np.int64), np.zeros((k, O), dtype=np.int64)
    sparse = beliefs.size >= SPARSE_MOVES and np.count_nonzero(beliefs) <= SPARSE_SCORES * beliefs.size
    held = sp.csr_matrix(beliefs) if sparse else None
    for a in range(A):
        scores = _after(model, _reached_entries(model, beliefs, held, a), a, by_state).reshape(k, O, n)  # the belief after o, unnormalised, times each vector
        best = scores.argmax(axis=2)
        q = beliefs @ model.reward[:, a] + model.discount * np.take_along_axis(scores, best[:, :, None], axis=2)[:, :, 0].sum(axis=1)
        better = q > value
        value[better], action[better], choice[better] = q[better], a, best[better]
    new = np.empty((k, S))
    for a in np.unique(action):
        rows = np.flatnonzero(action == a)
        emission = model.emission(int(a))
        entry = np.repeat(np.arange(S), np.diff(emission.indptr))  # the state of each entry (every state emits some o)
        ahead = np.add.reduceat(vectors[choice[rows][:, emission.indices], entry] * emission.data, emission.indptr[:-1], axis=1)
        new[rows] = model.reward[:, a] + model.discount * np.asarray((model.backward[a] @ ahead.T).T)
    return value, action, new, choice


def _reached_entries(model: Model, beliefs: np.ndarray, held: sp.csr_matrix | None, action: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The nonzero entries of ``P(s2 | b_j, a)`` (:meth:`Model.reached`) for ``beliefs`` ``(k, S)``, belief by belief:
    ``(k, j, s2, chance)``.  ``held``: the beliefs as CSR when they are sparse and many (:data:`SPARSE_MOVES`:
    RockSample[7,8]'s hold 1% of the states), multiplied by ``T_a`` sparse, so that no ``(k, S)`` table is made or
    scanned."""
    if held is None:
        reached = model.reached(beliefs, action)
        rows, states = np.nonzero(reached)
        return len(beliefs), rows, states, reached[rows, states]
    after = held @ model.backward[action]
    rows = np.repeat(np.arange(after.shape[0]), np.diff(after.indptr))
    keep = after.data > 0
    return after.shape[0], rows[keep], after.indices[keep], after.data[keep]


def _after(model: Model, entries: tuple[int, np.ndarray, np.ndarray, np.ndarray], action: int, by_state: np.ndarray) -> np.ndarray:
    """``(k O, n)``: ``sum_s2 P(s2 | b_j, a) P(o | s2, a) alpha_i(s2)`` at row ``j O + o``, for ``entries`` the nonzero
    chances of the next states from each belief (:func:`_reached_entries`) and ``by_state`` the vectors ``(S, n)``."""
    (k, rows, states, chance), O, S = entries, model.shape[2], len(by_state)
    emission = model.emission(action)
    counts = np.diff(emission.indptr)[states]
    starts = np.repeat(emission.indptr[states] - (np.cumsum(counts) - counts), counts)
    at = starts + np.arange(int(counts.sum()))  # the emission entries of each reached (belief, state)
    data = np.repeat(chance, counts) * emission.data[at]
    row = np.repeat(rows, counts) * O + emission.indices[at]  # each (row, state) once
    column = np.repeat(states, counts)
    seen = np.zeros(S, dtype=bool)
    seen[states] = True
    columns = np.flatnonzero(seen)  # only the states some belief reaches
    if k * O * len(columns) <= DENSE_AFTER:  # small: a dense product costs less than building a sparse matrix
        place = np.zeros(S, dtype=np.int64)
        place[columns] = np.arange(len(columns))
        beliefs = np.zeros((k * O, len(columns)))
        beliefs[row, place[column]] = data
        return beliefs @ by_state[columns]
    order = np.argsort(row, kind="stable")  # CSR by hand: each (row, state) is one entry, so nothing to sum
    indptr = np.zeros(k * O + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=k * O), out=indptr[1:])
    beliefs = sp.csr_matrix((data[order], column[order], indptr), shape=(k * O, S))
    return np.asarray(beliefs @ by_state)


def closed_graph(model: Model, vectors: np.ndarray, action: np.ndarray, witness: np.ndarray, deadline: float = math.inf) -> PolicyGraph:
    """A graph on the nodes ``vectors``: each node plays its action and moves after ``o`` to the vector best at the
    belief that follows its witness belief, that action and ``o``; or each node plays the action and successors
    of a backup of ``vectors`` at its witness belief (:func:`backup`).  Both are evaluated exactly; the better at
    the start belief, started in its best node, is cut to the nodes reachable from there.  The backups run
    :data:`CHUNK` beliefs at a time; past ``deadline`` (``time.monotonic()``), the first graph alone."""
    own = evaluate_graph(model, action, _best_after(model, witness, action, vectors), guess=vectors)
    chunks, by_state = [], np.ascontiguousarray(vectors.T)
    for first in range(0, len(witness), CHUNK):
        if time.monotonic() >= deadline:
            return _reachable(model, own)
        chunks.append(backup(model, vectors, witness[first : first + CHUNK], by_state))
    backed, successor = np.concatenate([c[1] for c in chunks]), np.concatenate([c[3] for c in chunks])
    fresh = evaluate_graph(model, backed, successor, guess=vectors)
    return _reachable(model, own if own.value >= fresh.value else fresh)


def reachable(model: Model, action: np.ndarray, successor: np.ndarray, initial: int) -> np.ndarray:
    """The nodes a run from ``initial`` can enter (sorted), following only the observations each action can produce."""
    emits = model.produces()
    seen = np.zeros(len(action), dtype=bool)
    seen[initial], frontier = True, np.array([initial])
    while frontier.size:
        after = successor[frontier][emits[action[frontier]]]
        frontier = np.unique(after[~seen[after]])
        seen[frontier] = True
    return np.flatnonzero(seen)


def _reachable(model: Model, graph: PolicyGraph) -> PolicyGraph:
    """The part of ``graph`` reachable from its initial node (the same values, nodes renumbered from 0)."""
    emits = model.produces()
    keep = reachable(model, graph.action, graph.successor, graph.initial)
    renumber = np.zeros(graph.size, dtype=np.int64)
    renumber[keep] = np.arange(len(keep))
    successor = np.where(emits[graph.action[keep]], renumber[graph.successor[keep]], 0)
    action, initial = graph.action[keep], int(renumber[graph.initial])
    return PolicyGraph(action=action, successor=successor, initial=initial, vectors=graph.vectors[keep], value=graph.value)


def fits(graph: PolicyGraph, memories: int) -> bool:
    """Whether ``graph`` fits ``RAM(memories)`` as :func:`as_policy` maps it: at most ``memories`` nodes of each action."""
    return int(np.bincount(graph.action).max()) <= memories


def _covering(vectors: np.ndarray, action: np.ndarray, beliefs: np.ndarray, weights: np.ndarray, first: int, memories: int) -> np.ndarray:
    """Nodes chosen one at a time (``first`` first), each the one that most raises ``sum_b weight_b max_kept alpha . b``
    over ``beliefs``, at most ``memories`` of each action."""
    scores = vectors @ beliefs.T  # (n, beliefs)
    kept, now = [first], scores[first].copy()
    count = np.bincount([action[first]], minlength=int(action.max()) + 1)
    while True:
        gain = np.maximum(scores - now[None], 0.0) @ weights
        gain[kept] = -1.0
        gain[count[action] >= memories] = -1.0
        best = int(np.argmax(gain))
        if gain[best] <= 0:
            return np.array(kept)
        kept.append(best)
        count[action[best]] += 1
        now = np.maximum(now, scores[best])


def compress(model: Model, graph: PolicyGraph, memories: int, rounds: int = 5) -> PolicyGraph:
    """A graph that fits ``RAM(memories)`` (:func:`fits`) from ``graph`` minimised (:func:`minimise`), the best by
    exact value of: merged node pair by node pair (:func:`merge`) with each merged node moving as after the merge's
    kept node (graphs of at most :data:`MERGE_PAIRS` pairs) and as the node that hears the observation more (at most
    :data:`UNION_PAIRS`); and the nodes that best cover the beliefs ``graph`` reaches (weighted by their discounted
    visits; :func:`_covering`), each node's successors the kept vector best at the belief that follows; each then
    ``rounds`` rounds of node improvement (:func:`improve`).  A merge that loses nothing is taken at once.  A graph
    of more than :data:`MERGE_PAIRS` pairs is covered first (without node improvement), so that a merge the time
    limit of an enclosing :func:`until` cuts short leaves the cover (RockSample[7,8]: merges of 20 to 40 s); the
    best found before the limit is returned.  A graph of at most :data:`STEPPED_PAIRS` pairs is also compressed in
    steps (:data:`STEPS`), each step's best the next one's start, so that node improvement reshapes the graph
    between the merges, when the time left allows (:data:`STEPPED_SHARE`)."""
    if fits(graph, memories):
        return graph
    graph = minimise(model, graph)
    found: list[PolicyGraph] = []
    try:
        began = time.monotonic()
        if _compressed(found, model, graph, memories, rounds) or graph.size * model.shape[0] > STEPPED_PAIRS:
            return max(found, key=lambda candidate: candidate.value)
        sizes = tuple(k for k in (math.ceil(share * memories) for share in STEPS) if not fits(graph, k))
        if not sizes or len(sizes) * (time.monotonic() - began) > STEPPED_SHARE * (_UNTIL.get() - time.monotonic()):
            return max(found, key=lambda candidate: candidate.value)
        stepped = graph
        for k in (*sizes, memories):
            made: list[PolicyGraph] = []
            _compressed(made, model, minimise(model, stepped), k, rounds)
            stepped = max(made, key=lambda candidate: candidate.value)
        found.append(stepped)
    except TimeUp:
        if not found:
            raise
    return max(found, key=lambda candidate: candidate.value)


def _compressed(found: list[PolicyGraph], model: Model, graph: PolicyGraph, memories: int, rounds: int) -> bool:
    """The graphs :func:`compress` makes in one step from the minimal ``graph``, appended to ``found`` as they are made
    (a time limit keeps those made); whether one lost nothing (the last, then: nothing can beat it)."""
    pairs = graph.size * model.shape[0]
    if pairs > MERGE_PAIRS:
        found.append(_covered(model, graph, memories, 0))  # a quick cover first: two linear solves
    for union, most in ((True, UNION_PAIRS), (False, MERGE_PAIRS)):
        if pairs <= most:  # larger: each merge pass is a costly evaluation
            found.append(improve(model, merge(model, graph, memories, union=union), memories, rounds))
            if found[-1].value >= graph.value - 1e-12 * max(1.0, abs(graph.value)):
                return True
    if pairs <= MERGE_PAIRS:
        found.append(_covered(model, graph, memories, rounds))
    return False


def _covered(model: Model, graph: PolicyGraph, memories: int, rounds: int) -> PolicyGraph:
    """The nodes of ``graph`` that best cover the beliefs it reaches (:func:`_covering`), each node's successors the
    kept vector best at the belief that follows, then ``rounds`` rounds of node improvement (:func:`improve`)."""
    visits, beliefs = occupancy(model, graph, RANKING_TOLERANCE)
    keep = _covering(graph.vectors, graph.action, beliefs, visits, graph.initial, memories)
    action = graph.action[keep]
    best = evaluate_graph(model, action, _best_after(model, beliefs[keep], action, graph.vectors[keep]), guess=graph.vectors[keep])
    return improve(model, best, memories, rounds)


def _excess(graph: PolicyGraph, memories: int) -> int:
    """The nodes ``graph`` has beyond ``memories`` of each action: the merges it needs to fit ``RAM(memories)``."""
    return int(np.maximum(np.bincount(graph.action) - memories, 0).sum())


def minimal(model: Model, action: np.ndarray, successor: np.ndarray, initial: int) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """The smallest graph playing as ``(action, successor, initial)`` does: nodes of one action whose successors
    after every observation that action can produce are equivalent (the coarsest such partition, refined from the
    actions) play the same from every state, so one of each class is enough.  Returns its actions, successors,
    initial node and a representative node of each class."""
    emits = model.produces()
    succ = np.where(emits[action], successor, -1)
    label = np.unique(action, return_inverse=True)[1].reshape(-1)
    while True:
        keys = np.concatenate([label[:, None], np.where(succ >= 0, label[np.maximum(succ, 0)], -1)], axis=1)
        new = np.unique(keys, axis=0, return_inverse=True)[1].reshape(-1)
        if new.max() == label.max():  # a refinement with as many classes: stable
            break
        label = new
    first = np.unique(label, return_index=True)[1]  # a representative of each class, in class order
    return action[first], np.where(succ[first] >= 0, label[np.maximum(succ[first], 0)], 0), int(label[initial]), first


def minimise(model: Model, graph: PolicyGraph) -> PolicyGraph:
    """``graph`` with its equivalent nodes merged (:func:`minimal`): the same values, the same value."""
    action, successor, initial, first = minimal(model, graph.action, graph.successor, graph.initial)
    if len(first) == graph.size:
        return graph
    return PolicyGraph(action=action, successor=successor, initial=initial, vectors=graph.vectors[first], value=graph.value)


def _merged(graph: PolicyGraph, into: int, gone: int, heard: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """``graph`` with node ``gone`` removed and every move into it sent to ``into`` instead, ``into`` moving as before
    (``heard`` None) or after each observation as the node of the two that hears it more often did (:func:`_heard`:
    nodes reached where the other is not, as on worlds that show the position, merge with nothing lost): its
    actions, successors, initial node and the old values of its nodes (a guess of the new ones)."""
    successor = graph.successor.copy()
    _adopt(successor, heard, into, gone)
    keep = np.flatnonzero(np.arange(graph.size) != gone)
    renumber = np.zeros(graph.size, dtype=np.int64)
    renumber[keep] = np.arange(len(keep))
    renumber[gone] = renumber[into]
    return graph.action[keep], renumber[successor[keep]], int(renumber[graph.initial]), graph.vectors[keep]


def _adopt(successor: np.ndarray, heard: np.ndarray | None, into: int, gone: int) -> None:
    """``into``'s successors, in place, after the observations ``gone`` hears more often (:func:`_heard`); none when ``heard`` is None."""
    if heard is not None:
        takes = heard[gone] > heard[into]
        successor[into, takes] = successor[gone, takes]


def _heard(model: Model, graph: PolicyGraph, visits: np.ndarray, beliefs: np.ndarray) -> np.ndarray:
    """``(N, O)``: how often (discounted, from the start) each node hears each observation: its visits times the
    chance of the observation after its action at the belief it is reached in (:func:`occupancy`)."""
    heard = np.zeros((graph.size, model.shape[2]))
    for a in np.unique(graph.action):
        rows = np.flatnonzero(graph.action == a)
        reached = model.reached(beliefs[rows], int(a))
        for o, states, chance in model.emitters(int(a)):
            heard[rows, o] = reached[:, states] @ chance
    return visits[:, None] * heard


def _estimate(model: Model, action: np.ndarray, successor: np.ndarray, initial: int, guess: np.ndarray) -> float:
    """The value at the start belief of a graph after :func:`_estimate_sweeps` sweeps of its fixed point from ``guess``
    (its nodes' values before a small change): enough to rank a few candidate changes, each then evaluated exactly."""
    S = model.shape[0]
    step, source = _system(model, action, successor)
    x = np.asarray(guess, dtype=np.float64).reshape(-1)
    for _ in range(_estimate_sweeps(model.discount)):
        x = step @ x
        x *= model.discount
        x += source
    return float(x[initial * S : (initial + 1) * S] @ model.initial)


def _estimate_sweeps(discount: float) -> int:
    """Sweeps after which what a guess misses has shrunk below 1e-2 of itself (``gamma^k <= 1e-2``), at most :data:`SWEEPS`."""
    return int(min(SWEEPS, max(1, math.ceil(math.log(1e-2) / math.log(max(discount, 1e-300))))))


def _candidates(model: Model, graph: PolicyGraph, memories: int, union: bool) -> tuple[list[tuple[float, int, int]], np.ndarray | None]:
    """Merges ``(estimated loss, into, gone)`` of two nodes of an action with more than ``memories`` nodes, least loss
    first, and (``union``) how often each node hears each observation (:func:`_heard`), else None.  The loss is, for
    each of the two, its visits times what its vector exceeds the other's at the belief it is reached in, times the
    share of what it hears that it now follows the other's moves for: all for ``gone``, none for ``into``, unless
    ``union`` (the merged node moves after each observation as the node that hears it more did, :func:`_merged`)."""
    visits, beliefs = occupancy(model, graph, RANKING_TOLERANCE)
    heard = _heard(model, graph, visits, beliefs) if union else None
    share = None if heard is None else heard / np.maximum(heard.sum(axis=1, keepdims=True), 1e-300)
    counts = np.bincount(graph.action)
    nodes = np.flatnonzero(counts[graph.action] > memories)
    own = np.einsum("ns,ns->n", graph.vectors, beliefs)
    candidates = []
    for a in np.unique(graph.action[nodes]):
        group = nodes[graph.action[nodes] == a]
        cross = _scores(beliefs[group], graph.vectors[group])  # cross[i, j]: node group[j]'s vector at group[i]'s belief
        for i, gone in enumerate(group):
            others = np.arange(len(group)) != i
            into = group[others]
            loss = visits[gone] * np.maximum(own[gone] - cross[i, others], 0.0)
            if heard is not None:
                takes = heard[gone][None] > heard[into]  # (into, O): where the merged node moves as gone did
                loss = loss * (share[gone][None] * ~takes).sum(axis=1)
                loss += visits[into] * np.maximum(own[into] - cross[others, i], 0.0) * (share[into] * takes).sum(axis=1)
            candidates += [(float(cost), int(n), int(gone)) for cost, n in zip(loss, into, strict=True)]
    return sorted(candidates), heard


def _scores(beliefs: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """``beliefs @ vectors.T``, on the beliefs' nonzero entries when they are few (a plan's nodes are reached in a
    few states each: 3% of RockSample[7,8]'s)."""
    if np.count_nonzero(beliefs) <= SPARSE_SCORES * beliefs.size:
        return np.asarray(sp.csr_matrix(beliefs) @ vectors.T)
    return beliefs @ vectors.T


def merge(model: Model, graph: PolicyGraph, memories: int, tries: int = 6, union: bool = False) -> PolicyGraph:
    """Merge nodes of the same action until ``graph`` fits ``RAM(memories)`` (:func:`_merged`, each merged node
    moving as the kept one did or, ``union``, after each observation as the one that hears it more did).  A graph more
    than :data:`MERGES` merges from fitting is first merged by the estimate alone (:func:`_candidates`): every merge
    it needs at once (with ``union``, nothing is lost where the merged nodes hear apart, as on worlds that show the
    position), else, when that lost value, about half of them at a time.  Then, on a graph of at most
    :data:`MERGE_PAIRS` pairs (larger, each is an occupancy and six estimates of millions of pairs: the estimate alone
    goes on), one merge at a time: the one that keeps the value highest among the ``tries`` of least estimated loss,
    each valued by a few sweeps of its fixed point (:func:`_estimate`), the chosen one then exactly.  Merging a graph
    of more than :data:`MERGE_PAIRS` pairs, the graphs on the way are solved for ranking (:func:`evaluate_graph`: on the
    pairs a run reaches; RockSample[7,8], a plan of 711 nodes onto ``ram:8``, 10.2 s -> 3.3 s), the last one exactly."""
    whole, rough = True, not fits(graph, memories) and graph.size * model.shape[0] > MERGE_PAIRS
    while _excess(graph, memories) > (MERGES if graph.size * model.shape[0] <= MERGE_PAIRS else 0):
        excess, found = _excess(graph, memories), _candidates(model, graph, memories, union)
        merged = _merged_by_estimate(model, graph, memories, excess, found, rough) if whole else None
        if merged is None or merged.value < graph.value - 1e-9 * max(1.0, abs(graph.value)):
            merged = _merged_by_estimate(model, graph, memories, (excess + 1) // 2, found, rough)
        graph, whole = merged, False
    while not fits(graph, memories):
        candidates, heard = _candidates(model, graph, memories, union)
        merges = [_merged(graph, into, gone, heard) for _, into, gone in candidates[:tries]]
        action, successor, initial, guess = max(merges, key=lambda merged: _estimate(model, *merged))
        graph = evaluate_graph(model, action, successor, initial=initial, guess=guess)
    return evaluate_graph(model, graph.action, graph.successor, initial=graph.initial, guess=graph.vectors) if rough else graph


def _merged_by_estimate(model: Model, graph: PolicyGraph, memories: int, merges: int, found: tuple[list, np.ndarray], ranking: bool) -> PolicyGraph:
    """``graph`` after up to ``merges`` merges of least estimated loss (``found``: :func:`_candidates`, each merge as
    :func:`_merged` makes it), no node in two, evaluated once (for ``ranking``: :func:`evaluate_graph`)."""
    successor, initial = graph.successor.copy(), graph.initial
    counts, alive, touched = np.bincount(graph.action), np.ones(graph.size, dtype=bool), set()
    candidates, heard = found
    for _, into, gone in candidates:
        if counts[graph.action[gone]] <= memories or into in touched or gone in touched:
            continue
        _adopt(successor, heard, into, gone)
        successor[successor == gone], initial = into, (into if initial == gone else initial)
        alive[gone], counts[graph.action[gone]] = False, counts[graph.action[gone]] - 1
        touched |= {into, gone}
        if (~alive).sum() >= merges:
            break
    keep, renumber = np.flatnonzero(alive), np.cumsum(alive) - 1
    action, guess = graph.action[keep], graph.vectors[keep]
    return evaluate_graph(model, action, renumber[successor[keep]], initial=int(renumber[initial]), guess=guess, ranking=ranking)


def improve(model: Model, graph: PolicyGraph, memories: int, rounds: int) -> PolicyGraph:
    """Node improvement: each node backed up over the graph's own exact values at the belief it is reached in
    (:func:`occupancy`), two ways: the best action and successors there (:func:`backup`), and its own action with the
    successors best there (:func:`_best_after`; its own action always fits, where the best one may not).  Each
    reached node whose value there rises takes the better of the two that fits ``RAM(memories)``, the largest rises
    (weighted by the node's visits) first; the graph is evaluated again and kept if its exact value rose, else the
    first half of those changes is tried, and so on down to the first alone.  ``rounds`` rounds at most."""
    for _ in range(rounds):
        visits, beliefs = occupancy(model, graph, RANKING_TOLERANCE)
        value, action, _, successor = backup(model, graph.vectors, beliefs)
        kept = _best_after(model, beliefs, graph.action, graph.vectors)
        kept_value = _backed_up(model, beliefs, graph.action, kept, graph.vectors)
        own = np.einsum("ns,ns->n", graph.vectors, beliefs)
        rises = np.maximum(value, kept_value) - own
        nodes = np.flatnonzero((visits > 0) & (rises > 1e-12 * np.maximum(1.0, np.abs(own))))
        nodes = nodes[np.argsort(-visits[nodes] * rises[nodes], kind="stable")]
        for changed in (nodes[:count] for count in _halves(len(nodes))):
            new_action, new_successor = graph.action.copy(), graph.successor.copy()
            held = np.bincount(new_action, minlength=model.shape[1])
            for n in changed:
                if value[n] >= kept_value[n] and (action[n] == new_action[n] or held[action[n]] < memories):
                    held[new_action[n]] -= 1
                    held[action[n]] += 1
                    new_action[n], new_successor[n] = action[n], successor[n]
                elif kept_value[n] > own[n]:
                    new_successor[n] = kept[n]
            candidate = evaluate_graph(model, new_action, new_successor, initial=None, guess=graph.vectors)
            if candidate.value > graph.value + 1e-12 * max(1.0, abs(graph.value)):
                graph = candidate
                break
        else:
            return graph
    return graph


def polish(model: Model, graph: PolicyGraph, memories: int, rng: np.random.Generator, deadline: float = math.inf,
           kicks: int = KICKS, steps: int | None = None) -> PolicyGraph:  # fmt: skip
    """Iterated local search on ``graph``, which fits ``RAM(memories)``: node improvement (:func:`improve`) until no
    round raises the value, then, until ``deadline`` (a ``time.monotonic()`` reading) or ``steps`` kicks, the best
    graph kicked and improved in turn (:func:`kick`).  Returns the best (exact values); an enclosing :func:`until`
    limit ends it too, with the best found before."""
    best = graph
    with contextlib.suppress(TimeUp), until(deadline):
        best, done = improve(model, graph, memories, POLISH_ROUNDS), 0
        while time.monotonic() < deadline and (steps is None or done < steps):
            best, done = kick(model, best, memories, rng, kicks), done + 1
    return best


def kick(model: Model, graph: PolicyGraph, memories: int, rng: np.random.Generator, kicks: int = KICKS) -> PolicyGraph:
    """``graph`` kicked, then improved (:func:`improve`), if that beats it by exact value; else ``graph``.  The kick:
    ``kicks`` nodes, drawn in proportion to their discounted visits (:func:`occupancy`), each move after one
    observation its action can produce (drawn at random) to a node drawn at random."""
    found = evaluate_graph(model, graph.action, _kicked(model, graph, rng, kicks), initial=graph.initial, guess=graph.vectors)
    found = improve(model, found, memories, POLISH_ROUNDS)
    return found if found.value > graph.value + 1e-12 * max(1.0, abs(graph.value)) else graph


def _kicked(model: Model, graph: PolicyGraph, rng: np.random.Generator, kicks: int) -> np.ndarray:
    """The successors of :func:`kick`'s kicked graph."""
    visits, _ = occupancy(model, graph, RANKING_TOLERANCE)
    emits = model.produces()
    successor = graph.successor.copy()
    for n in rng.choice(graph.size, size=kicks, p=visits / visits.sum()):
        successor[n, rng.choice(np.flatnonzero(emits[graph.action[n]]))] = rng.integers(graph.size)
    return successor


def _halves(count: int) -> list[int]:
    """``count``, its half, its quarter, ... down to 1 (none for 0)."""
    found = []
    while count >= 1:
        found.append(count)
        count //= 2
    return found


def _backed_up(model: Model, beliefs: np.ndarray, action: np.ndarray, successor: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """``(k,)``: the value at each belief of playing its action, then moving to its successor's vector of ``vectors``
    after each observation: ``b . R_a + gamma sum_o sum_s2 P(s2, o | b, a) alpha_succ(o)(s2)``."""
    found = np.zeros(len(beliefs))
    for a in np.unique(action):
        rows = np.flatnonzero(action == a)
        reached = model.reached(beliefs[rows], int(a))
        found[rows] = beliefs[rows] @ model.reward[:, a]
        for o, states, chance in model.emitters(int(a)):
            found[rows] += model.discount * np.einsum("ks,ks->k", reached[:, states] * chance, vectors[successor[rows, o]][:, states])
    return found


def as_policy(graph: PolicyGraph, architecture: MemoryArchitecture) -> Policy:
    """The graph as a deterministic policy on ``RAM(K)``: node ``n`` is memory ``m(n)`` entered with its action,
    ``m(n)`` its rank among the nodes of the same action; so the RAM node ``(m(n), a_n, o)`` (memory, the action
    just played, the observation) chooses ``(m(succ(n, o)), a_succ(n, o))``.  RAM nodes no run enters choose
    memory 0 and the first node's action; a run starts in blank 0, which chooses the initial node.

    Raises:
        InputTypeError: not a RAM; InputError: more than ``K`` nodes of one action, or other actions or observations.
    """
    if type(architecture) is not RAM:
        raise InputTypeError(f"a policy graph maps onto a fsc.RAM, got {architecture!r}")
    K, A, O = architecture.M, architecture.arms, architecture.observations
    if graph.successor.shape[1] != O or graph.action.max() >= A or not fits(graph, K):
        raise InputError(f"a policy graph of {graph.size} nodes (at most {int(np.bincount(graph.action).max())} of one action) and "
                         f"{graph.successor.shape[1]} observations does not fit {architecture!r}")  # fmt: skip
    memory = np.zeros(graph.size, dtype=np.int64)
    for a in np.unique(graph.action):
        nodes = np.flatnonzero(graph.action == a)
        memory[nodes] = np.arange(len(nodes))
    choice = memory * A + graph.action  # the RAM choice (m(n), a_n) that enters node n
    table = np.full((K, A, O), choice[0], dtype=np.int64)
    table[memory, graph.action] = choice[graph.successor]
    probs = np.zeros((architecture.num_nodes, architecture.num_choices))
    probs[np.arange(K), choice[graph.initial]] = 1.0  # blanks (only blank 0 is a start)
    probs[K + np.arange(K * A * O), table.reshape(-1)] = 1.0  # node (i, a, o) at K + (i * A + a) * O + o
    init = np.zeros(architecture.num_nodes)
    init[0] = 1.0
    return Policy.from_probs(architecture, probs, init)


def _chosen(logits: np.ndarray, allowed: np.ndarray) -> np.ndarray | None:
    """The one choice of each row of ``logits`` over its ``allowed`` entries, or None unless every row has exactly one
    choice of positive probability (every other allowed logit ``-inf``, or so far below that its softmax weight is 0)."""
    z = np.where(allowed, logits, -np.inf)
    top = z.argmax(axis=1)
    weight = np.exp(z - z[np.arange(len(z)), top][:, None])  # 1 at the top, exactly 0 where a choice cannot be taken
    return top if bool((np.count_nonzero(weight, axis=1) == 1).all()) else None


def _policy_arrays(policy) -> tuple[MemoryArchitecture, np.ndarray, np.ndarray]:
    """The architecture and the logits of a :class:`fsc.model.policy.Policy` or :class:`fsc.model.policy.Weights`, as
    numpy arrays (views where they can be: nothing of ``N x C`` is copied)."""
    architecture, logits, init_logits = policy.architecture, policy.logits, policy.init_logits
    if hasattr(logits, "detach"):  # a Policy's tensors
        logits, init_logits = logits.detach().numpy(), init_logits.detach().numpy()
    return architecture, np.asarray(logits, dtype=np.float64), np.asarray(init_logits, dtype=np.float64)


def _entered(model: Model, architecture: MemoryArchitecture, logits: np.ndarray, start: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The architecture's nodes a run from ``start`` can enter (``start`` first) and the choice of each, following
    ``next_node[n, c(n), o]`` over the observations ``c(n)``'s action can produce; None if one of them is not
    deterministic.  Reads only those nodes' rows of ``logits`` and of ``next_node`` (a view on RAM: never copied whole)."""
    emits = model.produces()
    allowed, next_node, choice_action = architecture.allowed, architecture.next_node, architecture.choice_action
    choice = np.full(architecture.num_nodes, -1, dtype=np.int64)
    order, frontier = [], np.array([start], dtype=np.int64)
    while frontier.size:
        chosen = _chosen(logits[frontier], allowed[frontier])
        if chosen is None:
            return None
        choice[frontier] = chosen
        order.append(frontier)
        after = next_node[frontier, chosen][emits[choice_action[chosen]]]
        frontier = np.unique(after[choice[after] < 0])
    nodes = np.concatenate(order)
    return nodes, choice[nodes]


def from_policy(model: Model, policy) -> PolicyGraph | None:
    """A deterministic policy (a :class:`fsc.model.policy.Policy` or its :class:`fsc.model.policy.Weights`, on any
    architecture) as a policy graph with its exact values, or None unless it is deterministic on every node a run can
    enter from its start (the start itself one node).

    The graph's nodes are the architecture's nodes a run can enter; node ``n`` plays ``choice_action[c(n)]`` and moves
    to ``next_node[n, c(n), o]`` after ``o``; the graph is minimised (:func:`minimal`: on RAM, the nodes ``(m, a, o)``
    that take the same choice are one) and evaluated on its pairs (node, state) (:func:`evaluate_graph`).  Its value
    is the policy's on the joint chain, ``fsc.evaluate``'s ``value`` at ``r = 1 - model.discount`` (native convention).
    Costs the entered nodes times ``O`` before the evaluation, never ``N x C x O``.

    Raises:
        InputError: a policy of other actions or observations than the model's.
    """
    architecture, logits, init_logits = _policy_arrays(policy)
    S, A, O = model.shape
    if architecture.num_actions != A or architecture.num_observations != O:
        raise InputError(f"a policy on {architecture!r} plays {architecture.num_actions} actions and {architecture.num_observations} "
                         f"observations, the world {A} and {O}")  # fmt: skip
    start = _chosen(init_logits[None], architecture.reset_mask[None])
    found = None if start is None else _entered(model, architecture, logits, int(start[0]))
    if found is None:
        return None
    nodes, choice = found
    renumber = np.zeros(architecture.num_nodes, dtype=np.int64)
    renumber[nodes] = np.arange(len(nodes))
    action = architecture.choice_action[choice]
    emits = model.produces()
    successor = np.where(emits[action], renumber[architecture.next_node[nodes, choice]], 0)  # an observation never seen: node 0
    action, successor, initial, _ = minimal(model, action, successor, 0)
    return evaluate_graph(model, action, successor, initial=initial)
