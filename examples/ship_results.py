"""Turn sweep directories (finished or not) into the small set of files we commit under results/.

    python examples/ship_results.py SPEC SWEEP_DIR [SWEEP_DIR ...] results/NAME [--points 200] [--no-policies MEMORY ...]
    python examples/ship_results.py --claims [--figure] [results/NAME ...]
    python examples/ship_results.py --recheck [results/NAME ...]
    python examples/ship_results.py --final-rows [results/NAME ...]

The files and their meaning: :mod:`fsc.report.results`. Nothing is trained here. A point that none of the
sweep directories has finished keeps what results/NAME already held for it, so runs made in several
places or sessions add up. ``fsc report --full`` does the same after running what results/ lacks.

``--claims`` checks the paper's claims again on what results/NAME holds (default: results/fig4 and
results/fig2, with the spec examples/sweeps/SPEC.json its provenance.json names) and rewrites claims.json and
claims.md only (and runs-compared.csv of a re-run by another integrator, such as results/fig4-flow);
``--figure`` draws figure.png again from the same files.
``--recheck`` re-evaluates every shipped final policy (results/NAME/policies/*.npz) with ``fsc.evaluate`` at its
row's mu, reset and convention and prints the largest difference from the q of summary.csv; it fails (status 1)
beyond 1e-9.
``--final-rows`` gives every curve of trajectories.csv.gz that stops before its run's final t the run's final
row (t and q of summary.csv; shipping does it too), and rewrites that file only.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def recheck(folder: Path) -> tuple[int, float]:
    """``(policies, largest |q - shipped q|)`` of the final policies shipped in ``folder``."""
    from fsc import Policy, evaluate
    from fsc.report.results import policy_file
    from tasks import TwoHypothesis

    with open(folder / "summary.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "done"]
    count, worst = 0, 0.0
    for row in rows:
        path = policy_file(folder, row["run"])
        if path.is_file():
            world = TwoHypothesis(float(row["mu"]))
            q = evaluate(world, Policy.load(path), reset=float(row["reset"]), convention=row.get("convention") or "native").metrics["q"]
            count, worst = count + 1, max(worst, abs(float(q) - float(row["q"])))
    return count, worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", type=Path, nargs="*", help="SPEC, the sweep directories (each holds runs/), then the shipped folder")
    parser.add_argument("--points", type=int, default=200, help="rows kept per trajectory (default 200)")
    parser.add_argument("--commit", default=None, help="the commit the runs were made with (default: this checkout's HEAD)")
    parser.add_argument("--command", action="append", default=[], help="a command that made the runs (repeatable)")
    parser.add_argument("--wall", type=float, default=None, help="wall time of the whole sweep, seconds, if known")
    parser.add_argument("--no-policies", action="append", default=[], metavar="MEMORY", help="ship no final policy of this memory (repeatable; size)")
    parser.add_argument("--claims", action="store_true", help="only check the claims again on the shipped folders given (default results/fig4, results/fig2)")
    parser.add_argument("--figure", action="store_true", help="only draw figure.png again from the shipped folders given (default results/fig4, results/fig2)")
    parser.add_argument("--recheck", action="store_true", help="only re-evaluate the shipped final policies (default results/fig4, results/fig2)")
    parser.add_argument("--final-rows", action="store_true", help="only end each shipped curve on its run's final row (default results/fig4, results/fig2)")
    args = parser.parse_args()

    import matplotlib

    matplotlib.use("Agg")

    from fsc.report.results import draw_figure, end_on_final_rows, ship, write_claims
    from fsc.sweep import load_spec

    if args.claims or args.figure or args.recheck or args.final_rows:
        folders = args.paths or [ROOT / "results" / "fig4", ROOT / "results" / "fig2"]
        for folder in folders:
            name = json.loads((folder / "provenance.json").read_text())["spec"] if (folder / "provenance.json").is_file() else folder.name
            spec = ROOT / "examples" / "sweeps" / f"{name}.json"
            if args.final_rows:
                print(f"{folder}: {end_on_final_rows(folder)} curves given their run's final row")
            if args.claims:
                claims = write_claims(load_spec(spec), folder)
                print(f"{folder}: {len(claims or [])} claims checked again; wrote claims.json, claims.md")
            if args.figure:
                draw_figure(load_spec(spec), folder)
                print(f"{folder}: drew figure.png")
            if args.recheck:
                count, worst = recheck(folder)
                print(f"{folder}: {count} shipped policies re-evaluated; largest |q - shipped q| = {worst:.3g}")
                if worst > 1e-9:
                    raise SystemExit(1)
        return
    if len(args.paths) < 3:
        parser.error("give the spec, at least one sweep directory and the shipped folder")
    spec, *sweeps, out = args.paths
    provenance = ship(load_spec(spec), sweeps, out, points=args.points, commit=args.commit, commands=args.command, wall=args.wall,
                      without_policies=args.no_policies)  # fmt: skip
    print(f"{provenance['done']} of {provenance['points']} points done; wrote {out}")


if __name__ == "__main__":
    main()
