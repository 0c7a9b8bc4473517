"""The necklace graph and the search for the longest Gray chain (paper Definition 4.1 (ii), Theorem 4.3).

The necklaces of length ``m`` (:mod:`policies.necklaces.words`) and their
adjacencies form a graph, graded by the number of ``B`` and bipartite by its
parity; a Gray chain is a simple path in it from ``A^m`` to ``B^m``, and the
length ``n(m)`` (number of necklaces) of the longest one sets the
performance of the necklace policy (Theorem 4.3).  :func:`gray_chain` looks
for a longest chain by depth-first branch and bound within a time budget and
says whether it is proved optimal (:class:`GrayChain`); :func:`n_longest`
gives ``n(m)``, or fails when optimality is not proved in time.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence

import attrs

from fsc.errors import InputError, InputTypeError

from .words import complement, integer_arg, is_complement_symmetric, necklace, necklaces, neighbours

__all__ = ["GrayChain", "gray_chain", "n_longest"]


@attrs.frozen
class _Graph:
    m: int
    words: tuple[str, ...]  # node -> representative, sorted by (level, word)
    level: tuple[int, ...]  # node -> number of B
    adj: tuple[tuple[int, ...], ...]
    adj_mask: tuple[int, ...]  # node -> bitmask of neighbours
    comp: tuple[int, ...]  # node -> node of the complementary necklace


@functools.lru_cache(maxsize=32)
def _graph(m: int) -> _Graph:
    words = necklaces(m)
    index = {w: i for i, w in enumerate(words)}
    adj = tuple(tuple(sorted(index[v] for v in neighbours(w))) for w in words)
    return _Graph(
        m=m,
        words=words,
        level=tuple(w.count("B") for w in words),
        adj=adj,
        adj_mask=tuple(sum(1 << j for j in nbrs) for nbrs in adj),
        comp=tuple(index[necklace(complement(w))] for w in words),
    )


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _component(graph: _Graph, start: int, free: int) -> int:
    """Bitmask of the nodes of ``free`` reachable from ``start`` through ``free`` (``start`` included)."""
    seen = 1 << start
    frontier = seen
    adj_mask = graph.adj_mask
    while frontier:
        grow = 0
        for v in _bits(frontier):
            grow |= adj_mask[v]
        frontier = grow & free & ~seen
        seen |= frontier
    return seen


def _level_bound(counts: Sequence[int], start_level: int, m: int) -> int:
    """Upper bound on the number of nodes after the start of a path from ``start_level`` to level ``m``.

    ``counts[k]`` nodes are free at level ``k`` (the start excluded, level ``m``
    holding only the target).  Let ``x_k`` be the number of path edges
    between levels ``k`` and ``k + 1``: every step changes the level by one,
    so ``x_k`` is odd for ``k >= start_level`` (net one crossing upward) and
    even below.  A node inside the path uses two edges, the start and the
    target one, so the path visits ``(x_{k-1} + x_k) / 2`` nodes at level
    ``k`` (``(x_{k-1} + x_k - 1) / 2`` besides the start at its level), at
    most ``counts[k]``; and the path has ``sum_k x_k`` nodes after its start.
    The maximum of that sum under these constraints is found by dynamic
    programming over the levels.
    """
    if start_level == m:
        return 0
    # cap[k]: bound on x_{k-1} + x_k at level k (k = 1 .. m-1); level 0 and m by hand.
    best: dict[int, int] = {}  # x_{k-1} -> best sum of x_0 .. x_{k-1}
    # x_{-1} = 0 (no level below 0); at level 0: x_0 / 2 <= counts[0] (+1/2 if start there).
    cap0 = 2 * counts[0] + (1 if start_level == 0 else 0)
    for x in range(cap0 + 1):
        if (x % 2 == 1) == (0 >= start_level):
            best[x] = x
    for k in range(1, m):
        cap = 2 * counts[k] + (1 if k == start_level else 0)
        odd = k >= start_level
        if not best:
            return -1
        # prefix maxima of best over x_{k-1} <= y
        top = max(best)
        prefix, running = [], -1
        for y in range(top + 1):
            running = max(running, best.get(y, -1))
            prefix.append(running)
        new: dict[int, int] = {}
        for x in range(1 if odd else 0, cap + 1, 2):
            room = min(cap - x, top)
            if room >= 0 and prefix[room] >= 0:
                new[x] = prefix[room] + x
        best = new
    # level m: only the target, which uses one edge: x_{m-1} = 1.
    return best.get(1, -1)


def _bipartite_bound(graph: _Graph, start: int, target: int, nodes: int) -> int:
    """Bound on the number of nodes of a path from ``start`` to ``target`` inside ``nodes`` (both included).

    The path alternates the parity of the level.
    """
    even = sum(1 for v in _bits(nodes) if graph.level[v] % 2 == 0)
    odd = nodes.bit_count() - even
    s_even = graph.level[start] % 2 == 0
    same, other = (even, odd) if s_even else (odd, even)
    if graph.level[start] % 2 == graph.level[target] % 2:
        return min(2 * same - 1, 2 * other + 1)
    return 2 * min(same, other)


class _OutOfTime(Exception):
    pass


class _Search:
    """Depth-first branch and bound for the longest simple path from ``A^m`` to ``B^m``."""

    def __init__(self, graph: _Graph, deadline: float) -> None:
        self.graph = graph
        self.deadline = deadline
        self.nodes = 0
        self.source, self.target = 0, len(graph.words) - 1
        self.best: tuple[int, ...] = ()

    def _tick(self) -> None:
        self.nodes += 1
        if time.monotonic() > self.deadline:
            raise _OutOfTime

    def bound(self, u: int, visited: int) -> int:
        """Upper bound on the number of further nodes of a path from ``u`` to the target avoiding ``visited``."""
        g = self.graph
        free = ((1 << len(g.words)) - 1) & ~visited
        comp = _component(g, u, free)
        if not comp >> self.target & 1:
            return -1
        counts = [0] * (g.m + 1)
        for v in _bits(comp & ~(1 << u)):
            counts[g.level[v]] += 1
        level_bound = _level_bound(counts, g.level[u], g.m)
        return min(level_bound, _bipartite_bound(g, u, self.target, comp) - 1)

    def order(self, u: int, visited: int) -> list[int]:
        """Unvisited neighbours of ``u``, fewest onward options first, then lower level (Warnsdorff's rule)."""
        g = self.graph
        free = ~visited
        options = [v for v in g.adj[u] if free >> v & 1]
        return sorted(options, key=lambda v: ((g.adj_mask[v] & free & ~(1 << v)).bit_count(), g.level[v], v))

    def longest(self, limit: int) -> None:
        """Improve ``self.best`` to the longest path; stop early when it reaches ``limit`` nodes."""
        path = [self.source]
        visited = 1 << self.source
        stack = [iter(self.order(self.source, visited))]
        while stack:
            self._tick()
            v = next(stack[-1], None)
            if v is None:
                stack.pop()
                visited &= ~(1 << path.pop())
                continue
            if v == self.target:
                if len(path) + 1 > len(self.best):
                    self.best = (*path, v)
                    if len(self.best) >= limit:
                        return
                continue
            visited |= 1 << v
            path.append(v)
            rest = self.bound(v, visited)
            if rest < 0 or len(path) + rest <= len(self.best):
                visited &= ~(1 << v)
                path.pop()
                continue
            stack.append(iter(self.order(v, visited)))

    def symmetric(self, limit: int) -> None:
        """Look for chains equal to their reversed complement, keeping the longest in ``self.best``.

        A half path from ``A^m`` never visits a necklace and its complement;
        it closes into a full chain when its end is adjacent to its own
        complement (even length) or to an unvisited self-complementary
        necklace (odd length).
        """
        g = self.graph
        path = [self.source]
        visited = (1 << self.source) | (1 << g.comp[self.source])

        def close(u: int, visited: int) -> None:
            half = path
            mirror = [g.comp[v] for v in reversed(half)]
            if g.comp[u] != u and g.comp[u] in g.adj[u]:
                chain = (*half, *mirror)
                if len(chain) > len(self.best):
                    self.best = chain
            for c in g.adj[u]:
                if g.comp[c] == c and not visited >> c & 1:
                    chain = (*half, c, *mirror)
                    if len(chain) > len(self.best):
                        self.best = chain

        close(self.source, visited)
        stack = [iter(self.order(self.source, visited))]
        while stack and len(self.best) < limit:
            self._tick()
            v = next(stack[-1], None)
            if v is None:
                stack.pop()
                u = path.pop()
                visited &= ~((1 << u) | (1 << g.comp[u]))
                continue
            if g.comp[v] == v:
                continue
            visited |= (1 << v) | (1 << g.comp[v])
            path.append(v)
            close(v, visited)
            free = ((1 << len(g.words)) - 1) & ~visited
            # every further half-path node brings its complement: at most twice the reachable free nodes
            reach = _component(g, v, free | (1 << v)).bit_count() - 1
            if 2 * (len(path) + reach) + 1 <= len(self.best):
                visited &= ~((1 << v) | (1 << g.comp[v]))
                path.pop()
                continue
            stack.append(iter(self.order(v, visited)))


@attrs.frozen
class GrayChain:
    """Result of :func:`gray_chain`: a Gray chain of necklaces from ``A^m`` to ``B^m``.

    Attributes:
        m: word length.
        chain: the necklace representatives, ``A^m`` first and ``B^m`` last.
        optimal: whether no longer chain exists (proved by exhaustion).
        upper_bound: proved upper bound on the length of any chain
            (``== length`` when ``optimal``).
        nodes_explored: number of search nodes visited.
        seconds: wall-clock time of the search.
    """

    m: int
    chain: tuple[str, ...]
    optimal: bool
    upper_bound: int
    nodes_explored: int
    seconds: float = attrs.field(default=0.0, eq=False)

    @property
    def length(self) -> int:
        """Number ``n`` of necklaces in the chain (both ends included)."""
        return len(self.chain)

    @property
    def symmetric(self) -> bool:
        """Whether the chain equals its reversed complement (see :func:`~policies.necklaces.is_complement_symmetric`)."""
        return is_complement_symmetric(self.chain)


def gray_chain(m: int, time_budget: float = 10.0) -> GrayChain:
    """Longest Gray chain of binary necklaces of length ``m``, from ``A^m`` to ``B^m`` (paper Definition 4.1 (ii)).

    The length ``n(m)`` of the longest simple path in the necklace adjacency
    graph enters Theorem 4.3.  The search is a depth-first branch and bound:

    1. An upper bound: the number of necklaces, sharpened by the levels (each
       step changes the number of ``B`` by one; see ``_level_bound``) and the
       parity of the levels (the graph is bipartite).  A chain reaching it is
       optimal at once, e.g. a Hamiltonian chain (conjectured to exist for
       every prime ``m``).
    2. Chains equal to their reversed complement (``A <-> B``) are searched
       first; such a chain is returned whenever no longer chain exists, so
       the chain is symmetric when symmetry costs nothing.
    3. An exhaustive search, pruning a branch when the path so far plus a
       bound on the rest (the free necklaces still reachable, counted with
       the level and parity bounds) cannot beat the best chain.  When it
       ends, the best chain is optimal.

    The search starts from the chain ``A^m, A^(m-1) B, ..., B^m``.  If
    ``time_budget`` seconds run out first, the best chain found is returned
    with ``optimal=False`` and the root upper bound.  Results are cached per
    ``(m, time_budget)``.

    Args:
        m: word length, >= 1.
        time_budget: seconds allowed for the search (> 0).

    Raises:
        TypeError, ValueError: if ``m`` is not an int >= 1 or ``time_budget`` is not positive.
    """
    m = integer_arg("m", m, 1)
    if isinstance(time_budget, bool) or not isinstance(time_budget, (int, float)):
        raise InputTypeError(f"time_budget must be a number of seconds, got {time_budget!r}")
    if not time_budget > 0:
        raise InputError(f"time_budget must be > 0, got {time_budget!r}")
    return _gray_chain(m, float(time_budget))


@functools.lru_cache(maxsize=64)
def _gray_chain(m: int, time_budget: float) -> GrayChain:
    start = time.monotonic()
    graph = _graph(m)
    n_nodes = len(graph.words)
    search = _Search(graph, start + time_budget)
    if n_nodes == 2:  # m == 1: A - B
        return GrayChain(m=m, chain=graph.words, optimal=True, upper_bound=2, nodes_explored=0, seconds=0.0)
    root_bound = 1 + search.bound(search.source, 1 << search.source)
    index = {w: i for i, w in enumerate(graph.words)}
    search.best = tuple(index["A" * (m - k) + "B" * k] for k in range(m + 1))  # A^m, A^(m-1) B, ..., B^m
    optimal = len(search.best) >= root_bound
    try:
        if not optimal:  # symmetric chains first, with an eighth of the budget
            try:
                search.deadline = start + time_budget / 8
                search.symmetric(root_bound)
            except _OutOfTime:
                pass
            search.deadline = start + time_budget
            optimal = len(search.best) >= root_bound
        if not optimal:
            search.longest(root_bound)
            optimal = True  # exhausted: the best is the longest
    except _OutOfTime:
        pass
    best = search.best
    chain = tuple(graph.words[v] for v in best)
    return GrayChain(
        m=m,
        chain=chain,
        optimal=optimal,
        upper_bound=len(chain) if optimal else root_bound,
        nodes_explored=search.nodes,
        seconds=time.monotonic() - start,
    )


def n_longest(m: int, time_budget: float = 10.0) -> int:
    """``n(m)``, the length of the longest Gray chain (Theorem 4.3).

    Raises:
        ValueError: if the search cannot prove optimality within ``time_budget``.
    """
    result = gray_chain(m, time_budget)
    if not result.optimal:
        raise InputError(f"n({m}) is not proved within {time_budget} s: best chain has {result.length} necklaces, upper bound {result.upper_bound}")
    return result.length
