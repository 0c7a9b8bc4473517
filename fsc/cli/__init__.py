"""The ``fsc`` command: the top of the project, imported by nothing in it.

Every subcommand prints a small table, or JSON with ``--json``; errors are one line with the exit statuses
of :func:`fsc.console.run_command` (2 for bad input, 1 for a failing machine, 130 for an interrupt).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch

from fsc.cli import controller, files, runs, solve
from fsc.console import Parser, run_command
from fsc.train import command

__all__ = ["COMMANDS", "main", "make_parser"]

#: name -> (run, add_options, help), in the order of ``fsc --help``.
COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], Callable[[argparse.ArgumentParser], None], str]] = {
    "evaluate": (controller.cmd_evaluate, controller.evaluate_options, "exact evaluation of a controller"),
    "simulate": (controller.cmd_simulate, controller.simulate_options, "Monte Carlo estimate of a controller"),
    "closed-form": (controller.cmd_closed_form, controller.closed_form_options, "closed forms of the column of confidence policy (appendix C)"),
    "necklace": (controller.cmd_necklace, controller.necklace_options, "binary necklaces, the longest Gray chain and Theorem 4.3's q*"),
    "draw": (controller.cmd_draw, controller.draw_options, "draw the memory transition graph of a policy (graphviz)"),
    "train": (command.train, command.add_options, command.HELP),
    "solve": (solve.cmd_solve, solve.solve_options, solve.HELP),
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

    def run() -> int:
        args = make_parser().parse_args(argv)
        return COMMANDS[args.command][0](args)

    return run_command("fsc", run)
