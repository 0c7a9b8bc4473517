"""Benchmark: the Rosenbrock integrator (``optimizer="rosenbrock"``) against the published step rule
(``optimizer="flow"``, the default) on points of the Figure 2 and Figure 4 grids, in one process.

For each point (paper convention, one torch thread) both integrators run from the same start to the same
``until_t`` (the grids' own horizons are 1e8 to 1e9; ``--until-t`` scales them down). Prints, per point: the
accepted steps and the evaluations (value and gradient; Hessian-vector products included) of each, the wall
time of each and their ratios, and ``max |dq|``: the largest difference in q at the Rosenbrock run's logged
t (every accepted step), the published curve (every step kept) interpolated linearly there. With
``--refined``, the published rule also runs at ``max_dgrad / 10``: ``refined |dq|`` is the published rule's
own distance to that run (at the published run's t), a measure of its discretisation error beside ours.

With ``--reference``, scipy's BDF (relative tolerance 1e-10, the Jacobian by differences of gradients) also
integrates the flow, an independent method: ``|dq| to BDF`` is each run's largest distance to it in q, at
up to 3000 of its own logged t (BDF's dense output evaluated there).

With ``--shipped``, only the Rosenbrock integrator runs, to the t where the point's shipped run of the published
rule ended (``results/fig2`` and ``results/fig4``: the grids' own horizons, or earlier where that run stopped on
``max_steps`` or ``stalled``), and is compared with that run: its steps and seconds from ``summary.csv`` (measured
in another process, at another time), the final q of both, and ``max |dq|`` at the Rosenbrock run's t within the
span of the shipped curve (``trajectories.csv.gz``, thinned to about 100 rows per decade of t, interpolated linearly).

Usage: ``.venv/bin/python benchmarks/bench_rosenbrock.py [--until-t 1e6] [--tolerance 1e-5] [--refined] [--reference] [--shipped] [--only NAME]``
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tasks  # noqa: E402
from fsc.objective import Objective  # noqa: E402
from fsc.optim import optimize  # noqa: E402
from fsc.resolve import resolve_memory, resolve_policy  # noqa: E402

# (name, mu, memory, init, seed, reset): Figure 4 A-D (r = 1e-3) and E-F (r = 1e-5), Figure 2 (near-CCP at r = 1e-6 and 1e-2)
POINTS = [
    ("4A ram8 random s0", 0.1, "ram:8", "random", 0, 1e-3),
    ("4A ram8 random s1", 0.1, "ram:8", "random", 1, 1e-3),
    ("4A ram8 columns s0", 0.1, "ram:8", "columns", 0, 1e-3),
    ("4B ram20 random s0", 0.1, "ram:20", "random", 0, 1e-3),
    ("4B ram20 columns s0", 0.1, "ram:20", "columns", 0, 1e-3),
    ("4C memento3 random s0", 0.1, "memento:3", "random", 0, 1e-3),
    ("4C memento3 cycles s0", 0.1, "memento:3", "cycles", 0, 1e-3),
    ("4D memento4 random s0", 0.1, "memento:4", "random", 0, 1e-3),
    ("4D memento4 cycles s0", 0.1, "memento:4", "cycles", 0, 1e-3),
    ("4E memento3 random s0 r1e-5", 0.1, "memento:3", "random", 0, 1e-5),
    ("2 ram5 mu.1 r1e-6", 0.1, "ram:5", "near-ccp", 0, 1e-6),
    ("2 ram9 mu.2 r1e-6", 0.2, "ram:9", "near-ccp", 0, 1e-6),
    ("2 ram2 mu.2 r1e-2", 0.2, "ram:2", "near-ccp", 0, 1e-2),
    ("2 ram5 mu.1 r2^-10", 0.1, "ram:5", "near-ccp", 0, 2.0**-10),
]


def curve(world, policy, reset: float, until_t: float, **optimizer) -> tuple[np.ndarray, np.ndarray, int, int, float]:
    """``(t, q, steps, evaluations, seconds)`` of a run, every accepted step's t and q kept."""
    began = time.perf_counter()
    t, q, last = [], [], None
    for last in optimize(world, policy, reset=reset, convention="paper", until_t=until_t, skip_until=lambda: math.inf, keep_skipped=True, **optimizer):
        if last.skipped is not None:
            t += last.skipped["t"]
            q += last.skipped["metrics"]["q"]
        t.append(last.t)
        q.append(last.q)
    return np.array(t), np.array(q), last.step, last.evaluations, time.perf_counter() - began


