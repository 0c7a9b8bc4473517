"""Paper Table 1: necklace (Memento) and CCP (RAM) in the limit r -> 0.

For each size, the closed form (Theorem 4.3 / appendix D for the necklace
policy, appendix C-D for the CCP) next to the exact evaluation of the
explicit policy at r = 0 (subtraction-free engine) and small eps, for the symmetric task (mu) and for a
general pair (k_A, k_B).  Writes a CSV.

    python examples/table1.py --mu 0.1 --k-a 0.9 --k-b 0.6 --out out/table1.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import fsc
import policies
import tasks
from fsc.files import write_rows
from policies import closed_form


def necklace_row(task, m: int, eps1: float) -> dict:
    # Theorem 4.3 needs r << eps0 << eps1 and eps0 / eps1 << q* (the time spent
    # crossing the inner necklaces): at r = 0, with the subtraction-free engine.
    chain = policies.necklaces.gray_chain(m)
    closed = closed_form.necklace_q_star_general(task.k_A, task.k_B, m, chain.chain)
    eps1 = min(eps1, closed)
    eps0 = eps1 * 1e-4 * closed
    arch, policy = policies.necklace_policy(m, eps0, eps1)
    exact = float(fsc.evaluate(task, policy, reset=0, engine="accurate").metrics["q"])
    return {
        "policy": "necklace",
        "size": m,
        "chain_length": chain.length,
        "q_closed_form": closed,
        "q_exact": exact,
        "ratio": exact / closed,
        "eps": f"eps0={eps0:g}, eps1={eps1:g}",
        "reset": eps0 * 1e-6,
    }


def ccp_row(task, M: int, reset: float) -> dict:
    # The r -> 0 limit needs eps -> 0 with eps << q: r = 0, subtraction-free engine.
    closed = closed_form.ccp_q_limit_general(task.k_A, task.k_B, M)
    eps = 1e-6 * closed
    arch, policy = policies.ccp(M, eps)
    exact = float(fsc.evaluate(task, policy, reset=0, engine="accurate").metrics["q"])
    reset = 0.0
    return {
        "policy": "ccp",
        "size": M,
        "chain_length": 2 * M,
        "q_closed_form": closed,
        "q_exact": exact,
        "ratio": exact / closed,
        "eps": f"eps={eps:.3g}",
        "reset": reset,
    }


def table(mu: float, k_a: float, k_b: float, *, memento=(2, 3, 4, 5), ram=(1, 2, 4, 8), eps1=1e-4, reset=1e-12) -> list[dict]:
    rows = []
    for task in (tasks.TwoHypothesis(mu), tasks.TwoHypothesis(k_A=k_a, k_B=k_b)):
        label = f"mu={mu}" if task.mu is not None else f"k_A={k_a}, k_B={k_b}"
        for m in memento:
            rows.append({"task": label, **necklace_row(task, m, eps1)})
        for M in ram:
            rows.append({"task": label, **ccp_row(task, M, reset)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mu", type=float, default=0.1)
    parser.add_argument("--k-a", type=float, default=0.9)
    parser.add_argument("--k-b", type=float, default=0.6)
    parser.add_argument("--out", type=Path, default=Path("out/table1.csv"))
    args = parser.parse_args()
    rows = table(args.mu, args.k_a, args.k_b)
    write_rows(args.out, rows)
    print(f"{'task':<20} {'policy':<9} {'size':>4} {'q closed form':>14} {'q exact':>14} {'ratio':>10}")
    for row in rows:
        print(f"{row['task']:<20} {row['policy']:<9} {row['size']:>4} {row['q_closed_form']:>14.6e} {row['q_exact']:>14.6e} {row['ratio']:>10.6f}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
