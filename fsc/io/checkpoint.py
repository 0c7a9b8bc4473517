"""Checkpoints of a training run: ``checkpoint.npz`` and the one before it, written atomically.

A checkpoint holds the optimiser state (the point, its gradient, ``t``,
``step``, the next ``dt``, the optimiser's slots) and the whole trajectory so
far, in ``.npz`` arrays and a JSON metadata string: nothing is pickled.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from fsc.errors import InputError, quoted
from fsc.files import NpzArchive, atomic_write, strict_json
from fsc.io.trajectory import COLUMNS, Trajectory
from fsc.limits import MAX_JSON_POLICY_BYTES, MAX_NPZ_BYTES, MAX_NPZ_INFLATED
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import parse_memory
from fsc.objective import Point, as_numpy
from fsc.optim import State

__all__ = ["CHECKPOINT", "PREVIOUS_CHECKPOINT", "load_checkpoint", "save_checkpoint", "write_json"]

_FORMAT = "fsc-training-checkpoint/1"


#: The latest checkpoint of a run directory, and the one before it (the fallback when the latest is unusable).
CHECKPOINT = "checkpoint.npz"
PREVIOUS_CHECKPOINT = "checkpoint.previous.npz"


def write_json(path: Path, doc: dict) -> None:
    """``doc`` as indented strict JSON in ``path`` (a number that is not finite is ``null``), atomically."""
    atomic_write(path, lambda f: f.write((strict_json(doc, indent=2) + "\n").encode()))


def save_checkpoint(out: Path, state: State, trajectory: Trajectory, meta: dict[str, Any]) -> None:
    trajectory.trim()  # whole rows only, whenever the checkpoint is written
    point = state.point
    arrays: dict[str, np.ndarray] = {
        "logits": as_numpy(point.logits),
        "init_logits": as_numpy(point.init_logits),
        "grad_logits": as_numpy(point.grad_logits),
        "grad_init": as_numpy(point.grad_init),
        "gain": np.float64(point.gain),
        "metric_names": np.array(list(point.metrics), dtype=str),
        "metric_values": np.array(list(point.metrics.values()), dtype=np.float64),
        "t": np.float64(state.t),
        "step": np.int64(state.step),
        "dt": np.float64(state.dt),
        "evaluations": np.int64(state.evaluations),
        "rejections": np.int64(state.rejections),
        "seconds": np.float64(state.seconds),
    }
    for name, value in state.slots.items():
        arrays[f"slot_{name}"] = np.float64(value) if isinstance(value, (int, float)) else as_numpy(value)
    for name, column in trajectory.arrays().items():
        arrays[f"trajectory_{name}"] = column
    meta = {**meta, "format": _FORMAT, "step": state.step, "t": state.t, "rows": len(trajectory), "slots": sorted(state.slots),
            "architecture": state.point.architecture.to_dict()}  # fmt: skip
    arrays["meta"] = np.array(json.dumps(meta))
    atomic_write(out / CHECKPOINT, lambda f: np.savez(f, **arrays), previous=out / PREVIOUS_CHECKPOINT)
    write_json(out / "checkpoint.json", meta)


def load_checkpoint(path: str | os.PathLike) -> tuple[State, dict[str, np.ndarray], dict[str, Any]]:
    """Read ``checkpoint.npz`` (a path or a run directory).

    Returns:
        ``(state, trajectory, meta)``: the optimiser state, the trajectory so
        far as columns (``t, step, q, gain, dt, seconds, grad_norm,
        evaluations``), and the metadata (arguments, optimiser).
    """
    path = Path(path)
    if path.is_dir():
        path = path / "checkpoint.npz"
    try:
        state, columns, meta = _load_checkpoint(path)
    except (OSError, EOFError, KeyError, IndexError, OverflowError, RecursionError, TypeError, AttributeError,
            zipfile.BadZipFile, json.JSONDecodeError) as error:
        raise InputError(f"{quoted(path)} is not a usable checkpoint ({type(error).__name__}: {error})") from None
    except ValueError as error:
        if isinstance(error, InputError) and quoted(path) in str(error):
            raise
        raise InputError(f"{quoted(path)} is not a usable checkpoint ({error})") from None
    lengths = {len(column) for column in columns.values()}
    if len(lengths) != 1 or (lengths and min(lengths) < 1) or not isinstance(meta.get("arguments"), dict):
        raise InputError(f"{quoted(path)} is not a usable checkpoint (trajectory columns of unequal lengths or no arguments)")
    return state, columns, meta


def _architecture(meta: dict[str, Any]) -> MemoryArchitecture:
    """The architecture a checkpoint's point is on: recorded since it was; before, read from the run's memory
    argument (a two-arm ``ram:M``-like text, or the architecture itself)."""
    spec = meta.get("architecture", meta["arguments"]["memory"])
    return parse_memory(spec) if isinstance(spec, str) else MemoryArchitecture.from_dict(spec)


def _load_checkpoint(path: Path) -> tuple[State, dict[str, np.ndarray], dict[str, Any]]:
    with NpzArchive(path, "checkpoint", max_bytes=MAX_NPZ_BYTES, max_inflated=MAX_NPZ_INFLATED) as data:
        data.check_shape("meta", (), kinds="U", max_nbytes=4 * MAX_JSON_POLICY_BYTES)
        meta = json.loads(str(data["meta"]))
        if meta.get("format") != _FORMAT:
            raise InputError(f"{quoted(path)} is not a training checkpoint of this version (format {quoted(meta.get('format'))})")
        architecture = _architecture(meta)
        N, C = architecture.num_nodes, architecture.num_choices
        for name, shape in (("logits", (N, C)), ("grad_logits", (N, C)), ("init_logits", (N,)), ("grad_init", (N,))):
            data.check_shape(name, shape)  # before any table is allocated
        import torch  # a resumed run's point is on torch tensors

        tensor = lambda name: torch.from_numpy(np.array(data[name], dtype=np.float64))
        point = Point(
            architecture=architecture,
            logits=tensor("logits"),
            init_logits=tensor("init_logits"),
            gain=float(data["gain"]),
            metrics={str(k): float(v) for k, v in zip(data["metric_names"], data["metric_values"], strict=True)},
            grad_logits=tensor("grad_logits"),
            grad_init=tensor("grad_init"),
        )
        slots: dict[str, Any] = {}
        for name in meta["slots"]:
            value = data[f"slot_{name}"]
            slots[name] = float(value) if value.ndim == 0 else torch.from_numpy(np.array(value, dtype=np.float64))
        state = State(
            point=point,
            t=float(data["t"]),
            step=int(data["step"]),
            dt=float(data["dt"]),
            evaluations=int(data["evaluations"]),
            rejections=int(data["rejections"]),
            seconds=float(data["seconds"]),
            slots=slots,
        )
        names = [key[len("trajectory_") :] for key in data.files if key.startswith("trajectory_")]
        missing = set(COLUMNS) - set(names)
        if missing:
            raise InputError(f"{quoted(path)} is not a usable checkpoint (no trajectory column {sorted(missing)[0]!r})")
        columns = {name: np.array(data[f"trajectory_{name}"], dtype=COLUMNS.get(name, np.float64)) for name in names}
    lengths = {len(column) for column in columns.values()}
    if len(lengths) != 1 or (len(columns["step"]) and (np.any(np.diff(columns["step"]) <= 0) or columns["step"][-1] > state.step)):
        raise InputError(f"{quoted(path)} is inconsistent (trajectory columns of lengths {sorted(lengths)}); start the run again in another --out")
    wrong = _unusable(state)
    if wrong is not None:
        raise InputError(f"{quoted(path)} is not a usable checkpoint ({wrong})")
    return state, columns, meta


def _unusable(state: State) -> str | None:
    """What makes ``state`` one no run can continue from, or ``None``: a number that every step leaves finite but
    is not (``t``, ``dt``, the seconds, the gain, a number among the optimiser's slots: a NaN step size would end
    the run at once, as if it had nowhere to go), a negative time or count, a step size that is not positive,
    NaN or ``+inf`` among the logits (``-inf`` is a probability of exactly 0), a gradient that is not finite, or
    NaN in the arrays of the slots."""
    point = state.point
    scalars = {k: v for k, v in state.slots.items() if isinstance(v, float)}
    for name, value in {"t": state.t, "dt": state.dt, "seconds": state.seconds, "gain": point.gain, **scalars}.items():
        if not math.isfinite(value):
            return f"{name} is {value!r}"
    if min(state.t, state.dt, state.seconds, state.step, state.evaluations, state.rejections) < 0:
        return "a negative time, step or count"
    if "next_dt" in scalars and not scalars["next_dt"] > 0:
        return f"next_dt is {scalars['next_dt']!r}, not a step size"
    checks = [("logits", point.logits, lambda x: np.isnan(x) | np.isposinf(x)), ("init_logits", point.init_logits, lambda x: np.isnan(x) | np.isposinf(x)),
              ("grad_logits", point.grad_logits, lambda x: ~np.isfinite(x)), ("grad_init", point.grad_init, lambda x: ~np.isfinite(x))]  # fmt: skip
    checks += [(name, value, np.isnan) for name, value in state.slots.items() if not isinstance(value, (int, float))]
    for name, array, bad in checks:
        if bad(as_numpy(array)).any():
            return f"{name} holds NaN or infinite numbers"
    return None
