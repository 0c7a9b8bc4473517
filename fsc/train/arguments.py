"""The arguments of a training run, declared once.

:data:`TRAINING` lists every argument of :func:`fsc.train.run_training`: its type, default, check and help,
and how the layers above use it.  From it come the frozen :class:`TrainingConfig` that carries a run's
arguments as one object (checked once, when it is built), the options of ``fsc train``
(:func:`add_training_options`), the keys and types a sweep spec accepts (:data:`SWEEP_TYPES`), the arguments
that may change when a run is continued (:data:`MAY_CHANGE`) and the stop conditions that decide whether a
sweep point is finished (:data:`STOP`).  A new argument of training is one more entry here.  The options that
name the world and the memory are those of every command on a world, declared in :mod:`fsc.resolve`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

import attrs

from fsc.checks import CONVENTIONS, flag, integer, nonnegative, one_of
from fsc.choices import FLOW_MAX_DGRAD, OPTIMIZER_NAMES, ROSENBROCK_TOLERANCE, TARGETS
from fsc.console import number, positive_int
from fsc.errors import InputTypeError
from fsc.limits import MAX_SEED, MAX_STEPS, MAX_THREADS, seed_arg, threads_arg
from fsc.resolve import DISCOUNT, MEMORY, MU, POMDP_FILE, RESET, WORLD, Option
from policies import POLICY_NAMES
from tasks import WORLDS

__all__ = [
    "MAY_CHANGE", "STOP", "SWEEP_TYPES", "TRAINING", "Argument", "TrainingConfig", "add_training_options", "number", "positive_int",
]  # fmt: skip


@attrs.frozen
class Argument:
    """One argument of a training run.

    Attributes:
        name: the keyword of ``run_training`` (``--name`` with dashes on the command line).
        type: ``number``, ``integer`` or ``string`` (what a sweep spec must give), or ``flag``.
        help: the command-line help.
        default: the default, on the command line and in the API.
        check: the value as the run uses it, or an error naming it (``None``: checked where it is resolved:
            the world, the memory, the reset, the optimiser's settings).
        parse: the command-line type (default: by ``type``).
        choices: the values allowed, if a closed list (checked in the API too).
        required: no default.
        metavar: the command line's name for the value.
        may_change: a continued run may give another value (stop conditions and how it runs, never what it computes).
        stop: a stop condition: a sweep point is finished for the values it ran with.
        sweep: a sweep spec may set it.
        recorded: ``run.json`` records it as given (the world and the reset are recorded as resolved).
        hyperparameter: a setting of the optimiser (:func:`fsc.optim.make_optimizer`), passed when given.
    """

    name: str
    type: str
    help: str
    default: object = None
    check: Callable[[object], object] | None = None
    parse: Callable[[str], object] | None = None
    choices: tuple | None = None
    required: bool = False
    metavar: str | None = None
    may_change: bool = False
    stop: bool = False
    sweep: bool = True
    recorded: bool = True
    hyperparameter: bool = False

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    @classmethod
    def of(cls, declared: Option, **fields: object) -> Argument:
        """The training argument of an option declared for every command on a world (:data:`fsc.resolve.WORLD_OPTIONS`)."""
        return cls(declared.name, declared.type, declared.help, metavar=declared.metavar, **fields)


def _init(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise InputTypeError(f"init must be an initialisation name or a policy file, got {value!r}")
    return value


def _out(value: object) -> str | os.PathLike:
    if not isinstance(value, (str, os.PathLike)):
        raise InputTypeError(f"out must be a directory path, got {value!r}")
    return value


_UNTIL_T = (
    "algorithm time to reach (t of dw/dt = d gain / dw, docs/model.md; on paper eq. (4)'s G = gain / r, t is r times smaller); "
    "without it, train until converged (the gain changes by less than 1e-9 of its size over a decade of t) or another limit"
)
_INIT = f"the starting policy: {', '.join(POLICY_NAMES)} (the names of --policy), or a policy file"

TRAINING: tuple[Argument, ...] = (
    Argument.of(WORLD, check=lambda v: one_of("world", v, WORLDS, optional=True), recorded=False),  # recorded as resolved
    Argument.of(MU, recorded=False),
    Argument.of(POMDP_FILE, recorded=False),
    Argument.of(MEMORY, required=True),
    Argument("init", "string", _INIT, check=_init, required=True),
    Argument("seed", "integer", "seed of the initialisation (default 0)", default=0, check=lambda v: integer("seed", v, 0, MAX_SEED), parse=seed_arg),
    Argument.of(RESET),
    Argument.of(DISCOUNT, recorded=False),
    Argument("until_t", "number", _UNTIL_T, check=lambda v: nonnegative("until_t", v, optional=True), may_change=True, stop=True),
    Argument("max_dgrad", "number", f"flow: largest change of the gradient per step (default {FLOW_MAX_DGRAD:g})",
             hyperparameter=True),
    Argument("max_seconds", "number", "stop after this much wall time (over all sessions)", may_change=True, stop=True),
    Argument("max_steps", "integer", "stop after this many accepted steps", check=lambda v: integer("max_steps", v, 1, MAX_STEPS, optional=True),
             parse=positive_int, may_change=True, stop=True),
    Argument("convention", "string", "native (default) or paper (docs/model.md)", default="native", choices=CONVENTIONS),
    Argument("optimizer", "string", "gradient flow by the published step rule (default), rosenbrock (the same flow in fewer steps), adam, "
             "or plain ascent", default="flow", choices=OPTIMIZER_NAMES),
    Argument("lr", "number", "adam / ascent learning rate", hyperparameter=True),
    Argument("tolerance", "number", "rosenbrock: the largest local error estimate of a step, on each logit "
             f"(default {ROSENBROCK_TOLERANCE:g}; docs/model.md)", hyperparameter=True),
    Argument("engine", "string", "evaluation engine (default auto)", default="auto"),
    Argument("target", "string", "what the flow climbs: the gain per step (default) or paper eq. (4)'s return gain / r", default="gain",
             choices=TARGETS),
    Argument("rows_per_decade", "integer", "keep at most N trajectory rows per decade of t, and step 0 (default: every step); "
             "a long run stays small and, on the dense and choices engines, runs the steps between rows in one compiled call; "
             "the final numbers are in result.json", check=lambda v: integer("rows_per_decade", v, 1, MAX_STEPS, optional=True), parse=positive_int,
             metavar="N"),
    Argument("csv", "flag", "also write trajectory.csv (a line per row, floats as Python's repr) beside trajectory.npz; costs a few "
             "microseconds a row (fsc export converts a trajectory.npz later)", default=False, check=lambda v: flag("csv", v), may_change=True, sweep=False),
    Argument("checkpoint_seconds", "number", "least wall time between checkpoints (default 60)", default=60.0,
             check=lambda v: nonnegative("checkpoint_seconds", v), may_change=True),
    Argument("threads", "integer", "torch and LAPACK threads during the run (default 1: bit-for-bit resumes; the API's None leaves them)",
             default=1, check=lambda v: integer("threads", v, 1, MAX_THREADS, optional=True), parse=threads_arg, may_change=True),
    Argument("out", "string", "run directory; started again, the run resumes from its checkpoint", check=_out, required=True, sweep=False),
    Argument("quiet", "flag", "no progress bar (none either when stderr is not a terminal)", default=False, check=lambda v: flag("quiet", v), may_change=True,
             sweep=False),
)  # fmt: skip

#: Sweep spec keys and the JSON type each must have.
SWEEP_TYPES: dict[str, str] = {a.name: a.type for a in TRAINING if a.sweep}

#: Arguments a continued run may change.
MAY_CHANGE: frozenset[str] = frozenset(a.name for a in TRAINING if a.may_change)

#: The stop conditions, in order.
STOP: tuple[str, ...] = tuple(a.name for a in TRAINING if a.stop)

_PARSE = {"number": number, "integer": int, "string": str}


def _checker(a: Argument) -> Callable[[object], object]:
    """The check of ``a`` as an attrs converter: its own, or its list of choices, or none."""
    if a.check is not None:
        return a.check
    if a.choices is not None:
        return lambda value: one_of(a.name, value, a.choices)
    return lambda value: value


def _config_class() -> type:
    """:class:`TrainingConfig`, one frozen field per entry of :data:`TRAINING`, checked by its converter."""
    fields = {}
    for a in TRAINING:
        default = {} if a.required else {"default": a.default}
        fields[a.name] = attrs.field(kw_only=True, converter=_checker(a), **default)
    lines = "\n".join(f"        {a.name}: {a.help}." for a in TRAINING)
    doc = f"""The arguments of a training run as one frozen object, checked once, when it is built.

    One field per entry of :data:`TRAINING`, with its default; a bad value raises ``ValueError`` or
    ``TypeError`` naming it.

    Attributes:
{lines}
    """
    cls = attrs.make_class("TrainingConfig", fields, bases=(_ConfigMethods,), frozen=True)
    cls.__doc__ = doc
    cls.__module__ = __name__
    return cls


class _ConfigMethods:
    """What the layers read of a configuration, each the part it needs."""

    @classmethod
    def from_namespace(cls, args: argparse.Namespace) -> TrainingConfig:
        """The configuration of ``fsc train``'s parsed options."""
        return cls(**{a.name: getattr(args, a.name) for a in TRAINING})

    def stop_conditions(self) -> dict[str, object]:
        """The stop conditions (:data:`STOP`), as :func:`fsc.optim.optimize` takes them."""
        return {name: getattr(self, name) for name in STOP}

    def hyperparameters(self) -> dict[str, object]:
        """The optimiser's settings that were given (:func:`fsc.optim.make_optimizer`)."""
        return {a.name: getattr(self, a.name) for a in TRAINING if a.hyperparameter and getattr(self, a.name) is not None}

    def recorded(self) -> dict[str, object]:
        """The arguments ``run.json`` records as given (the world and the reset are recorded as resolved)."""
        return {a.name: getattr(self, a.name) for a in TRAINING if a.recorded}


TrainingConfig = _config_class()


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
