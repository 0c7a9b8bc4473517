"""The Memento question: is the necklace policy what training finds?

Reads the finished runs of the sweep examples/memento_question.json
(Memento m = 3, 4; r = 1e-3, 1e-5, 1e-7; random, cycles and near-necklace
starts; native convention), and for each (m, r) compares the best learned q
with the necklace policy optimised over (eps0, eps1) at the same r
(policies.reference.necklace_optimum), and reads the best learned policy with
the anatomy (policies.anatomy).  Writes OUT/table.csv, OUT/runs.csv,
OUT/anatomy-m{m}-r{r}.json / .txt, the best policies OUT/best-m{m}-r{r}.npz and
their diagrams OUT/best-m{m}-r{r}.svg (viz.memory_graph).

    fsc sweep examples/memento_question.json --out sweeps/memento-question --workers 1
    python examples/memento_question.py --sweep sweeps/memento-question --out results/memento
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import torch

from fsc.files import write_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", type=Path, default=Path("sweeps/memento-question"))
    parser.add_argument("--out", type=Path, default=Path("results/memento"))
    parser.add_argument("--mu", type=float, default=0.1)
    parser.add_argument("--no-diagrams", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    import fsc
    from fsc.report.results import write_policy
    from policies import necklace_probs
    from policies.anatomy import anatomy, describe
    from policies.reference import necklace_optimum
    from tasks import TwoHypothesis

    def exact_q(arch, probs, init, reset) -> float:
        policy = fsc.Policy.from_probs(arch, probs, init)
        return float(fsc.evaluate(TwoHypothesis(args.mu), policy, reset=reset).metrics["q"])

    runs = []
    for result in sorted(args.sweep.glob("runs/**/result.json")):
        run = json.loads((result.parent / "run.json").read_text()) if (result.parent / "run.json").is_file() else {}
        record = json.loads(result.read_text())
        parts = dict(part.split("=", 1) for part in result.parent.relative_to(args.sweep / "runs").parts)
        runs.append({"m": int(parts["memory"].split("-")[1]), "reset": float(parts["reset"]), "init": parts["init"], "seed": int(parts.get("seed", 0)),
                     "q": record["q"], "t": record["t"], "steps": record["steps"], "seconds": record["seconds"], "stop": record.get("stop"),
                     "dir": str(result.parent), "convention": run.get("convention", "native")})  # fmt: skip
    if not runs:
        raise SystemExit(f"no finished run under {args.sweep}/runs")
    args.out.mkdir(parents=True, exist_ok=True)
    write_rows(args.out / "runs.csv", sorted(runs, key=lambda r: (r["m"], -r["reset"], r["q"])), [k for k in runs[0] if k != "dir"])
    rows = []
    for m, reset in sorted({(r["m"], r["reset"]) for r in runs}, key=lambda k: (k[0], -k[1])):
        group = [r for r in runs if r["m"] == m and r["reset"] == reset]
        best = min(group, key=lambda r: r["q"])
        q_neck, eps0, eps1 = necklace_optimum(args.mu, m, reset, "native")
        policy = fsc.Policy.load(Path(best["dir"]) / "policy.npz")
        a = anatomy(policy, mu=args.mu, reset=reset, convention="native")
        tag = f"m{m}-r{reset:g}"
        write_policy(Path(best["dir"]) / "policy.npz", args.out / f"best-{tag}.npz")  # as docs/formats.md says
        record = a.to_dict()
        record["distance"] = None if math.isinf(record["distance"]) else record["distance"]
        (args.out / f"anatomy-{tag}.json").write_text(json.dumps(record, indent=1))
        (args.out / f"anatomy-{tag}.txt").write_text(describe(a) + "\n")
        if not args.no_diagrams:
            import viz

            try:
                viz.render(viz.memory_graph(policy, threshold=0.01, title=f"best learned Memento {m}, r = {reset:g}, q = {a.q:.5f}"),
                           args.out / f"best-{tag}.svg")  # fmt: skip
            except Exception as error:  # graphviz missing or too slow: the table still stands
                print(f"no diagram for {tag}: {error}")
        # Where does the difference come from?  Swap the rows of the partial histories (length < m: the
        # steps right after a reset) between the learned policy and the optimised necklace policy.
        arch = policy.architecture
        neck_probs, neck_init = necklace_probs(arch, eps0, eps1)
        learned_probs = policy.probs().detach().numpy()
        partial = np.array([len(label) != 2 * m for label in arch.node_labels])
        mixed = neck_probs.copy()
        mixed[partial] = learned_probs[partial]
        q_neck_learned_start = exact_q(arch, mixed, neck_init, reset)
        mixed = learned_probs.copy()
        mixed[partial] = neck_probs[partial]
        q_learned_neck_start = exact_q(arch, mixed, policy.init_probs().detach().numpy(), reset)
        rows.append({"m": m, "reset": reset, "runs": len(group), "best_learned_q": best["q"], "best_init": f"{best['init']}:{best['seed']}",
                     "median_learned_q": sorted(r["q"] for r in group)[len(group) // 2], "necklace_q_at_r": q_neck, "necklace_eps0": eps0,
                     "necklace_eps1": eps1, "learned_minus_necklace": best["q"] - q_neck,
                     "family_found": a.family or f"none (nearest {a.nearest} at {a.distance:.2f})",
                     "distance_to_necklace": a.distance, "t": best["t"],
                     "necklace_with_learned_start_q": q_neck_learned_start, "learned_with_necklace_start_q": q_learned_neck_start})  # fmt: skip
    write_rows(args.out / "table.csv", rows)
    print(f"{'m':>2} {'r':>7} {'runs':>4} {'best learned q':>15} {'from':>16} {'necklace q at r':>16} {'learned - necklace':>19} "
          f"{'necklace+learned start':>23} {'learned+necklace start':>23}  family found")  # fmt: skip
    for row in rows:
        print(f"{row['m']:>2} {row['reset']:>7g} {row['runs']:>4} {row['best_learned_q']:>15.7g} {row['best_init']:>16} {row['necklace_q_at_r']:>16.7g} "
              f"{row['learned_minus_necklace']:>19.3g} {row['necklace_with_learned_start_q']:>23.7g} {row['learned_with_necklace_start_q']:>23.7g}  "
              f"{row['family_found']}")  # fmt: skip


if __name__ == "__main__":
    main()
