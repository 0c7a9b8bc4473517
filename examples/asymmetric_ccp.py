"""The asymmetric column of confidence against the symmetric CCP on the Figure 2 grid.

Writes OUT/gain.csv (mu, M, r, both optima and the gain q_symmetric - q_asymmetric,
native convention; the minimiser is the same in the paper convention),
OUT/local_optimality.csv (first-order check of the optimum over all RAM
policies, policies.asymmetric.local_optimality) and prints the fitted
exponents of the gain in r and in M.  About a minute on one core.

    python examples/asymmetric_ccp.py --out results/asymmetric
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

import numpy as np
import torch

from fsc.files import write_rows


def fit_exponent(x: list[float], y: list[float]) -> float:
    """Slope of log y against log x (least squares)."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/asymmetric"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    from policies.asymmetric import asymmetric_ccp_optimum, local_optimality

    points = set()
    for mu in (0.1, 0.2):
        for M in (5, 10, 20):
            for k in range(1, 21):
                points.add((mu, M, 2.0**-k))
        for M in range(2, 38):
            for r in (1e-6, 1e-4, 1e-2):
                points.add((mu, M, r))
    rows = []
    for mu, M, r in sorted(points):
        o = asymmetric_ccp_optimum(mu, M, r)
        rows.append({"mu": mu, "M": M, "reset": r, "q_symmetric": o.q_symmetric, "eps_symmetric": o.eps_symmetric, "q_asymmetric": o.q,
                     "eps_A": o.eps_A, "eps_B": o.eps_B, "split": o.split, "gain": o.gain, "relative_gain": o.gain / o.q_symmetric})  # fmt: skip
    write_rows(args.out / "gain.csv", rows)
    inner = [row for row in rows if row["eps_symmetric"] < 1]
    capped = [row for row in rows if row["eps_symmetric"] >= 1]
    print(f"{len(rows)} points; symmetric eps* < 1 at {len(inner)}: gain > 0 at {sum(row['gain'] > 0 for row in inner)}, "
          f"smallest relative gain {min(row['relative_gain'] for row in inner):.3g}; eps* capped at 1 at {len(capped)}: "
          f"largest |gain| {max((abs(row['gain']) for row in capped), default=0):.2g}")  # fmt: skip
    print(f"{'mu':>4} {'M':>3} {'r':>10} {'q_sym':>12} {'q_asym':>12} {'gain':>10} {'rel':>9} {'eps_A':>9} {'eps_B':>9}")
    for row in rows:
        if row["M"] in (5, 10, 20) and row["reset"] in (2.0**-20, 2.0**-14, 2.0**-10, 2.0**-7, 2.0**-4, 2.0**-1, 1e-6, 1e-4, 1e-2):
            print(f"{row['mu']:>4} {row['M']:>3} {row['reset']:>10.3g} {row['q_symmetric']:>12.7g} {row['q_asymmetric']:>12.7g} {row['gain']:>10.3g} "
                  f"{row['relative_gain']:>9.3g} {row['eps_A']:>9.4g} {row['eps_B']:>9.4g}")  # fmt: skip
    print("\nexponent of the gain in r (small r, 2^-20..2^-12), per (mu, M):")
    for mu in (0.1, 0.2):
        for M in (5, 10, 20):
            sel = [row for row in rows if row["mu"] == mu and row["M"] == M and row["reset"] <= 2.0**-12 and math.log2(row["reset"]).is_integer()]
            print(f"  mu={mu} M={M}: gain ~ r^{fit_exponent([r['reset'] for r in sel], [r['gain'] for r in sel]):.3f}, "
                  f"relative gain ~ r^{fit_exponent([r['reset'] for r in sel], [r['relative_gain'] for r in sel]):.3f}")  # fmt: skip
    print("exponent of the gain in M (M = 10..37), per (mu, r):")
    for mu in (0.1, 0.2):
        for r in (1e-6, 1e-4, 1e-2):
            sel = [row for row in rows if row["mu"] == mu and row["reset"] == r and row["M"] >= 10 and row["gain"] > 0]
            if len(sel) > 2:
                print(f"  mu={mu} r={r:g}: gain ~ M^{fit_exponent([s['M'] for s in sel], [s['gain'] for s in sel]):.3f} "
                      f"(gain at M=10: {sel[0]['gain']:.3g}, at M={sel[-1]['M']}: {sel[-1]['gain']:.3g})")  # fmt: skip
    checks = [local_optimality(mu, M, r) for mu, M, r in ((0.1, 2, 1e-3), (0.1, 4, 1e-3), (0.1, 8, 1e-3), (0.1, 8, 1e-5), (0.2, 5, 1e-5), (0.1, 20, 1e-4))]
    with open(args.out / "local_optimality.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["mu", "M", "reset", "q", "margin", "init_margin", "flat", "stationarity", "hessian_min", "hessian_max", "split_slope"])
        for c in checks:
            values = [c["mu"], c["M"], c["reset"], c["q"], c["margin"], c["init_margin"], c["flat"], c["stationarity"]]
            writer.writerow([*values, *c["hessian_eigenvalues"], c["split_slope"]])
    print("\nlocal optimality over all RAM policies (first-order margins > 0, Hessian in the exits > 0):")
    for c in checks:
        print(f"  mu={c['mu']} M={c['M']} r={c['reset']:g}: margin {c['margin']:.3g}, init margin {c['init_margin']:.3g}, "
              f"Hessian eigenvalues {c['hessian_eigenvalues'][0]:.3g}, {c['hessian_eigenvalues'][1]:.3g}")  # fmt: skip


if __name__ == "__main__":
    main()
