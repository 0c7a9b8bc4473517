"""The ``results/`` folder: full-size sweeps shipped small, read back, and completed.

A shipped sweep is a folder of small files made from sweep directories (nothing is trained to make it):

- ``summary.csv``: one row per point of the spec, in its order: the arguments, ``status`` (``done``;
  ``running``: a checkpoint and no result yet; ``absent``), why a finished run stopped (``stop``: ``until_t``,
  ``stalled``, ``max_seconds``), the final ``q``, ``t``, ``steps``, the run's
  ``seconds`` (its wall time over every session; one thread, so also its CPU time) and ``commit`` (the
  project's commit that made or last resumed it);
- ``trajectories.csv.gz``: ``run,t,q``, each run's q(t) down-sampled to at most ``points`` log-spaced times
  (first and last row kept), gzip-compressed with deterministic bytes (:func:`fsc.files.write_gzip_text`: the
  same rows give the same file); ``gzip -dc`` or ``pandas.read_csv`` reads it. A folder shipped before holds a
  plain ``trajectories.csv`` instead, which is read the same way (:func:`trajectories_file`) and replaced by
  the ``.csv.gz`` at the next shipping;
- ``groups.csv``: per group of seeds (the spec's arguments but the seed, the stop, the convention and how
  rows are stored), the finished runs and the median, quartiles, minimum and maximum of their final q;
- ``figure.png``: Figure 4's panels (q against t, seeds faint, medians bold, reference lines dashed), or for
  the spec named ``fig2`` Figure 2 (final q against r and against M, the CCP's closed form as lines);
- ``claims.json``, ``claims.md`` (the specs of Figures 4 and 2, :data:`FIGURE_OF`): the paper's claims about
  training, checked (:mod:`policies.claims`); for a re-run by another integrator (:data:`COMPARED_WITH`), each
  claim also on the published rule's runs shipped beside it, side by side, and ``runs-compared.csv``: per run,
  the final q of both and where their curves part;
- ``policies/NAME.npz``: the final policy of each finished run, NAME the run's name with ``/`` replaced by
  ``__`` (:func:`policy_file`), in the policy file format (docs/formats.md: ``-inf`` initial logits outside
  the reset nodes), compressed; a point finished elsewhere and shipped without its run directory has none,
  nor a run of a memory :func:`ship` is told to ship without (``without_policies``: size);
- ``provenance.json``: the spec, the commit of the shipping, the machine, the counts, the runs' time.

:func:`ship` keeps, for a point its sweep directories have not finished, what the folder already held, so
runs made in several places or sessions add up. :func:`complete` runs what a shipped folder lacks and ships
it in: ``fsc report --full``.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
import platform
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import numpy as np

from fsc.checks import integer
from fsc.errors import InputError, quoted
from fsc.files import atomic_write, write_gzip_text, write_text
from fsc.provenance import source_commit
from fsc.report import page
from fsc.sweep.spec import NOT_NAMING, STOP_ARGUMENTS, Point, Sweep, cap_not_reached, load_spec

__all__ = [
    "COMPARED_WITH", "FIGURE4_PANELS", "FIGURE_OF", "FULL_SIZE", "RUNS_COMPARED", "SPECS", "complete", "draw_figure", "lacking", "log_spaced",
    "draw_integrators", "end_on_final_rows", "policy_file", "read_shipped", "ship", "trajectories_file", "write_claims", "write_policy", "write_trajectories",
]  # fmt: skip

#: The published set-ups, one sweep spec each, and the folder of ``results/`` each is shipped to.
SPECS = page.SHIPPED.parent / "examples" / "sweeps"
FULL_SIZE = ("fig4", "fig2")

#: The published figure each full-size spec draws (its panels, its claims): the specs of the re-runs by the
#: Rosenbrock integrator (the true flow, docs/model.md) draw theirs too.
FIGURE_OF = {"fig4": "fig4", "fig2": "fig2", "fig4-rosenbrock": "fig4", "fig2-rosenbrock": "fig2"}

#: A re-run by another integrator -> the published spec whose shipped folder (a sibling of its own, of the
#: same name) holds the published rule's runs of the same points, which its claims are set against.
COMPARED_WITH = {"fig4-rosenbrock": "fig4"}

#: Per run of a re-run by another integrator, against the published rule's run of the same point.
RUNS_COMPARED = "runs-compared.csv"

#: In a re-run by another integrator: a sample of its runs integrated again by scipy's BDF at a relative 1e-10
#: (``benchmarks/bench_training.py bdf-check``), its figures per run and BDF's q at the rows its curves keep.
BDF_CHECK, BDF_CURVES = "bdf-check.json", "bdf.csv.gz"

#: The curves of a shipped folder, and the plain CSV that folders shipped before hold instead (read, never written).
TRAJECTORIES, PLAIN_TRAJECTORIES = "trajectories.csv.gz", "trajectories.csv"

_RUN_FIELDS = ("status", "stop", "q", "t", "steps", "seconds", "commit")


def log_spaced(t: np.ndarray, points: int) -> np.ndarray:
    """Indices of at most ``points`` rows of an increasing ``t``, log-spaced in ``t`` (first and last kept)."""
    if len(t) <= points:
        return np.arange(len(t))
    positive = t > 0
    first = int(np.argmax(positive)) if positive.any() else len(t)
    grid = np.geomspace(t[first], t[-1], points - 1) if first < len(t) else np.array([])
    keep = sorted(set(np.searchsorted(t, grid).clip(0, len(t) - 1).tolist()) | {0, len(t) - 1})
    if len(keep) > points:  # t ends on repeated values: the first of them and the last row are both kept
        del keep[-2]
    return np.array(keep)


def policy_file(folder: str | os.PathLike, run: str) -> Path:
    """Where the shipped ``folder`` keeps the final policy of the run named ``run``: ``policies/NAME.npz``."""
    return Path(folder) / "policies" / (run.replace("/", "__") + ".npz")


def write_policy(source: str | os.PathLike, path: str | os.PathLike) -> None:
    """Copy the policy file ``source`` to ``path``, compressed, as docs/formats.md says: the same logits, and
    ``-inf`` initial logits outside the architecture's reset nodes (entries no computation reads)."""
    from fsc.model.policy import Policy

    policy = Policy.load(source)  # refuses what is not a policy file
    spec = json.dumps(policy.architecture.to_dict())
    logits = policy.logits.detach().numpy()
    init_logits = np.where(policy.architecture.reset_mask, policy.init_logits.detach().numpy(), -np.inf)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda f: np.savez_compressed(f, architecture=np.array(spec), logits=logits, init_logits=init_logits))


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    a = np.array(values, dtype=float)
    return {"median": float(np.median(a)), "q1": float(np.quantile(a, 0.25)), "q3": float(np.quantile(a, 0.75)),
            "min": float(a.min()), "max": float(a.max())}  # fmt: skip


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def read_shipped(folder: str | os.PathLike) -> tuple[dict[str, dict], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """What a shipped folder holds: run name -> its ``summary.csv`` row, and run name -> ``(t, q)``.

    A folder not shipped yet holds nothing (two empty mappings).
    """
    folder = Path(folder)
    rows: dict[str, dict] = {}
    if (folder / "summary.csv").is_file():
        with open(folder / "summary.csv", newline="") as f:
            rows = {row["run"]: row for row in csv.DictReader(f)}
    path = trajectories_file(folder)
    curves = _read_curves(path) if path is not None else {}
    return rows, {name: (np.array(t), np.array(q)) for name, (t, q) in curves.items()}


def trajectories_file(folder: str | os.PathLike) -> Path | None:
    """The curves of the shipped ``folder``: its ``trajectories.csv.gz``, else the plain ``trajectories.csv`` of a
    folder shipped before the compressed file; ``None`` when it has neither."""
    for name in (TRAJECTORIES, PLAIN_TRAJECTORIES):
        if (Path(folder) / name).is_file():
            return Path(folder) / name
    return None


def _read_curves(path: Path) -> dict[str, tuple[list, list]]:
    """Run name -> ``(t, q)`` lists of a ``run,t,q`` file, gzip-compressed (``.gz``) or plain; bad content is
    an :class:`InputError` naming the file and the line."""
    curves: dict[str, tuple[list, list]] = {}
    reader = None
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rt", encoding="utf-8", newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header != ["run", "t", "q"]:
                raise InputError(f"{quoted(path)}, line 1: expected the header run,t,q, got {quoted(header)}")
            for row in reader:
                try:
                    run, t, q = row
                    t, q = float(t), float(q)
                except ValueError:
                    raise InputError(f"{quoted(path)}, line {reader.line_num}: expected run,t,q numbers, got {quoted(row)}") from None
                ts, qs = curves.setdefault(run, ([], []))
                ts.append(t)
                qs.append(q)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, csv.Error) as error:  # not gzip, cut short, not text
        line = 1 if reader is None else reader.line_num + 1
        raise InputError(f"{quoted(path)}, line {line}: cannot be read as {'gzip-compressed ' * (path.suffix == '.gz')}CSV text ({error})") from None
    return curves


