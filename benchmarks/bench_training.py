"""Training speed: how fast the gradient flow runs, and what the reproduction costs.

Modes (``bench_training.py MODE --help`` for each one's options); every case is paper convention, mu = 0.1, one
torch thread, the published start of seed 0 unless said otherwise:

- ``engines``: the two trajectories of Figure 4's time axis (near-CCP RAM 8 at r = 1e-3 to t = 1e6, near-necklace
  Memento 4 at r = 1e-5 to t = 1e4) with the engines ``auto``, ``dense`` and ``power`` (the paper's repeated
  squaring): wall time, steps, evaluations, q(t) at log-spaced t, and the ratios power / auto and power / dense;
- ``step``: the compiled flow per value and gradient (``fsc.flow`` to ``--until-t``, records only at the end of
  each compiled call) against ``fsc.evaluate(..., gradient=True)`` called once per evaluation, and against the
  LAPACK floor (``dgetrf`` and two ``dgetrs`` per part on as many states, from compiled code);
- ``thinned``: ``fsc train`` (``fsc.train.run_training``) with ``--rows-per-decade 100`` against every row kept,
  and every row without ``until_t`` (the ``converged`` column, checked on each row): microseconds per step, the
  ratio, and whether the three ended on the same t, q and steps to the bit;
- ``rosenbrock``: the Rosenbrock integrator against the published step rule on points of the Figure 2 and 4
  grids (steps, evaluations, seconds, max |dq| between the curves); ``--refined`` adds the published rule at
  max_dgrad / 10, ``--reference`` scipy's BDF at 1e-10, ``--shipped`` runs the Rosenbrock integrator alone to
  where each shipped run of ``results/`` ended and compares with it;
- ``bdf-check``: runs of a Rosenbrock sweep (``BDF_SAMPLE`` of ``fig4-rosenbrock.json`` by default) integrated
  again by scipy's BDF at a relative 1e-10 from their initial policy and compared at every logged t; ``--tolerance``
  also runs each again at other tolerances against the same BDF solution, ``--finer`` sets the run and that
  solution against BDF at a smaller rtol (and then the runs of ``--tolerance`` against it), ``--curves`` writes BDF's q at the
  rows a shipping keeps (``results/fig4-flow/bdf.csv.gz``);
- ``tolerances``: the same runs of two Rosenbrock sweeps at two tolerances (``fig4-rosenbrock`` at 1e-5 and
  ``fig4-flow``, whose RAM 8 runs are at 1e-8), curve against curve at every logged t;
- ``full-grid``: reads Rosenbrock sweeps of the whole grids (``examples/sweeps/fig2-rosenbrock.json``,
  ``fig4-rosenbrock.json``, run by ``fsc sweep``) and compares them with the shipped runs, per group;
- ``published-rate``: the published method's value and gradient (power method with autograd, re-stated from the
  paper for timing) per evaluation, and so how many evaluations an hour holds (``examples/sweeps/fig4.json``'s
  ``max_steps``);
- ``reproduction``: reads sweeps of the published grid (``fsc sweep examples/sweeps/fig4.json --out DIR``) and
  sets each group's run time against the LAPACK floor of the same evaluations;
- ``sweep-points``: a panel of seeds in one sweep, the default pool (a warm worker forking a child per point)
  against a new interpreter per point (``python -m fsc.train``).

Usage: ``.venv/bin/python benchmarks/bench_training.py MODE [options]``
"""

from __future__ import annotations

import csv
import functools
import json
import math
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from timing import ROOT, add_mode, lapack_floor, lu_size, modes_parser, one_thread, rounds, start_policy

# isort: split
import numpy as np  # after timing, which sets one LAPACK thread before numpy loads OpenBLAS

# ---------------------------------------------------------------- engines


def engines(args) -> None:
    """The flow with the engines auto, dense and power on Figure 4's two long trajectories."""
    import fsc

    cases = [("near-ccp RAM 8 r=1e-3", "ram:8", "near-ccp", 1e-3, 1e6), ("near-necklace Memento 4 r=1e-5", "memento:4", "near-necklace", 1e-5, 1e4)]
    for name, memory, init, reset, until_t in cases:
        until_t = until_t / 100 if args.quick else until_t
        world, _, policy = start_policy(memory, init, reset=reset)
        print(f"\n{name}, up to t = {until_t:g}\n  {'engine':<7} {'seconds':>8} {'steps':>7} {'evals':>7} {'ms/eval':>8} {'final q':>11}  q at t = 1, 10, ...")
        runs = {}
        for engine in ("auto", "dense", "power"):
            for _ in fsc.flow(world, policy, reset=reset, convention="paper", engine=engine, until_t=10.0):
                pass  # compile (or load the cache) and warm up
            found = []
            for _ in range(args.repeats):
                ts, qs, began = [], [], time.perf_counter()
                try:
                    for record in fsc.flow(world, policy, reset=reset, convention="paper", engine=engine, until_t=until_t):
                        ts.append(record.t)
                        qs.append(record.q)
                except RuntimeError as error:
                    found = [(math.inf, None, error)]
                    break
                found.append((time.perf_counter() - began, record, (ts, qs)))
            seconds, last, curve = min(found, key=lambda f: f[0])
            if last is None:
                print(f"  {engine:<7} FAILED: {curve}")
                continue
            runs[engine] = seconds / last.evaluations
            marks = "  ".join(f"{np.interp(10.0**k, *curve):.7f}" for k in range(7) if 10.0**k <= until_t)
            print(f"  {engine:<7} {seconds:>8.2f} {last.step:>7} {last.evaluations:>7} {1e3 * runs[engine]:>8.3f} {last.q:>11.8f}  {marks}")
        for fast in ("auto", "dense"):
            if "power" in runs and fast in runs:
                print(f"  power / {fast}, per evaluation: {runs['power'] / runs[fast]:.1f}x")


# ---------------------------------------------------------------- step


