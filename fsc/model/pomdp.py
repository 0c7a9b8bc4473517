"""Finite POMDPs: the world a controller lives in.

Axis letters: ``S`` world states, ``A`` world actions, ``O`` observations.
"""

from __future__ import annotations

import abc
import functools
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs
import numpy as np

from fsc.checks import check_reset, positive, real
from fsc.errors import InputError, InputTypeError
from fsc.limits import check_dense_table

if TYPE_CHECKING:  # scipy is imported where it is used: `fsc pomdp` and the torch-free commands never need it
    import scipy.sparse as sp

__all__ = ["POMDP", "SparseTable", "Task", "as_pomdp", "resolve_reset"]

_ATOL = 1e-12


def readonly_array(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _as_float_array(name: str, value, shape: tuple[int, ...], *, broadcast: bool = False) -> np.ndarray:
    """Return ``value`` as a read-only float64 array of ``shape``, or raise.

    With ``broadcast``, an array of the same number of axes with size 1
    where ``shape`` has more (a reward that does not depend on the next state
    or the observation) is kept compact, as a read-only broadcast view.
    """
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InputTypeError(f"{name} must be an array of numbers, got {type(value).__name__}") from error
    compact = broadcast and array.ndim == len(shape) and all(n in (1, m) for n, m in zip(array.shape, shape, strict=True))
    if array.shape != shape and not compact:
        raise InputError(f"{name} must have shape {shape}, got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InputError(f"{name} must be finite, got a NaN or inf")
    array.setflags(write=False)
    return np.broadcast_to(array, shape) if array.shape != shape else array


def _check_probabilities(name: str, array: np.ndarray, axis: int) -> None:
    if np.any(array < 0):
        raise InputError(f"{name} must be non-negative, got minimum {float(array.min())!r}")
    sums = array.sum(axis=axis)
    if not np.allclose(sums, 1.0, rtol=0, atol=_ATOL * 1e3):
        worst = sums.flat[np.argmax(np.abs(sums - 1.0))]
        raise InputError(f"{name} must sum to 1 over axis {axis}, got a sum of {float(worst)!r}")


def _labels(name: str, value, size: int, default) -> tuple[str, ...]:
    if value is None:
        return tuple(default(i) for i in range(size))
    labels = tuple(value)
    if len(labels) != size or not all(isinstance(x, str) for x in labels):
        raise InputError(f"{name} must be {size} strings, got {value!r}")
    if len(set(labels)) != size:
        raise InputError(f"{name} must be distinct, got {value!r}")
    return labels


def _discount(value) -> float | None:
    return positive("discount", value, 1, optional=True)


@attrs.frozen(eq=False)
class SparseTable:
    """A probability or reward table stored by rows, in compressed sparse row form (numpy only).

    The table has the logical ``shape`` of the dense array it stands for (``(S, A, S)`` for a transition,
    ``(A, S, O)`` for an observation, ``(S, A, S', O')`` for a reward); its first ``len(shape) - columns``
    axes, flattened in C order, number the rows, and the last ``columns`` axes, flattened, number the
    columns.  Row ``i`` holds ``data[indptr[i]:indptr[i + 1]]`` at the columns ``indices[...]`` (sorted,
    each at most once); every other cell of the row holds ``fill[i]`` (0 when ``fill`` is None).

    Attributes:
        shape: the logical shape.
        columns: how many trailing axes make the columns (1, or 2 for a reward over ``(s2, o)``).
        indptr: ``(rows + 1,)`` int64.
        indices: ``(nnz,)`` int64, sorted within each row.
        data: ``(nnz,)`` float64.
        fill: ``(rows,)`` float64 or None, the value of the cells not listed.
    """

    shape: tuple[int, ...] = attrs.field(converter=lambda s: tuple(int(n) for n in s))
    columns: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    fill: np.ndarray | None = None

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.columns < len(self.shape):
            raise InputError(f"a sparse table's columns must be 1 to {len(self.shape) - 1} trailing axes, got {self.columns}")
        rows, cols = self.num_rows, self.num_columns
        indptr = np.asarray(self.indptr)
        indices = np.asarray(self.indices)
        data = np.asarray(self.data)
        if indptr.shape != (rows + 1,) or indices.ndim != 1 or data.shape != indices.shape:
            raise InputError(f"a sparse table of {rows} rows needs indptr of {rows + 1} entries and as many indices as data")
        if not (np.issubdtype(indptr.dtype, np.integer) and np.issubdtype(indices.dtype, np.integer)):
            raise InputTypeError("a sparse table's indptr and indices must be integers")
        if indptr[0] != 0 or indptr[-1] != len(indices) or np.any(np.diff(indptr) < 0):
            raise InputError("a sparse table's indptr must rise from 0 to the number of entries")
        if len(indices) and (indices.min() < 0 or indices.max() >= cols):
            raise InputError(f"a sparse table's column indices must lie in [0, {cols}), got {int(indices.min())} to {int(indices.max())}")
        row_of = np.repeat(np.arange(rows), np.diff(indptr))
        if len(indices) > 1 and np.any((np.diff(indices) <= 0) & (row_of[1:] == row_of[:-1])):
            raise InputError("a sparse table's column indices must be sorted and distinct within each row")
        fields = {
            "indptr": indptr.astype(np.int64),
            "indices": indices.astype(np.int64),
            "data": _as_float_array("a sparse table's data", data, data.shape),
        }
        if self.fill is not None:
            fields["fill"] = _as_float_array("a sparse table's fill", self.fill, (rows,))
        for name, value in fields.items():
            value = np.array(value) if value.flags.writeable else value
            value.setflags(write=False)
            object.__setattr__(self, name, value)

    @property
    def num_rows(self) -> int:
        return math.prod(self.shape[: len(self.shape) - self.columns])

    @property
    def num_columns(self) -> int:
        return math.prod(self.shape[len(self.shape) - self.columns :])

    @property
    def nnz(self) -> int:
        return len(self.data)

    @functools.cached_property
    def row_of(self) -> np.ndarray:
        """The row of each entry, ``(nnz,)``."""
        return readonly_array(np.repeat(np.arange(self.num_rows), np.diff(self.indptr)))

    @classmethod
    def from_dense(cls, array: np.ndarray, columns: int = 1) -> SparseTable:
        """The entries of ``array`` that differ from 0, by rows (no fill)."""
        array = np.asarray(array, dtype=np.float64)
        flat = array.reshape(math.prod(array.shape[: array.ndim - columns]), -1)
        rows, cols = np.nonzero(flat)
        indptr = np.zeros(flat.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=flat.shape[0]), out=indptr[1:])
        return cls(array.shape, columns, indptr, cols, flat[rows, cols])

    def dense(self) -> np.ndarray:
        """The dense array (``prod(shape)`` numbers)."""
        out = np.zeros((self.num_rows, self.num_columns))
        if self.fill is not None:
            out[:] = self.fill[:, None]  # assigned, not added: a fill of -0.0 stays -0.0
        out[self.row_of, self.indices] = self.data
        return out.reshape(self.shape)

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The entries of ``rows`` (a row may come more than once): ``(which, at)``, where entry ``at[k]`` of
        ``indices`` and ``data`` lies in row ``rows[which[k]]``."""
        rows = np.asarray(rows, dtype=np.int64)
        counts = np.diff(self.indptr)[rows]
        which = np.repeat(np.arange(len(rows)), counts)
        at = np.repeat(self.indptr[rows] - (np.cumsum(counts) - counts), counts) + np.arange(len(which))
        return which, at

    def row(self, i: int) -> np.ndarray:
        """Row ``i`` as a dense vector of ``num_columns`` numbers."""
        out = np.full(self.num_columns, 0.0 if self.fill is None else self.fill[i])
        lo, hi = self.indptr[i], self.indptr[i + 1]
        out[self.indices[lo:hi]] = self.data[lo:hi]
        return out

    def lookup(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The values at the cells ``(rows[e], cols[e])`` (``fill``, or 0, where no entry is stored)."""
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        keys = self.row_of * self.num_columns + self.indices  # sorted: rows in order, columns sorted in each
        wanted = rows * self.num_columns + cols
        at = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
        found = keys[at] == wanted if len(keys) else np.zeros(len(wanted), dtype=bool)
        default = np.zeros(len(wanted)) if self.fill is None else self.fill[rows]
        return np.where(found, self.data[at] if len(keys) else 0.0, default)

    def row_sums(self) -> np.ndarray:
        """The sum of each row (fill counted), ``(rows,)``."""
        sums = np.bincount(self.row_of, weights=self.data, minlength=self.num_rows)
        if self.fill is not None:
            sums += self.fill * (self.num_columns - np.diff(self.indptr))
        return sums


@attrs.frozen(kw_only=True, eq=False)
class POMDP:
    """A finite partially observable world.

    All tensors are converted to float64 numpy arrays, validated at
    construction and made read-only.  Labels default to ``s0, a0, o0, ...``.

    ``transition``, ``observation`` and ``reward`` may each be given as a :class:`SparseTable` of the same
    logical shape instead of a dense array (a ``.POMDP`` file of many states is read so): the world then
    keeps only its entries.  The attributes below still read as dense arrays, built on first use; the
    code for large worlds reads :attr:`transition_table`, :attr:`observation_table`, :attr:`sparse_transition`
    and :meth:`expected_step` instead, which never build them.

    Attributes:
        transition: ``transition[s, a, s2] = P(s2 | s, a)``, shape ``(S, A, S)``.
        observation: ``observation[a, s2, o] = P(o | a, s2)``, shape ``(A, S, O)``.
        reward: ``reward[s, a, s2, o]``, the reward of the step, shape ``(S, A, S, O)``;
            an array with size 1 along ``s2`` or ``o`` (e.g. ``(S, A, 1, 1)``)
            is kept compact and read through a broadcast view.
        initial: ``initial[s]``, the world's state after a reset, shape ``(S,)``.
        metrics: named per-step quantities with the shape of ``reward``; the
            evaluation reports their stationary expectation (for instance the
            indicator of playing the worse arm, whose expectation is ``q``).
        state_labels, action_labels, observation_labels: names, one per index.
        discount: the discount factor ``gamma`` in (0, 1) the world declares
            (a ``.POMDP`` file's ``discount:``), or None.  Evaluation uses it
            as the reset ``r = 1 - gamma`` when given neither.
    """

    _transition: np.ndarray | SparseTable = attrs.field(alias="transition")
    _observation: np.ndarray | SparseTable = attrs.field(alias="observation")
    _reward: np.ndarray | SparseTable = attrs.field(alias="reward")
    initial: np.ndarray
    metrics: Mapping[str, np.ndarray] = attrs.field(factory=dict)
    state_labels: tuple[str, ...] | None = None
    action_labels: tuple[str, ...] | None = None
    observation_labels: tuple[str, ...] | None = None
    discount: float | None = None

    def __attrs_post_init__(self) -> None:
        t = self._transition if isinstance(self._transition, SparseTable) else np.asarray(self._transition)
        if len(t.shape) != 3 or t.shape[0] != t.shape[2]:
            raise InputError(f"transition must have shape (S, A, S), got {t.shape}")
        S, A = t.shape[0], t.shape[1]
        o = self._observation if isinstance(self._observation, SparseTable) else np.asarray(self._observation)
        if len(o.shape) != 3:
            raise InputError(f"observation must have shape (A, S, O) = ({A}, {S}, O), got {o.shape}")
        O = o.shape[2]
        if S < 1 or A < 1 or O < 1:
            raise InputError(f"a POMDP needs at least one state, action and observation, got S={S}, A={A}, O={O}")
        fields = {
            "_transition": _probability_table("transition", self._transition, (S, A, S), 2),
            "_observation": _probability_table("observation", self._observation, (A, S, O), 2),
            "_reward": _reward_table(self._reward, (S, A, S, O)),
            "initial": _as_float_array("initial", self.initial, (S,)),
        }
        _check_probabilities("initial", fields["initial"], 0)
        if not isinstance(self.metrics, Mapping):
            raise InputTypeError(f"metrics must be a mapping of names to arrays, got {type(self.metrics).__name__}")
        metrics = {}
        for name, value in self.metrics.items():
            if not isinstance(name, str) or not name:
                raise InputTypeError(f"metric names must be non-empty strings, got {name!r}")
            metrics[name] = _as_float_array(f"metric {name!r}", value, (S, A, S, O))
        fields["metrics"] = metrics
        fields["state_labels"] = _labels("state_labels", self.state_labels, S, lambda i: f"s{i}")
        fields["action_labels"] = _labels("action_labels", self.action_labels, A, lambda i: f"a{i}")
        fields["observation_labels"] = _labels("observation_labels", self.observation_labels, O, lambda i: f"o{i}")
        fields["discount"] = _discount(self.discount)
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    @property
    def num_states(self) -> int:
        return self._transition.shape[0]

    @property
    def num_actions(self) -> int:
        return self._transition.shape[1]

    @property
    def num_observations(self) -> int:
        return self._observation.shape[2]

    @property
    def is_sparse(self) -> bool:
        """Whether the world keeps its transitions as a :class:`SparseTable` (a large world read from a file)."""
        return isinstance(self._transition, SparseTable)

    @functools.cached_property
    def transition(self) -> np.ndarray:
        """``T[s, a, s2]``, dense ``(S, A, S)`` (built on first use when the world is stored sparse; refused
        beyond :data:`fsc.limits.MAX_DENSE_WORLD_NUMBERS`)."""
        if isinstance(self._transition, SparseTable):
            check_dense_table("transition", (self.num_states, self.num_actions, self.num_states), what="this use of the world")
        return _dense(self._transition)

    @functools.cached_property
    def observation(self) -> np.ndarray:
        """``O[a, s2, o]``, dense ``(A, S, O)`` (built on first use when the world is stored sparse; refused
        beyond :data:`fsc.limits.MAX_DENSE_WORLD_NUMBERS`)."""
        if isinstance(self._observation, SparseTable):
            check_dense_table("observation", (self.num_actions, self.num_states, self.num_observations), what="this use of the world")
        return _dense(self._observation)

    @functools.cached_property
    def reward(self) -> np.ndarray:
        """``R[s, a, s2, o]``, ``(S, A, S, O)``, compact axes read through a broadcast view."""
        if isinstance(self._reward, SparseTable):
            return np.broadcast_to(_dense(self._reward), (self.num_states, self.num_actions, self.num_states, self.num_observations))
        return self._reward

    @property
    def dense_transition(self) -> np.ndarray:
        """``transition`` as a dense ``(S, A, S)`` array."""
        return self.transition

    @property
    def dense_observation(self) -> np.ndarray:
        """``observation`` as a dense ``(A, S, O)`` array."""
        return self.observation

    @functools.cached_property
    def transition_table(self) -> SparseTable:
        """``T`` by rows ``(s, a)`` (row ``s * A + a``) over ``s2``: a :class:`SparseTable`, without zeros."""
        return _table(self._transition)

    @functools.cached_property
    def observation_table(self) -> SparseTable:
        """``O`` by rows ``(a, s2)`` (row ``a * S + s2``) over ``o``: a :class:`SparseTable`, without zeros."""
        return _table(self._observation)

    @property
    def reward_table(self) -> np.ndarray | SparseTable:
        """The reward as stored: a :class:`SparseTable` ``(S, A, S', O')`` with a fill, or a (compact) array."""
        return self._reward

    @functools.cached_property
    def sparse_transition(self) -> tuple[sp.csr_matrix, ...]:
        """Per action ``a``, ``T[:, a, :]`` as a read-only CSR matrix ``(S, S)`` (sorted indices, no zeros)."""
        import scipy.sparse as sp

        t = self.transition_table
        whole = sp.csr_matrix((t.data, t.indices, t.indptr), shape=(t.num_rows, self.num_states))
        out = []
        for a in range(self.num_actions):
            matrix = whole[a :: self.num_actions]
            matrix.sort_indices()
            out.append(matrix)
        return tuple(out)

    def expected_step(self, table: np.ndarray | SparseTable) -> np.ndarray:
        """``sum_{s2, o} T[s, a, s2] O[a, s2, o] table[s, a, s2, o]``, shape ``(S, A)``: the expected value of a
        per-step table (the reward, a metric) when action ``a`` is played in state ``s``.

        A table that does not depend on ``s2`` and ``o`` (stored compact) is its own expectation; a
        :class:`SparseTable` (a large world's reward) is its fill plus its entries weighted by their
        probability; otherwise the sum runs over the transitions that can happen, never over a dense
        ``(S, A, S, O)`` product.
        """
        S, A = self.num_states, self.num_actions
        if isinstance(table, SparseTable):
            return _expected_sparse(self, table)
        table = np.asarray(table)
        if table.strides[2] == 0 and table.strides[3] == 0:
            return np.array(table[:, :, 0, 0], dtype=np.float64)
        t = self.transition_table
        s, a, s2 = t.row_of // A, t.row_of % A, t.indices
        # sum_o O[a, s2, o] table[s, a, s2, o] on each transition (s, a, s2) that can happen.
        seen = np.einsum("eo,eo->e", self.observation[a, s2], table[s, a, s2])
        return np.bincount(t.row_of, weights=t.data * seen, minlength=S * A).reshape(S, A)

    @functools.cached_property
    def parts(self) -> tuple[tuple[int, ...], ...]:
        """The closed parts of the world that the reset can start in.

        Two states are in one part when some action sequence links them (the
        connected components of the undirected graph of ``transition``).  A
        controller never leaves its part, so each part is solved on its own.
        Parts with no initial mass are dropped.
        """
        S = self.num_states
        # Weakly connected components by the smallest state reachable either way: min-label propagation over
        # the edges with pointer jumping (numpy only, so `fsc pomdp` needs no scipy).
        t = self.transition_table
        rows, cols = t.row_of // self.num_actions, t.indices
        label = np.arange(S)
        while True:
            new = label.copy()
            np.minimum.at(new, rows, label[cols])
            np.minimum.at(new, cols, label[rows])
            new = new[new]
            if np.array_equal(new, label):
                break
            label = new
        roots, label = np.unique(label, return_inverse=True)
        count = len(roots)
        # Parts numbered by their smallest state, as they always were.
        first = np.full(count, S, dtype=np.int64)
        np.minimum.at(first, label, np.arange(S))
        groups = np.split(np.argsort(label, kind="stable"), np.cumsum(np.bincount(label, minlength=count))[:-1])
        parts = []
        for part in np.argsort(first, kind="stable"):
            members = groups[part]
            if self.initial[members].sum() > 0:
                parts.append(tuple(int(s) for s in members))
        return tuple(parts)


def _dense(table: np.ndarray | SparseTable) -> np.ndarray:
    return readonly_array(table.dense()) if isinstance(table, SparseTable) else table


def _table(table: np.ndarray | SparseTable) -> SparseTable:
    """A probability table as a :class:`SparseTable` of its entries that differ from 0."""
    if isinstance(table, SparseTable):
        keep = table.data != 0
        if keep.all():
            return table
        indptr = np.zeros(table.num_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(table.row_of[keep], minlength=table.num_rows), out=indptr[1:])
        return SparseTable(table.shape, 1, indptr, table.indices[keep], table.data[keep])
    return SparseTable.from_dense(table)


def _probability_table(name: str, value, shape: tuple[int, ...], axis: int) -> np.ndarray | SparseTable:
    """``value`` checked as a table of probabilities of ``shape``, each row along its last axis summing to 1."""
    if not isinstance(value, SparseTable):
        array = _as_float_array(name, value, shape)
        _check_probabilities(name, array, axis)
        return array
    if value.shape != shape or value.columns != 1:
        raise InputError(f"{name} must have shape {shape} with one axis of columns, got {value.shape} with {value.columns}")
    if value.fill is not None and np.any(value.fill != 0):
        raise InputError(f"{name} as a sparse table must have no fill, got one")
    if np.any(value.data < 0):
        raise InputError(f"{name} must be non-negative, got minimum {float(value.data.min())!r}")
    sums = value.row_sums()
    if not np.allclose(sums, 1.0, rtol=0, atol=_ATOL * 1e3):
        worst = sums[np.argmax(np.abs(sums - 1.0))]
        raise InputError(f"{name} must sum to 1 over axis {axis}, got a sum of {float(worst)!r}")
    return value


def _reward_table(value, shape: tuple[int, ...]) -> np.ndarray | SparseTable:
    if not isinstance(value, SparseTable):
        return _as_float_array("reward", value, shape, broadcast=True)
    S, A, _, O = shape
    if value.columns != 2 or len(value.shape) != 4 or value.shape[:2] != (S, A) or value.shape[2] not in (1, S) or value.shape[3] not in (1, O):
        raise InputError(f"reward as a sparse table must have shape (S, A, S or 1, O or 1) = ({S}, {A}, ...) with two axes of columns, got {value.shape}")
    return value


def _expected_sparse(world: POMDP, table: SparseTable) -> np.ndarray:
    """:meth:`POMDP.expected_step` of a reward stored as a :class:`SparseTable` ``(S, A, S', O')``: each row's
    fill (``T`` and ``O`` rows sum to 1) plus each entry's difference from it times the probability of its cell."""
    S, A = world.num_states, world.num_actions
    base = np.zeros(S * A) if table.fill is None else table.fill.copy()
    if table.nnz == 0:
        return base.reshape(S, A)
    row, col = table.row_of, table.indices
    excess = table.data - (0.0 if table.fill is None else table.fill[row])
    a = row % A
    by_end, by_observation = table.shape[2] == S, table.shape[3] > 1
    O2 = table.shape[3]
    t, obs = world.transition_table, world.observation_table
    if by_end:
        s2 = col // O2
        weight = t.lookup(row, s2)
        if by_observation:
            weight = weight * obs.lookup(a * S + s2, col % O2)
    elif by_observation:
        # P(o | s, a) = sum_s2 T[s, a, s2] O[a, s2, o]: each entry against the transitions of its row.
        entry, at = t.gather(row)
        seen = t.data[at] * obs.lookup(a[entry] * S + t.indices[at], col[entry])
        weight = np.bincount(entry, weights=seen, minlength=len(row))
    else:
        weight = np.ones(len(row))
    return (base + np.bincount(row, weights=weight * excess, minlength=S * A)).reshape(S, A)


class Task(abc.ABC):
    """A named problem: a POMDP plus what its users call its metrics.

    Subclasses are final attrs classes holding the task's parameters.
    """

    @property
    @abc.abstractmethod
    def pomdp(self) -> POMDP:
        """The world of this task."""

    def paper_metrics(self, gain: object) -> dict[str, object] | None:
        """The metrics as the ``paper`` convention reads them from the gain.

        None (the default): the ``paper`` convention scales each native
        metric by ``1 - r``, as it does the gain.

        ``gain`` is a float, a tensor (``fsc.evaluate``, for autograd) or,
        in training, a float64 array of many steps' gains: write it
        elementwise (the metrics of each gain alone), as arithmetic on
        ``gain`` is.  A read-out written for floats alone also works, a
        step at a time.
        """
        return None


def as_pomdp(world: POMDP | Task) -> POMDP:
    """Return the POMDP of ``world``: a POMDP, or anything whose ``pomdp`` is one (a :class:`Task`, or any
    object of yours: subclassing ``Task`` is not required)."""
    if isinstance(world, POMDP):
        return world
    pomdp = getattr(world, "pomdp", None)
    if isinstance(pomdp, POMDP):
        return pomdp
    raise InputTypeError(f"world must be a fsc.POMDP or an object whose .pomdp is one (a fsc.Task), got {type(world).__name__}")


def resolve_reset(world: POMDP | Task, reset: object = None, discount: object = None, *, allow_zero: bool = True, default: float | None = None) -> float:
    """The reset ``r`` from ``reset``, or ``discount`` (``r = 1 - discount``), or the world's discount, or ``default``.

    Here, beside the world, and not in :mod:`fsc.evaluate` (which re-exports it): the commands resolve the reset
    before they import torch.

    ``reset`` and ``discount`` are two names for one parameter: give at most one.

    Raises:
        ValueError: both given; neither, and the world declares no discount; out of range.
    """
    if reset is not None and discount is not None:
        raise InputError(f"give reset or discount, not both (reset={reset!r}, discount={discount!r}): reset = 1 - discount")
    if discount is not None:
        return check_reset(1.0 - real("discount", discount, 0, 1), allow_zero=allow_zero)
    if reset is None:
        declared = as_pomdp(world).discount
        if declared is not None:
            return 1.0 - declared
        if default is None:
            raise InputError("give reset= or discount=: the world declares no discount")
        reset = default
    return check_reset(reset, allow_zero=allow_zero)


def paper_read(world: object, gain: object) -> dict[str, object] | None:
    """``world.paper_metrics(gain)`` when the world defines that read-out (tasks may), else None."""
    read = getattr(world, "paper_metrics", None)
    return read(gain) if callable(read) else None
