"""Benchmark: the gradient flow with its compiled dense step against the same flow stepped in Python.

For each case (paper convention, mu = 0.1, r = 1e-3, the published random start of seed 0, one torch
thread), in one process: :func:`fsc.optim.optimize`'s loop with ``Objective(compiled=True)`` (each step,
rejected tries included, in one call of :func:`fsc.engines.kernels.flow_step`) and with
``compiled=False`` (the evaluator's forward and backward, the rule in Python), to ``--until-t``.
Prints the accepted steps, the evaluations, the wall time of each, microseconds per evaluation, their
ratio, the same compiled step called in a bare loop (``bare``: what the loop's Python objects cost is the
difference), the LAPACK floor per evaluation (``dgetrf`` + 2 ``dgetrs`` per part, called from compiled code,
on the same matrices), and whether the three took the same path to the last bit.

Usage: ``.venv/bin/python benchmarks/bench_flow_step.py [--until-t 1e6]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fsc  # noqa: E402
import policies  # noqa: E402
import tasks  # noqa: E402
from fsc.engines import kernels  # noqa: E402
from fsc.evaluate import Evaluator  # noqa: E402
from fsc.objective import Objective  # noqa: E402
from fsc.optim import GradientFlow, StopRule, _run  # noqa: E402

CASES = [("ram:8", 1.0), ("memento:3", 1.0), ("ram:20", 0.1)]  # (memory, fraction of --until-t)
RESET = 1e-3


def run(world, arch, start, until_t: float, compiled: bool) -> tuple[list, float]:
    objective = Objective(world=world, architecture=arch, reset=RESET, engine="dense", convention="paper", compiled=compiled)
    began = time.perf_counter()
    records = list(_run(objective, GradientFlow(), StopRule(until_t=until_t), start, None))
    return records, time.perf_counter() - began


def bare_loop(world, arch, start, until_t: float) -> tuple[int, int, float, float]:
    """The compiled step called in a bare loop, nothing else per step (no Point, State or Record): the floor of
    the loop above.  Returns its steps, evaluations, final t and wall time, to check it took the same path."""
    objective = Objective(world=world, architecture=arch, reset=RESET, engine="dense", convention="paper")
    point = objective(start.logits.detach().clone(), start.init_logits.detach().clone())
    w, w0, g, g0 = (x.numpy() for x in (point.logits, point.init_logits, point.grad_logits, point.grad_init))
    flow = GradientFlow()
    gain, dt, t, steps, evaluations = point.gain, flow.dt, 0.0, 0, 1
    factor, fused = objective._evaluator.factor, objective._fused
    began = time.perf_counter()
    while t < until_t:
        status, w, w0, g, g0, expected, used, dt, tried, _ = kernels.flow_step(w, w0, g, g0, gain, dt, flow.max_dgrad, flow.min_dt, factor, fused)
        if status != 0:
            break
        gain = (1 - RESET) * float(expected[0])  # the paper convention's gain (fsc.evaluate.read_out)
        t, steps, evaluations = t + used, steps + 1, evaluations + tried
    return steps, evaluations, t, time.perf_counter() - began


def floor_per_evaluation(arch, world, start, calls: int = 2000) -> float:
    """The factorisation and two solves per part alone, on the matrix of the start, in compiled code."""
    evaluator = Evaluator(world, arch, RESET, "dense", "paper")
    chain = evaluator.chain
    probs, _ = kernels.policy_probs(start.logits.numpy(), arch.allowed, start.init_logits.numpy(), arch.reset_mask)
    values = probs.reshape(-1)[chain.node_choice] * chain.weight
    K, X = chain.num_parts, chain.size
    A_t = kernels.dense_system_t(chain.dense_index_t, values, 1 - RESET, chain.padding, K, X)
    best = np.inf
    for _ in range(5):
        began = time.perf_counter()
        for _ in range(calls):
            work = A_t.copy()
            piv, _ = kernels.lu_parts(work)
            b = np.ones((K, X))
            kernels.lu_solve_parts(work, piv, b, 0)
            kernels.lu_solve_parts(work, piv, b, 1)
        best = min(best, (time.perf_counter() - began) / calls)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until-t", type=float, default=1e6)
    args = parser.parse_args()
    torch.set_num_threads(1)
    world = tasks.TwoHypothesis(0.1)
    print(f"{'memory':<10} {'until_t':>8} {'steps':>7} {'evals':>7} {'python s':>9} {'compiled s':>11} {'speed-up':>9} "
          f"{'python us/ev':>13} {'compiled us/ev':>15} {'bare us/ev':>11} {'floor us/ev':>12} {'identical':>9}")  # fmt: skip
    for memory, fraction in CASES:
        arch = fsc.parse_memory(memory)
        start = policies.initial_policy("random", arch, seed=0, published=True)
        until_t = args.until_t * fraction
        run(world, arch, start, 10.0, True)  # compile (or load the cache) and warm up
        compiled, t_compiled = run(world, arch, start, until_t, True)
        python, t_python = run(world, arch, start, until_t, False)
        identical = len(compiled) == len(python) and all(
            (a.t, a.dt, a.gain, a.metrics, a.grad_norm, a.evaluations) == (b.t, b.dt, b.gain, b.metrics, b.grad_norm, b.evaluations)
            for a, b in zip(compiled, python, strict=False)
        )
        identical = identical and torch.equal(compiled[-1].state.point.logits, python[-1].state.point.logits)
        evaluations = compiled[-1].evaluations
        steps, bare_evaluations, bare_t, t_bare = bare_loop(world, arch, start, until_t)
        identical = identical and (steps, bare_evaluations, bare_t) == (compiled[-1].step, evaluations, compiled[-1].t)
        floor = floor_per_evaluation(arch, world, start)
        print(
            f"{memory:<10} {until_t:>8.0e} {compiled[-1].step:>7} {evaluations:>7} {t_python:>9.2f} {t_compiled:>11.2f} "
            f"{t_python / t_compiled:>9.2f} {t_python / evaluations * 1e6:>13.1f} {t_compiled / evaluations * 1e6:>15.1f} "
            f"{t_bare / evaluations * 1e6:>11.1f} {floor * 1e6:>12.1f} {identical!s:>9}"
        )


if __name__ == "__main__":
    main()