def step(args) -> None:
    """The compiled flow per evaluation against evaluate(gradient=True) per call and the LAPACK floor."""
    import fsc

    print(f"{'memory':<10} {'engine':<8} {'steps':>7} {'evals':>7} {'flow us/ev':>11} {'evaluate us':>12} {'floor us':>9} {'evaluate/flow':>14} "
          f"{'flow/floor':>11}")  # fmt: skip
    for memory in args.memory:
        world, arch, policy = start_policy(memory)
        evaluate = functools.partial(fsc.evaluate, world, policy, reset=1e-3, convention="paper", gradient=True)
        engine = evaluate().engine
        runs = []
        for _ in range(args.repeats + 1):  # the first compiles (or loads the cache) and warms up
            began = time.perf_counter()
            records = list(fsc.flow(world, policy, reset=1e-3, convention="paper", until_t=args.until_t, skip_until=lambda: math.inf))
            runs.append(time.perf_counter() - began)
        last = records[-1]
        per_ev = min(runs[1:]) / last.evaluations
        per_call = rounds({"evaluate": evaluate}, max(3, int(0.1 / min(runs[1:]) * last.evaluations)), args.repeats)["evaluate"]
        floor = lapack_floor(*lu_size(world, arch, engine))
        print(f"{memory:<10} {engine:<8} {last.step:>7} {last.evaluations:>7} {per_ev * 1e6:>11.1f} {per_call * 1e6:>12.1f} {floor * 1e6:>9.1f} "
              f"{per_call / per_ev:>14.2f} {per_ev / floor:>11.2f}", flush=True)  # fmt: skip


# ---------------------------------------------------------------- thinned


