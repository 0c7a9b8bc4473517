"""The Memento question: is the necklace policy what training finds?

Reads the finished runs of the sweep examples/memento_question.json
(Memento m = 3, 4; r = 1e-3, 1e-5, 1e-7; random, cycles and near-necklace
starts; native convention), and for each (m, r) compares the best learned q
with the necklace policy optimised over (eps0, eps1) at the same r
(policies.reference.necklace_optimum: the variant with exits off the chain,
and Definition 4.1 read literally, which differ from m = 4), and reads the best
learned policy with the anatomy (policies.anatomy).  Writes OUT/table.csv,
OUT/runs.csv, OUT/anatomy-m{m}-r{r}.json / .txt, the best policies
OUT/best-m{m}-r{r}.npz and their diagrams OUT/best-m{m}-r{r}.svg (viz.memory_graph).
An optimum whose eps ends on its bound 1 says so (column necklace_on_bound).

    fsc sweep examples/memento_question.json --out sweeps/memento-question --workers 1
    python examples/memento_question.py --sweep sweeps/memento-question --out results/memento

``--from-results`` rebuilds table.csv and the anatomies from what OUT already holds (runs.csv and the
best policies), without the sweep directory:

    python examples/memento_question.py --from-results --out results/memento --no-diagrams
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path

import numpy as np
import torch

from fsc.files import write_rows


def _runs_of_sweep(sweep: Path) -> list[dict]:
    """Every finished run of the sweep directory, with where its final policy is (``policy``)."""
    runs = []
    for result in sorted(sweep.glob("runs/**/result.json")):
        run = json.loads((result.parent / "run.json").read_text()) if (result.parent / "run.json").is_file() else {}
        record = json.loads(result.read_text())
        parts = dict(part.split("=", 1) for part in result.parent.relative_to(sweep / "runs").parts)
        runs.append({"m": int(parts["memory"].split("-")[1]), "reset": float(parts["reset"]), "init": parts["init"], "seed": int(parts.get("seed", 0)),
                     "q": record["q"], "t": record["t"], "steps": record["steps"], "seconds": record["seconds"], "stop": record.get("stop"),
                     "convention": run.get("convention", "native"), "policy": str(result.parent / "policy.npz")})  # fmt: skip
    return runs


def _runs_of_results(out: Path) -> list[dict]:
    """The runs of OUT/runs.csv; the best of each (m, r) has its policy in OUT/best-m{m}-r{r}.npz."""
    with open(out / "runs.csv", newline="") as f:
        runs = [{**row, "m": int(row["m"]), "reset": float(row["reset"]), "seed": int(row["seed"]), "q": float(row["q"]), "t": float(row["t"])}
                for row in csv.DictReader(f)]  # fmt: skip
    for run in runs:
        run["policy"] = str(out / f"best-m{run['m']}-r{run['reset']:g}.npz")  # read for the best run of its group only
    return runs


def _row(group: list[dict], m: int, reset: float, mu: float, out: Path, diagrams: bool) -> dict:
    """One row of the table: the best learned run of ``group`` against the optimised necklace policies."""
    import fsc
    from fsc.report.results import write_policy
    from policies import necklace_probs
    from policies.anatomy import anatomy, describe
    from policies.reference import necklace_optimum
    from tasks import TwoHypothesis

    def exact_q(arch, probs, init) -> float:
        return float(fsc.evaluate(TwoHypothesis(mu), fsc.Policy.from_probs(arch, probs, init), reset=reset).metrics["q"])

    best = min(group, key=lambda r: r["q"])
    necklace = necklace_optimum(mu, m, reset, "native")
    literal = necklace_optimum(mu, m, reset, "native", "literal")
    tag = f"m{m}-r{reset:g}"
    if Path(best["policy"]) != out / f"best-{tag}.npz":
        write_policy(best["policy"], out / f"best-{tag}.npz")  # as docs/formats.md says
    policy = fsc.Policy.load(out / f"best-{tag}.npz")
    a = anatomy(policy, mu=mu, reset=reset, convention="native")
    record = a.to_dict()
    record["distance"] = None if math.isinf(record["distance"]) else record["distance"]
    (out / f"anatomy-{tag}.json").write_text(json.dumps(record, indent=1))
    (out / f"anatomy-{tag}.txt").write_text(describe(a) + "\n")
    if diagrams:
        import viz

        try:
            viz.render(viz.memory_graph(policy, threshold=0.01, title=f"best learned Memento {m}, r = {reset:g}, q = {a.q:.5f}"), out / f"best-{tag}.svg")
        except Exception as error:  # graphviz missing or too slow: the table still stands
            print(f"no diagram for {tag}: {error}")
    # Where does the difference come from?  Swap the rows of the partial histories (length < m: the steps right
    # after a reset) between the learned policy and the optimised necklace policy.
    arch = policy.architecture
    neck_probs, neck_init = necklace_probs(arch, necklace.eps0, necklace.eps1)
    learned_probs = policy.probs().detach().numpy()
    partial = np.array([len(label) != 2 * m for label in arch.node_labels])
    neck_learned_start, learned_neck_start = neck_probs.copy(), learned_probs.copy()
    neck_learned_start[partial] = learned_probs[partial]
    learned_neck_start[partial] = neck_probs[partial]
    return {"m": m, "reset": reset, "runs": len(group), "best_learned_q": best["q"], "best_init": f"{best['init']}:{best['seed']}",
            "median_learned_q": sorted(r["q"] for r in group)[len(group) // 2], "necklace_q_at_r": necklace.q, "necklace_eps0": necklace.eps0,
            "necklace_eps1": necklace.eps1, "necklace_on_bound": " ".join(necklace.on_bound), "literal_necklace_q_at_r": literal.q,
            "learned_minus_necklace": best["q"] - necklace.q,
            "family_found": a.family or f"none (nearest {a.nearest} at distance {a.distance:.2g})",
            "distance_to_necklace": a.distance, "t": best["t"],
            "necklace_with_learned_start_q": exact_q(arch, neck_learned_start, neck_init),
            "learned_with_necklace_start_q": exact_q(arch, learned_neck_start, policy.init_probs().detach().numpy())}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", type=Path, default=Path("sweeps/memento-question"))
    parser.add_argument("--out", type=Path, default=Path("results/memento"))
    parser.add_argument("--mu", type=float, default=0.1)
    parser.add_argument("--no-diagrams", action="store_true")
    parser.add_argument("--from-results", action="store_true", help="rebuild the table from OUT/runs.csv and OUT/best-*.npz")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)

    runs = _runs_of_results(args.out) if args.from_results else _runs_of_sweep(args.sweep)
    if not runs:
        raise SystemExit(f"no finished run under {args.sweep}/runs")
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.from_results:
        write_rows(args.out / "runs.csv", sorted(runs, key=lambda r: (r["m"], -r["reset"], r["q"])), [k for k in runs[0] if k != "policy"])
    rows = []
    for m, reset in sorted({(r["m"], r["reset"]) for r in runs}, key=lambda k: (k[0], -k[1])):
        group = [r for r in runs if r["m"] == m and r["reset"] == reset]
        rows.append(_row(group, m, reset, args.mu, args.out, not args.no_diagrams))
    write_rows(args.out / "table.csv", rows)
    print(f"{'m':>2} {'r':>7} {'runs':>4} {'best learned q':>15} {'from':>16} {'necklace q at r':>16} {'(Def. 4.1)':>11} {'learned - necklace':>19} "
          f"{'necklace+learned start':>23} {'learned+necklace start':>23}  family found")  # fmt: skip
    for row in rows:
        bound = f"  (necklace optimum on the bound {row['necklace_on_bound']} = 1)" if row["necklace_on_bound"] else ""
        print(f"{row['m']:>2} {row['reset']:>7g} {row['runs']:>4} {row['best_learned_q']:>15.7g} {row['best_init']:>16} {row['necklace_q_at_r']:>16.7g} "
              f"{row['literal_necklace_q_at_r']:>11.4g} {row['learned_minus_necklace']:>19.3g} {row['necklace_with_learned_start_q']:>23.7g} "
              f"{row['learned_with_necklace_start_q']:>23.7g}  {row['family_found']}{bound}")  # fmt: skip


if __name__ == "__main__":
    main()