def write_trajectories(folder: str | os.PathLike, curves: dict[str, tuple[np.ndarray, np.ndarray]]) -> Path:
    """``curves`` (run name -> ``(t, q)``) as the shipped ``folder``'s ``trajectories.csv.gz``, atomically and
    with deterministic bytes (the same curves give the same file); a plain ``trajectories.csv`` that the folder
    held from before is removed once the compressed file is in place. Returns the file's path."""
    path = Path(folder) / TRAJECTORIES
    samples = [[name, repr(float(t)), repr(float(q))] for name, (ts, qs) in curves.items() for t, q in zip(ts, qs, strict=True)]
    write_gzip_text(path, _csv([["run", "t", "q"], *samples]))
    (Path(folder) / PLAIN_TRAJECTORIES).unlink(missing_ok=True)  # its curves are in the new file (read before shipping)
    return path


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except ValueError as error:
        raise InputError(f"{str(path)!r} is not valid JSON ({error})") from None


def _from_run(run: Path, point: Point) -> tuple[dict, tuple[np.ndarray, np.ndarray] | None]:
    """A run directory's status fields and its whole ``(t, q)``, if it has a trajectory.

    ``done`` as the sweep driver sees it (:func:`fsc.sweep.worker.is_finished`: finished with the point's
    stop conditions); a run finished with other ones, or interrupted, is ``running`` at its checkpoint.
    """
    from fsc.io.trajectory import trajectory_file
    from fsc.sweep.worker import is_finished
    from fsc.train import read_trajectory

    fields: dict = dict.fromkeys(_RUN_FIELDS)
    fields["status"] = "absent"
    if (run / "run.json").is_file():
        fields["commit"] = _json(run / "run.json").get("versions", {}).get("commit")
    if is_finished(run, point.stop()):
        result = _json(run / "result.json")
        fields.update(status="done", **{k: result.get(k) for k in ("stop", "q", "t", "steps", "seconds")})
        if (run / "policy.npz").is_file():
            fields["policy"] = run / "policy.npz"
    elif (run / "checkpoint.json").is_file():
        meta = _json(run / "checkpoint.json")
        fields.update(status="running", t=meta.get("t"), steps=meta.get("step"), seconds=meta.get("seconds"))
    curve = None
    if trajectory_file(run) is not None:
        columns = read_trajectory(run, ["t", "q"])
        curve = (columns["t"], columns["q"])
    return fields, curve