def thinned(args) -> None:
    """fsc train with thinned rows against every row, and every row without until_t (converged)."""
    from fsc.train import run_training

    def train(out: Path, memory: str, reset: float, until_t, rows_per_decade, max_steps=None):
        shutil.rmtree(out, ignore_errors=True)
        began = time.perf_counter()
        result = run_training(mu=0.1, memory=memory, init="random", seed=0, reset=reset, until_t=until_t, convention="paper",
                              rows_per_decade=rows_per_decade, max_steps=max_steps, out=out, quiet=True)  # fmt: skip
        return result, time.perf_counter() - began

    cases = [("ram:8", 1e-3, 3e6), ("memento:3", 1e-3, 1e6), ("ram:20", 1e-3, 3e5), ("ram:5", 2.0**-20, 1e7)]
    print(f"{'memory':<10} {'reset':>9} {'until_t':>8} {'steps':>8} {'every row us/step':>18} {'thinned us/step':>16} {'ratio':>6} "
          f"{'converged us/step':>18} {'same end':>9}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        train(Path(tmp) / "warm", "ram:2", 1e-3, 10.0, 10)
        for memory, reset, until_t in cases:
            until_t *= args.scale
            every, thin, open_ended = [], [], []
            for _ in range(args.repeats):
                every.append(train(Path(tmp) / "every", memory, reset, until_t, None))
                thin.append(train(Path(tmp) / "thin", memory, reset, until_t, 100))
                open_ended.append(train(Path(tmp) / "open", memory, reset, None, None, every[0][0].steps))
            (a, _), (b, _), (c, _) = every[0], thin[0], open_ended[0]
            same = (a.t, a.q, a.steps, a.evaluations) == (b.t, b.q, b.steps, b.evaluations) == (c.t, c.q, c.steps, c.evaluations)
            s_every, s_thin, s_open = (min(s for _, s in runs) for runs in (every, thin, open_ended))
            print(f"{memory:<10} {reset:>9.3g} {until_t:>8.0e} {a.steps:>8} {s_every / a.steps * 1e6:>18.1f} {s_thin / b.steps * 1e6:>16.1f} "
                  f"{s_every / s_thin:>6.2f} {s_open / c.steps * 1e6:>18.1f} {same!s:>9}", flush=True)  # fmt: skip


# ---------------------------------------------------------------- rosenbrock

#: (name, mu, memory, init, seed, reset): Figure 4 A-D (r = 1e-3) and E (r = 1e-5), Figure 2 (near-CCP)
POINTS = [
    ("4A ram8 random s0", 0.1, "ram:8", "random", 0, 1e-3), ("4A ram8 random s1", 0.1, "ram:8", "random", 1, 1e-3),
    ("4A ram8 columns s0", 0.1, "ram:8", "columns", 0, 1e-3), ("4B ram20 random s0", 0.1, "ram:20", "random", 0, 1e-3),
    ("4B ram20 columns s0", 0.1, "ram:20", "columns", 0, 1e-3), ("4C memento3 random s0", 0.1, "memento:3", "random", 0, 1e-3),
    ("4C memento3 cycles s0", 0.1, "memento:3", "cycles", 0, 1e-3), ("4D memento4 random s0", 0.1, "memento:4", "random", 0, 1e-3),
    ("4D memento4 cycles s0", 0.1, "memento:4", "cycles", 0, 1e-3), ("4E memento3 random s0 r1e-5", 0.1, "memento:3", "random", 0, 1e-5),
    ("2 ram5 mu.1 r1e-6", 0.1, "ram:5", "near-ccp", 0, 1e-6), ("2 ram9 mu.2 r1e-6", 0.2, "ram:9", "near-ccp", 0, 1e-6),
    ("2 ram2 mu.2 r1e-2", 0.2, "ram:2", "near-ccp", 0, 1e-2), ("2 ram5 mu.1 r2^-10", 0.1, "ram:5", "near-ccp", 0, 2.0**-10),
]  # fmt: skip


def curve(world, policy, reset: float, until_t: float, **optimizer):
    """``(t, q, steps, evaluations, seconds)`` of a run, every accepted step's t and q kept."""
    import fsc

    began, t, q, last = time.perf_counter(), [], [], None
    for last in fsc.optimize(world, policy, reset=reset, convention="paper", until_t=until_t, skip_until=lambda: math.inf, keep_skipped=True, **optimizer):
        if last.skipped is not None:
            t += last.skipped["t"]
            q += last.skipped["metrics"]["q"]
        t.append(last.t)
        q.append(last.q)
    return np.array(t), np.array(q), last.step, last.evaluations, time.perf_counter() - began


def gap(t_new, q_new, t_ref, q_ref) -> float:
    """Largest ``|q_new - q_ref|`` at ``t_new`` within the span of ``t_ref``, ``q_ref`` interpolated linearly."""
    inside = t_new <= t_ref[-1]
    return float(np.abs(q_new[inside] - np.interp(t_new[inside], t_ref, q_ref)).max())


def bdf_reference(world, policy, reset: float, until_t: float, *, method: str = "BDF", rtol: float = 1e-10, solution: dict | None = None):
    """``t -> q`` of the flow by scipy's ``method`` (BDF or Radau) at a relative ``rtol`` (absolute ``rtol / 100``)
    on the finite logits, the Jacobian by differences of gradients; ``solution``, if given, receives scipy's counts
    (``nfev``, ``njev``, ``nlu``, ``steps``)."""
    import torch
    from scipy.integrate import solve_ivp

    import fsc

    logits, init_logits = policy.logits.detach().numpy(), policy.init_logits.detach().numpy()
    mask, init_mask = np.isfinite(logits), np.isfinite(init_logits)
    split = int(mask.sum())

    def point(y):
        w, w0 = logits.copy(), init_logits.copy()
        w[mask], w0[init_mask] = y[:split], y[split:]
        moved = fsc.Policy(architecture=policy.architecture, logits=torch.from_numpy(w), init_logits=torch.from_numpy(w0))
        return fsc.evaluate(world, moved, reset=reset, convention="paper", gradient=True)

    def field(t, y):
        found = point(y)
        return np.concatenate([found.grad_logits.numpy()[mask], found.grad_init_logits.numpy()[init_mask]])

    def jacobian(t, y):
        g, columns = field(t, y), []
        for i in range(y.shape[0]):
            h = 1e-6 * (1 + abs(y[i]))
            moved = y.copy()
            moved[i] += h
            columns.append((field(t, moved) - g) / h)
        H = np.array(columns).T
        return (H + H.T) / 2

    y0 = np.concatenate([logits[mask], init_logits[init_mask]])
    found = solve_ivp(field, (0.0, until_t), y0, method=method, rtol=rtol, atol=rtol / 100, jac=jacobian, dense_output=True)
    if not found.success:
        raise RuntimeError(f"{method} failed: {found.message}")
    if solution is not None:
        solution.update(nfev=int(found.nfev), njev=int(found.njev), nlu=int(found.nlu), steps=len(found.t) - 1)
    return lambda t: float(point(found.sol(t)).metrics["q"])


def distance(t, q, exact) -> float:
    """Largest ``|q - exact(t)|`` at up to 3000 of the logged ``t``."""
    pick = np.unique(np.linspace(0, len(t) - 1, min(len(t), 3000)).astype(int))
    return max(abs(q[i] - exact(t[i])) for i in pick)


@functools.cache
def shipped_folder(figure: str):
    """``results/figure``'s rows and curves (``summary.csv``, ``trajectories.csv.gz``), read once."""
    from fsc.report.results import read_shipped

    return read_shipped(ROOT / "results" / figure)


def shipped(mu, memory, init, seed, reset):
    """The shipped run of the published rule at this point: its ``summary.csv`` row and its curve ``(t, q)``."""
    for figure in ("fig4", "fig2"):
        rows, curves = shipped_folder(figure)
        for row in rows.values():
            if (float(row["mu"]), row["memory"], row["init"], int(row["seed"]), float(row["reset"])) == (mu, memory, init, seed, reset):
                return row, *curves[row["run"]]
    raise SystemExit(f"no shipped run at mu={mu} memory={memory} init={init} seed={seed} reset={reset}")


def rosenbrock(args) -> None:
    """The Rosenbrock integrator against the published step rule on points of Figures 2 and 4."""
    settings = {} if args.tolerance is None else {"tolerance": args.tolerance}
    points = [p for p in POINTS if not args.only or any(part in p[0] for part in args.only)]
    if args.shipped:
        print(f"{'point':<28} {'stop':>9} {'t':>9} {'steps pub':>10} {'steps ros':>9} {'ratio':>7} {'s pub':>8} {'s ros':>6} {'q pub':>10} "
              f"{'q ros':>10} {'max |dq|':>9}")  # fmt: skip
        for name, mu, memory, init, seed, reset in points:
            row, t_pub, q_pub = shipped(mu, memory, init, seed, reset)
            world, _, policy = start_policy(memory, init, mu=mu, reset=reset, seed=seed)
            t_ros, q_ros, steps_ros, _, s_ros = curve(world, policy, reset, float(row["t"]), optimizer="rosenbrock", **settings)
            print(f"{name:<28} {row['stop']:>9} {float(row['t']):>9.3g} {int(row['steps']):>10} {steps_ros:>9} {int(row['steps']) / steps_ros:>7.0f} "
                  f"{float(row['seconds']):>8.1f} {s_ros:>6.1f} {float(row['q']):>10.7f} {np.interp(float(row['t']), t_ros, q_ros):>10.7f} "
                  f"{gap(t_ros, q_ros, t_pub, q_pub):>9.2e}", flush=True)  # fmt: skip
        return
    extra = (" refined |dq|" if args.refined else "") + (" |dq| to BDF: pub" + (", pub/10" if args.refined else "") + ", ros" if args.reference else "")
    print(f"until_t {args.until_t:g}, rosenbrock {settings or 'defaults'}")
    print(f"{'point':<28} {'steps pub':>10} {'steps ros':>9} {'ratio':>7} {'evals pub':>10} {'evals ros':>9} {'s pub':>7} {'s ros':>6} "
          f"{'time ratio':>10} {'max |dq|':>9}{extra}")  # fmt: skip
    totals = np.zeros(6)
    for name, mu, memory, init, seed, reset in points:
        world, _, policy = start_policy(memory, init, mu=mu, reset=reset, seed=seed)
        t_pub, q_pub, steps_pub, evals_pub, s_pub = curve(world, policy, reset, args.until_t)
        t_ros, q_ros, steps_ros, evals_ros, s_ros = curve(world, policy, reset, args.until_t, optimizer="rosenbrock", **settings)
        more, fine = "", []
        if args.refined:
            t_fine, q_fine, *_ = curve(world, policy, reset, args.until_t, max_dgrad=1e-5)
            more, fine = f" {gap(t_pub, q_pub, t_fine, q_fine):>12.2e}", [(t_fine, q_fine)]
        if args.reference:
            exact = bdf_reference(world, policy, reset, args.until_t)
            more += "".join(f" {distance(t, q, exact):>9.2e}" for t, q in [(t_pub, q_pub), *fine, (t_ros, q_ros)])
        totals += (steps_pub, steps_ros, evals_pub, evals_ros, s_pub, s_ros)
        print(f"{name:<28} {steps_pub:>10} {steps_ros:>9} {steps_pub / steps_ros:>7.1f} {evals_pub:>10} {evals_ros:>9} {s_pub:>7.2f} {s_ros:>6.2f} "
              f"{s_pub / s_ros:>10.1f} {gap(t_ros, q_ros, t_pub, q_pub):>9.2e}{more}", flush=True)  # fmt: skip
    steps_pub, steps_ros, evals_pub, evals_ros, s_pub, s_ros = totals
    print(f"{'total':<28} {steps_pub:>10.0f} {steps_ros:>9.0f} {steps_pub / steps_ros:>7.1f} {evals_pub:>10.0f} {evals_ros:>9.0f} {s_pub:>7.2f} "
          f"{s_ros:>6.2f} {s_pub / s_ros:>10.1f}")  # fmt: skip


# ---------------------------------------------------------------- bdf-check

#: The sample of runs of the Rosenbrock grid of Figure 4 (``fig4-rosenbrock.json``) that ``bdf-check`` integrates
#: again by BDF: every family (RAM 8, 20, 16, Memento 3, 4), both resets, every kind of start, several seeds, the
#: cheapest first; RAM 64 last (40,960 logits: its dense Jacobian, 13 GB, is skipped below ``--largest``). RAM 8
#: (at its tolerance 1e-8) on seven runs: the two that its tolerance 1e-5 put more than 1e-4 off BDF, the columns
#: start, and the two random and two linear starts whose curves at 1e-5 were furthest from those at 1e-8.
BDF_SAMPLE = (
    "memory=memento-3/reset=0.001/init=cycles/seed=0", "memory=memento-3/reset=0.001/init=random/seed=2",
    "memory=memento-4/reset=0.001/init=near-necklace/seed=0", "memory=memento-4/reset=0.001/init=random/seed=4",
    "memory=memento-3/reset=1e-05/init=random/seed=6", "memory=memento-4/reset=1e-05/init=random/seed=8",
    "memory=ram-8/reset=0.001/init=random/seed=1", "memory=ram-8/reset=0.001/init=linear/seed=3",
    "memory=ram-8/reset=0.001/init=columns/seed=0", "memory=ram-8/reset=0.001/init=random/seed=6",
    "memory=ram-8/reset=0.001/init=random/seed=9", "memory=ram-8/reset=0.001/init=linear/seed=6",
    "memory=ram-8/reset=0.001/init=linear/seed=16", "memory=ram-16/reset=1e-05/init=random/seed=7",
    "memory=ram-20/reset=0.001/init=near-ccp/seed=0", "memory=ram-20/reset=0.001/init=random/seed=0",
    "memory=ram-64/reset=1e-05/init=random/seed=9",
)  # fmt: skip


def bdf_check(args) -> None:
    """Runs of a Rosenbrock sweep integrated again by scipy's BDF (or Radau) at a relative 1e-10, from the run's own
    initial policy to its final t (or ``--until-t``), compared at every logged t."""
    from fsc import Policy
    from fsc.report.results import log_spaced, write_trajectories
    from fsc.train import read_trajectory
    from tasks import TwoHypothesis

    print(f"{args.method} at rtol {args.rtol:g} against the runs of {args.sweep}" + (f", up to t = {args.until_t:g}" if args.until_t else ""))
    print(f"{'run':<52} {'logits':>6} {'to t':>9} {'rows':>6} {'max |dq|':>9} {'at t':>9} {'final |dq|':>10} {'bdf steps':>9} {'bdf s':>7}")
    names = args.point or BDF_SAMPLE
    found, curves = kept_checks(args, names)
    for name in names:
        folder = Path(args.sweep) / "runs" / name
        arguments = json.loads((folder / "run.json").read_text())["arguments"]
        policy = Policy.load(folder / "initial_policy.npz")
        rows = read_trajectory(folder, ["t", "q"])
        end = min(rows["t"][-1], args.until_t or math.inf)
        inside = rows["t"] <= end
        t, q = rows["t"][inside], rows["q"][inside]
        world, reset = TwoHypothesis(arguments["mu"]), arguments["reset"]
        size = int(np.isfinite(policy.logits.numpy()).sum() + np.isfinite(policy.init_logits.numpy()).sum())
        if size > args.largest:
            print(f"{name:<52} {size:>6} skipped: more than --largest {args.largest} logits (a dense Jacobian of {8 * size**2 / 1e9:.1f} GB)", flush=True)
            continue
        counts, began = {}, time.perf_counter()
        exact = bdf_reference(world, policy, reset, float(t[-1]), method=args.method, rtol=args.rtol, solution=counts)
        seconds = time.perf_counter() - began
        at = np.array([exact(ti) for ti in t])
        dq = np.abs(q - at)
        worst = int(dq.argmax())
        found = [r for r in found if r["run"] != name]
        found.append({"run": name, "logits": size, "t": float(t[-1]), "rows": len(t), "max_dq": float(dq[worst]), "at_t": float(t[worst]),
                      "final_dq": float(dq[-1]), "seconds": seconds, **counts})  # fmt: skip
        print(f"{name:<52} {size:>6} {t[-1]:>9.3g} {len(t):>6} {dq[worst]:>9.2e} {t[worst]:>9.3g} {dq[-1]:>10.2e} {counts['steps']:>9} "
              f"{seconds:>7.0f}", flush=True)  # fmt: skip
        if args.finer:  # a second BDF solution at a smaller rtol: how far the run is from it, and how far the two are apart
            finer = bdf_reference(world, policy, reset, float(t[-1]), method=args.method, rtol=args.finer)
            fine = np.array([finer(ti) for ti in t])
            near, apart = int(np.abs(q - fine).argmax()), int(np.abs(at - fine).argmax())
            found[-1]["finer"] = {"rtol": args.finer, "max_dq": float(abs(q - fine)[near]), "at_t": float(t[near]),
                                  "references_apart": float(abs(at - fine)[apart]), "apart_at_t": float(t[apart])}  # fmt: skip
            print(f"  against {args.method} at rtol {args.finer:g}: max |dq| {abs(q - fine)[near]:.2e} at t = {t[near]:.4g}; the two "
                  f"{args.method} solutions up to {abs(at - fine)[apart]:.2e} apart, at t = {t[apart]:.4g}", flush=True)  # fmt: skip
        reference, rtol = (finer, args.finer) if args.finer else (exact, args.rtol)
        for tolerance in args.tolerance or ():  # the same run again at another tolerance, against the same BDF solution (the finer one if any)
            t_tol, q_tol, steps, *_ = curve(world, policy, reset, float(t[-1]), optimizer="rosenbrock", tolerance=tolerance)
            close = np.array([abs(qi - reference(ti)) for ti, qi in zip(t_tol, q_tol, strict=True) if ti <= t[-1]])
            found[-1].setdefault("tolerances", {})[repr(tolerance)] = {"steps": steps, "rows": len(close), "max_dq": float(close.max()),
                                                                       "against_rtol": rtol}  # fmt: skip
            print(f"  the Rosenbrock integrator at tolerance {tolerance:g}: {steps} steps, max |dq| {close.max():.2e} at the {len(close)} logged t "
                  f"(against {args.method} at rtol {rtol:g})", flush=True)  # fmt: skip
        if args.json:
            found.sort(key=lambda r: BDF_SAMPLE.index(r["run"]) if r["run"] in BDF_SAMPLE else len(BDF_SAMPLE))
            Path(args.json).write_text(json.dumps(found, indent=1) + "\n")
        if args.curves:  # BDF's q at the rows a shipping keeps of the run's curve (up to --until-t)
            keep = log_spaced(rows["t"], args.points)
            kept = rows["t"][keep][rows["t"][keep] <= t[-1]]
            curves[name] = (kept, np.array([exact(ti) for ti in kept]))
            write_trajectories(args.curves, curves)
    if found:
        print(f"largest |dq| over {len(found)} runs: {max(r['max_dq'] for r in found):.2e}")


def kept_checks(args, names) -> tuple[list[dict], dict]:
    """With ``--keep``, the records of ``--json`` and BDF's curves in ``--curves DIR`` of the runs not in ``names``
    (a sample extended, or some of its runs made again: the others' checks stand); else nothing."""
    if not args.keep:
        return [], {}
    found = json.loads(Path(args.json).read_text()) if args.json and Path(args.json).is_file() else []
    curves: dict = {}
    path = Path(args.curves or "") / "trajectories.csv.gz"
    if args.curves and path.is_file():
        import gzip

        with gzip.open(path, "rt", newline="") as f:
            for row in csv.DictReader(f):
                curves.setdefault(row["run"], ([], []))
                curves[row["run"]][0].append(float(row["t"]))
                curves[row["run"]][1].append(float(row["q"]))
    curves = {name: (np.array(t), np.array(q)) for name, (t, q) in curves.items() if name not in names}
    return [r for r in found if r["run"] not in names], curves


# ---------------------------------------------------------------- tolerances


def tolerances(args) -> None:
    """The same runs in two Rosenbrock sweeps made at two tolerances (``--loose``, ``--tight``): per run whose name
    starts with ``--prefix``, the largest ``|q|`` distance of the loose curve from the tight one at every logged t of
    the tight one (the loose curve interpolated linearly in t), the final q's distance, the steps and the seconds."""
    from fsc.train import read_trajectory

    found = []
    print(f"{'run':<52} {'max |dq|':>9} {'at t':>9} {'final |dq|':>10} {'steps':>15} {'seconds':>13}")
    for folder in sorted((Path(args.tight) / "runs").glob(f"{args.prefix}*/**/result.json")):
        name = str(folder.parent.relative_to(Path(args.tight) / "runs"))
        other = Path(args.loose) / "runs" / name
        if not (other / "result.json").is_file():
            continue
        tight, loose = read_trajectory(folder.parent, ["t", "q"]), read_trajectory(other, ["t", "q"])
        ends = [json.loads((d / "result.json").read_text()) for d in (other, folder.parent)]
        dq = np.abs(tight["q"] - np.interp(tight["t"], loose["t"], loose["q"]))
        found.append({"run": name, "max_dq": float(dq.max()), "at_t": float(tight["t"][dq.argmax()]), "final_dq": abs(ends[0]["q"] - ends[1]["q"]),
                      "steps": [ends[0]["steps"], ends[1]["steps"]], "seconds": [ends[0]["seconds"], ends[1]["seconds"]]})  # fmt: skip
        r = found[-1]
        print(f"{name:<52} {r['max_dq']:>9.2e} {r['at_t']:>9.3g} {r['final_dq']:>10.1e} {r['steps'][0]:>7} {r['steps'][1]:>7} "
              f"{r['seconds'][0]:>6.1f} {r['seconds'][1]:>6.1f}")  # fmt: skip
    if found:
        steps, seconds = np.sum([r["steps"] for r in found], axis=0), np.sum([r["seconds"] for r in found], axis=0)
        print(f"{len(found)} runs: {sum(r['max_dq'] > 1e-4 for r in found)} more than 1e-4 apart at some logged t, "
              f"{sum(r['max_dq'] > 1e-3 for r in found)} more than 1e-3, the largest {max(r['max_dq'] for r in found):.2e}; final q within "
              f"{max(r['final_dq'] for r in found):.1e}; steps {steps[0]} and {steps[1]} ({steps[1] / steps[0]:.1f}x), seconds "
              f"{seconds[0]:.1f} and {seconds[1]:.1f}")  # fmt: skip


# ---------------------------------------------------------------- full-grid


def log_interp(t_query, t, q):
    """``q`` interpolated at ``t_query`` linearly in ``log t`` (``t = 0`` kept as the first point)."""
    positive = t > 0
    if positive.sum() < 2:
        return np.interp(t_query, t, q)
    out = np.interp(np.log(np.maximum(t_query, t[positive][0])), np.log(t[positive]), q[positive])
    return np.where(t_query <= 0, q[0], out)


def full_grid(args) -> None:
    """Rosenbrock sweeps of the whole grids against the shipped runs of the published rule, per group."""
    from fsc.train import read_trajectory

    everything = []
    for figure, directory in (("fig2", args.fig2), ("fig4", args.fig4)):
        if not directory:
            continue
        rows, curves = shipped_folder(figure)
        found = []
        for run, row in rows.items():
            folder = Path(directory) / "runs" / run
            if not (folder / "result.json").is_file():
                continue
            result = json.loads((folder / "result.json").read_text())
            mine = read_trajectory(folder)
            t_end = float(row["t"])
            q_end = float(log_interp(np.array([min(t_end, mine["t"][-1])]), mine["t"], mine["q"])[0])
            dq_curve = math.nan
            if run in curves:
                t_pub, q_pub = curves[run]
                inside = t_pub <= min(t_pub[-1], mine["t"][-1])
                dq_curve = float(np.abs(log_interp(t_pub[inside], mine["t"], mine["q"]) - q_pub[inside]).max()) if inside.any() else math.nan
            group = f"{row['memory']} mu={float(row['mu']):g}" if figure == "fig2" else f"{row['memory']} r={float(row['reset']):g} {row['init']}"
            found.append({"run": run, "figure": figure, "group": group, "steps_pub": int(row["steps"]), "seconds_pub": float(row["seconds"]),
                          "steps": int(result["steps"]), "seconds": float(result["seconds"]), "q_pub": float(row["q"]), "q": q_end,
                          "dq_end": abs(q_end - float(row["q"])), "dq_curve": dq_curve})  # fmt: skip
        print(f"\n{figure}: {len(found)} runs\n{'group':<32} {'runs':>5} {'pub. steps':>12} {'steps':>9} {'ratio':>7} {'pub. s':>8} {'s':>7} "
              f"{'ratio':>6} {'|dq| end':>9} {'|dq| curve':>10} {'within 1e-4':>11} {'median q pub/ros':>18}")  # fmt: skip
        for group in sorted({r["group"] for r in found}) + ["all"]:
            print(grid_line(group, [r for r in found if group in ("all", r["group"])]))
        everything += found
    if args.fig2 and args.fig4:
        print(grid_line("Figures 2 and 4", everything))
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1))


