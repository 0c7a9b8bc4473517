"""The project's error types for bad input.

An :class:`InputError` says that an argument, an option or a file given to
the framework is wrong, and how; the command line prints it on one line and
exits with status 2.  Any other exception is a bug (or the machine: a full
disk) and keeps its traceback.  Both are subclasses of the built-in types
callers already catch: ``InputError`` of ``ValueError``, ``InputTypeError``
of ``InputError`` and ``TypeError``.
"""

from __future__ import annotations

__all__ = ["InputError", "InputTypeError"]


class InputError(ValueError):
    """A value given to the framework is wrong (the message names it and says what is expected)."""


class InputTypeError(InputError, TypeError):
    """A value given to the framework has the wrong type (the message names it and says what is expected)."""
