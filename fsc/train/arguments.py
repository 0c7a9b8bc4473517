"""The arguments of a training run, declared once.

:data:`TRAINING` lists every argument of :func:`fsc.train.run_training`:
its type, default and help, and how the layers above use it.  From it come
the options of ``fsc train`` (:func:`add_training_options`), the keys and
types a sweep spec accepts (:data:`SWEEP_TYPES`), the arguments that may
change when a run is continued (:data:`MAY_CHANGE`) and the stop conditions
that decide whether a sweep point is finished (:data:`STOP`).  A new
argument of training is one more entry here.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import attrs

from fsc.evaluate import CONVENTIONS
from fsc.limits import seed_arg, threads_arg
from fsc.objective import TARGETS
from fsc.optim import OPTIMIZERS

__all__ = ["MAY_CHANGE", "STOP", "SWEEP_TYPES", "TRAINING", "Argument", "add_training_options", "number", "positive_int"]


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


@attrs.frozen
class Argument:
    """One argument of a training run.

    Attributes:
        name: the keyword of ``run_training`` (``--name`` with dashes on the command line).
        type: ``number``, ``integer`` or ``string`` (what a sweep spec must give), or ``flag``.
        help: the command-line help.
        default: the command-line default.
        parse: the command-line type (default: by ``type``).
        choices: the values allowed, if a closed list.
        required: the command line requires it.
        metavar: the command line's name for the value.
        may_change: a continued run may give another value (stop conditions and how it runs, never what it computes).
        stop: a stop condition: a sweep point is finished for the values it ran with.
        sweep: a sweep spec may set it.
    """

    name: str
    type: str
    help: str
    default: object = None
    parse: Callable[[str], object] | None = None
    choices: tuple | None = None
    required: bool = False
    metavar: str | None = None
    may_change: bool = False
    stop: bool = False
    sweep: bool = True

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")


_UNTIL_T = (
    "algorithm time to reach (t of dw/dt = d gain / dw, docs/model.md; on paper eq. (4)'s G = gain / r, t is r times smaller); "
    "without it, train until converged (the gain changes by less than 1e-9 of its size over a decade of t) or another limit"
)

TRAINING: tuple[Argument, ...] = (
    Argument("mu", "number", "the two-hypothesis world: gap between the arms, in (0, 1) (default 0.1)"),
    Argument("pomdp", "string", "another world: a .POMDP file (its action and observation counts size --memory)", metavar="FILE"),
    Argument("memory", "string", "ram:M, chain:M, column:M, memento:m, or FILE.py:NAME for an architecture of your own", required=True),
    Argument("init", "string", "random, linear, columns, near-ccp, cycles, near-necklace, or a policy file", required=True),
    Argument("seed", "integer", "seed of the initialisation (default 0)", default=0, parse=seed_arg),
    Argument("reset", "number", "reset probability r per step (default: 1 - the file's discount, else 1e-3)"),
    Argument("discount", "number", "discount gamma: the same parameter as --reset, r = 1 - gamma"),
    Argument("until_t", "number", _UNTIL_T, may_change=True, stop=True),
    Argument("max_dgrad", "number", "flow: largest change of the gradient per step (default 1e-4)"),
    Argument("max_seconds", "number", "stop after this much wall time (over all sessions)", may_change=True, stop=True),
    Argument("max_steps", "integer", "stop after this many accepted steps", parse=positive_int, may_change=True, stop=True),
    Argument("convention", "string", "native (default) or paper (docs/model.md)", default="native", choices=CONVENTIONS),
    Argument("optimizer", "string", "gradient flow (default), adam, or plain ascent", default="flow", choices=tuple(OPTIMIZERS)),
    Argument("lr", "number", "adam / ascent learning rate"),
    Argument("engine", "string", "evaluation engine (default auto)", default="auto"),
    Argument("target", "string", "what the flow climbs: the gain per step (default) or paper eq. (4)'s return gain / r", default="gain",
             choices=TARGETS),
    Argument("rows_per_decade", "integer", "keep at most N trajectory rows per decade of t, and step 0 (default: every step); "
             "a long run stays small and, on the dense and choices engines, runs the steps between rows in one compiled call; "
             "the final numbers are in result.json", parse=positive_int, metavar="N"),
    Argument("checkpoint_seconds", "number", "least wall time between checkpoints (default 60)", default=60.0, may_change=True),
    Argument("threads", "integer", "torch threads (default 1: bit-for-bit resumes)", default=1, parse=threads_arg, may_change=True),
    Argument("out", "string", "run directory; started again, the run resumes from its checkpoint", required=True, sweep=False),
    Argument("quiet", "flag", "no progress bar (none either when stderr is not a terminal)", default=False, may_change=True, sweep=False),
)  # fmt: skip

#: Sweep spec keys and the JSON type each must have.
SWEEP_TYPES: dict[str, str] = {a.name: a.type for a in TRAINING if a.sweep}

#: Arguments a continued run may change.
MAY_CHANGE: frozenset[str] = frozenset(a.name for a in TRAINING if a.may_change)

#: The stop conditions, in order.
STOP: tuple[str, ...] = tuple(a.name for a in TRAINING if a.stop)

_PARSE = {"number": number, "integer": int, "string": str}


def add_training_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``fsc train``, one per entry of :data:`TRAINING`."""
    for a in TRAINING:
        if a.type == "flag":
            parser.add_argument(a.option, action="store_true", help=a.help)
            continue
        extra = {"choices": a.choices} if a.choices else {}
        if a.metavar:
            extra["metavar"] = a.metavar
        parser.add_argument(a.option, type=a.parse or _PARSE[a.type], default=a.default, required=a.required, help=a.help, **extra)
