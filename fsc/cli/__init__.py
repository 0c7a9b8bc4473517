"""The ``fsc`` command: the top of the project, imported by nothing in it.

Every subcommand prints a small table, or JSON with ``--json``; errors are one line with the exit statuses
of :func:`fsc.console.run_command` (2 for bad input, 1 for a failing machine, 130 for an interrupt).

A command's module is imported only when that command runs (or shows its ``--help``), so ``fsc --help``
and the commands that need no torch (``pomdp``, ``closed-form``, ``necklace``, ``export``) start at once
(``benchmarks/bench_startup.py``), and the commands on a world and a memory read both before torch is
imported: a file declaring more than the machine can hold is refused at once.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable

from fsc.console import Parser, import_torch, interrupts_after, run_command

__all__ = ["COMMANDS", "TORCH_AFTER_INPUT", "WITHOUT_TORCH", "main", "make_parser"]

def _entry(module: str, command: str, help_text: str) -> tuple[str, str, str]:
    """The entry of ``command`` run by ``cmd_COMMAND`` and declared by ``COMMAND_options`` of ``fsc.cli.MODULE``."""
    function = command.replace("-", "_")
    return f"fsc.cli.{module}:cmd_{function}", f"fsc.cli.{module}:{function}_options", help_text


#: name -> (run, add_options, help), in the order of ``fsc --help``.  ``run(args)`` runs the command and
#: ``add_options(parser)`` declares its options; each is a function or ``"module:function"``, imported when
#: that command is the one asked for.  A new command is one line here.
COMMANDS: dict[str, tuple[str | Callable[[argparse.Namespace], int], str | Callable[[argparse.ArgumentParser], None], str]] = {
    "evaluate": _entry("controller", "evaluate", "exact evaluation of a controller"),
    "simulate": _entry("controller", "simulate", "Monte Carlo estimate of a controller"),
    "closed-form": _entry("controller", "closed-form", "closed forms of the column of confidence policy (appendix C)"),
    "necklace": _entry("controller", "necklace", "binary necklaces, the longest Gray chain and Theorem 4.3's q*"),
    "draw": _entry("controller", "draw", "draw the memory transition graph of a policy (graphviz)"),
    "train": ("fsc.train.command:train", "fsc.train.command:add_options", "train a controller by gradient flow (or Adam); resumable"),
    "solve": _entry("solve", "solve", "find a good controller within a time limit: several methods, the best kept, its gap to an upper bound"),
    "export": _entry("export", "export", "write a run's trajectory.npz (or every one of a sweep) as trajectory.csv"),
    "report": _entry("runs", "report", "the main job: check, draw, train, and write an HTML report"),
    "sweep": _entry("runs", "sweep", "run a sweep of fsc train points (local pool or Dask cluster); --summary collects it"),
    "inspect": _entry("files", "inspect", "read a policy back as structure: skeleton, stationary mass, nearest known family"),
    "pomdp": _entry("files", "pomdp", "check a .POMDP file: sizes, discount, closed parts"),
}  # fmt: skip

#: The commands that never compute with torch: they start without importing it.
WITHOUT_TORCH = frozenset({"pomdp", "closed-form", "necklace", "export"})

#: The commands that read a world and build a memory (where the sizes nobody can afford are refused,
#: :mod:`fsc.limits`) before they import torch: each calls :func:`fsc.console.import_torch` itself once its
#: world and memory are built.  Every other command imports torch first and makes float64 its default.
TORCH_AFTER_INPUT = frozenset({"evaluate", "simulate", "draw", "train", "solve"})


def load(target: str | Callable) -> Callable:
    """The function ``target`` names (``"module:function"``), importing its module; a function as it is."""
    if callable(target):
        return target
    module, _, name = target.partition(":")
    with interrupts_after():  # a command's module imports numba, scipy and the engines
        return getattr(importlib.import_module(module), name)


def make_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``fsc``; with ``command``, only that command's options are declared (and imported)."""
    parser = Parser(prog="fsc", description="Finite-state controllers: evaluate, simulate, draw, train, report.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name, (_, add_options, help_text) in COMMANDS.items():
        subparser = sub.add_parser(name, help=help_text, description=help_text)
        if command is None or name == command:
            load(add_options)(subparser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``fsc``; return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # The only option before the command is --help, so the first word that is not an option names the command.
    command = next((word for word in argv if not word.startswith("-")), None)

    def run() -> int:
        args = make_parser(command if command in COMMANDS else "").parse_args(argv)
        if args.command not in WITHOUT_TORCH | TORCH_AFTER_INPUT:
            import_torch()
        return load(COMMANDS[args.command][0])(args)

    return run_command("fsc", run)
