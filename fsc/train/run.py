"""Training runs on disk: :func:`run_training`, a run directory that survives being killed.

The run trains with :func:`fsc.optim.optimize` and keeps everything in one directory: ``run.json``,
``trajectory.csv`` (:mod:`fsc.io.trajectory`), the checkpoints (:mod:`fsc.io.checkpoint`), the initial and
final policies and, last, ``result.json``.  Started again with the same arguments it resumes from its last
checkpoint and ends bit for bit as an uninterrupted run.  docs/formats.md lists the files and
docs/runs-on-disk.md says what survives a kill, a full disk or a second writer.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import torch
from threadpoolctl import threadpool_limits

from fsc.checks import real
from fsc.engines.solve import choose_engine
from fsc.errors import InputError, InputTypeError
from fsc.evaluate import CONVENTIONS, resolve_reset
from fsc.io.checkpoint import CHECKPOINT, PREVIOUS_CHECKPOINT, load_checkpoint
from fsc.io.rundir import RunLock, read_run_json
from fsc.io.trajectory import Trajectory
from fsc.limits import MAX_THREADS
from fsc.model.architecture import MemoryArchitecture
from fsc.model.chain import joint_chain
from fsc.model.memory import parse_memory
from fsc.model.policy import Policy
from fsc.model.pomdp import POMDP, Task, as_pomdp
from fsc.optim import OPTIMIZERS, State, StopRule, make_optimizer, optimize
from fsc.train.arguments import MAY_CHANGE
from fsc.train.loop import Thinning, TrainingResult, train_loop

__all__ = ["run_training"]

#: Arguments that may differ when a run is continued (they only say when to stop, or how to show it).
_MAY_CHANGE = MAY_CHANGE  # stop conditions and how the run runs (fsc.train.arguments)

# ---------------------------------------------------------------------------
# Argument checks.


def _memory(memory: object, world: POMDP) -> MemoryArchitecture:
    if isinstance(memory, MemoryArchitecture):
        arch = memory
    elif isinstance(memory, str):
        arch = parse_memory(memory, arms=world.num_actions, observations=world.num_observations)
    else:
        raise InputTypeError(f"memory must be a string like 'ram:8' or a fsc.MemoryArchitecture, got {memory!r}")
    if arch.num_actions != world.num_actions or arch.num_observations != world.num_observations:
        raise InputError(
            f"memory {arch!r} has {arch.num_actions} actions and {arch.num_observations} observations, "
            f"the world {world.num_actions} and {world.num_observations}"
        )
    return arch


def _world(mu: object, pomdp: object, world: object = None) -> tuple[POMDP | Task, dict[str, Any]]:
    """The world of a run, and what ``run.json`` records of it: the two-hypothesis world of ``mu``, the
    ``.POMDP`` file ``pomdp`` (its sha256), or ``world`` itself, a POMDP or an object whose ``.pomdp`` is one
    (the sha256 of its ``.POMDP`` text, :func:`fsc.io.pomdp_file.format_pomdp`)."""
    import hashlib

    given = [name for name, value in (("mu", mu), ("pomdp", pomdp), ("world", world)) if value is not None]
    if len(given) > 1:
        raise InputError(f"give one of mu (the two-hypothesis world), pomdp (a .POMDP file) and world, got {' and '.join(given)}")
    if world is not None:
        from fsc.io.pomdp_file import format_pomdp

        as_pomdp(world)  # a POMDP, or an object whose .pomdp is one
        return world, {"world": hashlib.sha256(format_pomdp(world).encode()).hexdigest()}
    if pomdp is None:
        import tasks  # the two-hypothesis world

        mu = 0.1 if mu is None else mu
        return tasks.TwoHypothesis(mu), {"mu": float(mu)}
    if not isinstance(pomdp, (str, os.PathLike)):
        raise InputTypeError(f"pomdp must be a path to a .POMDP file, got {pomdp!r}")
    from fsc.io.pomdp_file import read_pomdp

    try:
        return read_pomdp(pomdp), {"pomdp": hashlib.sha256(Path(pomdp).read_bytes()).hexdigest()}
    except OSError as error:
        raise InputError(f"pomdp: cannot read {str(pomdp)!r}: {error.strerror or error}") from None


def _memory_text(arch: MemoryArchitecture) -> str | dict:
    for kind, size in (("RAM", "M"), ("Chain", "M"), ("Column", "M"), ("Memento", "m")):
        spec = arch.to_dict()
        if spec["kind"] == kind and spec.get("arms") == 2 and spec.get("observations") == 2:
            return f"{kind.lower()}:{spec[size]}"
    return arch.to_dict()


def _initial_policy(init: str, arch: MemoryArchitecture, *, mu: float, reset: float, seed: int, convention: str) -> Policy:
    if init.endswith((".npz", ".json")):
        policy = Policy.load(init)
    else:
        import policies  # the initialisations live in the `policies` package

        # The paper convention is the published code's set-up, start included.
        policy = policies.initial_policy(init, arch, mu=mu, reset=reset, seed=seed, published=convention == "paper")
    return policy


# ---------------------------------------------------------------------------
# Files.


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


def run_training(
    *,
    mu: float | None = None,
    pomdp: str | os.PathLike | None = None,
    world: POMDP | Task | None = None,
    memory: str | MemoryArchitecture,
    init: str,
    seed: int = 0,
    reset: float | None = None,
    discount: float | None = None,
    until_t: float | None = None,
    out: str | os.PathLike,
    max_dgrad: float | None = None,
    max_seconds: float | None = None,
    convention: str = "native",
    optimizer: str = "flow",
    lr: float | None = None,
    engine: str = "auto",
    target: str = "gain",
    max_steps: int | None = None,
    rows_per_decade: int | None = None,
    quiet: bool = False,
    checkpoint_seconds: float = 60.0,
    threads: int | None = 1,
    policy: Policy | None = None,
) -> TrainingResult:
    """Train a controller in the run directory ``out`` (resuming it if it holds one).

    The arguments are those of ``fsc train``: ``--mu | --pomdp, --memory
    --init --seed --reset | --discount [--until-t] --out [--max-dgrad]
    [--max-seconds] [--convention] [--optimizer] [--lr] [--engine] [--quiet]``.

    Args:
        mu: the two-hypothesis world's gap, in (0, 1) (default 0.1).
        pomdp: instead, a ``.POMDP`` file; ``run.json`` records the sha256 of
            its content, so a run resumed with another file is refused.
        world: instead, the world itself (the API only): a ``fsc.POMDP`` or
            any object whose ``.pomdp`` is one (``tasks.Tiger()``, a task of
            yours); ``run.json`` records the sha256 of its ``.POMDP`` text.
        memory: ``ram:M``, ``chain:M``, ``column:M``, ``memento:m`` (sized to
            the world's actions and observations) or an architecture.
        init: an initialisation name of :func:`policies.initial_policy`, or a
            policy file (``.npz``/``.json``); with ``policy`` given, only
            recorded in ``run.json``.
        seed: seed of the initialisation.
        reset: reset probability ``r`` in (0, 1]; or ``discount``, ``r = 1 -
            discount``; given neither, the file's discount, else 1e-3.
        until_t: stop at the first accepted step with ``t >= until_t``.  None:
            stop when converged, i.e. when the gain has changed by at most
            ``CONVERGED`` (1e-9) of its size over the last decade of t
            (``t / 10`` to ``t``, from ``t >= 10``), or at another limit.
        out: the run directory.
        max_dgrad: flow only (default 1e-4).
        max_seconds: also stop after this much wall time (over all sessions).
        convention: ``native`` or ``paper`` (docs/model.md).
        optimizer: ``flow`` (gradient flow), ``adam`` or ``ascent``.
        lr: Adam / ascent only (defaults 1e-2 / 1).
        engine: ``auto``, ``adjoint`` or an engine of :func:`fsc.evaluate`
            (see :class:`fsc.objective.Objective`).
        target: climb the ``gain`` per step (default, docs/model.md) or the
            discounted ``return`` ``gain / r`` (paper eq. (4)).
        max_steps: also stop after this many accepted steps.
        quiet: no progress bar (there is none either when stderr is not a terminal).
        checkpoint_seconds: wall time between checkpoints.
        threads: torch's and LAPACK's threads during the run (restored afterwards); ``None``
            leaves their settings alone (and bit-for-bit resumes then need the
            same settings in every session).
        policy: the initial policy, already built (its architecture must be ``memory``).

    Returns:
        The :class:`TrainingResult`.

    Raises:
        ValueError, TypeError: a bad argument (naming it), or ``out`` holding a
            run with other arguments.  Raised before anything is written.
    """
    world, world_record = _world(mu, pomdp, world)
    arch = _memory(memory, as_pomdp(world))
    if not isinstance(init, str) or not init:
        raise InputTypeError(f"init must be an initialisation name or a policy file, got {init!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputTypeError(f"seed must be an int, got {seed!r}")
    if not 0 <= seed <= 2**63 - 1:
        raise InputError(f"seed must be in [0, 2**63 - 1], got {seed!r}")
    reset = resolve_reset(world, reset, discount, allow_zero=False, default=1e-3)
    if until_t is not None:
        until_t = real("until_t", until_t, nan=True)
        if not (math.isfinite(until_t) and until_t >= 0):
            raise InputError(f"until_t must be a finite number >= 0, got {until_t!r}")
    if convention not in CONVENTIONS:
        raise InputError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    if not isinstance(optimizer, str) or optimizer not in OPTIMIZERS:
        raise InputError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {optimizer!r}")
    if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1):
        raise InputError(f"max_steps must be an int >= 1 or None, got {max_steps!r}")
    if rows_per_decade is not None and (isinstance(rows_per_decade, bool) or not isinstance(rows_per_decade, int) or rows_per_decade < 1):
        raise InputError(f"rows_per_decade must be an int >= 1 or None, got {rows_per_decade!r}")
    rule = StopRule(until_t=until_t, max_steps=max_steps, max_seconds=max_seconds)
    opt = make_optimizer(optimizer, **{key: value for key, value in (("lr", lr), ("max_dgrad", max_dgrad)) if value is not None})
    checkpoint_seconds = real("checkpoint_seconds", checkpoint_seconds, nan=True)
    if not checkpoint_seconds >= 0:
        raise InputError(f"checkpoint_seconds must be >= 0, got {checkpoint_seconds!r}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= MAX_THREADS):
        raise InputError(f"threads must be an int in [1, {MAX_THREADS}] or None, got {threads!r}")
    if not isinstance(out, (str, os.PathLike)):
        raise InputTypeError(f"out must be a directory path, got {out!r}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"out must be a directory, got the file {str(out)!r}")
    if policy is None:
        policy = _initial_policy(init, arch, mu=world_record.get("mu", 0.1), reset=reset, seed=seed, convention=convention)
    if not isinstance(policy, Policy):
        raise InputTypeError(f"policy must be a fsc.Policy, got {type(policy).__name__}")
    if policy.architecture != arch:
        raise InputError(f"the initial policy is for {policy.architecture!r}, not for memory {arch!r}")

    arguments = {
        **world_record,
        "memory": _memory_text(arch),
        "init": init,
        "seed": seed,
        "reset": reset,
        "until_t": until_t,
        "max_dgrad": max_dgrad,
        "max_seconds": max_seconds,
        "max_steps": max_steps,
        "rows_per_decade": rows_per_decade,
        "convention": convention,
        "optimizer": optimizer,
        "lr": lr,
        "engine": engine,
        "target": target,
        "out": str(out),
        "quiet": bool(quiet),
        "checkpoint_seconds": checkpoint_seconds,
        "threads": threads,
    }
    meta = {"arguments": arguments, "optimizer": opt.to_dict(), **({"pomdp_path": str(pomdp)} if pomdp is not None else {})}

    # An existing run must be this one.
    state, trajectory = None, Trajectory()
    if (out / "run.json").exists():
        previous = read_run_json(out / "run.json")
        _check_same_run(out, previous.get("arguments", {}), arguments)
        if (out / "initial_policy.npz").exists() and not _same_policy(Policy.load(out / "initial_policy.npz"), policy):
            raise InputError(f"{str(out)!r} holds a run that started from another initial policy; use another out directory")
        state, trajectory = _resume(out, arguments)
        if state is not None and max_steps is not None and state.step > max_steps:
            raise InputError(
                f"{str(out)!r} holds a run already at step {state.step}, past max_steps {max_steps}: a run continues but is "
                "never cut back; use another out directory"
            )

    # Checks every remaining argument (engine, ...) before anything is written; runs nothing yet.
    keep = Thinning(rows_per_decade, trajectory)
    # Every row kept: the compiled flow records the steps between two records (a record per MOST_STEPS steps),
    # unless the run may stop as converged, which reads every row as it comes.
    every_row = rows_per_decade is None and rule.until_t is not None
    records = optimize(
        world, policy, reset=reset, optimizer=opt, convention=convention, engine=engine, target=target, state=state,
        skip_until=keep.due if rows_per_decade is not None else (lambda: math.inf) if every_row else None, keep_skipped=every_row,
        **attrs.asdict(rule),
    )  # fmt: skip
    # The engine that runs (what auto chose), for the record: auto's rule on the cached chain, no second evaluator.
    meta["engine"] = choose_engine(joint_chain(as_pomdp(world), arch), reset) if engine == "auto" else ("dense" if engine == "adjoint" else engine)
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    # LAPACK's threads too (OpenBLAS starts one per core by default): a sweep of one-thread runs on every core
    # would otherwise run several LAPACK threads per run, and the runs slow each other down.
    blas = threadpool_limits(limits=threads, user_api="blas") if threads is not None else contextlib.nullcontext()
    try:
        with blas, RunLock(out):  # one owner; then check again what another owner may have written meanwhile
            if (out / "run.json").exists():
                _check_same_run(out, read_run_json(out / "run.json").get("arguments", {}), arguments)
            if (out / "initial_policy.npz").exists() and not _same_policy(Policy.load(out / "initial_policy.npz"), policy):
                raise InputError(f"{str(out)!r} holds a run that started from another initial policy; use another out directory")
            return train_loop(records, arch, policy, rule, out, state is not None, trajectory, meta, quiet, checkpoint_seconds, reset, keep)
    finally:
        if threads is not None:
            torch.set_num_threads(previous_threads)


def _check_same_run(out: Path, saved: dict, arguments: dict) -> None:
    differ = sorted(k for k in set(saved) | set(arguments) if k not in _MAY_CHANGE and k != "out" and saved.get(k) != arguments.get(k))
    if differ:
        details = ", ".join(f"{k}: {_short(saved.get(k))} there, {_short(arguments.get(k))} now" for k in differ)
        raise InputError(f"{str(out)!r} holds a run with other arguments ({details}); use another out directory")


def _short(value: object) -> str:
    """``repr`` of an argument, or a digest of it when long (an automaton's tables)."""
    text = repr(value)
    if len(text) <= 120:
        return text
    import hashlib

    return f"<{len(text)} characters, sha256 {hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]}>"


def _same_policy(a: Policy, b: Policy) -> bool:
    return (
        a.architecture == b.architecture
        and np.array_equal(a.logits.detach().numpy(), b.logits.detach().numpy())
        and np.array_equal(a.init_logits.detach().numpy(), b.init_logits.detach().numpy())
    )