def gap(t_new: np.ndarray, q_new: np.ndarray, t_ref: np.ndarray, q_ref: np.ndarray) -> float:
    """Largest ``|q_new - q_ref|`` at ``t_new`` within the span of ``t_ref``, ``q_ref`` interpolated linearly."""
    inside = t_new <= t_ref[-1]
    return float(np.abs(q_new[inside] - np.interp(t_new[inside], t_ref, q_ref)).max())


ROOT = Path(__file__).resolve().parents[1]


def reference(world, policy, reset: float, until_t: float):
    """``t -> q`` of the flow by scipy's BDF at a relative 1e-10 (absolute 1e-12) on the finite logits."""
    from scipy.integrate import solve_ivp

    objective = Objective(world=world, architecture=policy.architecture, reset=reset, convention="paper")
    logits, init_logits = policy.logits.detach().numpy(), policy.init_logits.detach().numpy()
    mask, init_mask = np.isfinite(logits), np.isfinite(init_logits)
    split = int(mask.sum())

    def point(y):
        w, w0 = logits.copy(), init_logits.copy()
        w[mask], w0[init_mask] = y[:split], y[split:]
        return objective(torch.from_numpy(w), torch.from_numpy(w0))

    def field(t, y):
        p = point(y)
        return np.concatenate([p.grad_logits.numpy()[mask], p.grad_init.numpy()[init_mask]])

    def jacobian(t, y):
        g, columns = field(t, y), []
        for i in range(y.shape[0]):
            step = 1e-6 * (1 + abs(y[i]))
            moved = y.copy()
            moved[i] += step
            columns.append((field(t, moved) - g) / step)
        H = np.array(columns).T
        return (H + H.T) / 2

    y0 = np.concatenate([logits[mask], init_logits[init_mask]])
    solution = solve_ivp(field, (0.0, until_t), y0, method="BDF", rtol=1e-10, atol=1e-12, jac=jacobian, dense_output=True)
    return lambda t: point(solution.sol(t)).metrics["q"]


def distance(t: np.ndarray, q: np.ndarray, exact) -> float:
    """Largest ``|q - exact(t)|`` at up to 3000 of the logged ``t``."""
    pick = np.unique(np.linspace(0, len(t) - 1, min(len(t), 3000)).astype(int))
    return max(abs(q[i] - exact(t[i])) for i in pick)


