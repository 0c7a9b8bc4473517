"""Benchmark of the evaluation engines (issues 2 and 6).

Each case is one value-and-gradient evaluation (``evaluate`` then ``q.backward()``),
run in a fresh subprocess so that its peak memory (max RSS) is its own; the
time is the minimum over repeats (other jobs share the machine).  Ratios are
against the power method measured in the same run.

Sections (default: ``table``)::

    python benchmarks/bench_engines.py                # issue 6 table: RAM 8/20/64, Memento 3..10
    python benchmarks/bench_engines.py --issue2       # dense against power, RAM 8/20/64, Memento 3..5
    python benchmarks/bench_engines.py --limit        # largest near-deterministic Memento m in 60 s
    python benchmarks/bench_engines.py --qstar        # q / q* of the necklace policy at r = 0 (accurate engine)
    python benchmarks/bench_engines.py --lu-accuracy  # where LU loses digits: accurate against sparse LU
    python benchmarks/bench_engines.py --fd           # Memento m = 8 gradient against finite differences
    python benchmarks/bench_engines.py --all

Options: ``--max-m M`` (largest Memento m of the table, default 10),
``--json FILE`` (also write the records).  Every case runs single-threaded
(``OMP_NUM_THREADS=1`` ...; set ``BENCH_THREADS`` to change it): on a shared
machine idle OpenMP threads spinning make millisecond cases 10-100 times
slower; on an idle machine the power method's products would gain up to 2x
from two threads.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

ENGINE_ORDER = ("power", "dense", "sparse", "iterative", "accurate")


# ---------------------------------------------------------------- one case, in a subprocess


def _policy(arch_text: str, kind: str, reset: float):
    """A random (Gaussian logits, seed 0) or near-deterministic policy.

    Near-deterministic: RAM, the column of confidence with eps = 1e-3, mixed
    with 1e-3 of uniform; Memento m <= 11, the necklace policy with
    ``eps0 = r^(1/2)``, ``eps1 = r^(1/4)`` mixed with 1e-3 of uniform
    (*near-necklace*); Memento m >= 12, play the oldest arm with
    probability 1 - 1e-3 (the necklace tables take minutes to build there).
    """
    import numpy as np

    import fsc

    arch = fsc.parse_memory(arch_text)
    if kind == "random":
        return arch, fsc.Policy.random(arch, 0)
    eps = 1e-3
    if isinstance(arch, fsc.Memento):
        if arch.m <= 11:
            from policies.necklace import default_eps, necklace_probs

            probs, init = necklace_probs(arch, *default_eps(reset))
            return arch, fsc.Policy.from_probs(arch, (1 - eps) * probs + eps / 2, init)
        return arch, oldest_arm_policy(arch, eps)
    from policies.ccp import ccp_probs

    probs, init = ccp_probs(arch, eps)
    allowed = arch.allowed
    mixed = np.where(allowed, (1 - eps) * probs + eps / allowed.sum(axis=1, keepdims=True), 0.0)
    return arch, fsc.Policy.from_probs(arch, mixed, init)


def oldest_arm_policy(arch, eps: float):
    """Memento: full histories play their oldest arm with probability ``1 - eps`` (vectorised)."""
    import numpy as np

    import fsc

    N, K, m = arch.num_nodes, arch.arms * arch.observations, arch.m
    probs = np.full((N, arch.arms), 1.0 / arch.arms)
    start = int(arch._offsets[m])
    code = np.arange(N - start)
    oldest = (code // K ** (m - 1)) // arch.observations
    full = np.full((N - start, arch.arms), eps / (arch.arms - 1))
    full[np.arange(N - start), oldest] = 1 - eps
    probs[start:] = full
    return fsc.Policy.from_probs(arch, probs)


def run_case(spec: dict) -> dict:
    """Time value and gradient of one case (in this process); return a record."""
    import warnings

    import fsc
    import tasks

    world = tasks.TwoHypothesis(0.1)
    arch, policy = _policy(spec["arch"], spec["policy"], spec["reset"])
    times, record = [], {}
    budget = spec.get("budget", 3.0)
    start_all = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(spec.get("repeats", 20)):
            leaf = policy.requires_grad_()
            start = time.perf_counter()
            ev = fsc.evaluate(world, leaf, reset=spec["reset"], engine=spec["engine"])
            ev.metrics["q"].backward()
            times.append(time.perf_counter() - start)
            if time.perf_counter() - start_all > budget:
                break
    record.update(
        spec,
        seconds=min(times),
        repeats=len(times),
        q=float(ev.metrics["q"]),
        residual=ev.residual,
        states=fsc.joint_chain(world.pomdp, arch).size,
        grad_norm=float(leaf.logits.grad.norm()),
        peak_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
        warnings=[str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)],
        info={k: v for k, v in ev.info.items() if k in ("forward_iterations", "adjoint_iterations", "fill", "fallback", "gth_dense_states", "squarings")},
    )
    return record


def case(spec: dict, timeout: float = 300) -> dict:
    """Run :func:`run_case` in a subprocess (own peak memory); never raises."""
    cmd = [sys.executable, os.path.abspath(__file__), "--case", json.dumps(spec)]
    threads = os.environ.get("BENCH_THREADS", "1")
    env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads}
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        return {**spec, "error": f"timeout after {timeout:.0f} s"}
    lines = [x for x in out.stdout.splitlines() if x.startswith("{")]
    if out.returncode != 0 or not lines:
        last = (out.stderr.strip().splitlines() or ["?"])[-1]
        return {**spec, "error": last[:200]}
    return json.loads(lines[-1])


# ---------------------------------------------------------------- sections


def _can_run(engine: str, arch_text: str, states: int) -> bool:
    """Which engine runs which size (memory and time on a 2-core, 24 GB machine)."""
    kind = arch_text.split(":")[0]
    if engine == "power":
        return states <= 1400
    if engine == "dense":
        return states <= 5500
    if engine == "sparse":
        return states <= 22000
    if engine == "accurate":
        return states <= (22000 if kind == "memento" else 5000)
    return True


def _states(arch_text: str) -> int:
    kind, size = arch_text.split(":")
    size = int(size)
    return size * 5 if kind == "ram" else (4 ** (size + 1) - 1) // 3


def _fmt_row(rec: dict, power: dict | None) -> str:
    if "error" in rec:
        return f"{rec['arch']:>11} {rec['policy']:>7} {rec['reset']:>7.0e} {rec['engine']:>9}  error: {rec['error']}"
    ratio = ""
    if power and "error" not in power and rec["engine"] != "power":
        ratio = f"{power['seconds'] / rec['seconds']:8.1f}x"
    extra = rec.get("info", {})
    note = ""
    if "forward_iterations" in extra:
        note = f"its {max(extra['forward_iterations'])}/{max(extra.get('adjoint_iterations') or [0])}"
    if "fallback" in extra:
        note += " FALLBACK"
    if "squarings" in extra:
        note = f"sq {extra['squarings']}"
    return (
        f"{rec['arch']:>11} {rec['policy']:>7} {rec['reset']:>7.0e} {rec['engine']:>9} {rec['states']:>9d} "
        f"{rec['seconds'] * 1e3:>11.2f} {rec['peak_gb']:>7.2f} {ratio:>9} {rec['q']:>.12f} {rec['residual']:>8.1e}  {note}"
    )


HEADER = f"{'memory':>11} {'policy':>7} {'reset':>7} {'engine':>9} {'X/part':>9} {'v+g ms':>11} {'peak GB':>7} {'vs power':>9} {'q':>14} {'resid':>8}"


def table(max_m: int, resets=(1e-5,), policies=("random", "neardet"), engines=ENGINE_ORDER, records=None) -> list[dict]:
    """Issue 6: every engine that can run each case, ratios against power."""
    records = [] if records is None else records
    archs = ["ram:8", "ram:20", "ram:64"] + [f"memento:{m}" for m in range(3, max_m + 1)]
    print(HEADER, flush=True)
    for arch in archs:
        for policy in policies:
            for reset in resets:
                power = None
                for engine in engines:
                    if not _can_run(engine, arch, _states(arch)):
                        continue
                    rec = case({"arch": arch, "policy": policy, "reset": reset, "engine": engine, "repeats": 20, "budget": 3.0})
                    if engine == "power":
                        power = rec
                    records.append(rec)
                    print(_fmt_row(rec, power), flush=True)
    return records


def issue2(records=None) -> list[dict]:
    """Issue 2: dense against power, random policies, r = 1e-3 and 1e-5."""
    records = [] if records is None else records
    print(HEADER, flush=True)
    for arch in ["ram:8", "ram:20", "ram:64", "memento:3", "memento:4", "memento:5"]:
        for reset in (1e-3, 1e-5):
            power = None
            for engine in ("power", "dense"):
                rec = case({"arch": arch, "policy": "random", "reset": reset, "engine": engine, "repeats": 30, "budget": 4.0})
                power = rec if engine == "power" else power
                records.append(rec)
                print(_fmt_row(rec, power), flush=True)
    return records


def limit(records=None, budget: float = 60.0) -> list[dict]:
    """Largest near-deterministic Memento m whose value and gradient take under ``budget`` seconds."""
    records = [] if records is None else records
    print(HEADER, flush=True)
    for m in range(8, 13):
        rec = case({"arch": f"memento:{m}", "policy": "neardet", "reset": 1e-5, "engine": "iterative", "repeats": 1, "budget": 0}, timeout=600)
        records.append(rec)
        print(_fmt_row(rec, None), flush=True)
        if "error" in rec or rec["seconds"] > budget:
            break
    return records


def qstar(records=None) -> list[dict]:
    """Theorem 4.3 at larger m: q / q* of the necklace policy at r = 0 as eps0 << eps1 -> 0."""
    import fsc
    import tasks
    from policies.closed_form import necklace_q_star
    from policies.necklace import necklace_policy

    records = [] if records is None else records
    world = tasks.TwoHypothesis(0.1)
    print(f"{'m':>2} {'eps1':>7} {'eps0':>7} {'q':>22} {'q/q*':>14} {'seconds':>8}")
    for m in (5, 7):
        q_star = necklace_q_star(0.1, m)
        print(f"m = {m}: q* = {q_star!r}")
        for eps1 in (1e-2, 1e-4, 1e-6):
            for ratio in (1e-6, 1e-12, 1e-18, 1e-24):
                eps0 = eps1 * ratio
                arch, policy = necklace_policy(m, eps0, eps1)
                start = time.perf_counter()
                ev = fsc.evaluate(world, policy, reset=0, engine="accurate")
                q = float(ev.metrics["q"])
                seconds = time.perf_counter() - start
                records.append({"m": m, "eps1": eps1, "eps0": eps0, "q": q, "q_star": q_star, "seconds": seconds})
                print(f"{m:>2} {eps1:>7.0e} {eps0:>7.0e} {q:>22.15e} {q / q_star:>14.9f} {seconds:>8.2f}", flush=True)
    return records


def lu_accuracy(records=None) -> list[dict]:
    """The necklace policy at small r: accurate (GTH) against sparse LU."""
    import fsc
    import tasks
    from policies.necklace import necklace_policy

    records = [] if records is None else records
    world = tasks.TwoHypothesis(0.1)
    print(f"{'m':>2} {'reset':>7} {'q accurate':>22} {'q sparse LU':>22} {'rel. diff':>10}")
    for m in (5, 7):
        for reset in (1e-8, 1e-12, 1e-14):
            arch, policy = necklace_policy(m, 1e-16, 1e-4)
            qa = float(fsc.evaluate(world, policy, reset=reset, engine="accurate").metrics["q"])
            ql = float(fsc.evaluate(world, policy, reset=reset, engine="sparse").metrics["q"])
            records.append({"m": m, "reset": reset, "q_accurate": qa, "q_lu": ql})
            print(f"{m:>2} {reset:>7.0e} {qa:>22.15e} {ql:>22.15e} {abs(ql - qa) / qa:>10.1e}", flush=True)
    return records


def fd_check(records=None, m: int = 8) -> list[dict]:
    """Gradient at Memento m = 8 (iterative engine) against central finite differences."""
    import attrs
    import torch

    import fsc
    import tasks

    records = [] if records is None else records
    world = tasks.TwoHypothesis(0.1)
    for kind in ("random", "neardet"):
        for reset in (1e-3, 1e-5):
            arch, policy = _policy(f"memento:{m}", kind, reset)
            leaf = policy.requires_grad_()
            ev = fsc.evaluate(world, leaf, reset=reset, engine="iterative")
            ev.metrics["q"].backward()
            generator = torch.Generator().manual_seed(7)
            for trial in range(3):
                direction = torch.randn(policy.logits.shape, generator=generator, dtype=torch.float64)
                direction[~torch.from_numpy(arch.allowed.copy())] = 0
                h = 1e-4 if kind == "random" else 1e-5
                values = []
                for sign in (1, -1):
                    moved = attrs.evolve(policy.detach(), logits=policy.logits.detach() + sign * h * direction)
                    values.append(float(fsc.evaluate(world, moved, reset=reset, engine="iterative").metrics["q"]))
                fd = (values[0] - values[1]) / (2 * h)
                ad = float((leaf.logits.grad * direction).sum())
                records.append({"m": m, "policy": kind, "reset": reset, "trial": trial, "adjoint": ad, "fd": fd})
                rel = abs(ad - fd) / abs(fd)
                print(f"m={m} {kind:>7} r={reset:.0e} direction {trial}: adjoint {ad:+.12e}  finite diff. {fd:+.12e}  rel. diff {rel:.1e}", flush=True)
    return records


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--issue2", action="store_true")
    parser.add_argument("--limit", action="store_true")
    parser.add_argument("--qstar", action="store_true")
    parser.add_argument("--lu-accuracy", action="store_true")
    parser.add_argument("--fd", action="store_true")
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--max-m", type=int, default=10)
    parser.add_argument("--json", help="also write the records to this file")
    args = parser.parse_args(argv)
    if args.case:
        print(json.dumps(run_case(json.loads(args.case))))
        return 0
    sections = [name for name in ("table", "issue2", "limit", "fd", "qstar", "lu_accuracy") if getattr(args, name) or args.all]
    if not sections:
        sections = ["table"]
    records: dict[str, list] = {}
    for name in sections:
        print(f"\n== {name} ==", flush=True)
        start = time.perf_counter()
        if name == "table":
            records[name] = table(args.max_m)
        else:
            records[name] = {"issue2": issue2, "limit": limit, "qstar": qstar, "lu_accuracy": lu_accuracy, "fd": fd_check}[name]()
        print(f"({name}: {time.perf_counter() - start:.0f} s)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1, default=lambda x: None if isinstance(x, float) and not math.isfinite(x) else str(x))
    return 0


if __name__ == "__main__":
    sys.exit(main())