def _same_stop(row: dict, stop: dict) -> bool:
    """The shipped ``row`` was made with the stop conditions ``stop`` (its own columns say which), or ends
    where a run made with them ends (another ``max_steps`` it never reached)."""
    for key, value in stop.items():
        text = row.get(key)
        shipped = None if text in (None, "") else float(text)
        if (shipped is None) != (value is None) or (value is not None and shipped != float(value)):
            if not cap_not_reached(key, value, steps=int(row["steps"]) if row.get("steps") else math.inf, stop=row.get("stop")):
                return False
    return True


def _from_shipped(row: dict | None, curve, point: Point) -> tuple[dict, tuple[np.ndarray, np.ndarray] | None]:
    """A shipped row as a source: ``done`` only if made with the point's stop conditions (or another
    ``max_steps`` it never reached), else ``running``."""
    fields = {k: (row or {}).get(k) or None for k in _RUN_FIELDS}
    status = fields["status"]
    if status == "done" and not _same_stop(row, point.stop()):
        status = "running"  # finished with another horizon: the spec now asks for more
    fields["status"] = status if status in ("done", "running") else "absent"
    return fields, curve


def _group_keys(sweep: Sweep) -> list[str]:
    """The arguments that tell groups of seeds apart: not the seed, the stop, the convention or the storage."""
    return [k for k in sweep.keys() if k not in ("seed", "convention") and k not in NOT_NAMING and k not in STOP_ARGUMENTS]


def lacking(sweep: Sweep, folder: str | os.PathLike) -> list[Point]:
    """The points of ``sweep`` that the shipped ``folder`` has not finished (with their stop conditions), in order."""
    rows, _ = read_shipped(folder)
    return [p for p in sweep.points if _from_shipped(rows.get(p.name), None, p)[0]["status"] != "done"]


def ship(
    sweep: Sweep,
    sweeps: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    *,
    points: int = 200,
    commit: str | None = None,
    commands: Sequence[str] = (),
    wall: float | None = None,
    without_policies: Sequence[str] = (),
) -> dict:
    """Write the shipped folder ``out`` of ``sweep`` from the sweep directories ``sweeps`` (see the module).

    Per point, the sources are the sweep directories in order, then what ``out`` already held: the first
    that finished it (with the point's stop conditions) wins; else the one furthest in ``t``; the fields and
    the curve of a point always come from one source. ``without_policies``: memories (``ram:64``) whose runs'
    final policies are not shipped (any shipped before are removed). Returns the provenance record (also
    ``out/provenance.json``). Each file is replaced whole, ``summary.csv`` and ``provenance.json`` last.
    """
    points = integer("points", points, 2)
    out = Path(out)
    previous_rows, previous_curves = read_shipped(out)
    keys = sweep.keys()
    rows, curves, policies = [], {}, {}
    for point in sweep.points:
        fields, curve = _best_source(point, sweeps, previous_rows.get(point.name), previous_curves.get(point.name))
        row = {"run": point.name, **{k: point.arguments.get(k) for k in keys}}
        row.update({k: fields.get(k) for k in _RUN_FIELDS})
        rows.append(row)
        shipped = fields["status"] == "done" and point.arguments.get("memory") not in without_policies
        policies[point.name] = fields.get("policy") if shipped else False
        if curve is not None:
            keep = log_spaced(curve[0], points)
            curves[point.name] = _ended(curve[0][keep], curve[1][keep], row)

    out.mkdir(parents=True, exist_ok=True)
    _write_policies(out, policies)
    write_trajectories(out, curves)
    write_text(out / "groups.csv", _csv(_groups_table(sweep, rows)))
    _draw(sweep, rows, curves, out / "figure.png")
    compared = _claims_files(sweep, rows, curves, out)
    provenance = _provenance(sweep, rows, commit=commit, commands=commands, wall=wall)
    provenance["policies"] = sum(policy_file(out, p.name).is_file() for p in sweep.points)
    if compared is not None:
        provenance["compared_with"] = compared
    write_text(out / "summary.csv", _csv([list(rows[0])] + [[_cell(v) for v in r.values()] for r in rows]))
    write_text(out / "provenance.json", json.dumps(provenance, indent=1) + "\n")
    return provenance


def _ended(t: np.ndarray, q: np.ndarray, row: dict) -> tuple[np.ndarray, np.ndarray]:
    """The curve ``(t, q)`` of a run ending on its final state: a finished run whose curve stops before its final
    ``t`` (a thinned trajectory of a run made before thinning kept the final step) gets the row (``t``, ``q``) of
    its ``summary.csv`` row, the numbers its ``result.json`` holds and its final policy re-evaluates to."""
    if row.get("status") != "done" or row.get("t") in (None, "") or not len(t) or t[-1] >= float(row["t"]):
        return t, q
    return np.append(t, float(row["t"])), np.append(q, float(row["q"]))