@functools.cache
def shipped_folder(figure: str) -> tuple[dict[str, dict], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """``results/figure``'s rows and curves (``summary.csv``, ``trajectories.csv.gz``), read once."""
    from fsc.report.results import read_shipped

    return read_shipped(ROOT / "results" / figure)


def shipped(mu: float, memory: str, init: str, seed: int, reset: float) -> tuple[dict, np.ndarray, np.ndarray]:
    """The shipped run of the published rule at this point: its ``summary.csv`` row and its curve ``(t, q)``."""
    for figure in ("fig4", "fig2"):
        rows, curves = shipped_folder(figure)
        for row in rows.values():
            if (float(row["mu"]), row["memory"], row["init"], int(row["seed"]), float(row["reset"])) == (mu, memory, init, seed, reset):
                t, q = curves[row["run"]]
                return row, t, q
    raise SystemExit(f"no shipped run at mu={mu} memory={memory} init={init} seed={seed} reset={reset}")


def against_shipped(points, settings: dict) -> None:
    """The Rosenbrock integrator to where each shipped run ended, against that run."""
    print(f"{'point':<28} {'stop':>9} {'t':>9} {'steps pub':>10} {'steps ros':>9} {'ratio':>7} {'s pub':>8} {'s ros':>6} {'q pub':>10} {'q ros':>10} "
          f"{'max |dq|':>9}")  # fmt: skip
    total = np.zeros(4)
    for name, mu, memory, init, seed, reset in points:
        row, t_pub, q_pub = shipped(mu, memory, init, seed, reset)
        world = tasks.TwoHypothesis(mu)
        policy = resolve_policy(init, resolve_memory(memory, world), mu=mu, reset=reset, seed=seed, convention="paper")
        t_ros, q_ros, steps_ros, _, s_ros = curve(world, policy, reset, float(row["t"]), optimizer="rosenbrock", **settings)
        steps_pub, s_pub = int(row["steps"]), float(row["seconds"])
        total += (steps_pub, steps_ros, s_pub, s_ros)
        q_end = np.interp(float(row["t"]), t_ros, q_ros)
        print(f"{name:<28} {row['stop']:>9} {float(row['t']):>9.3g} {steps_pub:>10} {steps_ros:>9} {steps_pub / steps_ros:>7.0f} {s_pub:>8.1f} {s_ros:>6.1f} "
              f"{float(row['q']):>10.7f} {q_end:>10.7f} {gap(t_ros, q_ros, t_pub, q_pub):>9.2e}", flush=True)  # fmt: skip
    print(f"{'total':<28} {'':>9} {'':>9} {total[0]:>10.0f} {total[1]:>9.0f} {total[0] / total[1]:>7.0f} {total[2]:>8.1f} {total[3]:>6.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until-t", type=float, default=1e6)
    parser.add_argument("--tolerance", type=float, default=None, help="the Rosenbrock tolerance (default: its own)")
    parser.add_argument("--refined", action="store_true", help="also run the published rule at max_dgrad 1e-5")
    parser.add_argument("--reference", action="store_true", help="also integrate by scipy's BDF at 1e-10 and compare both with it")
    parser.add_argument("--shipped", action="store_true", help="the Rosenbrock integrator alone, against the shipped runs (results/)")
    parser.add_argument("--only", action="append", help="run only the points whose name contains this (repeatable)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    settings = {} if args.tolerance is None else {"tolerance": args.tolerance}
    points = [point for point in POINTS if not args.only or any(part in point[0] for part in args.only)]
    if args.shipped:
        against_shipped(points, settings)
        return
    print(f"until_t {args.until_t:g}, rosenbrock {settings or 'defaults'}")
    to_bdf = " |dq| to BDF: pub" + (", pub/10" if args.refined else "") + ", ros" if args.reference else ""
    print(f"{'point':<28} {'steps pub':>10} {'steps ros':>9} {'ratio':>7} {'evals pub':>10} {'evals ros':>9} {'s pub':>7} {'s ros':>6} "
          f"{'time ratio':>10} {'max |dq|':>9}{' refined |dq|' if args.refined else ''}{to_bdf}")  # fmt: skip
    totals = np.zeros(6)
    for name, mu, memory, init, seed, reset in points:
        world = tasks.TwoHypothesis(mu)
        policy = resolve_policy(init, resolve_memory(memory, world), mu=mu, reset=reset, seed=seed, convention="paper")
        t_pub, q_pub, steps_pub, evals_pub, s_pub = curve(world, policy, reset, args.until_t)
        t_ros, q_ros, steps_ros, evals_ros, s_ros = curve(world, policy, reset, args.until_t, optimizer="rosenbrock", **settings)
        refined, fine = "", []
        if args.refined:
            t_fine, q_fine, *_ = curve(world, policy, reset, args.until_t, max_dgrad=1e-5)
            refined, fine = f" {gap(t_pub, q_pub, t_fine, q_fine):>12.2e}", [(t_fine, q_fine)]
        if args.reference:
            exact = reference(world, policy, reset, args.until_t)
            refined += "".join(f" {distance(t, q, exact):>9.2e}" for t, q in [(t_pub, q_pub), *fine, (t_ros, q_ros)])
        totals += (steps_pub, steps_ros, evals_pub, evals_ros, s_pub, s_ros)
        print(f"{name:<28} {steps_pub:>10} {steps_ros:>9} {steps_pub / steps_ros:>7.1f} {evals_pub:>10} {evals_ros:>9} {s_pub:>7.2f} {s_ros:>6.2f} "
              f"{s_pub / s_ros:>10.1f} {gap(t_ros, q_ros, t_pub, q_pub):>9.2e}{refined}", flush=True)  # fmt: skip
    steps_pub, steps_ros, evals_pub, evals_ros, s_pub, s_ros = totals
    print(f"{'total':<28} {steps_pub:>10.0f} {steps_ros:>9.0f} {steps_pub / steps_ros:>7.1f} {evals_pub:>10.0f} {evals_ros:>9.0f} {s_pub:>7.2f} "
          f"{s_ros:>6.2f} {s_pub / s_ros:>10.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
