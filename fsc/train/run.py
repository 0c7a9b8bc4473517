"""Training runs on disk: :func:`run_training`, a run directory that survives being killed.

The run trains with :func:`fsc.optim.optimize` and keeps everything in one directory: ``run.json``,
``trajectory.npz`` (and ``trajectory.csv`` on request, :mod:`fsc.io.trajectory`), the checkpoints (:mod:`fsc.io.checkpoint`), the initial and
final policies and, last, ``result.json``.  Started again with the same arguments it resumes from its last
checkpoint and ends bit for bit as an uninterrupted run.  docs/formats.md lists the files and
docs/runs-on-disk.md says what survives a kill, a full disk or a second writer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from threadpoolctl import threadpool_limits

from fsc.engines.estimate import set_up_seconds
from fsc.errors import InputError
from fsc.evaluate import Evaluator
from fsc.io.checkpoint import CHECKPOINT, PREVIOUS_CHECKPOINT, load_checkpoint
from fsc.io.rundir import RunLock, check_run_directory, read_run_json
from fsc.io.trajectory import Trajectory
from fsc.model.architecture import MemoryArchitecture
from fsc.model.policy import Policy, Weights, check_policy, read_policy_file
from fsc.model.pomdp import POMDP, Task, as_pomdp
from fsc.optim import State, Step, make_optimizer, optimize
from fsc.resolve import is_policy_file, resolve_policy
from fsc.train.arguments import MAY_CHANGE, TrainingConfig
from fsc.train.loop import Run, Thinning, TrainingResult, first_converged, train_loop
from fsc.train.setting import Setting, resolve_setting

__all__ = ["Inputs", "resolve_inputs", "run_training", "train_inputs", "without_torch"]


@attrs.frozen(kw_only=True, eq=False)
class Inputs:
    """What a run trains, resolved once from its configuration: the world (and what ``run.json`` records of
    it), the memory, the reset, the initial policy (a :class:`fsc.Policy`, or its numpy weights for a run
    without torch: :func:`resolve_inputs`) and the optimiser."""

    world: POMDP | Task
    world_record: dict[str, Any]
    arch: MemoryArchitecture
    reset: float
    policy: Policy | Weights
    optimizer: Step

    def arguments(self, config: TrainingConfig) -> dict[str, Any]:
        """``run.json``'s ``arguments``: the world as resolved, then the configuration, the memory and the
        reset as the run uses them."""
        resolved = {"memory": _memory_text(self.arch), "reset": self.reset, "out": str(config.out), "quiet": bool(config.quiet)}
        return {**self.world_record, **config.recorded(), **resolved}


def resolve_inputs(config: TrainingConfig, world: POMDP | Task | None = None, policy: Policy | None = None, *, setting: Setting | None = None,
                   arrays: bool = False) -> Inputs:  # fmt: skip
    """The world, memory, reset, initial policy and optimiser a configuration names (:mod:`fsc.resolve`);
    ``world`` and ``policy`` are the API's own objects, given instead of ``config.mu``/``pomdp`` and ``init``;
    ``setting``: the world, memory and reset already resolved (:func:`fsc.train.setting.resolve_setting`);
    ``arrays``: ``init`` ``uniform`` or a policy file as its :class:`fsc.model.policy.Weights`, without torch
    (:func:`without_torch` says when the run can do without it).

    Raises:
        ValueError, TypeError: a bad argument, naming it; nothing is written.
    """
    setting = resolve_setting(config, world) if setting is None else setting
    named, arch, reset = setting.world, setting.arch, setting.reset
    optimizer = make_optimizer(config.optimizer, **config.hyperparameters())
    if policy is None:
        start = config.init
        policy = resolve_policy(start, arch, mu=named.mu, reset=reset, seed=config.seed, convention=config.convention, option="init", arrays=arrays)
    else:
        policy = resolve_policy(check_policy(policy), arch, option="initial policy")
    return Inputs(world=named.world, world_record=named.record, arch=arch, reset=reset, policy=policy, optimizer=optimizer)


def without_torch(config: TrainingConfig) -> bool:
    """Whether the run ``config`` describes needs no torch: a new run (a checkpoint holds torch's tensors) of
    the gradient flow or plain ascent (:data:`fsc.optim.ON_ARRAYS`) from ``uniform`` or a policy file, which
    :func:`resolve_inputs` then gives as numpy arrays (``arrays=True``); the same steps, the same bits."""
    new = not any((Path(config.out) / name).exists() for name in (CHECKPOINT, PREVIOUS_CHECKPOINT))
    return new and config.optimizer in ("flow", "ascent") and (config.init == "uniform" or is_policy_file(config.init))


def _memory_text(arch: MemoryArchitecture) -> str | dict:
    for kind, size in (("RAM", "M"), ("Chain", "M"), ("Column", "M"), ("Memento", "m")):
        spec = arch.to_dict()
        if spec["kind"] == kind and spec.get("arms") == 2 and spec.get("observations") == 2:
            return f"{kind.lower()}:{spec[size]}"
    return arch.to_dict()


# ---------------------------------------------------------------------------
# The run directory.


def open_run(config: TrainingConfig, inputs: Inputs) -> Run:
    """The run directory ``config.out``: new, or holding this very run (same arguments, same initial policy),
    whose latest usable checkpoint it resumes.  Writes nothing.

    Raises:
        ValueError: ``out`` is a file, holds another run, or a run already past ``max_steps``.
    """
    out = Path(config.out)
    check_run_directory(out)  # new or ours, symbolic links resolved; refused before any work
    arguments = inputs.arguments(config)
    meta = {"arguments": arguments, "optimizer": inputs.optimizer.to_dict(), **({"pomdp_path": str(config.pomdp)} if config.pomdp is not None else {})}
    state, trajectory = None, Trajectory()
    if (out / "run.json").exists():
        _check_directory(out, arguments, inputs.policy)
        state, trajectory = _resume(out, arguments)
        if state is not None and config.max_steps is not None and state.step > config.max_steps:
            raise InputError(
                f"{str(out)!r} holds a run already at step {state.step}, past max_steps {config.max_steps}: a run continues but is "
                "never cut back; use another out directory"
            )
    return Run(out=out, policy=inputs.policy, reset=inputs.reset, state=state, trajectory=trajectory, meta=meta,
               keep=Thinning(config.rows_per_decade, trajectory), csv=config.csv)  # fmt: skip


def _check_directory(out: Path, arguments: dict[str, Any], policy: Policy | Weights) -> None:
    """``out`` holds no run, or this one: the same arguments (but those that may change) and initial policy."""
    if (out / "run.json").exists():
        _check_same_run(out, read_run_json(out / "run.json").get("arguments", {}), arguments)
    if (out / "initial_policy.npz").exists() and not _same_policy(read_policy_file(out / "initial_policy.npz"), policy):
        raise InputError(f"{str(out)!r} holds a run that started from another initial policy; use another out directory")


def _resume(out: Path, arguments: dict[str, Any]) -> tuple[State | None, Trajectory]:
    """The state and trajectory of the latest usable checkpoint of ``out``.

    The latest checkpoint, else the previous one, else none (the run starts
    again from its initial policy); a fallback or a restart is said on one
    line of stderr.  Training with one thread is deterministic, so every
    choice ends in the same result.
    """
    problems = []
    for path in (out / CHECKPOINT, out / PREVIOUS_CHECKPOINT):
        if not path.exists():
            continue
        try:
            state, columns, saved = load_checkpoint(path)
        except ValueError as error:  # every detected corruption
            problems.append(str(error))
            continue
        _check_same_run(out, saved["arguments"], arguments)
        if problems:
            print(f"fsc: warning: {problems[0]}; resuming from the previous checkpoint (step {state.step})", file=sys.stderr, flush=True)
        return state, Trajectory(columns)
    if problems:
        print(f"fsc: warning: {'; '.join(problems)}; restarting the run from the start", file=sys.stderr, flush=True)
    return None, Trajectory()


# ---------------------------------------------------------------------------
# The run.


def run_training(config: TrainingConfig | None = None, /, *, world: POMDP | Task | None = None, policy: Policy | None = None,
                 **arguments: Any) -> TrainingResult:  # fmt: skip
    """Train a controller in the run directory ``config.out`` (resuming it if it holds one).

    Args:
        config: the run's arguments as one :class:`~fsc.train.arguments.TrainingConfig`; or give them as
            keywords (``arguments``): those of ``fsc train``, each declared once in
            :data:`fsc.train.arguments.TRAINING` (``memory``, ``init`` and ``out`` are required).
        world: instead of ``mu`` or ``pomdp``, the world itself (a ``fsc.POMDP`` or an object whose
            ``.pomdp`` is one); ``run.json`` records the sha256 of its ``.POMDP`` text.
        policy: the initial policy, already built (on ``memory``); ``init`` is then only recorded.

    Returns:
        The :class:`TrainingResult`, with the final policy and the trajectory.

    Raises:
        ValueError, TypeError: a bad argument (naming it), or ``out`` holding a run with other arguments;
            raised before anything is written.
    """
    started = time.perf_counter()
    if config is None:
        config = TrainingConfig(**arguments)
    elif arguments:
        raise InputError(f"give the arguments in the configuration or as keywords, not both (got {sorted(arguments)})")
    return train_inputs(config, resolve_inputs(config, world, policy), started=started)


def train_inputs(config: TrainingConfig, inputs: Inputs, *, started: float) -> TrainingResult:
    """:func:`run_training` once its inputs are resolved (:func:`resolve_inputs`); the time budget counts from
    ``started`` (``time.perf_counter()``).  ``fsc train`` comes in here, having resolved its world and memory
    before it imported torch (:mod:`fsc.train.setting`)."""
    run = open_run(config, inputs)
    engine = _set_up(config, inputs)
    stops = config.stop_conditions()
    budget = stops.get("max_seconds")
    if isinstance(budget, (int, float)) and budget > 0:  # the budget counts the set-up (reading the world, building the chain)
        stops["max_seconds"] = max(budget - (time.perf_counter() - started), _NO_TIME_LEFT)
    records = optimize(
        inputs.world, inputs.policy, reset=inputs.reset, optimizer=inputs.optimizer, convention=config.convention, engine=config.engine,
        target=config.target, state=run.state, **_record_plan(config, run), **stops,
    )  # fmt: skip
    meta = {**run.meta, "engine": engine}
    with _threads(config.threads), RunLock(run.out):  # one owner; then check again what another owner may have written meanwhile
        _check_directory(run.out, run.meta["arguments"], inputs.policy)
        return train_loop(records, attrs.evolve(run, meta=meta), config)


#: The time budget left when the set-up took it all: the run stops after its first evaluation.
_NO_TIME_LEFT = 1e-9
#: A set-up estimated to take longer than this many seconds says so on stderr (unless ``quiet``).
LONG_SET_UP_SECONDS = 2.0


def _set_up(config: TrainingConfig, inputs: Inputs) -> str:
    """Build the evaluator the run will use (the chain is cached for the objective), saying so on stderr
    first when it is estimated to take long; return the engine's name."""
    world = as_pomdp(inputs.world)
    seconds = set_up_seconds(world, inputs.arch, inputs.reset, config.engine)
    talk = not config.quiet and seconds > LONG_SET_UP_SECONDS
    if talk:
        print(f"fsc train: setting up the joint chain of {inputs.arch!r} on {world.num_states} states (about {seconds:.0f} s) ...", file=sys.stderr, flush=True)
    start = time.perf_counter()
    evaluator = Evaluator.of(inputs.world, inputs.arch, inputs.reset, config.engine, config.convention)
    if talk:
        print(f"fsc train: set up ({evaluator.engine} engine) in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    return evaluator.engine


def _record_plan(config: TrainingConfig, run: Run) -> dict[str, Any]:
    """Which records the loop needs: with thinning, one at each next row; keeping every row, the compiled flow's
    record of the steps between two records, and without ``until_t`` the first of them at which the run has
    converged (:func:`fsc.train.loop.first_converged`), where the loop stops as it would on a record per step."""
    if config.rows_per_decade is not None:
        return {"skip_until": run.keep.due}
    if config.until_t is not None:
        return {"skip_until": lambda: math.inf, "keep_skipped": True}

    def first_stop(skipped: dict[str, Any]) -> int | None:  # the rows so far: the loop appended every record before
        columns = run.trajectory.columns
        return first_converged(columns["t"], columns["gain"], skipped["t"], skipped["gain"])

    return {"skip_until": lambda: math.inf, "keep_skipped": True, "first_stop": first_stop}


@contextlib.contextmanager
def _threads(threads: int | None):
    """torch's and LAPACK's threads set to ``threads`` for the run, restored after (``None``: left alone).

    LAPACK's too (OpenBLAS starts one per core by default): a sweep of one-thread runs on every core would
    otherwise run several LAPACK threads per run, and the runs slow each other down.
    """
    if threads is None:
        yield
        return
    torch = sys.modules.get("torch")  # a run on numpy arrays imports none: only LAPACK's threads matter then
    previous = None if torch is None else torch.get_num_threads()
    if torch is not None:
        torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads, user_api="blas"):
            yield
    finally:
        if torch is not None:
            torch.set_num_threads(previous)


def _check_same_run(out: Path, saved: dict, arguments: dict) -> None:
    differ = sorted(k for k in set(saved) | set(arguments) if k not in MAY_CHANGE and k != "out" and saved.get(k) != arguments.get(k))
    if differ:
        details = ", ".join(f"{k}: {_short(saved.get(k))} there, {_short(arguments.get(k))} now" for k in differ)
        raise InputError(f"{str(out)!r} holds a run with other arguments ({details}); use another out directory")


def _short(value: object) -> str:
    """``repr`` of an argument, or a digest of it when long (an automaton's tables)."""
    text = repr(value)
    if len(text) <= 120:
        return text
    return f"<{len(text)} characters, sha256 {hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]}>"


def _same_policy(a: Weights, b: Policy | Weights) -> bool:
    b_logits, b_init = (b.logits, b.init_logits) if isinstance(b, Weights) else (b.logits.detach().numpy(), b.init_logits.detach().numpy())
    mask = a.architecture.reset_mask  # saved: -inf elsewhere
    return a.architecture == b.architecture and np.array_equal(a.logits, b_logits) and np.array_equal(a.init_logits[mask], b_init[mask])