def end_on_final_rows(folder: str | os.PathLike) -> int:
    """Give each curve of the shipped ``folder`` that stops before its run's final ``t`` the run's final row
    (:func:`_ended`), rewriting ``trajectories.csv.gz`` only; returns how many curves it extended."""
    rows, curves = read_shipped(folder)
    ended = {name: _ended(t, q, rows.get(name, {})) for name, (t, q) in curves.items()}
    extended = sum(len(ended[name][0]) > len(t) for name, (t, _) in curves.items())
    if extended:
        write_trajectories(folder, ended)
    return extended


def _best_source(point: Point, sweeps: Sequence[str | os.PathLike], row: dict | None, curve) -> tuple[dict, tuple[np.ndarray, np.ndarray] | None]:
    """The fields and curve of ``point`` from one source: its run directories in the sweep directories
    ``sweeps``, in order, then the shipped ``row`` and ``curve``. The first that finished it wins; else the one
    furthest in ``t`` (the first of equals); else the first."""
    sources = [_from_run(Path(s) / "runs" / point.name, point) for s in sweeps]
    sources.append(_from_shipped(row, curve, point))
    done = [f for f in sources if f[0]["status"] == "done"]
    running = [f for f in sources if f[0]["status"] == "running"]
    if done:
        return done[0]
    if running:
        return max(running, key=lambda f: float(f[0]["t"] or 0))  # the first of equals
    return sources[0]


def _write_policies(out: Path, policies: dict[str, Path | None | bool]) -> None:
    """The final policies of the shipped folder ``out``, run name -> source: a run's ``policy.npz`` is copied
    in; ``None`` keeps what is shipped; ``False`` (the run is not finished) removes any."""
    for name, source in policies.items():
        if source:
            write_policy(source, policy_file(out, name))
        elif source is False:
            policy_file(out, name).unlink(missing_ok=True)  # not (or no longer) a final policy of the spec


def _groups_table(sweep: Sweep, rows: Sequence[dict]) -> list[list]:
    """The rows of ``groups.csv``: per group of seeds, its arguments, the finished runs of all, and the
    quartiles of their final q (empty cells where none finished)."""
    group_keys = _group_keys(sweep)
    groups: dict[tuple, list[float]] = {}
    total: dict[tuple, int] = {}
    for point, row in zip(sweep.points, rows, strict=True):
        key = tuple(point.arguments.get(k) for k in group_keys)
        total[key] = total.get(key, 0) + 1
        if row["status"] == "done":
            groups.setdefault(key, []).append(float(row["q"]))
    table = [[*group_keys, "finished", "of", "median_q", "q1", "q3", "min_q", "max_q"]]
    for key, count in total.items():
        qs = groups.get(key, [])
        s = _quantiles(qs) if qs else dict.fromkeys(("median", "q1", "q3", "min", "max"))
        table.append([*(_cell(v) for v in key), len(qs), count, *(_cell(s[k]) for k in ("median", "q1", "q3", "min", "max"))])
    return table


def _provenance(sweep: Sweep, rows: Sequence[dict], *, commit: str | None, commands: Sequence[str], wall: float | None) -> dict:
    """The record of ``provenance.json``: the spec, the commit (of the project when ``commit`` is None), the
    machine, the counts of the runs and their time."""
    finished = [r for r in rows if r["status"] == "done"]
    return {
        "spec": sweep.name,
        "commit": commit or source_commit(mark_edits=False),
        "commands": list(commands),
        "machine": {"cpu": _cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(), "system": platform.platform()},
        "points": len(rows),
        "done": len(finished),
        "running": sum(r["status"] == "running" for r in rows),
        # Why the finished runs stopped: until_t (the horizon), stalled (the flow could no longer move t),
        # max_seconds (the safety cap); rows shipped before the column existed count as "unknown".
        "stops": dict(sorted(Counter(r["stop"] or "unknown" for r in finished).items())),
        # Each run's own wall time over its sessions, summed: its CPU time when it had a core to itself (one thread).
        "run_seconds_of_finished_runs": sum(float(r["seconds"]) for r in finished if r["seconds"] not in (None, "")),
        "wall_seconds": wall,
    }


def _horizon(points: Sequence[Point], rows: Sequence[dict]) -> tuple[str, str]:
    """Where runs of these points stop (the spec's bounds), and why the finished ones stopped: two texts."""
    bounds = []
    for key in ("until_t", "max_steps", "max_seconds"):
        values = sorted({float(p.arguments[key]) for p in points if p.arguments.get(key) is not None})
        if values:
            bounds.append(f"{key} {', '.join(f'{v:g}' for v in values)}{' (a safety cap)' if key == 'max_seconds' else ''}")
    stops = Counter(r["stop"] or "unknown" for r in rows if r["status"] == "done")
    return ", ".join(bounds), ", ".join(f"{n} {s}" for s, n in sorted(stops.items()))