def grid_line(label: str, rows: list[dict]) -> str:
    steps_pub, steps = sum(r["steps_pub"] for r in rows), sum(r["steps"] for r in rows)
    s_pub, s = sum(r["seconds_pub"] for r in rows), sum(r["seconds"] for r in rows)
    ends = [r["dq_end"] for r in rows]
    curves = [r["dq_curve"] for r in rows if not math.isnan(r["dq_curve"])]
    within = sum(1 for r in rows if r["dq_curve"] <= 1e-4 and r["dq_end"] <= 1e-4)
    medians = f"{np.median([r['q_pub'] for r in rows]):.5f}/{np.median([r['q'] for r in rows]):.5f}"
    return (f"{label:<32} {len(rows):>5} {steps_pub:>12,} {steps:>9,} {steps_pub / max(steps, 1):>7.1f} {s_pub:>8.0f} {s:>7.0f} "
            f"{s_pub / max(s, 1e-9):>6.1f} {max(ends, default=math.nan):>9.1e} {max(curves, default=math.nan):>10.1e} "
            f"{within:>5}/{len(rows):<5} {medians:>18}")  # fmt: skip


# ---------------------------------------------------------------- published-rate


def published_model(kind: str, memory: int, mu: float):
    """The published state and action spaces (labels such as ``03A+`` and ``AB +-``), rewards and the transition
    tensors ``M[s2, s, a]`` of the two worlds (arm B, then arm A, the better one)."""
    import itertools

    import torch

    arms = "AB"
    if kind == "ram":
        nodes = [f"{i:02d}" for i in range(memory)]
        actions = [n + a for n in nodes for a in arms]
        states = [n + "  " for n in nodes] + [n + a + sign for n in nodes for a in arms for sign in "+-"]
        resets = memory

        def after(state, action):
            return [action + sign for sign in "+-"]
    else:
        actions, states, resets = list(arms), [], 1
        for n in range(memory + 1):
            pad = " " * (memory - n)
            states += [pad + "".join(h) + pad + "".join(o) for h in itertools.product(arms, repeat=n) for o in itertools.product("+-", repeat=n)]

        def after(state, action):
            return [state[1:memory] + action + state[memory + 1 :] + sign for sign in "+-"]

    index = {s: i for i, s in enumerate(states)}
    rewards = torch.tensor([{"+": 1.0, "-": -1.0, " ": 0.0}[s[-1]] for s in states])
    tensors = []
    for better in (1, 0):
        win = {arms[better]: 0.5 + mu / 2, arms[1 - better]: 0.5 - mu / 2}
        M = torch.zeros(len(states), len(states), len(actions))
        for j, s in enumerate(states):
            for k, a in enumerate(actions):
                for s2 in after(s, a):
                    M[index[s2], j, k] = win[a[-1]] if s2[-1] == "+" else 1 - win[a[-1]]
        tensors.append(M)
    return states, actions, resets, rewards, tensors


