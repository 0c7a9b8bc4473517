"""Sweep specs: a grid of ``fsc train`` arguments, checked and expanded into points (docs/sweeps.md).

A spec (JSON or TOML) gives ``fixed`` arguments and one or more ``grid`` blocks; each point of the product
is one ``fsc train`` run in its own directory ``OUT/runs/NAME``, one level per grid key.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from fsc.checks import is_int, is_real
from fsc.errors import InputError, InputTypeError, quoted
from fsc.files import read_limited
from fsc.limits import MAX_RECORD_BYTES
from fsc.train.arguments import MAY_CHANGE, STOP, SWEEP_TYPES

#: The ``fsc train`` arguments a spec may set, with their kind, in the order of the summary's columns.
ARGUMENTS: dict[str, str] = SWEEP_TYPES  # fsc train's arguments a spec may set, and their types (fsc.train.arguments)

#: Most points a spec may expand to (each is a run directory).
MAX_POINTS = 10**6

#: Arguments every point needs (``fsc train`` requires them).
REQUIRED = ("memory", "init", "until_t")

#: Arguments that only say when a run stops: a finished point run with other values is continued.
STOP_ARGUMENTS = STOP


def cap_not_reached(key: str, value: object, *, steps: int, stop: str) -> bool:
    """Whether a run that finished for ``stop`` after ``steps`` accepted steps ends at the same step with the
    stop condition ``key`` set to ``value`` instead: only a ``max_steps`` it stopped before (any larger cap,
    or none, or one it just reached, since ``until_t`` is checked first)."""
    return key == "max_steps" and stop != "max_steps" and (value is None or steps <= value)


#: Keys that do not name a run directory when a grid block gives them one value: what a continued run may
#: change, how it stores its trajectory and the Rosenbrock integrator's tolerance (a family's accuracy; a run
#: never changes these, fsc train refuses it), so that a family run again at another tolerance keeps its names.
NOT_NAMING: frozenset[str] = MAY_CHANGE | {"rows_per_decade", "tolerance"}

#: Keys of a spec file.
SPEC_KEYS = ("name", "description", "out", "fixed", "grid")

#: Columns of ``summary.csv`` after the arguments.
RESULT_COLUMNS = ("status", "q", "t", "steps", "seconds", "stop", "q_start", "value")

_SET_BY_SWEEP = {"out": "the sweep's --out", "json": "the sweep", "quiet": "the sweep"}




@attrs.frozen(kw_only=True)
class Point:
    """One point of a sweep: the arguments of one ``fsc train`` run.

    Attributes:
        name: its run directory under ``OUT/runs``, one level per grid key (``memory=ram-8/init=random/seed=0``).
        arguments: ``fsc train`` arguments (keys of :data:`ARGUMENTS`), read-only.
        grid_keys: the keys this point's grid block varies, in the block's order.
    """

    name: str
    arguments: Mapping[str, Any] = attrs.field(eq=False)
    grid_keys: tuple[str, ...]

    def argv(self) -> list[str]:
        """The ``fsc train`` options of this point, without ``--out`` (``--until-t=1000.0`` ...)."""
        return [f"--{key.replace('_', '-')}={value_text(value)}" for key, value in _ordered(self.arguments)]

    def stop(self) -> dict[str, Any]:
        """The point's stop conditions (``None`` where unset)."""
        return {key: self.arguments.get(key) for key in STOP_ARGUMENTS}


@attrs.frozen(kw_only=True)
class Sweep:
    """A checked sweep spec: its points in order.

    Build one with :func:`load_spec` or :meth:`from_dict`.
    """

    name: str
    description: str
    out: str | None
    points: tuple[Point, ...]
    spec: Mapping[str, Any] = attrs.field(eq=False, repr=False)

    @classmethod
    def from_dict(cls, doc: object, *, name: str = "sweep", source: str = "sweep spec") -> Sweep:
        """Check a spec given as a dict (the parsed file) and expand its grid.

        Args:
            doc: the spec.
            name: the name to use when the spec has none.
            source: how to refer to the spec in error messages (its path).

        Raises:
            TypeError, ValueError: naming the offending key and value.
        """
        if not isinstance(doc, Mapping):
            raise InputTypeError(f"{source}: a sweep spec must be an object with keys {', '.join(SPEC_KEYS)}, got {type(doc).__name__}")
        unknown = [key for key in doc if key not in SPEC_KEYS]
        if unknown:
            raise InputError(f"{source}: unknown key {unknown[0]!r}; a sweep spec has the keys {', '.join(SPEC_KEYS)}")
        for key in ("name", "description", "out"):
            if key in doc and not (isinstance(doc[key], str) and doc[key]):
                raise InputTypeError(f"{source}: {key!r} must be a non-empty string, got {doc[key]!r}")
        if "grid" not in doc:
            raise InputError(f"{source}: missing key 'grid' (an object of lists of fsc train arguments, or a list of such objects)")
        points = _grid_points(doc["grid"], _fixed(doc, source), source)
        _check_points(points, source)
        default_name = doc.get("name", name)
        return cls(name=default_name, description=doc.get("description", ""), out=doc.get("out"), points=tuple(points), spec=dict(doc))

    def check_out(self, source: str) -> Path:
        """The spec's ``out`` (:func:`check_spec_out`: under the current directory, no link leading out)."""
        return check_spec_out(self.out, source)

    def keys(self) -> list[str]:
        """Every argument set by some point, in the order of :data:`ARGUMENTS`."""
        used = {key for point in self.points for key in point.arguments}
        return [key for key in ARGUMENTS if key in used]

    def varying_keys(self) -> list[str]:
        """The arguments whose value is not the same for every point."""
        return [key for key in self.keys() if len({value_text(p.arguments.get(key)) for p in self.points}) > 1]