def _claims(sweep: Sweep, rows: Sequence[dict], curves: dict) -> list[dict] | None:
    """The paper's claims about training checked on the rows of ``sweep`` (:mod:`policies.claims`), for the
    specs of Figures 4 and 2 (:data:`FIGURE_OF`); None for any other."""
    pairs = list(zip(sweep.points, rows, strict=True))
    figure = FIGURE_OF.get(sweep.name)
    if figure == "fig4":
        from policies.claims import check_figure4

        named: dict[tuple, list] = {}
        for point, row in pairs:
            a = point.arguments
            named.setdefault((a["memory"], a["reset"], a.get("init", "random")), []).append((point, row))
        groups = {k: [float(r["q"]) for _, r in v if r["status"] == "done"] for k, v in named.items()}
        seeds = {k: [curves[p.name] for p, r in v if r["status"] == "done" and p.name in curves] for k, v in named.items()}
        horizons = {k: _horizon([p for p, _ in v], [r for _, r in v]) for k, v in named.items()}
        return check_figure4({k: v for k, v in groups.items() if v}, expected={k: len(v) for k, v in named.items()}, horizons=horizons, curves=seeds)
    if figure == "fig2":
        from policies.claims import check_figure2

        finished = [(p.arguments, r) for p, r in pairs if r["status"] == "done"]
        convention = sweep.points[0].arguments.get("convention", "native")
        points = [(a["mu"], _size(a["memory"]), a["reset"], float(r["q"])) for a, r in finished]
        bounds, stops = _horizon(sweep.points, rows)
        return check_figure2(points, convention, stops=[r["stop"] for _, r in finished], horizon=f"{bounds} (stopped: {stops})")
    return None