def published_value_gradient(rewards, tensors, reset, w_pi, w_0, eps_power: float = 1e-8):
    """The published method's gain and gradient: square each part's transfer matrix until its columns agree to
    ``eps_power``, autograd through it; also the squarings each part needed."""
    import torch

    w_pi, w_0 = w_pi.clone().requires_grad_(), w_0.clone().requires_grad_()
    pi, p0 = w_pi.softmax(1), w_0.softmax(0)
    gain, squarings = 0.0, []
    for M in tensors:
        jump = pi.new_zeros(len(pi), len(pi))
        jump[: len(p0), :] = p0[:, None]
        T = (1 - reset) * torch.einsum("ja,ija->ij", pi, M) + reset * jump
        n = 0
        while True:
            T, n = T @ T, n + 1
            if (T - T[:, [0]]).abs().max().item() < eps_power or not torch.isfinite(T).all():
                break
        squarings.append(n)
        gain = gain + torch.dot(rewards, T[:, 0])
    (gain / len(tensors)).backward()
    return squarings


def published_rate(args) -> None:
    """Evaluations per hour of the published method at its random start."""
    import torch

    cases = [("ram", 8, 1e-3), ("ram", 20, 1e-3), ("memento", 3, 1e-3), ("memento", 4, 1e-3),
             ("memento", 3, 1e-5), ("ram", 16, 1e-5), ("memento", 4, 1e-5), ("ram", 64, 1e-5)]  # fmt: skip
    torch.set_default_dtype(torch.float64)
    print(f"{'memory':<10} {'reset':>7} {'states':>6} {'squarings':>10} {'ms per evaluation':>18} {'evaluations per hour':>21}")
    for kind, memory, reset in cases[: args.cases]:
        states, actions, resets, rewards, tensors = published_model(kind, memory, 0.1)
        torch.manual_seed(args.seed)  # the published random start: logits, then the reset logits
        w_pi, w_0 = torch.randn(len(states), len(actions)), torch.randn(resets)
        published_value_gradient(rewards, tensors, reset, w_pi, w_0)
        calls, began = 0, time.perf_counter()
        while calls < 3 or time.perf_counter() - began < args.seconds:
            squarings = published_value_gradient(rewards, tensors, reset, w_pi, w_0)
            calls += 1
        seconds = (time.perf_counter() - began) / calls
        print(f"{f'{kind}:{memory}':<10} {reset:>7.0e} {len(states):>6} {'+'.join(map(str, squarings)):>10} {seconds * 1e3:>18.2f} {3600 / seconds:>21.3g}",
              flush=True)  # fmt: skip


