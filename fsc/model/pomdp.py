"""Finite POMDPs: the world a controller lives in.

Axis letters: ``S`` world states, ``A`` world actions, ``O`` observations.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs
import numpy as np

from fsc.errors import InputError, InputTypeError

if TYPE_CHECKING:  # scipy is imported where it is used: `fsc pomdp` and the torch-free commands never need it
    import scipy.sparse as sp

__all__ = ["POMDP", "Task", "as_pomdp"]

_ATOL = 1e-12


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
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise InputTypeError(f"discount must be a number in (0, 1) or None, got {value!r}")
    value = float(value)
    if not (0 < value < 1):
        raise InputError(f"discount must be in (0, 1), got {value!r}")
    return value


@attrs.frozen(kw_only=True, eq=False)
class POMDP:
    """A finite partially observable world.

    All tensors are converted to float64 numpy arrays, validated at
    construction and made read-only.  Labels default to ``s0, a0, o0, ...``.

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

    transition: np.ndarray
    observation: np.ndarray
    reward: np.ndarray
    initial: np.ndarray
    metrics: Mapping[str, np.ndarray] = attrs.field(factory=dict)
    state_labels: tuple[str, ...] | None = None
    action_labels: tuple[str, ...] | None = None
    observation_labels: tuple[str, ...] | None = None
    discount: float | None = None

    def __attrs_post_init__(self) -> None:
        t = np.asarray(self.transition)
        if t.ndim != 3 or t.shape[0] != t.shape[2]:
            raise InputError(f"transition must have shape (S, A, S), got {t.shape}")
        S, A = t.shape[0], t.shape[1]
        o = np.asarray(self.observation)
        if o.ndim != 3:
            raise InputError(f"observation must have shape (A, S, O) = ({A}, {S}, O), got {o.shape}")
        O = o.shape[2]
        if S < 1 or A < 1 or O < 1:
            raise InputError(f"a POMDP needs at least one state, action and observation, got S={S}, A={A}, O={O}")
        fields = {
            "transition": _as_float_array("transition", self.transition, (S, A, S)),
            "observation": _as_float_array("observation", self.observation, (A, S, O)),
            "reward": _as_float_array("reward", self.reward, (S, A, S, O), broadcast=True),
            "initial": _as_float_array("initial", self.initial, (S,)),
        }
        _check_probabilities("transition", fields["transition"], 2)
        _check_probabilities("observation", fields["observation"], 2)
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
        return self.transition.shape[0]

    @property
    def num_actions(self) -> int:
        return self.transition.shape[1]

    @property
    def num_observations(self) -> int:
        return self.observation.shape[2]

    @property
    def dense_transition(self) -> np.ndarray:
        """``transition`` as a dense ``(S, A, S)`` array."""
        return self.transition

    @property
    def dense_observation(self) -> np.ndarray:
        """``observation`` as a dense ``(A, S, O)`` array."""
        return self.observation

    @functools.cached_property
    def sparse_transition(self) -> tuple[sp.csr_matrix, ...]:
        """Per action ``a``, ``T[:, a, :]`` as a read-only CSR matrix ``(S, S)`` (sorted indices, no zeros)."""
        import scipy.sparse as sp

        out = []
        for a in range(self.num_actions):
            matrix = sp.csr_matrix(self.transition[:, a, :])
            matrix.eliminate_zeros()
            matrix.sort_indices()
            out.append(matrix)
        return tuple(out)

    def expected_step(self, table: np.ndarray) -> np.ndarray:
        """``sum_{s2, o} T[s, a, s2] O[a, s2, o] table[s, a, s2, o]``, shape ``(S, A)``: the expected value of a
        per-step table (the reward, a metric) when action ``a`` is played in state ``s``.

        A table that does not depend on ``s2`` and ``o`` (stored compact) is its own expectation; otherwise
        the sum runs over the transitions that can happen, never over a dense ``(S, A, S, O)`` product.
        """
        table = np.asarray(table)
        if table.strides[2] == 0 and table.strides[3] == 0:
            return np.array(table[:, :, 0, 0], dtype=np.float64)
        out = np.zeros((self.num_states, self.num_actions))
        for a, matrix in enumerate(self.sparse_transition):
            rows = np.repeat(np.arange(self.num_states), np.diff(matrix.indptr))
            cols = matrix.indices
            # sum_o O[a, s2, o] table[s, a, s2, o] on each transition (s, s2) that can happen.
            seen = np.einsum("eo,eo->e", self.observation[a][cols], table[rows, a, cols])
            out[:, a] = np.bincount(rows, weights=matrix.data * seen, minlength=self.num_states)
        return out

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
        rows, cols = np.nonzero(np.asarray(self.transition).any(axis=1))
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


def paper_read(world: object, gain: object) -> dict[str, object] | None:
    """``world.paper_metrics(gain)`` when the world defines that read-out (tasks may), else None."""
    read = getattr(world, "paper_metrics", None)
    return read(gain) if callable(read) else None
