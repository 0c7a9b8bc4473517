"""What every command shares, below the commands themselves: a parser whose errors are one line, the exit
statuses, and how a record is printed.

``fsc`` (:mod:`fsc.cli`) and the trainer a sweep starts (``python -m fsc.train``) both run through
:func:`run_command`: bad input prints one line on standard error and gives status 2, before any result file
is written; the machine failing (a full disk) one line and status 1; an interrupt status 130; anything else
is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator

from fsc.errors import InputError, quoted
from fsc.files import strict_json
from fsc.limits import MAX_STEPS, bounded_int

__all__ = ["MAX_LINE", "Parser", "UsageError", "emit", "import_torch", "number", "one_line", "positive_int", "run_command"]

#: The longest error line a command prints (its messages quote at most about 80 characters of input,
#: :func:`fsc.errors.quoted`; this is the net under them).
MAX_LINE = 280


class UsageError(InputError):
    """Bad command-line input: reported in one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, status 2 (argparse prints usage too)
        raise UsageError(message)


def positive_int(text: str) -> int:
    """Command-line type: an integer in ``[1, MAX_STEPS]`` (``2**53``: a count every reader keeps exact)."""
    return bounded_int(text, 1, MAX_STEPS, " (2**53: the largest count kept exact)")


def number(text: str) -> float:
    """Command-line type: a finite number."""
    if len(text) > 40:  # no number needs more characters; float() of a long text only repeats it in the error
        raise argparse.ArgumentTypeError(f"expected a number, got {quoted(text, 24)}")
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def count(text: str) -> int:
    """Command-line type: a count in ``[0, MAX_STEPS]`` (the setting it is given to checks its own range)."""
    return bounded_int(text, 0, MAX_STEPS)


def truth(text: str) -> bool:
    """Command-line type: ``true`` or ``false``."""
    if text.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {quoted(text, 24)}")
    return text.lower() == "true"


def numbers(text: str) -> tuple[float, ...]:
    """Command-line type: comma-separated finite numbers (none for an empty text)."""
    return tuple(number(part) for part in text.split(",")) if text else ()


def run_command(prog: str, command: Callable[[], int]) -> int:
    """``command()``'s exit status, with bad input, a failing machine and an interrupt each said in one line."""
    try:
        return command()
    except InputError as error:  # bad input, found where it came in: one line; anything else is a bug and keeps its traceback
        print(one_line(f"{prog}: error: {error}"), file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of the output left (| head): nothing to say, as other commands in a pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes at exit
        return 128 + signal.SIGPIPE
    except OSError as error:  # the machine, not the input (a full disk): one line, and what was written is consistent
        where = f"{quoted(error.filename)}: " if error.filename else ""
        print(one_line(f"{prog}: error: {where}{error.strerror or error}"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


@contextlib.contextmanager
def interrupts_after() -> Iterator[None]:
    """A block in which an interrupt (SIGINT) is held and taken when the block ends, as :class:`KeyboardInterrupt`:
    the libraries' imports run inside one, for a KeyboardInterrupt raised in compiled code while it imports ends the
    process some other way (torch's: ``terminate called ... KeyboardInterrupt``, status -6).  Nothing is held where
    SIGINT is not Python's own (ignored, as in a background job, or handled by the caller) or off the main thread."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    held: list[int] = []
    signal.signal(signal.SIGINT, lambda number, frame: held.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if held:
        raise KeyboardInterrupt


def import_torch() -> None:
    """Import torch and make float64 its default dtype, as every command that computes runs (an interrupt meanwhile is
    taken once it is in: :func:`interrupts_after`).

    A command that reads a world and a memory calls this after them (:data:`fsc.cli.TORCH_AFTER_INPUT`): a file
    declaring more than the machine can hold is refused before torch, numba and the engines take a second
    to import.
    """
    with interrupts_after():
        import torch

        torch.set_default_dtype(torch.float64)


def one_line(text: str, limit: int = MAX_LINE) -> str:
    """``text`` on one line of at most about ``limit`` characters: line breaks become spaces, and a longer text
    keeps its start (what is wrong, naming the option) and its end (what to do), with ``...`` between."""
    text = " ".join(text.splitlines())
    if len(text) <= limit:
        return text
    return f"{text[: limit - 65]} ... {text[-60:]}"


def emit(as_json: bool, record: dict) -> None:
    """Print ``record``: one strict JSON line (:func:`fsc.files.strict_json`), or a table of ``key  value``
    lines (floats to 10 digits)."""
    if as_json:
        print(strict_json(record))
        return
    width = max(len(k) for k in record)
    for key, value in record.items():
        text = f"{value:.10g}" if isinstance(value, float) else str(value)
        print(f"{key:<{width}}  {text}")