def _write_claims(out: Path, claims: list[dict], compared: dict | None = None) -> None:
    from policies.claims import SIGNIFICANCE, TOLERANCE

    write_text(out / "claims.json", json.dumps(claims, indent=1) + "\n")
    lines = [
        f"The paper's claims about training, checked on the final q of the runs in summary.csv (`policies.claims`). Tolerance, "
        f"for every verdict: two final values of q within a relative {TOLERANCE:g} count as equal. Significance: one-sided "
        f"Mann-Whitney U, p < {SIGNIFICANCE:g}. Family: the groups of runs compared (memory, reset, start). Horizon: where "
        "those runs stop, and why they stopped. Regenerate: `python examples/ship_results.py --claims`.",
        "",
        "| panel | the paper says | family | test | numbers (final q) | verdict | horizon |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [f"| {c['panel']} | {c['claim']} | {c['family']} | {c['test']} | {c['numbers'] or '-'} | {c['verdict']} | {c['horizon'] or '-'} |" for c in claims]
    if compared is not None:
        lines += _side_by_side(claims, compared)
    write_text(out / "claims.md", "\n".join(lines) + "\n")


def _side_by_side(claims: list[dict], compared: dict) -> list[str]:
    """The lines of claims.md that set each claim on the true flow beside the published rule's, and the runs apart."""
    name, apart = compared["folder"], compared["apart"]
    groups = "; ".join(f"{group} {n} of {of}" for group, (n, of) in compared["groups"].items() if n)
    lines = [
        "", f"## The published rule (results/{name}) and the true flow (this folder), side by side", "",
        f"The same claims, families, tests and tolerance on the published rule's runs of the same points (results/{name}, checked "
        f"again here by the same code) and on these runs of the Rosenbrock integrator. Same verdict: the verdicts agree but for "
        f"their numbers. Runs whose final q differ by more than {apart:g} between the two integrators: "
        f"**{compared['differ']} of {compared['runs']}** ({groups or 'none'}); each run in {RUNS_COMPARED}.", "",
        "| panel | the paper says | published rule: numbers | published rule: verdict | true flow: numbers | true flow: verdict | same verdict |",
        "|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    lines += [f"| {c['panel']} | {c['claim']} | {c['published']['numbers'] or '-'} | {c['published']['verdict']} | {c['numbers'] or '-'} | "
              f"{c['verdict']} | {'yes' if c['same_verdict'] else '**no**'} |" for c in claims]  # fmt: skip
    changed = [c for c in claims if not c["same_verdict"]]
    lines += ["", "### Where a verdict changes", ""]
    lines += [f"- **{c['panel']}: {c['claim']}.** Published rule: {c['published']['verdict']}; true flow: {c['verdict']}. {c['evidence']}." for c in changed]
    return lines if changed else [*lines, "No verdict changes."]


def _claims_files(sweep: Sweep, rows: Sequence[dict], curves: dict, out: Path, *, records: bool = False):
    """Check the claims on ``rows`` and write ``claims.json`` and ``claims.md`` in ``out`` (nothing for a spec
    without claims); for a re-run by another integrator whose published folder is shipped beside ``out``, side
    by side with the published rule's runs, and ``runs-compared.csv``. Returns the claims with ``records``, else
    the count of runs apart (or None)."""
    claims = _claims(sweep, rows, curves)
    if claims is None:
        return None
    compared = _against_published(sweep, rows, curves, out, claims)
    count = None
    if compared is not None:
        claims, count, table = compared
        write_text(out / RUNS_COMPARED, _csv(table))
    _write_claims(out, claims, count)
    return claims if records else count


def _against_published(sweep: Sweep, rows: Sequence[dict], curves: dict, out: Path, claims: list[dict]):
    """``(claims side by side, count, rows of runs-compared.csv)`` of a re-run by another integrator (its
    ``claims``) against the published folder shipped beside ``out``; None when it is not a re-run or that folder
    is not there."""
    from policies.claims import APART, compare_integrators

    name = COMPARED_WITH.get(sweep.name)
    other = out.parent / name if name else None
    if other is None or not (other / "summary.csv").is_file() or not (SPECS / f"{name}.json").is_file():
        return None
    published = load_spec(SPECS / f"{name}.json")
    old_rows, old_curves = read_shipped(other)
    old = [old_rows.get(p.name, {"status": "absent"}) for p in published.points]
    before = _claims(published, old, old_curves)
    table = [["run", "q_published", "q_flow", "abs_dq", "stop_published", "t_published", "stop_flow", "t_flow", "parted_t", "q_flow_at_published_end"]]
    runs: dict[tuple, list[dict]] = {}
    for point, row in zip(sweep.points, rows, strict=True):
        mine = old_rows.get(point.name)
        if row["status"] != "done" or mine is None or mine["status"] != "done":
            continue
        a = point.arguments
        seed = {"seed": a.get("seed"), "q_published": float(mine["q"]), "q_flow": float(row["q"]), "stop_published": mine["stop"],
                "t_published": float(mine["t"]), "stop_flow": row["stop"], "t_flow": float(row["t"]), "parted": None,
                "q_flow_at_published_end": None}  # fmt: skip
        if point.name in curves and point.name in old_curves:
            seed["parted"] = _parted(curves[point.name], old_curves[point.name], APART)
            if seed["stop_published"] != "until_t" and seed["t_published"] < seed["t_flow"]:  # stopped short (max_steps): the flow there
                seed["q_flow_at_published_end"] = float(_log_interp(np.array([seed["t_published"]]), *curves[point.name])[0])
        runs.setdefault((a["memory"], a["reset"], a.get("init", "random")), []).append(seed)
        table.append([point.name, *(_cell(seed[k]) for k in ("q_published", "q_flow")), repr(abs(seed["q_flow"] - seed["q_published"])),
                      *(_cell(seed[k]) for k in ("stop_published", "t_published", "stop_flow", "t_flow", "parted", "q_flow_at_published_end"))])  # fmt: skip
    records, count = compare_integrators(before, claims, runs)
    return records, {"folder": name, **count}, table


def _log_interp(t_query: np.ndarray, t: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``q(t)`` at ``t_query``, linear in ``log t`` between rows (a row at ``t = 0`` holds until the first positive one)."""
    positive = t > 0
    if positive.sum() < 2:
        return np.interp(t_query, t, q)
    inside = np.interp(np.log(np.maximum(t_query, t[positive][0])), np.log(t[positive]), q[positive])
    return np.where(t_query < t[positive][0], np.interp(t_query, t, q), inside)


def _parted(curve: tuple[np.ndarray, np.ndarray], other: tuple[np.ndarray, np.ndarray], apart: float) -> float | None:
    """The first row ``t`` of ``curve`` from which it stays more than ``apart`` from ``other`` (interpolated in
    log t) to the end of their common span; None when they end within ``apart``."""
    t, q = curve
    inside = t <= min(t[-1], other[0][-1])
    far = np.abs(q[inside] - _log_interp(t[inside], *other)) > apart
    if not far.size or not far[-1]:
        return None
    near = np.flatnonzero(~far)
    return float(t[inside][near[-1] + 1 if near.size else 0])


def draw_figure(sweep: Sweep, folder: str | os.PathLike) -> None:
    """Draw ``figure.png`` of the shipped ``folder`` of ``sweep`` again from its ``summary.csv`` and
    ``trajectories.csv.gz``; nothing else changes."""
    shipped, curves = read_shipped(folder)
    rows = [shipped.get(p.name, {"status": "absent"}) for p in sweep.points]
    _draw(sweep, rows, curves, Path(folder) / "figure.png")


def draw_integrators(folder: str | os.PathLike, path: str | os.PathLike, runs: int = 3) -> list[str]:
    """For the ``runs`` runs of BDF's sample (``folder/bdf.csv.gz``) whose curves differ most between the two
    integrators, q(t) of the published rule (the sibling folder :data:`COMPARED_WITH` names), of the true flow
    (``folder``) and of BDF, one panel each, at ``path``. Returns the runs drawn (none when a file is missing)."""
    import matplotlib.pyplot as plt

    folder = Path(folder)
    provenance = _json(folder / "provenance.json") if (folder / "provenance.json").is_file() else {}
    other = folder.parent / COMPARED_WITH.get(provenance.get("spec"), "")
    if not (folder / BDF_CURVES).is_file() or not (other / "summary.csv").is_file():
        return []
    rows, flow = read_shipped(folder)
    _, published = read_shipped(other)
    bdf = {name: (np.array(t), np.array(q)) for name, (t, q) in _read_curves(folder / BDF_CURVES).items() if name in flow and name in published}
    def apart(name: str) -> float:  # the largest distance of the published curve to the flow's, at the flow's rows
        t, q = flow[name]
        inside = t <= published[name][0][-1]
        return float(np.abs(q[inside] - _log_interp(t[inside], *published[name])).max())

    chosen = sorted(bdf, key=lambda name: -apart(name))[:runs]
    if not chosen:
        return []
    figure, axes = plt.subplots(1, len(chosen), figsize=(5.2 * len(chosen), 4.0), squeeze=False)
    for ax, name in zip(axes.flat, chosen, strict=True):
        ax.semilogx(*published[name], color="tab:orange", lw=1.6, label="published step rule (results/fig4)")
        tolerance = rows.get(name, {}).get("tolerance")
        label = f"Rosenbrock, tolerance {float(tolerance):g} (true flow)" if tolerance else "Rosenbrock (true flow)"
        ax.semilogx(*flow[name], color="tab:blue", lw=1.2, label=label)
        ax.semilogx(*bdf[name], "k.", ms=3, label="scipy BDF, rtol 1e-10")
        ax.set(xlabel="t (flow on the gain per step)", ylabel="q, paper convention", title=name.replace("/", " "))
        ax.title.set_fontsize(8)
    for ax in axes.flat:  # each panel's own tolerance
        ax.legend(fontsize=7)
    figure.suptitle("The same runs by three integrators: where the published rule parts from the flow", fontsize=10)
    figure.tight_layout()
    _save(figure, Path(path))
    return chosen


def _draw(sweep: Sweep, rows: list[dict], curves: dict, path: Path) -> None:
    """The figure of ``sweep`` at ``path``: Figure 2's layout for the spec ``fig2``, else q against t."""
    draw = _draw_figure2 if FIGURE_OF.get(sweep.name) == "fig2" else _draw_q_curves
    draw(sweep, rows, curves, path)


def write_claims(sweep: Sweep, folder: str | os.PathLike) -> list[dict] | None:
    """Check the paper's claims again on the shipped ``folder`` of ``sweep`` (its ``summary.csv`` and
    ``trajectories.csv.gz``) and rewrite its ``claims.json`` and ``claims.md`` (and, for a re-run by another
    integrator, ``runs-compared.csv``); nothing else changes. Returns the claims (None for a spec with no claims)."""
    shipped, curves = read_shipped(folder)
    missing = [p.name for p in sweep.points if p.name not in shipped]
    if missing:
        raise InputError(f"{str(folder)!r} is not a shipping of the spec {sweep.name!r}: no row for {missing[0]!r}")
    return _claims_files(sweep, [shipped[p.name] for p in sweep.points], curves, Path(folder), records=True)


def complete(
    name: str,
    *,
    sweeps: str | os.PathLike = "sweeps",
    results: str | os.PathLike | None = None,
    specs: str | os.PathLike | None = None,
    workers: int | None = None,
    quiet: bool = False,
    log: Callable[[str], None] = lambda message: None,
) -> dict:
    """Run the points of the full-size sweep ``name`` that ``results/name`` lacks, in ``sweeps/name``, and ship them in.

    The sweep resumes where it stopped (each point is an ordinary run directory), so a ``complete`` that is
    killed and started again loses at most a checkpoint's worth of work. ``results``: the project's
    ``results/`` by default; ``specs``: ``examples/sweeps``. Returns the provenance record. When the folder
    lacks nothing, nothing runs and nothing is written: its files (the provenance of the runs that made
    them included) stay as they are.
    """
    import time

    from fsc.sweep import run_sweep

    results = page.SHIPPED if results is None else results
    spec_path = Path(SPECS if specs is None else specs) / f"{name}.json"
    if not spec_path.is_file():
        raise InputError(f"no full-size spec {str(spec_path)!r}")
    sweep = load_spec(spec_path)
    folder = Path(results) / name
    todo = lacking(sweep, folder)
    where = Path(sweeps) / name
    log(f"  {name}: {len(sweep.points) - len(todo)} of {len(sweep.points)} runs shipped; running {len(todo)} in {where}")
    if not todo and (folder / "provenance.json").is_file():
        return _json(folder / "provenance.json")
    start = time.monotonic()
    report = None
    if todo:
        report = run_sweep(attrs.evolve(sweep, points=tuple(todo)), where, workers=workers, quiet=quiet)
    command = f"fsc report --full --sweeps {sweeps}" + (f" --workers {workers}" if workers else "")
    provenance = ship(sweep, [where], folder, commands=[command], wall=time.monotonic() - start)
    if report is not None and report.failures:
        log(f"  {name}: {report.failed} of {len(todo)} runs failed; see {where / 'failures.json'}")
    return provenance


def _cell(value) -> str:
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def _csv(rows: Sequence[Sequence]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


#: The paper's Figure 4, panel by panel: the (memory, reset) pairs each panel draws. E and F set a Memento
#: memory beside the RAM of the same effective size.
FIGURE4_PANELS = (
    ("A", (("ram:8", 1e-3),)),
    ("B", (("ram:20", 1e-3),)),
    ("C", (("memento:3", 1e-3),)),
    ("D", (("memento:4", 1e-3),)),
    ("E", (("memento:3", 1e-5), ("ram:16", 1e-5))),
    ("F", (("memento:4", 1e-5), ("ram:64", 1e-5))),
)


def _draw_q_curves(sweep: Sweep, rows: list[dict], curves: dict, path: Path) -> None:
    """q against t, seeds faint and medians bold: Figure 4's six panels for the spec ``fig4``, else a panel
    per (memory, reset); a colour per initialisation (per memory where a panel has two)."""
    import matplotlib.pyplot as plt

    import viz
    from policies.reference import reference_lines

    finished: dict[tuple, dict[str, list]] = {}
    for point, row in zip(sweep.points, rows, strict=True):
        if row["status"] == "done" and point.name in curves:
            a = point.arguments
            finished.setdefault((a["memory"], a["reset"]), {}).setdefault(a.get("init", "random"), []).append(curves[point.name])
    if not finished:
        return
    # Figure 4's panels that have a finished run, then a panel for each other (memory, reset).
    panels = FIGURE4_PANELS if FIGURE_OF.get(sweep.name) == "fig4" else ()
    layout = [(f"{label}: {' and '.join(m for m, _ in pairs)}, r = {pairs[0][1]:g}", pairs) for label, pairs in panels if set(pairs) & set(finished)]
    placed = {pair for _, pairs in panels for pair in pairs}
    layout += [(f"{memory}, r = {reset:g}", ((memory, reset),)) for memory, reset in finished if (memory, reset) not in placed]
    first = sweep.points[0].arguments
    mu, convention = first.get("mu", 0.1), first.get("convention", "native")
    columns = min(3, len(layout))
    lines = math.ceil(len(layout) / columns)
    figure, axes = plt.subplots(lines, columns, figsize=(5.4 * columns, 4.2 * lines), squeeze=False)
    for ax, (title, pairs) in zip(axes.flat, layout, strict=False):
        drawn, reference = {}, {}
        for memory, reset in pairs:
            for init, runs in finished.get((memory, reset), {}).items():
                drawn[init if len(pairs) == 1 else f"{memory} {init}"] = runs
            reference.update(reference_lines(memory, mu, reset, convention))
        viz.q_curves(drawn, ax=ax, reference=reference, title=title)
        # The conventions, on every panel: the flow runs on the gain per step, whose time is eq. (4)'s (on
        # G = gain / r) divided by r; q, curves and lines alike, is read in the spec's convention.
        ax.set_xlabel("t of the flow on the gain per step = (eq. (4)'s t, on G = gain/r) / r", fontsize=8)
        ax.set_ylabel(f"q, {convention} convention (docs/model.md)", fontsize=8)
    for ax in list(axes.flat)[len(layout) :]:
        ax.remove()
    integrator = {"rosenbrock": " on the true flow (the Rosenbrock integrator)"}.get(first.get("optimizer"), "")
    figure.suptitle(f"Figure 4 at full size{integrator}: q(t) of each seed (faint) and their median (bold); dashed: reference policies, "
                    f"exact, in the {convention} convention at the panel's r", fontsize=10)  # fmt: skip
    figure.tight_layout()
    _save(figure, path)


def _draw_figure2(sweep: Sweep, rows: list[dict], curves: dict, path: Path) -> None:
    """Figure 2's layout: final q against r (left) and against M (right). The symmetric CCP's closed form is
    drawn as a line over each curve's whole range in the spec, whatever has run; the finished runs as symbols.
    """
    import matplotlib.pyplot as plt

    from policies.reference import ccp_line

    done = [(p.arguments, float(r["q"])) for p, r in zip(sweep.points, rows, strict=True) if r["status"] == "done"]
    if not done:
        return
    convention = sweep.points[0].arguments.get("convention", "native")
    # The paper's two panels are its two grid blocks: a few sizes over many resets (left, q against r) and
    # a few resets over many sizes (right, q against M). A point lies on every curve it belongs to.
    resets: dict[tuple, set] = {}
    sizes: dict[tuple, set] = {}
    for a in (p.arguments for p in sweep.points):
        resets.setdefault((a["mu"], a["memory"]), set()).add(a["reset"])
        sizes.setdefault((a["mu"], a["reset"]), set()).add(a["memory"])
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.3))
    markers = ["o", "s", "^", "D"]
    for k, mu in enumerate(sorted({p.arguments["mu"] for p in sweep.points})):
        for memory in sorted({m for (u, m), rs in resets.items() if u == mu and len(rs) > 3}, key=_size):
            span = sorted(resets[mu, memory])
            rs = np.geomspace(span[0] / 2, span[-1], 60)
            (h,) = left.loglog(rs, [ccp_line(mu, _size(memory), r, convention) for r in rs], lw=1, label=f"CCP ({convention}), mu={mu:g}, M={_size(memory)}")
            pts = sorted((a["reset"], q) for a, q in done if a["mu"] == mu and a["memory"] == memory)
            if pts:
                left.loglog(*zip(*pts, strict=True), markers[k % 4], color=h.get_color(), mfc="none")
        for reset in sorted(r for (u, r), ms in sizes.items() if u == mu and len(ms) > 3):
            span = sorted(_size(m) for m in sizes[mu, reset])
            Ms = np.arange(span[0], span[-1] + 1)
            (h,) = right.semilogy(Ms, [ccp_line(mu, int(M), reset, convention) for M in Ms], lw=1, label=f"CCP ({convention}), mu={mu:g}, r={reset:g}")
            pts = sorted((_size(a["memory"]), q) for a, q in done if a["mu"] == mu and a["reset"] == reset)
            if pts:
                right.semilogy(*zip(*pts, strict=True), markers[k % 4], color=h.get_color(), mfc="none")
    ylabel = f"q after training, {convention} convention"
    left.set(xlabel="reset probability r", ylabel=ylabel, title="q against r")
    right.set(xlabel="memory size M", ylabel=ylabel, title="q against M")
    shift = " = (1 - r) q_native + r/2; the paper's own Figure 2 draws the native closed form" if convention == "paper" else ""
    figure.suptitle(f"lines: optimal symmetric CCP, closed form in the {convention} convention{shift}\n"
                    f"symbols: trained from near-CCP, final q in the same convention ({len(done)} of {len(rows)} runs)", fontsize=9)  # fmt: skip
    for ax in (left, right):
        if ax.lines:
            ax.legend(fontsize=6, ncol=2)
    figure.tight_layout()
    _save(figure, path)


def _save(figure, path: Path) -> None:
    import matplotlib.pyplot as plt

    try:
        atomic_write(path, lambda f: figure.savefig(f, format="png", dpi=100))
    finally:
        plt.close(figure)


def _size(memory: str) -> int:
    return int(memory.split(":")[1])
