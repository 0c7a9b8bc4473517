"""Checks of the numbers given to the framework, one of each: a real number, a reset probability.

They raise :class:`fsc.errors.InputTypeError` for a value that is not a real number (``bool`` included) and
:class:`fsc.errors.InputError` for one out of range, naming the argument.
"""

from __future__ import annotations

import math
import numbers

from fsc.errors import InputError, InputTypeError

__all__ = ["check_reset", "real"]


def real(name: str, value: object, low: float = -math.inf, high: float = math.inf, *, nan: bool = False) -> float:
    """``value`` as a finite float in ``[low, high]`` (NaN passed through with ``nan``); a bool is not a number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
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


def check_reset(reset: object, *, allow_zero: bool = False, name: str = "reset") -> float:
    """``reset`` as a float in (0, 1] (or [0, 1] with ``allow_zero``)."""
    interval = "[0, 1]" if allow_zero else "(0, 1]"
    if isinstance(reset, bool) or not isinstance(reset, numbers.Real):
        raise InputTypeError(f"{name} must be a number in {interval}, got {reset!r}")
    reset = float(reset)
    if not (math.isfinite(reset) and (0 <= reset if allow_zero else 0 < reset) and reset <= 1):
        raise InputError(f"{name} must be in {interval}, got {reset!r}")
    return reset
