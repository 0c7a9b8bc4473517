"""The project's error types for bad input.

An :class:`InputError` says that an argument, an option or a file given to
the framework is wrong, and how; the command line prints it on one line and
exits with status 2.  Any other exception is a bug (or the machine: a full
disk) and keeps its traceback.  Both are subclasses of the built-in types
callers already catch: ``InputError`` of ``ValueError``, ``InputTypeError``
of ``InputError`` and ``TypeError``.
"""

from __future__ import annotations

__all__ = ["QUOTE_LIMIT", "InputError", "InputTypeError", "quoted"]


class InputError(ValueError):
    """A value given to the framework is wrong (the message names it and says what is expected)."""


class InputTypeError(InputError, TypeError):
    """A value given to the framework has the wrong type (the message names it and says what is expected)."""


#: The most characters of a user's input an error message quotes.
QUOTE_LIMIT = 80


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` (``str`` of a path), cut to about ``limit`` characters (a path keeps its end), saying how
    long the whole was.

    A message quotes what it refuses so the user can find it, never all of it: a token of two million
    characters gives a line of about a hundred.
    """
    path = hasattr(value, "__fspath__")
    text = repr(str(value) if path else value)
    if len(text) <= limit:
        return text
    if path:  # a path's end names the file
        return f"{text[0]}...{text[-(limit - 4):]}"
    return f"{text[: limit - 3]}... ({len(text):,} characters)"