def load_spec(path: str | os.PathLike) -> Sweep:
    """Read and check a sweep spec from a ``.json`` or ``.toml`` file (see the module's docstring).

    Raises:
        ValueError, TypeError: the file is missing or unreadable, or the spec is bad (naming the key).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InputTypeError(f"spec must be a path to a .json or .toml file, got {path!r}")
    path = Path(path)
    raw = read_limited(path, "sweep spec", MAX_RECORD_BYTES)  # a regular file (not a FIFO, a directory) of bounded size
    try:
        text = raw.decode()
    except UnicodeDecodeError as error:
        raise InputError(f"sweep spec {quoted(path)} is not UTF-8 text (byte {error.start})") from None
    if path.suffix.lower() == ".toml":
        try:
            import tomllib
        except ImportError:  # pragma: no cover - Python 3.10
            raise InputError(f"reading the TOML spec {str(path)!r} needs Python >= 3.11; write it as JSON") from None
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise InputError(f"sweep spec {str(path)!r} is not valid TOML: {error}") from None
    else:
        try:
            doc = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as error:
            raise InputError(f"sweep spec {str(path)!r} is not valid JSON: {error}") from None
    return Sweep.from_dict(doc, name=path.stem, source=str(path))


def check_spec_out(out: str, source: str) -> Path:
    """A spec's ``out`` as a path under the current directory: relative, without ``..``, and not leading out
    through a symbolic link (each existing component is resolved); else ``ValueError`` naming ``source``."""
    path = Path(out)
    if path.is_absolute() or ".." in path.parts:
        raise InputError(f"the 'out' of {quoted(source)} ({quoted(out)}) must be a relative path under the current directory "
                         "without '..'; give --out DIR to write elsewhere")
    cwd = Path.cwd().resolve()
    resolved = Path(os.path.realpath(path))
    if resolved != cwd and cwd not in resolved.parents:
        raise InputError(f"the 'out' of {quoted(source)} ({quoted(out)}) leads out of the current directory through a symbolic link "
                         f"(to {quoted(resolved)}); give --out DIR to write elsewhere")
    return path


def _fixed(doc: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The spec's ``fixed`` arguments, checked, by their names with ``_``."""
    fixed = doc.get("fixed", {})
    if not isinstance(fixed, Mapping):
        raise InputTypeError(f"{source}: 'fixed' must be an object of fsc train arguments, got {fixed!r}")
    fixed = {_argument_key(key, source, "fixed"): _check_value(key, value, source, "fixed") for key, value in fixed.items()}
    if len(fixed) != len(doc.get("fixed", {})):
        raise InputError(f"{source}: 'fixed' gives the same argument twice (with '-' and with '_')")
    return fixed


def _grid_points(grid: object, fixed: dict[str, Any], source: str) -> list[Point]:
    """The points of the spec's ``grid`` (one block, or a list of blocks) with the ``fixed`` arguments, in order."""
    blocks = [grid] if isinstance(grid, Mapping) else grid
    if not isinstance(blocks, list):
        raise InputTypeError(f"{source}: 'grid' must be an object of lists, or a list of such objects, got {grid!r}")
    if not blocks:
        raise InputError(f"{source}: 'grid' is empty")
    points: list[Point] = []
    for index, block in enumerate(blocks):
        where = "grid" if isinstance(grid, Mapping) else f"grid[{index}]"
        points.extend(_expand(block, fixed, source, where))
    return points


