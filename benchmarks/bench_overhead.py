"""Benchmark: one value and gradient on the training path against its linear-algebra floor.

For each case (paper convention, mu = 0.1, r = 1e-3, the published random start of seed 0, one torch
thread), in microseconds per value and gradient, best of ``--repeats`` blocks of ``--calls``:

- ``training``: :class:`fsc.objective.Objective`, i.e. :class:`fsc.evaluate.Evaluator`'s forward and backward;
- ``engine``: the engine alone on the same matrix: build its :class:`fsc.engines.sparse.Backend` from the
  nonzeros (assembly and factorisation), one solve and one adjoint solve;
- ``floor``: the factorisation and the two solves alone on matrices built beforehand (LAPACK
  ``dgetrf`` + 2 ``dgetrs`` per part for the dense engine, on ``B = I - a Pi G`` for the choices one; SuperLU ``splu`` + 2 solves for the sparse one):
  what no implementation around these solvers can go below.

The columns ``/engine`` and ``/floor`` are the training path's multiples of those.

Then the compiled flow, which is what a training run spends its time in, per value and gradient:

- ``flow``: :func:`fsc.engines.kernels.flow_run` from the same start, ``--steps`` accepted steps, divided by
  its evaluations (rejected tries included);
- ``previous``: the same with the kernels of ``previous.PREVIOUS`` (before the training path's workspace),
  compiled in this process from git; the two alternate in each round, best round of each, and must end on
  the same bits;
- ``floor c``: ``dgetrf`` and two ``dgetrs`` per part called from compiled code (no Python between them): what
  the compiled flow cannot go below; ``/floor c`` are ``flow`` and ``previous`` over it.

Usage: ``.venv/bin/python benchmarks/bench_overhead.py [--calls 300] [--repeats 5] [--steps 300]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import scipy.sparse.linalg as spla
import torch
from scipy.linalg.lapack import dgetrf, dgetrs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import previous  # noqa: E402
from timing import best  # noqa: E402

import fsc  # noqa: E402
import policies  # noqa: E402
import tasks  # noqa: E402
from fsc.engines import kernels  # noqa: E402
from fsc.engines.kernels import after_choice_system_t  # noqa: E402
from fsc.engines.sparse import system_matrices  # noqa: E402
from fsc.evaluate import Evaluator  # noqa: E402
from fsc.objective import Objective  # noqa: E402

CASES = ["ram:8", "ram:20", "memento:3", "memento:4"]
RESET = 1e-3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=300, help="accepted steps of each compiled flow per round")
    args = parser.parse_args()
    torch.set_num_threads(1)
    world = tasks.TwoHypothesis(0.1)
    old = previous.load()
    print(
        f"{'memory':<10} {'engine':<7} {'X':>4} {'training us':>12} {'engine us':>10} {'floor us':>9} {'/engine':>8} {'/floor':>7}"
        f" | {'flow us':>8} {'previous us':>12} {'speed-up':>9} {'floor c us':>11} {'/floor c':>9} {'previous /floor c':>18}"
    )  # fmt: skip
    for memory in CASES:
        arch = fsc.parse_memory(memory)
        start = policies.initial_policy("random", arch, seed=0)
        objective = Objective(world=world, architecture=arch, reset=RESET, convention="paper")
        logits, init_logits = start.logits.detach(), start.init_logits.detach()
        evaluator = Evaluator(world, arch, RESET, "auto", "paper")
        run = evaluator.forward(logits.numpy(), init_logits.numpy())
        chain, make_backend = evaluator.chain, evaluator.make_backend
        values = run.probs.reshape(-1)[chain.node_choice] * chain.weight
        K, X = chain.num_parts, chain.size
        p0 = (chain.initial_world[:, :, None] * run.init_probs).reshape(K, X)
        g = np.ones((K, X))

        extra = {"probs": run.probs} if make_backend.needs_probs else {}

        def engine(values=values, p0=p0, g=g, chain=chain, make_backend=make_backend, extra=extra):
            backend = make_backend(chain, values, p0, RESET, **extra)
            backend.solve()
            backend.solve_adjoint(g)

        matrices = system_matrices(chain, values, RESET)
        B_t = kernels.dense_system_t(chain.dense_index_t, values, 1 - RESET, chain.padding, K, X)  # the LU's matrices, as flow_run has them
        if evaluator.engine in ("dense", "choices"):
            if evaluator.engine == "choices":  # its LU is that of B = I - a Pi G, S C states per part
                t = chain.after_choice
                B_t = after_choice_system_t(t.b_index_t, t.b_node_choice, t.b_weight, np.ascontiguousarray(run.probs), 1 - RESET, t.b_padding)
                matrices = [B.T for B in B_t]
            dense = [np.asfortranarray(A.toarray() if hasattr(A, "toarray") else A) for A in matrices]
            rhs = np.ones((K, dense[0].shape[0]))

            def floor(dense=dense, rhs=rhs):
                for k, A in enumerate(dense):
                    lu, piv, _ = dgetrf(A)
                    dgetrs(lu, piv, rhs[k])
                    dgetrs(lu, piv, rhs[k], trans=1)

        else:

            def floor(matrices=matrices, p0=p0, g=g):
                for k, A in enumerate(matrices):
                    factor = spla.splu(A, permc_spec="NATURAL", diag_pivot_thresh=0.0)
                    factor.solve(p0[k])
                    factor.solve(g[k], trans="T")

        def training(objective=objective, logits=logits, init_logits=init_logits):
            objective(logits, init_logits)

        t_train = best(training, args.calls, args.repeats)
        t_engine = best(engine, args.calls, args.repeats)
        t_floor = best(floor, args.calls, args.repeats)
        point = objective(logits.clone(), init_logits.clone())
        c = objective._fused
        flows = {"flow": (kernels.flow_run, c), "previous": (old.flow_run, c[: previous.PREVIOUS_CONSTANTS])}
        timed = previous.time_flows(objective, point, flows, args.steps, 3 * args.repeats)
        t_flow, t_previous = timed["flow"][0], timed["previous"][0]
        t_floor_c = previous.compiled_floor(B_t)
        print(
            f"{memory:<10} {evaluator.engine:<7} {X:>4} {t_train * 1e6:>12.0f} {t_engine * 1e6:>10.0f} {t_floor * 1e6:>9.0f} "
            f"{t_train / t_engine:>8.2f} {t_train / t_floor:>7.2f} | {t_flow * 1e6:>8.1f} {t_previous * 1e6:>12.1f} {t_previous / t_flow:>9.2f} "
            f"{t_floor_c * 1e6:>11.1f} {t_flow / t_floor_c:>9.2f} {t_previous / t_floor_c:>18.2f}"
        )


if __name__ == "__main__":
    main()
