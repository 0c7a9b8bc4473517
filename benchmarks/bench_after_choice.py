"""Benchmark: the chain after each choice (engine ``choices``) against the whole chain (the engine ``auto``
picked before it: ``dense``, or ``sparse`` for Memento 4).

For each case (paper convention, mu = 0.1, r = 1e-5, the published random start of seed 0, one thread for
torch and for LAPACK), in one process:

- ``value+grad``: microseconds per value and gradient on the training path
  (:class:`fsc.objective.Objective`), on each engine, and their ratio;
- ``LU``: microseconds of the factorisation alone on each engine's matrices (``X`` states per part, and
  ``Y_R`` recurrent states after each choice);
- a flow to ``--until-t`` from the same start on each engine (:func:`fsc.flow`, a record per step): wall
  time, ratio, and the largest relative difference of ``q(t)`` between the two curves at t = 10, 100, ...
  (interpolated: the two paths take the same steps until rounding flips an accept/reject).

Usage: ``.venv/bin/python benchmarks/bench_after_choice.py [--calls 200] [--repeats 5] [--until-t 1e6] [--memory ram:8 ...]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one LAPACK thread, as sweeps run (read when numpy loads OpenBLAS)

import numpy as np  # noqa: E402
import scipy.sparse.linalg as spla  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import best  # noqa: E402

import fsc  # noqa: E402
import policies  # noqa: E402
import tasks  # noqa: E402
from fsc.engines import kernels  # noqa: E402
from fsc.engines.sparse import system_matrices  # noqa: E402
from fsc.evaluate import Evaluator  # noqa: E402
from fsc.objective import Objective  # noqa: E402

#: (memory, the engine to compare with)
CASES = [("ram:8", "dense"), ("ram:16", "dense"), ("ram:20", "dense"), ("column:20", "dense"), ("ram:64", "dense"),
         ("memento:3", "dense"), ("memento:4", "sparse")]  # fmt: skip
RESET = 1e-5


def lu_seconds(evaluator: Evaluator, probs: np.ndarray, calls: int, repeats: int) -> float:
    """The factorisation alone of the matrix the engine factors."""
    chain, a = evaluator.chain, 1 - evaluator.reset
    values = probs.reshape(-1)[chain.node_choice] * chain.weight
    if evaluator.engine == "sparse":
        matrices = system_matrices(chain, values, evaluator.reset)
        return best(lambda: [spla.splu(A, permc_spec="NATURAL", diag_pivot_thresh=0.0) for A in matrices], calls, repeats)
    if evaluator.engine == "dense":
        matrix = kernels.dense_system_t(chain.dense_index_t, values, a, chain.padding, chain.num_parts, chain.size)
    else:
        t = chain.after_choice
        matrix = kernels.after_choice_system_t(t.b_index_t, t.b_node_choice, t.b_weight, probs, a, t.b_padding)
    return best(lambda: kernels.lu_parts(matrix.copy()), calls, repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--until-t", type=float, default=1e6)
    parser.add_argument("--memory", nargs="*", default=[memory for memory, _ in CASES], help="the cases to run (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    world = tasks.TwoHypothesis(0.1)
    print(f"{'memory':<10} {'X':>4} {'Y_R':>4} {'engine':<7} {'engine us':>9} {'choices us':>10} {'ratio':>6} {'LU X us':>8} {'LU Y_R us':>9} "
          f"{'flow engine s':>13} {'flow choices s':>14} {'ratio':>6} {'max dq/q':>9}")  # fmt: skip
    for memory, baseline in [case for case in CASES if case[0] in args.memory]:
        arch = fsc.parse_memory(memory)
        start = policies.initial_policy("random", arch, seed=0, published=True)
        logits, init_logits = start.logits.detach(), start.init_logits.detach()
        calls = max(3, args.calls * 40 // arch.num_nodes)
        per_call, lu, flows, curves = {}, {}, {}, {}
        for engine in (baseline, "choices"):
            objective = Objective(world=world, architecture=arch, reset=RESET, engine=engine, convention="paper")
            per_call[engine] = best(lambda o=objective, w=logits, w0=init_logits: o(w, w0), calls, args.repeats)
            evaluator = Evaluator(world, arch, RESET, engine, "paper")
            probs, _ = kernels.policy_probs(logits.numpy(), arch.allowed, init_logits.numpy(), arch.reset_mask)
            lu[engine] = lu_seconds(evaluator, probs, calls, args.repeats)
            begin = time.perf_counter()
            records = list(fsc.flow(world, start, reset=RESET, convention="paper", engine=engine, until_t=args.until_t))
            flows[engine] = time.perf_counter() - begin
            curves[engine] = (np.array([r.t for r in records]), np.array([r.metrics["q"] for r in records]))
        marks = [t for t in 10.0 ** np.arange(1, 10) if t <= min(curve[0][-1] for curve in curves.values())]
        dq = max((abs(np.interp(t, *curves["choices"]) / np.interp(t, *curves[baseline]) - 1) for t in marks), default=float("nan"))
        chain = Evaluator(world, arch, RESET, "choices", "paper").chain
        print(
            f"{memory:<10} {chain.size:>4} {chain.after_choice.recurrent_size:>4} {baseline:<7} {per_call[baseline] * 1e6:>9.0f} "
            f"{per_call['choices'] * 1e6:>10.0f} {per_call[baseline] / per_call['choices']:>6.1f} {lu[baseline] * 1e6:>8.0f} "
            f"{lu['choices'] * 1e6:>9.0f} {flows[baseline]:>13.2f} {flows['choices']:>14.2f} {flows[baseline] / flows['choices']:>6.1f} {dq:>9.1e}"
        )


if __name__ == "__main__":
    main()