def _check_points(points: list[Point], source: str) -> None:
    """Every point has the required arguments, and a run directory of its own, neither shared nor inside another's."""
    for point in points:
        missing = [key for key in REQUIRED if key not in point.arguments]
        if missing:
            raise InputError(f"{source}: every point needs {missing[0]!r} (in 'fixed' or in 'grid'); point {point.name!r} has none")
    seen: dict[str, Point] = {}
    for point in points:
        other = seen.setdefault(point.name, point)
        if other is not point:
            raise InputError(
                f"{source}: two points would share the run directory {point.name!r} "
                f"({describe_arguments(other.arguments)} and {describe_arguments(point.arguments)}); put the arguments that differ in the grid"
            )
    for point in points:
        parts = point.name.split("/")
        for depth in range(1, len(parts)):
            outer = seen.get("/".join(parts[:depth]))
            if outer is not None:
                raise InputError(
                    f"{source}: the run directory of {describe_arguments(point.arguments)} ({point.name!r}) would lie inside the one of "
                    f"{describe_arguments(outer.arguments)} ({outer.name!r}); give the grid blocks the same keys, or put another key first"
                )


def _argument_key(key: object, source: str, where: str) -> str:
    if not isinstance(key, str):
        raise InputTypeError(f"{source}: keys of {where!r} must be strings, got {key!r}")
    name = key.replace("-", "_")
    if name in _SET_BY_SWEEP:
        raise InputError(f"{source}: {key!r} in {where!r} is set by {_SET_BY_SWEEP[name]}, not by the spec")
    if name not in ARGUMENTS:
        raise InputError(f"{source}: unknown fsc train argument {key!r} in {where!r}; expected one of {', '.join(ARGUMENTS)}")
    return name


def _check_value(key: str, value: object, source: str, where: str) -> object:
    name = key.replace("-", "_")
    kind = ARGUMENTS[name]
    if kind == "string":
        if not (isinstance(value, str) and value):
            raise InputTypeError(f"{source}: {key!r} in {where!r} must be a non-empty string, got {value!r}")
    elif kind == "integer":
        if not is_int(value):
            raise InputTypeError(f"{source}: {key!r} in {where!r} must be an integer, got {value!r}")
    else:
        if not is_real(value):
            raise InputTypeError(f"{source}: {key!r} in {where!r} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise InputError(f"{source}: {key!r} in {where!r} must be a finite number, got {value!r}")
    return value


def _expand(block: object, fixed: dict[str, Any], source: str, where: str) -> list[Point]:
    if not isinstance(block, Mapping):
        raise InputTypeError(f"{source}: {where!r} must be an object of lists of fsc train arguments, got {block!r}")
    if not block:
        raise InputError(f"{source}: {where!r} is empty; give at least one argument with a list of values")
    axes: dict[str, list[Any]] = {}
    for key, values in block.items():
        name = _argument_key(key, source, where)
        if name in axes:
            raise InputError(f"{source}: {where!r} gives {name!r} twice (with '-' and with '_')")
        if name in fixed:
            raise InputError(f"{source}: {key!r} is both in 'fixed' and in {where!r}")
        if not isinstance(values, list):
            raise InputTypeError(f"{source}: {key!r} in {where!r} must be a list of values, got {values!r}")
        if not values:
            raise InputError(f"{source}: {key!r} in {where!r} has no values")
        for value in values:
            _check_value(key, value, source, where)
        texts = [value_text(value) for value in values]
        if len(set(texts)) != len(texts):
            raise InputError(f"{source}: {key!r} in {where!r} repeats a value: {values!r}")
        axes[name] = values
    keys = tuple(axes)
    count = math.prod(len(values) for values in axes.values())
    if count > MAX_POINTS:  # counted before anything is expanded
        raise InputError(f"{source}: {where!r} expands to {count:.3g} points, more than the limit of {MAX_POINTS:.0e} (fsc.sweep.MAX_POINTS)")
    points = []
    for combo in itertools.product(*axes.values()):
        varying = dict(zip(keys, combo, strict=True))
        arguments = {**fixed, **varying}
        # A block's single stop condition (a panel's horizon) does not name the directory: the run continued
        # with another horizon is the same run. Nor does a block's single way of storing its rows.
        named = {key: value for key, value in varying.items() if not (key in NOT_NAMING and len(axes[key]) == 1)} or varying
        points.append(Point(name=_dir_name(named), arguments=dict(_ordered(arguments)), grid_keys=keys))
    return points


def _ordered(arguments: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [(key, arguments[key]) for key in ARGUMENTS if key in arguments]


def value_text(value: object) -> str:
    """A value as it goes on the command line: floats by ``repr`` (exact), the rest by ``str``."""
    return repr(value) if isinstance(value, float) else str(value)


def _dir_name(varying: Mapping[str, Any]) -> str:
    """``memory=ram-8/init=random/seed=0``: one level per grid key, safe characters only, long levels shortened by a hash."""
    levels = []
    for key, value in varying.items():
        level = f"{key}={re.sub(r'[^A-Za-z0-9.+-]', '-', value_text(value))}"
        if len(level) > 100:
            level = f"{level[:80]}-{hashlib.sha1(value_text(value).encode()).hexdigest()[:12]}"
        levels.append(level)
    return "/".join(levels)


def describe_arguments(arguments: Mapping[str, Any]) -> str:
    return " ".join(f"{key}={value_text(value)}" for key, value in _ordered(arguments))
