"""The trainer as a command: ``fsc train`` and ``python -m fsc.train`` (what a sweep runs for each point).

Both parse :data:`fsc.train.arguments.TRAINING`'s options, build the :class:`TrainingConfig` once and run
:func:`fsc.train.run_training`; the sweep reaches this module by its own layer, never through the command
line above it.
"""

from __future__ import annotations

import argparse
import sys

from fsc.console import Parser, emit, run_command
from fsc.train.arguments import TrainingConfig, add_training_options
from fsc.train.run import run_training

__all__ = ["HELP", "add_options", "main", "train"]

HELP = "train a controller by gradient flow (or Adam); resumable"


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``fsc train``: one per training argument, and ``--json``."""
    add_training_options(parser)
    parser.add_argument("--json", action="store_true", help="print the final q, t, steps, seconds as JSON")


def train(args: argparse.Namespace) -> int:
    """Run the training ``args`` describe and print its summary (``run_training`` wrote ``result.json``)."""
    result = run_training(TrainingConfig.from_namespace(args))
    emit(args.json, result.summary())
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m fsc.train ARGS``: the same as ``fsc train ARGS``, exit statuses included."""
    import torch

    torch.set_default_dtype(torch.float64)
    parser = Parser(prog="fsc train", description=HELP)
    add_options(parser)
    return run_command("fsc", lambda: train(parser.parse_args(sys.argv[1:] if argv is None else argv)))
