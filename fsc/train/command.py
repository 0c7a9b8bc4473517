"""The trainer as a command: ``fsc train`` and ``python -m fsc.train`` (what a sweep runs for each point).

Both parse :data:`fsc.train.arguments.TRAINING`'s options, build the :class:`TrainingConfig` once and run
:func:`fsc.train.run_training`'s two steps: the world, memory and reset first, without torch
(:mod:`fsc.train.setting`: a file declaring more than the machine can hold is refused at once), then torch,
the initial policy and the run.  A new run of the gradient flow (or plain ascent) from ``uniform`` or a policy
file imports no torch at all (:func:`fsc.train.run.without_torch`): it runs on numpy arrays, the same compiled
steps giving the same bits, without torch's import (most of the command's time on a small world).  The sweep
reaches this module by its own layer, never through the command line above it.
"""

from __future__ import annotations

import argparse
import sys

from fsc.console import Parser, emit, import_torch, run_command
from fsc.train.arguments import TrainingConfig, add_training_options
from fsc.train.setting import resolve_setting

__all__ = ["HELP", "add_options", "main", "train"]

HELP = "train a controller by gradient flow (or Adam); resumable"


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``fsc train``: one per training argument, and ``--json``."""
    add_training_options(parser)
    parser.add_argument("--json", action="store_true", help="print the final q, t, steps, seconds as JSON")


def train(args: argparse.Namespace) -> int:
    """Run the training ``args`` describe and print its summary (the run wrote ``result.json``): as
    :func:`fsc.train.run_training`, with torch imported (float64 its default) once the world and the memory are
    built, unless the run needs none (:func:`fsc.train.run.without_torch`)."""
    config = TrainingConfig.from_namespace(args)
    setting = resolve_setting(config)
    from fsc.train.run import resolve_inputs, train_inputs, without_torch

    arrays = without_torch(config)
    if not arrays:
        import_torch()
    result = train_inputs(config, resolve_inputs(config, setting=setting, arrays=arrays), started=setting.started)
    emit(args.json, result.summary())
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m fsc.train ARGS``: the same as ``fsc train ARGS``, exit statuses included."""
    parser = Parser(prog="fsc train", description=HELP)
    add_options(parser)
    return run_command("fsc", lambda: train(parser.parse_args(sys.argv[1:] if argv is None else argv)))
