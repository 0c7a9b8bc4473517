"""Checks of the values given to the framework, one of each: a real number, a positive number, a time or a
duration (>= 0), an integer in a range, a reset probability, a flag, one of a few names.

They raise :class:`fsc.errors.InputTypeError` for a value that is not a real number (``bool`` included) and
:class:`fsc.errors.InputError` for one out of range, naming the argument.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

from fsc.errors import InputError, InputTypeError, quoted
from fsc.limits import MIN_RESET

__all__ = [
    "CONVENTIONS", "MAX_VALUE_SCALE", "check_reset", "flag", "integer", "is_int", "is_real", "nonnegative", "one_of", "positive",
    "real", "value_scale",
]  # fmt: skip

#: The two conventions of q (docs/model.md): ``native`` and ``paper``, ``(1 - r) q + r / 2``.
CONVENTIONS = ("native", "paper")


def is_real(value: object) -> bool:
    """Whether ``value`` is a real number (Python's or numpy's); a bool is not one."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_int(value: object) -> bool:
    """Whether ``value`` is an integer (Python's or numpy's); a bool is not one."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def real(name: str, value: object, low: float = -math.inf, high: float = math.inf, *, nan: bool = False) -> float:
    """``value`` as a finite float in ``[low, high]`` (NaN passed through with ``nan``); a bool is not a number."""
    if not is_real(value):
        raise InputTypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if math.isnan(value):
        if nan:
            return value
        raise InputError(f"{name} must not be NaN, got {value!r}")
    if not math.isfinite(value):
        raise InputError(f"{name} must be a finite number, got {value!r}")
    if not low <= value <= high:
        raise InputError(f"{name} must be in [{low}, {high}], got {value!r}")
    return value


#: The sizes of values (a reward over ``r``) the solver computes with, at most the largest reward over ``r``: its
#: methods multiply values together (Adam's second moments, products of gradients), and ``1e150`` squared stays
#: below float64's largest number, ``1.8e308``.  There is no lower limit: the solver's tolerances are relative to
#: this scale.
MAX_VALUE_SCALE = 1e150


def value_scale(scale: object, reset: float) -> float:
    """``scale``, the largest reward of a step over ``reset`` (the largest value in size), when the solver computes
    with such values faithfully: at most ``MAX_VALUE_SCALE``; else ``InputError`` saying so: the world's fault is the
    size of its rewards, said as such, rather than a NaN the arithmetic would make of them later.  Small rewards
    are no fault: the solver's tolerances are relative to this scale."""
    scale = float(scale)
    if scale <= MAX_VALUE_SCALE:
        return scale
    size = f"reach {scale:.3g} in size" if math.isfinite(scale) else "overflow float64"
    raise InputError(f"the world's rewards over r = {reset:.3g} {size}, over the {MAX_VALUE_SCALE:.0e} the solver's arithmetic keeps "
                     "finite (it multiplies values together); divide the rewards by a power of ten")  # fmt: skip


def nonnegative(name: str, value: object, *, optional: bool = False) -> float | None:
    """``value`` as a finite float ``>= 0`` (a time horizon, a duration); ``None`` passes with ``optional``."""
    if value is None and optional:
        return None
    if not is_real(value):
        raise InputTypeError(f"{name} must be a number, got {value!r}")
    if not (math.isfinite(value) and value >= 0):
        raise InputError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def positive(name: str, value: object, high: float = math.inf, *, closed: bool = False, optional: bool = False) -> float | None:
    """``value`` as a finite float in ``(0, high)`` (``(0, high]`` with ``closed``); ``None`` passes with ``optional``.
    A bool is not a number."""
    if value is None and optional:
        return None
    if not is_real(value):
        raise InputTypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value > 0 and (value <= high if closed else value < high)):
        bound = f"{high}]" if closed else (f"{high})" if math.isfinite(high) else "inf)")
        raise InputError(f"{name} must be in (0, {bound}, got {value!r}")
    return value


def flag(name: str, value: object) -> bool:
    """``value`` as a bool: ``True`` or ``False`` (or numpy's), nothing else."""
    if isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")):
        return bool(value)
    raise InputTypeError(f"{name} must be True or False, got {value!r}")


def one_of(name: str, value: object, options: Iterable[str], *, optional: bool = False) -> str | None:
    """``value`` if it is one of the strings ``options``; ``None`` passes with ``optional``."""
    if value is None and optional:
        return None
    options = tuple(options)
    if not isinstance(value, str) or value not in options:
        raise InputError(f"{name} must be one of {', '.join(map(repr, options))}, got {quoted(value)}")
    return value


def integer(name: str, value: object, low: int | None = None, high: int | None = None, *, optional: bool = False) -> int | None:
    """``value`` as an int in ``[low, high]`` (``None``: no limit on that side); ``None`` passes with ``optional``.
    A bool is not an int."""
    if value is None and optional:
        return None
    if not is_int(value):
        raise InputTypeError(f"{name} must be an int, got {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        interval = f">= {low}" if high is None else (f"<= {high}" if low is None else f"in [{low}, {high}]")
        raise InputError(f"{name} must be an int {interval}{' or None' if optional else ''}, got {value!r}")
    return value


def check_reset(reset: object, *, allow_zero: bool = False, name: str = "reset", solved: bool = True) -> float:
    """``reset`` as a float in (0, 1] (or [0, 1] with ``allow_zero``), and, where a chain is ``solved`` with it,
    not below :data:`fsc.limits.MIN_RESET` (``2**-53``) unless 0: below it ``1 - r`` rounds to 1 in float64.
    ``solved=False`` is for closed forms, whose formulas hold for any ``r > 0``."""
    interval = "[0, 1]" if allow_zero else "(0, 1]"
    if not is_real(reset):
        raise InputTypeError(f"{name} must be a number in {interval}, got {quoted(reset)}")
    reset = float(reset)
    if not (math.isfinite(reset) and (0 <= reset if allow_zero else 0 < reset) and reset <= 1):
        raise InputError(f"{name} must be in {interval}, got {reset!r}")
    if solved and 0 < reset < MIN_RESET:
        zero = " or exactly 0 (the undiscounted limit)" if allow_zero else ""
        raise InputError(
            f"{name} must be at least 2**-53 = {MIN_RESET:.3g}{zero}, got {reset!r}: below it 1 - {name} rounds to 1 in float64"
        )
    return reset