# ---------------------------------------------------------------- reproduction


def reproduction(args) -> None:
    """Sweeps of the published grid: run time per group against the LAPACK floor of the same evaluations."""
    import fsc

    table = defaultdict(lambda: {"runs": 0, "steps": 0, "evaluations": 0, "seconds": 0.0})
    for directory in map(Path, args.sweeps):
        figure = json.loads((directory / "sweep.json").read_text())["name"]
        for result_file in sorted((directory / "runs").rglob("result.json")):
            result = json.loads(result_file.read_text())
            group = table[(figure, json.loads((result_file.parent / "run.json").read_text())["arguments"]["memory"])]
            group["runs"] += 1
            for key in ("steps", "evaluations", "seconds"):
                group[key] += result[key]
    print(f"{'figure':<7} {'memory':<10} {'runs':>5} {'steps':>11} {'evaluations':>12} {'run s':>8} {'us/ev':>7} {'floor us':>9} {'/floor':>7}")
    totals, floors = defaultdict(lambda: [0.0, 0.0]), {}
    for (figure, memory), group in sorted(table.items(), key=lambda kv: (kv[0][0], -kv[1]["seconds"])):
        if memory not in floors:
            world, arch, policy = start_policy(memory)
            engine = fsc.evaluate(world, policy, reset=1e-3, convention="paper").engine
            floors[memory] = lapack_floor(*lu_size(world, arch, engine))
        below = group["evaluations"] * floors[memory]
        for key in (figure, "total"):
            totals[key] = [totals[key][0] + group["seconds"], totals[key][1] + below]
        print(f"{figure:<7} {memory:<10} {group['runs']:>5} {group['steps']:>11} {group['evaluations']:>12} {group['seconds']:>8.0f} "
              f"{1e6 * group['seconds'] / group['evaluations']:>7.1f} {1e6 * floors[memory]:>9.1f} {group['seconds'] / below:>7.2f}")  # fmt: skip
    for key, (seconds, below) in sorted(totals.items()):
        print(f"{key:<7} {'all':<10} {'':>5} {'':>11} {'':>12} {seconds:>8.0f} {'':>7} {'':>9} {seconds / below:>7.2f}")
    if "total" in totals:
        print(f"\nrun time in all: {totals['total'][0] / 3600:.2f} hours; at the floor: {totals['total'][1] / 3600:.2f} hours")


