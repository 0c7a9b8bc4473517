"""What every command shares, below the commands themselves: a parser whose errors are one line, the exit
statuses, and how a record is printed.

``fsc`` (:mod:`fsc.cli`) and the trainer a sweep starts (``python -m fsc.train``) both run through
:func:`run_command`: bad input prints one line on standard error and gives status 2, before any result file
is written; the machine failing (a full disk) one line and status 1; an interrupt status 130; anything else
is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable

from fsc.errors import InputError

__all__ = ["Parser", "UsageError", "emit", "number", "positive_int", "run_command"]


class UsageError(InputError):
    """Bad command-line input: reported in one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, status 2 (argparse prints usage too)
        raise UsageError(message)


def positive_int(text: str) -> int:
    """Command-line type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def number(text: str) -> float:
    """Command-line type: a finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def run_command(prog: str, command: Callable[[], int]) -> int:
    """``command()``'s exit status, with bad input, a failing machine and an interrupt each said in one line."""
    try:
        return command()
    except InputError as error:  # bad input, found where it came in: one line; anything else is a bug and keeps its traceback
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # the machine, not the input (a full disk): one line, and what was written is consistent
        where = f"{error.filename}: " if error.filename else ""
        print(f"{prog}: error: {where}{error.strerror or error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


def emit(as_json: bool, record: dict) -> None:
    """Print ``record``: one JSON line, or a table of ``key  value`` lines (floats to 10 digits)."""
    if as_json:
        print(json.dumps(record))
        return
    width = max(len(k) for k in record)
    for key, value in record.items():
        text = f"{value:.10g}" if isinstance(value, float) else str(value)
        print(f"{key:<{width}}  {text}")
