"""The ``fsc`` command: the top of the project, imported by nothing in it.

Every subcommand prints a small table, or JSON with ``--json``.  Bad input prints one line on standard
error and exits with status 2, before any result file is written; a full disk prints one line and exits
with status 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import torch

from fsc.cli import controller, files, runs
from fsc.cli.options import Parser
from fsc.errors import InputError

__all__ = ["COMMANDS", "main", "make_parser"]

#: name -> (run, add_options, help), in the order of ``fsc --help``.
COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], Callable[[argparse.ArgumentParser], None], str]] = {
    "evaluate": (controller.cmd_evaluate, controller.evaluate_options, "exact evaluation of a controller"),
    "simulate": (controller.cmd_simulate, controller.simulate_options, "Monte Carlo estimate of a controller"),
    "closed-form": (controller.cmd_closed_form, controller.closed_form_options, "closed forms of the column of confidence policy (appendix C)"),
    "necklace": (controller.cmd_necklace, controller.necklace_options, "binary necklaces, the longest Gray chain and Theorem 4.3's q*"),
    "draw": (controller.cmd_draw, controller.draw_options, "draw the memory transition graph of a policy (graphviz)"),
    "train": (runs.cmd_train, runs.train_options, "train a controller by gradient flow (or Adam); resumable"),
    "report": (runs.cmd_report, runs.report_options, "the main job: check, draw, train, and write an HTML report"),
    "sweep": (runs.cmd_sweep, runs.sweep_options, runs.SWEEP_HELP),
    "inspect": (files.cmd_inspect, files.inspect_options, files.INSPECT_HELP),
    "pomdp": (files.cmd_pomdp, files.pomdp_options, files.POMDP_HELP),
}


def make_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="fsc", description="Finite-state controllers: evaluate, simulate, draw, train, report.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name, (_, add_options, help_text) in COMMANDS.items():
        add_options(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``fsc``; return the exit status."""
    torch.set_default_dtype(torch.float64)
    try:
        parser = make_parser()
        args = parser.parse_args(argv)
        return COMMANDS[args.command][0](args)
    except InputError as error:  # bad input, found where it came in: one line; anything else is a bug and keeps its traceback
        print(f"fsc: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # the machine, not the input (a full disk): one line, and what was written is consistent
        where = f"{error.filename}: " if error.filename else ""
        print(f"fsc: error: {where}{error.strerror or error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fsc: interrupted", file=sys.stderr)
        return 130