def shipped_cost() -> None:
    """The shipped runs' time per group (results/*/summary.csv), for reference beside a measured sweep."""
    for figure in ("fig2", "fig4"):
        with open(ROOT / "results" / figure / "summary.csv", newline="") as handle:
            seconds = sum(float(row["seconds"]) for row in csv.DictReader(handle))
        print(f"shipped {figure}: {seconds:.0f} s of run time (results/{figure}/summary.csv)")


# ---------------------------------------------------------------- sweep-points


def sweep_points(args) -> None:
    """A panel of seeds in one sweep: forked from a warm worker against a new interpreter per point."""
    from fsc.sweep import Sweep, run_sweep
    from fsc.train import read_trajectory

    print(f"{args.seeds} seeds to t = {args.until_t:g}, one worker")
    print(f"{'memory':<10} {'round':>5} {'one by one s':>13} {'forked s':>9} {'ratio':>6} {'training s':>11} {'identical':>9}")
    for memory in args.memory:
        fixed = {"mu": 0.1, "reset": 1e-3, "memory": memory, "init": "random", "until_t": args.until_t, "convention": "paper", "threads": 1}
        sweep = Sweep.from_dict({"fixed": fixed, "grid": {"seed": list(range(args.seeds))}})
        found, reference = [], None
        with tempfile.TemporaryDirectory() as root:
            for n in range(args.rounds):
                seconds, identical = {}, True
                for side, command in (("one", [sys.executable, "-m", "fsc.train"]), ("forked", None)):
                    out = Path(root) / f"{side}-{n}"
                    began = time.perf_counter()
                    report = run_sweep(sweep, out, workers=1, quiet=True, command=command)
                    seconds[side] = time.perf_counter() - began
                    assert report.failed == 0, report.failures
                    runs = [{k: v.tolist() for k, v in read_trajectory(out / "runs" / p.name).items() if k != "seconds"} for p in sweep.points]
                    reference = runs if reference is None else reference
                    identical = identical and runs == reference
                training = sum(json.loads((out / "runs" / p.name / "result.json").read_text())["seconds"] for p in sweep.points)
                found.append((seconds["one"], seconds["forked"], training, identical))
                print(f"{memory:<10} {n + 1:>5} {seconds['one']:>13.2f} {seconds['forked']:>9.2f} {seconds['one'] / seconds['forked']:>6.2f} "
                      f"{training:>11.2f} {identical!s:>9}", flush=True)  # fmt: skip
        one, forked = min(r[0] for r in found), min(r[1] for r in found)
        print(f"{memory:<10} {'best':>5} {one:>13.2f} {forked:>9.2f} {one / forked:>6.2f} {min(found, key=lambda r: r[1])[2]:>11.2f} "
              f"{all(r[3] for r in found)!s:>9}")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser, sub = modes_parser(__doc__)
    add_mode(sub, engines, "the flow with the engines auto, dense and power (Figure 4's long trajectories)", repeats=1, quick=False)
    add_mode(sub, step, "the compiled flow per evaluation against evaluate(gradient=True) and the LAPACK floor",
             memory=["ram:8", "memento:3", "ram:20"], until_t=1e6, repeats=3)  # fmt: skip
    add_mode(sub, thinned, "fsc train with thinned rows against every row (and converged)", repeats=3, scale=1.0)
    mode = add_mode(sub, rosenbrock, "the Rosenbrock integrator against the published step rule", until_t=1e6, refined=False, reference=False, shipped=False)
    mode.add_argument("--tolerance", type=float, default=None, help="the Rosenbrock tolerance (default: its own)")
    mode.add_argument("--only", action="append", help="run only the points whose name contains this (repeatable)")
    mode = add_mode(sub, bdf_check, "runs of a Rosenbrock sweep against scipy's BDF at 1e-10, at every logged t", method="BDF", rtol=1e-10,
                    until_t=0.0, largest=20000, points=200)  # fmt: skip
    mode.add_argument("--sweep", default="sweeps/fig4-flow", help="the sweep directory (fsc sweep examples/sweeps/fig4-rosenbrock.json)")
    mode.add_argument("--point", action="append", help="a run of the sweep, by its name (repeatable; default: the sample BDF_SAMPLE)")
    mode.add_argument("--json", help="also write each run's figures here")
    mode.add_argument("--tolerance", type=float, action="append", help="also run each run again at this Rosenbrock tolerance (repeatable)")
    mode.add_argument("--curves", help="also write BDF's q at the rows a shipping keeps (--points) as DIR/trajectories.csv.gz")
    mode.add_argument("--keep", action="store_true", help="keep what --json and --curves DIR hold of the runs not checked now")
    mode.add_argument("--finer", type=float, help="also integrate each run by the method at this smaller rtol, against the run and the first")
    add_mode(sub, tolerances, "the same runs of two Rosenbrock sweeps at two tolerances, curve against curve", loose="sweeps/fig4-rosenbrock",
             tight="sweeps/fig4-flow", prefix="memory=ram-8/")  # fmt: skip
    mode = add_mode(sub, full_grid, "Rosenbrock sweeps of the whole grids against the shipped runs")
    mode.add_argument("--fig2", help="the Rosenbrock sweep directory of Figure 2")
    mode.add_argument("--fig4", help="the Rosenbrock sweep directory of Figure 4")
    mode.add_argument("--json", help="also write every run's figures here")
    add_mode(sub, published_rate, "evaluations per hour of the published method (power method, autograd)", seconds=10.0, seed=0, cases=8)
    mode = add_mode(sub, reproduction, "sweeps of the published grid against the LAPACK floor of their evaluations")
    mode.add_argument("sweeps", nargs="*", help="sweep directories (fsc sweep examples/sweeps/fig4.json --out DIR, and fig2.json)")
    add_mode(sub, sweep_points, "a panel of seeds: forked from a warm worker against a new interpreter per point",
             seeds=10, until_t=1e6, rounds=3, memory=["ram:8", "memento:3"])  # fmt: skip
    args = parser.parse_args(argv)
    one_thread()
    if args.mode == "reproduction" and not args.sweeps:
        shipped_cost()
        return
    args.run(args)


if __name__ == "__main__":
    main()
