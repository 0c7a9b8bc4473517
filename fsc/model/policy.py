"""Policies: the weights of a controller on a memory architecture.

Axis letters: ``N`` memory nodes, ``C`` choices.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import attrs
import numpy as np

from fsc.checks import integer, is_real, nonnegative
from fsc.errors import InputError, InputTypeError, quoted
from fsc.files import NpzArchive, atomic_write, check_regular_file, read_limited
from fsc.limits import MAX_JSON_POLICY_BYTES, MAX_NPZ_BYTES, MAX_NPZ_INFLATED
from fsc.model.architecture import MemoryArchitecture

if TYPE_CHECKING:  # torch: imported where a tensor is made, so that a policy file is read without it (read_policy_file)
    import torch

__all__ = ["Policy", "Weights", "read_policy_file"]


class Weights(NamedTuple):
    """A policy's architecture and logits as numpy arrays, checked as a :class:`Policy` checks them: what the
    commands that compute no gradient read and evaluate without torch (:func:`read_policy_file`)."""

    architecture: MemoryArchitecture
    logits: np.ndarray
    init_logits: np.ndarray

    def probs(self) -> np.ndarray:
        """``probs[n, c]``, shape ``(N, C)`` (numpy's softmax over the allowed choices)."""
        return _softmax(self.logits, self.architecture.allowed)

    def init_probs(self) -> np.ndarray:
        """Initial-node distribution, shape ``(N,)``; zero outside the reset nodes."""
        return _softmax(self.init_logits[None, :], self.architecture.reset_mask[None, :])[0]

    def save(self, path: str | os.PathLike) -> None:
        """Write the policy file :meth:`Policy.save` writes of the same logits (without torch)."""
        _save(Path(path), self.architecture, np.asarray(self.logits), np.asarray(self.init_logits))


def _softmax(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Softmax of each row over its ``mask``ed entries (zero elsewhere); every row has a finite logit there."""
    z = np.where(mask, logits, -np.inf)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _as_logits(name: str, value, shape: tuple[int, ...]) -> torch.Tensor:
    import torch

    if isinstance(value, torch.Tensor):
        if value.is_complex():
            raise InputTypeError(f"{name} must be real numbers, got a complex tensor")
        tensor = value if value.dtype == torch.float64 else value.to(torch.float64)
        _check_logits(name, tuple(tensor.shape), tensor.detach().numpy(), shape)
        return tensor
    return torch.from_numpy(_logit_array(name, value, shape))


def _logit_array(name: str, value, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` (not a tensor) as float64 logits of shape ``shape``, checked as :func:`_as_logits` checks them."""
    if np.iscomplexobj(value) or (isinstance(value, np.ndarray) and value.dtype.kind not in "biuf"):
        raise InputTypeError(f"{name} must be an array of real numbers, got {np.asarray(value).dtype} values")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InputTypeError(f"{name} must be an array of real numbers, got {type(value).__name__}") from error
    _check_logits(name, array.shape, array, shape)
    return array


def _check_logits(name: str, got: tuple[int, ...], array: np.ndarray, shape: tuple[int, ...]) -> None:
    if got != shape:
        raise InputError(f"{name} must have shape {shape}, got {got}")
    if not array.max(initial=-math.inf) < math.inf:  # NaN propagates through max
        raise InputError(f"{name} must not contain NaN or +inf")


def _check_alive(arch: MemoryArchitecture, logits: np.ndarray, init_logits: np.ndarray) -> None:
    """Every node has a finite logit on an allowed choice, and some reset node a finite initial logit."""
    alive = (np.isfinite(logits) & arch.allowed).any(axis=1)
    if not alive.all():
        n = int(np.flatnonzero(~alive)[0])
        raise InputError(f"node {arch.node_labels[n]!r} has no allowed choice with a finite logit")
    if not (np.isfinite(init_logits) & arch.reset_mask).any():
        raise InputError("init_logits must give a finite logit to at least one reset node")


@attrs.frozen(kw_only=True, eq=False)
class Policy:
    """Logits over the allowed choices of each node, and over the reset nodes.

    ``probs[n, c] = softmax over allowed c of logits[n, c]``; a disallowed
    choice has probability exactly 0 and receives no gradient (the
    architecture is a hard constraint).  The initial-node distribution is the
    softmax of ``init_logits`` over the architecture's reset nodes.  A logit
    of ``-inf`` on an allowed choice means probability 0 as well.

    The tensors are float64; a frozen policy does not freeze their contents,
    so treat them as read-only (make a new policy with :func:`attrs.evolve`).
    Leaves with ``requires_grad`` are kept as they are, so the gradient of an
    evaluation flows back to them.

    Attributes:
        architecture: the memory architecture.
        logits: shape ``(N, C)``.
        init_logits: shape ``(N,)``; entries outside the reset nodes are ignored.
    """

    architecture: MemoryArchitecture
    logits: torch.Tensor
    init_logits: torch.Tensor

    def __attrs_post_init__(self) -> None:
        arch = self.architecture
        if not isinstance(arch, MemoryArchitecture):
            raise InputTypeError(f"architecture must be a fsc.MemoryArchitecture, got {type(arch).__name__}")
        N, C = arch.num_nodes, arch.num_choices
        logits = _as_logits("logits", self.logits, (N, C))
        init_logits = _as_logits("init_logits", self.init_logits, (N,))
        _check_alive(arch, logits.detach().numpy(), init_logits.detach().numpy())
        object.__setattr__(self, "logits", logits)
        object.__setattr__(self, "init_logits", init_logits)

    # Alternative constructors.

    @classmethod
    def uniform(cls, architecture: MemoryArchitecture) -> Policy:
        """Every allowed choice and every reset node equally likely."""
        import torch

        N, C = architecture.num_nodes, architecture.num_choices
        return cls(architecture=architecture, logits=torch.zeros(N, C, dtype=torch.float64), init_logits=torch.zeros(N, dtype=torch.float64))

    @classmethod
    def random(cls, architecture: MemoryArchitecture, generator: torch.Generator | int | None = None, std: float = 1.0) -> Policy:
        """Gaussian logits with standard deviation ``std`` (paper section 5, *random*).

        Args:
            generator: a ``torch.Generator`` or an integer seed.
        """
        import torch

        if generator is not None and not isinstance(generator, torch.Generator):  # an int seed
            generator = torch.Generator().manual_seed(integer("generator (a torch.Generator or an int seed)", generator))
        std = nonnegative("std", std)
        N, C = architecture.num_nodes, architecture.num_choices
        logits = std * torch.randn(N, C, generator=generator, dtype=torch.float64)
        init_logits = std * torch.randn(N, generator=generator, dtype=torch.float64)
        return cls(architecture=architecture, logits=logits, init_logits=init_logits)

    @classmethod
    def from_probs(cls, architecture: MemoryArchitecture, probs, init_probs=None) -> Policy:
        """The policy with these probabilities (zeros become ``-inf`` logits).

        Args:
            probs: ``(N, C)``, non-negative, zero on disallowed choices, rows summing to 1.
            init_probs: ``(N,)`` on the reset nodes, summing to 1; default uniform.
        """
        N, C = architecture.num_nodes, architecture.num_choices
        probs = _as_probs("probs", probs, (N, C))
        if (probs[~architecture.allowed] != 0).any():
            n, c = np.argwhere((probs != 0) & ~architecture.allowed)[0]
            raise InputError(f"probs gives mass to the disallowed choice {architecture.choice_labels[c]!r} of node {architecture.node_labels[n]!r}")
        _check_sums("probs", probs.sum(axis=1), architecture.node_labels)
        reset = architecture.reset_mask
        if init_probs is None:
            init_probs = reset / reset.sum()
        init_probs = _as_probs("init_probs", init_probs, (N,))
        if (init_probs[~reset] != 0).any():
            n = int(np.flatnonzero((init_probs != 0) & ~reset)[0])
            raise InputError(f"init_probs gives mass to node {architecture.node_labels[n]!r}, which is not a reset node")
        _check_sums("init_probs", np.array([init_probs.sum()]), ("all nodes",))
        with np.errstate(divide="ignore"):
            return cls(architecture=architecture, logits=np.log(probs), init_logits=np.log(init_probs))

    @classmethod
    def from_controller(cls, architecture: MemoryArchitecture, action, next_node, initial=0, *, mix: float = 0.0) -> Policy:
        """A classic finite-state controller as a policy on ``RAM(N, arms=A, observations=O)``.

        ``action``: node -> action (``(N,)`` integers or ``(N, A)``
        probabilities); ``next_node``: (node, action, observation) -> node
        (``(N, A, O)`` integers or ``(N, A, O, N)`` probabilities);
        ``initial``: the initial node (an integer or ``(N,)`` probabilities).
        ``mix`` in [0, 1) mixes every row with the uniform distribution (a
        start for training, whose logits are then finite).  See
        :mod:`fsc.model.controller` for the mapping.
        """
        from fsc.model.controller import controller_probs

        probs, init = controller_probs(architecture, action, next_node, initial)
        if not (is_real(mix) and 0 <= mix < 1):
            raise InputError(f"mix must be a number in [0, 1), got {mix!r}")
        if mix:
            probs = (1 - mix) * probs + mix / probs.shape[1]
            reset = architecture.reset_mask
            init = (1 - mix) * init + mix * reset / reset.sum()
        return cls.from_probs(architecture, probs, init)

    def skeleton(self):
        """The deterministic classic controller closest to this policy on RAM (:func:`fsc.model.controller.skeleton`)."""
        from fsc.model.controller import skeleton

        return skeleton(self)

    # Views.

    def probs(self) -> torch.Tensor:
        """``probs[n, c]``, shape ``(N, C)``; differentiable in ``logits``."""
        import torch

        mask = torch.from_numpy(self.architecture.allowed.copy())
        return torch.softmax(self.logits.masked_fill(~mask, -math.inf), dim=1)

    def init_probs(self) -> torch.Tensor:
        """Initial-node distribution, shape ``(N,)``; zero outside the reset nodes."""
        import torch

        mask = torch.from_numpy(self.architecture.reset_mask.copy())
        return torch.softmax(self.init_logits.masked_fill(~mask, -math.inf), dim=0)

    def detach(self) -> Policy:
        """The same policy on detached copies of the logits."""
        return attrs.evolve(self, logits=self.logits.detach().clone(), init_logits=self.init_logits.detach().clone())

    def requires_grad_(self) -> Policy:
        """A copy whose logits are fresh leaves that require a gradient."""
        return attrs.evolve(
            self,
            logits=self.logits.detach().clone().requires_grad_(True),
            init_logits=self.init_logits.detach().clone().requires_grad_(True),
        )

    # Files.

    def save(self, path: str | os.PathLike) -> None:
        """Write to ``.npz`` or ``.json`` (by suffix), atomically; never pickle.

        ``init_logits`` is written ``-inf`` on the nodes a reset never starts in (docs/formats.md), whatever the
        policy holds there (it is ignored).
        """
        _save(Path(path), self.architecture, self.logits.detach().cpu().numpy(), self.init_logits.detach().cpu().numpy())

    @classmethod
    def load(cls, path: str | os.PathLike) -> Policy:
        """Read a policy written by :meth:`save` (:func:`read_policy_file`, whose errors it raises)."""
        architecture, logits, init_logits = read_policy_file(path)
        return cls(architecture=architecture, logits=logits, init_logits=init_logits)


def _save(path: Path, architecture: MemoryArchitecture, logits: np.ndarray, init_logits: np.ndarray) -> None:
    """:meth:`Policy.save` of these logits (and :meth:`Weights.save`)."""
    spec = json.dumps(architecture.to_dict())
    init_logits = _reset_only(architecture, init_logits)
    if path.suffix == ".npz":
        atomic_write(path, lambda f: np.savez(f, architecture=np.array(spec), logits=logits, init_logits=init_logits))
    elif path.suffix == ".json":
        doc = {
            "architecture": json.loads(spec),
            "logits": _json_floats(logits),
            "init_logits": _json_floats(init_logits),
        }
        atomic_write(path, lambda f: f.write(json.dumps(doc).encode()))
    else:
        raise InputError(f"policy files end in .npz or .json, got {quoted(path)}")


def read_policy_file(path: str | os.PathLike) -> Weights:
    """The architecture, logits ``(N, C)`` and initial logits ``(N,)`` of a policy file, as :meth:`Policy.load`
    reads them and checked as a :class:`Policy` checks them, without torch (the commands that compute no gradient).

    Any unreadable file (missing, a FIFO, a device or a directory, too large, empty, truncated, not a zip,
    a key missing, arrays of another shape than the architecture's or of complex numbers, absurd numbers,
    JSON nested too deep) raises ``ValueError`` naming the file; nothing larger than the file's own
    architecture needs is allocated. ``init_logits`` on the nodes a reset never starts in are set to ``-inf``
    (they are ignored; docs/formats.md).
    """
    path = Path(path)
    try:
        architecture, logits, init_logits = _read(path)
        N, C = architecture.num_nodes, architecture.num_choices
        logits = _logit_array("logits", logits, (N, C))
        init_logits = _logit_array("init_logits", init_logits, (N,))
        _check_alive(architecture, logits, init_logits)
        return Weights(architecture, logits, init_logits)
    except (OSError, EOFError, KeyError, IndexError, OverflowError, RecursionError, zipfile.BadZipFile,
            json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read the policy file {quoted(path)}: {type(error).__name__}: {_first_line(error)}") from None
    except (ValueError, TypeError) as error:
        if isinstance(error, InputError) and quoted(path) in str(error):
            raise
        raise InputError(f"cannot read the policy file {quoted(path)}: {_first_line(error)}") from None


def _read(path: Path) -> tuple[MemoryArchitecture, np.ndarray, np.ndarray]:
    check_regular_file(path, "policy file")  # what it is (missing, a directory, a FIFO) before its name's suffix
    if path.suffix == ".npz":
        with NpzArchive(path, "policy file", max_bytes=MAX_NPZ_BYTES, max_inflated=MAX_NPZ_INFLATED) as data:
            data.check_shape("architecture", (), kinds="U", max_nbytes=4 * MAX_JSON_POLICY_BYTES)
            architecture = _architecture(json.loads(str(data["architecture"])))
            N, C = architecture.num_nodes, architecture.num_choices
            data.check_shape("logits", (N, C))  # before the tables are allocated
            data.check_shape("init_logits", (N,))
            logits, init_logits = data["logits"], data["init_logits"]
    elif path.suffix == ".json":
        doc = json.loads(read_limited(path, "policy file", MAX_JSON_POLICY_BYTES))
        if not isinstance(doc, dict) or not {"architecture", "logits", "init_logits"} <= doc.keys():
            raise InputError(f"{quoted(path)} is not a policy file (needs architecture, logits, init_logits)")
        architecture = _architecture(doc["architecture"])
        logits = _from_json_floats("logits", doc["logits"])
        init_logits = _from_json_floats("init_logits", doc["init_logits"])
    else:
        raise InputError(f"policy files end in .npz or .json, got {quoted(path)}")
    init_logits = _reset_only(architecture, _logit_array("init_logits", init_logits, (architecture.num_nodes,)))
    return architecture, logits, init_logits


def _as_probs(name: str, value, shape: tuple[int, ...]) -> np.ndarray:
    import torch

    array = np.asarray(value.detach().numpy() if isinstance(value, torch.Tensor) else value, dtype=np.float64)
    if array.shape != shape:
        raise InputError(f"{name} must have shape {shape}, got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InputError(f"{name} must be finite, got a NaN or inf")
    if (array < 0).any():
        raise InputError(f"{name} must be non-negative, got {float(array.min())!r}")
    return array


def _check_sums(name: str, sums: np.ndarray, labels) -> None:
    bad = np.flatnonzero(np.abs(sums - 1.0) > 1e-9)
    if len(bad):
        raise InputError(f"{name} must sum to 1, got {float(sums[bad[0]])!r} at {labels[bad[0]]!r}")


def _json_floats(array: np.ndarray):
    """Nested lists with ``-inf`` written as ``null`` (JSON has no infinities)."""
    return np.where(np.isneginf(array), None, array).tolist()


def _from_json_floats(name: str, value) -> np.ndarray:
    """Nested lists of numbers, ``null`` read as ``-inf``; anything else (a string, a bool, a ragged list)
    refused naming ``name``."""
    array = np.array(value, dtype=object)
    if array.dtype != object or any(not (item is None or is_real(item)) for item in array.flat):
        raise InputTypeError(f"{name} must be nested lists of numbers (null for -inf) of one shape")
    return np.where(array == None, -np.inf, array).astype(np.float64)  # noqa: E711


def _reset_only(architecture: MemoryArchitecture, init_logits: np.ndarray) -> np.ndarray:
    """``init_logits`` with ``-inf`` on the nodes a reset never starts in (where it is ignored)."""
    return np.where(architecture.reset_mask, init_logits, -np.inf)


def _architecture(spec: object) -> MemoryArchitecture:
    """The architecture a policy file records; a bad field is said in one short line (never attrs' internals)."""
    if not isinstance(spec, dict):
        raise InputTypeError(f"architecture must be a JSON object with 'kind', got {type(spec).__name__}")
    try:
        return MemoryArchitecture.from_dict(spec)
    except (TypeError, ValueError) as error:
        raise InputError(f"architecture: {_first_line(error)}") from None


def _first_line(error: BaseException) -> str:
    """An exception's own message: its first argument when that is text (attrs adds the attribute and the type
    after it), on one line, its middle cut when long (the start says what is wrong, the end what to do)."""
    text = error.args[0] if error.args and isinstance(error.args[0], str) else str(error)
    text = " ".join(text.splitlines())
    return text if len(text) <= 600 else f"{text[:400]} ... {text[-150:]}"


def check_policy(policy: object, name: str = "policy") -> Policy:
    """``policy``, if it is a :class:`Policy`.

    Raises:
        TypeError: anything else (naming ``name``).
    """
    if not isinstance(policy, Policy):
        raise InputTypeError(f"{name} must be a fsc.Policy, got {type(policy).__name__}")
    return policy
