"""The star policy: the column of confidence for k hypotheses, and what training does from near it.

Prints (and writes as CSV) a table of q for k = 2, 3, 4 arms at a few (M, r):
the closed form at the optimal exit, exact evaluation of the star policy,
and Monte Carlo; then trains RAM controllers with k arms by gradient flow
from near the star policy (``near-star``: star probabilities + 1e-4, log)
and reports whether training improves on it.  It does for k >= 3: training
finds the cyclic star (a loss at the bottom of branch x moves to branch x + 1),
whose q in closed form is printed beside.

    python examples/star.py --out results/star
"""

from __future__ import annotations

import argparse
import collections
import time
from collections.abc import Iterator
from pathlib import Path

import torch

import fsc
import policies
import tasks
from fsc.files import write_rows
from policies.star import star, star_eps_opt, star_q


def table(header: str, lines: Iterator[tuple[dict, str]], out: str | None, name: str) -> None:
    """Print ``header`` and each line of ``lines`` as it comes; write their rows as ``out/name`` (CSV)."""
    print(header)
    rows = []
    for row, line in lines:
        rows.append(row)
        print(line)
    if out:
        print(f"wrote {write_rows(Path(out) / name, rows)}")


def star_lines(mu: float, steps: int) -> Iterator[tuple[dict, str]]:
    """The star policy at its optimal exit for k = 2, 3, 4 and a few (M, r): closed form, exact and Monte Carlo q."""
    for k in (2, 3, 4):
        world = tasks.TwoHypothesis(mu, arms=k)
        for M in (2, 4, 8):
            for r in (1e-2, 1e-3, 1e-4):
                eps = star_eps_opt(mu, M, r, k)
                arch, policy = star(M, k, eps)
                exact = float(fsc.evaluate(world, policy, reset=r).metrics["q"])
                closed = star_q(mu, M, r, eps, k)
                sim = fsc.simulate(world, policy, reset=r, steps=steps, seed=M * k)
                row = dict(k=k, M=M, r=r, eps=eps, q_closed_form=closed, q_exact=exact, q_monte_carlo=sim.metrics["q"], stderr=sim.stderrs["q"])
                yield row, (
                    f"{k:>2} {M:>3} {r:>7.0e} {eps:>9.3g} {closed:>14.10f} {exact:>14.10f} {abs(closed - exact):>8.1e}"
                    f" {sim.metrics['q']:>14.6f} {sim.stderrs['q']:>7.1e}"
                )


def training_lines(mu: float, M: int, reset: float, until_t: float) -> Iterator[tuple[dict, str]]:
    """RAM(M, arms=k) trained from near the star policy for k = 2, 3, 4, against the star and the cyclic star."""
    for k in (2, 3, 4):
        world = tasks.TwoHypothesis(mu, arms=k)
        arch = fsc.RAM(M, arms=k)
        start_policy = policies.initial_policy("near-star", arch, mu=mu, reset=reset)
        q_star = star_q(mu, M, reset, star_eps_opt(mu, M, reset, k), k)
        q_cyclic = star_q(mu, M, reset, star_eps_opt(mu, M, reset, k, "cyclic"), k, "cyclic")
        clock = time.perf_counter()
        records = fsc.flow(world, start_policy, reset=reset, until_t=until_t)
        first = next(records)
        tail = collections.deque(records, maxlen=1)
        last = tail[0] if tail else first
        seconds = time.perf_counter() - clock
        row = dict(k=k, M=M, r=reset, q_star=q_star, q_cyclic=q_cyclic, q_start=first.q, q_trained=last.q, t=last.t, steps=last.step, seconds=seconds)
        yield row, (
            f"{k:>2} {q_star:>14.10f} {q_cyclic:>15.10f} {first.q:>10.6f} {last.q:>14.10f} {q_star - last.q:>15.3e}"
            f" {q_cyclic - last.q:>12.3e} {last.step:>6} {seconds:>8.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mu", type=float, default=0.1)
    parser.add_argument("--steps", type=int, default=2_000_000, help="Monte Carlo steps per point")
    parser.add_argument("--train-M", type=int, default=4)
    parser.add_argument("--train-reset", type=float, default=1e-3)
    parser.add_argument("--until-t", type=float, default=1e7)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)

    print(f"mu = {args.mu}; star policy at its optimal exit eps* (native convention)")
    header = f"{'k':>2} {'M':>3} {'r':>7} {'eps*':>9} {'q closed form':>14} {'q exact':>14} {'|diff|':>8} {'q Monte Carlo':>14} {'+-':>7}"
    table(header, star_lines(args.mu, args.steps), args.out, "star_q.csv")

    print(f"\nTraining RAM({args.train_M}, arms=k) from near the star policy, r = {args.train_reset}, gradient flow to t = {args.until_t:g}")
    header = (
        f"{'k':>2} {'q star (eps*)':>14} {'q cyclic (eps*)':>15} {'q start':>10} {'q trained':>14}"
        f" {'gain over star':>15} {'over cyclic':>12} {'steps':>6} {'seconds':>8}"
    )
    table(header, training_lines(args.mu, args.train_M, args.train_reset, args.until_t), args.out, "star_training.csv")


if __name__ == "__main__":
    main()
