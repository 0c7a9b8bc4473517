"""Evaluation speed: one value and gradient, by engine, against the floor of its linear algebra.

Modes (``bench_evaluate.py MODE --help`` for each one's options); paper convention, mu = 0.1, one thread for torch
and LAPACK, the published random start of seed 0 unless said otherwise:

- ``engines``: ``fsc.evaluate`` and ``q.backward()`` on every engine that can run each case, each case in a process
  of its own (its peak memory its own), the time against the power method measured in the same run.  Sections
  (``--section``): ``table`` (RAM 8/20/64, Memento 3 to ``--max-m``, random and near-deterministic policies,
  r = 1e-5), ``dense-power`` (dense against power, random policies, r = 1e-3 and 1e-5), ``limit`` (the largest
  near-deterministic Memento m evaluated in 60 s), ``qstar`` (q / q* of the necklace policy at r = 0, accurate
  engine), ``lu-accuracy`` (accurate against sparse LU at small r), ``fd`` (Memento 8's gradient against finite
  differences), ``all``;
- ``after-choice``: the chain after each choice (engine ``choices``) against the whole chain (``dense``, or
  ``sparse`` for Memento 4): value and gradient, the LAPACK floor on each one's states, and a flow to ``--until-t``
  on each (wall time, and the largest relative difference of q(t) between the two curves);
- ``overhead``: ``fsc.evaluate(..., gradient=True)`` (the training path's call on the dense and choices engines)
  against the LAPACK floor (``dgetrf`` and two ``dgetrs`` per part, from compiled code, on as many states);
- ``backward``: ``fsc.evaluate`` + ``gain.backward()`` (on the same leaves, and on a new ``fsc.Policy`` each call)
  against ``gradient=True``, beside autograd's own cost (a function of the two leaves that computes nothing) and
  the largest difference between their gradients (0: the same bits);
- ``automaton``: ``fsc.Automaton`` tabulating Memento(m) as one rule against the built-in ``fsc.Memento(m)``,
  ``RAM(M).restrict(column rule)`` against ``fsc.Column(M)``, and ``fsc.product``: seconds and equal tables.
- ``files``: ``auto`` against every engine on ``.POMDP`` files (``--folder``: the classic files, RockSample, TagAvoid)
  and generated corridors (``--corridors``, states): the first ``fsc.evaluate`` and ``gain.backward()`` of the uniform
  controller, set-up included (what ``fsc evaluate`` and the first step of ``fsc solve`` pay), each engine in a process
  of its own with ``--timeout``; the table gives auto's engine and its seconds over the fastest engine's.

Usage: ``.venv/bin/python benchmarks/bench_evaluate.py MODE [options]``
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import resource
import subprocess
import sys
import time

from timing import ROOT, add_mode, fastest_calls, lapack_floor, lu_size, modes_parser, one_thread, rounds, start_policy

from tests.fsc.corridor import corridor_text

# isort: split
import numpy as np  # after timing, which sets one LAPACK thread before numpy loads OpenBLAS

ENGINE_ORDER = ("power", "dense", "sparse", "iterative", "accurate")


# ---------------------------------------------------------------- engines: one case, in a subprocess


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
    """Memento: full histories (the last ``K^m`` nodes) play their oldest arm with probability ``1 - eps``."""
    import fsc

    N, K, m = arch.num_nodes, arch.arms * arch.observations, arch.m
    probs = np.full((N, arch.arms), 1.0 / arch.arms)
    start = N - K**m
    oldest = (np.arange(N - start) // K ** (m - 1)) // arch.observations
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
        q=float(ev.metrics["q"].detach()),
        residual=ev.residual,
        states=fsc.joint_chain(world.pomdp, arch).size,
        grad_norm=float(leaf.logits.grad.norm()),
        peak_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
        warnings=[str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)],
        info={k: v for k, v in dict(ev.info).items() if k in ("forward_iterations", "adjoint_iterations", "fill", "fallback", "gth_dense_states", "squarings")},
    )
    return record


def case(spec: dict, timeout: float = 300) -> dict:
    """Run :func:`run_case` in a subprocess (own peak memory); never raises."""
    cmd = [sys.executable, os.path.abspath(__file__), "engines", "--case", json.dumps(spec)]
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


# ---------------------------------------------------------------- engines: sections


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
    """Every engine that can run each case, ratios against power."""
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


def dense_power(records=None) -> list[dict]:
    """Dense against power, random policies, r = 1e-3 and 1e-5."""
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


def engines(args) -> None:
    """The engines' value and gradient, a process per case."""
    if args.case:
        print(json.dumps(run_case(json.loads(args.case))))
        return
    sections = {"table": lambda: table(args.max_m), "dense-power": dense_power, "limit": limit, "fd": fd_check, "qstar": qstar,
                "lu-accuracy": lu_accuracy}  # fmt: skip
    chosen = list(sections) if "all" in args.section else args.section
    records = {}
    for name in chosen:
        print(f"\n== {name} ==", flush=True)
        start = time.perf_counter()
        records[name] = sections[name]()
        print(f"({name}: {time.perf_counter() - start:.0f} s)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1, default=lambda x: None if isinstance(x, float) and not math.isfinite(x) else str(x))


# ---------------------------------------------------------------- after-choice

#: (memory, the engine to compare with)
AFTER_CHOICE = {"ram:8": "dense", "ram:16": "dense", "ram:20": "dense", "column:20": "dense", "ram:64": "dense", "memento:3": "dense",
                "memento:4": "sparse"}  # fmt: skip


def after_choice(args) -> None:
    """The choices engine against the whole chain's engine: value and gradient, LU floor, a flow."""

    reset = 1e-5
    print(f"{'memory':<10} {'X':>4} {'Y_R':>4} {'engine':<7} {'engine us':>9} {'choices us':>10} {'ratio':>6} {'floor X us':>10} {'floor Y_R us':>12} "
          f"{'flow engine s':>13} {'flow choices s':>14} {'ratio':>6} {'max dq/q':>9}")  # fmt: skip
    for memory in args.memory:
        after_choice_case(memory, reset, args)


def after_choice_case(memory: str, reset: float, args) -> None:
    """One line of :func:`after_choice`."""
    import fsc

    baseline = AFTER_CHOICE.get(memory, "dense")
    world, arch, policy = start_policy(memory, reset=reset)
    calls = max(3, args.calls * 40 // arch.num_nodes)
    functions = {engine: (lambda e=engine: fsc.evaluate(world, policy, reset=reset, convention="paper", engine=e, gradient=True))
                 for engine in (baseline, "choices")}  # fmt: skip
    per_call = rounds(functions, calls, args.repeats)
    (K, X), (_, Y) = lu_size(world, arch, baseline), lu_size(world, arch, "choices")
    floors = {"X": lapack_floor(K, X), "Y": lapack_floor(K, Y)}
    flows, curves = {}, {}
    for engine in (baseline, "choices"):
        began = time.perf_counter()
        records = list(fsc.flow(world, policy, reset=reset, convention="paper", engine=engine, until_t=args.until_t))
        flows[engine] = time.perf_counter() - began
        curves[engine] = (np.array([r.t for r in records]), np.array([r.q for r in records]))
    marks = [t for t in 10.0 ** np.arange(1, 10) if t <= min(c[0][-1] for c in curves.values())]
    dq = max((abs(np.interp(t, *curves["choices"]) / np.interp(t, *curves[baseline]) - 1) for t in marks), default=math.nan)
    print(f"{memory:<10} {X:>4} {Y:>4} {baseline:<7} {per_call[baseline] * 1e6:>9.0f} {per_call['choices'] * 1e6:>10.0f} "
          f"{per_call[baseline] / per_call['choices']:>6.1f} {floors['X'] * 1e6:>10.1f} {floors['Y'] * 1e6:>12.1f} {flows[baseline]:>13.2f} "
          f"{flows['choices']:>14.2f} {flows[baseline] / flows['choices']:>6.1f} {dq:>9.1e}", flush=True)  # fmt: skip


# ---------------------------------------------------------------- overhead


def overhead(args) -> None:
    """evaluate(gradient=True) against the LAPACK floor on as many states."""
    import fsc

    print(f"{'memory':<10} {'engine':<8} {'parts':>5} {'states':>6} {'value+grad us':>14} {'floor us':>9} {'/floor':>7}")
    for memory in args.memory:
        world, arch, policy = start_policy(memory)
        for engine in args.engines:
            call = functools.partial(fsc.evaluate, world, policy, reset=1e-3, convention="paper", engine=engine, gradient=True)
            name = call().engine
            calls = max(3, args.calls * 40 // arch.num_nodes)
            seconds = rounds({"call": call}, calls, args.repeats)["call"]
            K, X = lu_size(world, arch, name)
            floor = lapack_floor(K, X)
            print(f"{memory:<10} {name:<8} {K:>5} {X:>6} {seconds * 1e6:>14.1f} {floor * 1e6:>9.1f} {seconds / floor:>7.2f}", flush=True)


# ---------------------------------------------------------------- backward


def backward(args) -> None:
    """evaluate + gain.backward() against gradient=True, beside autograd's own cost."""
    import torch

    class Nothing(torch.autograd.Function):
        """Autograd's own cost: a function of the two leaves with evaluate's outputs that computes nothing."""

        @staticmethod
        def forward(ctx, logits, init_logits):
            ctx.zeros = (torch.zeros_like(logits), torch.zeros_like(init_logits))
            return torch.zeros((), dtype=torch.float64), torch.zeros((), dtype=torch.float64)

        @staticmethod
        def backward(ctx, *grads):
            return ctx.zeros

    columns = ("gradient=True", "backward", "ratio", "backward, new policy", "ratio", "autograd alone", "max |dgrad|")
    print("microseconds per value and gradient; ratio: to gradient=True")
    print(f"{'memory':<10} " + " ".join(f"{name:>{max(8, len(name))}}" for name in columns))
    for memory in args.memory:
        backward_case(memory, columns, Nothing, args)


def backward_case(memory: str, columns: tuple, Nothing, args, reset: float = 1e-3) -> None:
    """One line of :func:`backward`."""
    import fsc

    world, arch, policy = start_policy(memory, reset=reset)
    leaves = policy.requires_grad_()
    logits, init_logits = policy.logits.detach(), policy.init_logits.detach()

    def gradient():
        return fsc.evaluate(world, policy, reset=reset, convention="paper", gradient=True)

    def after():
        leaves.logits.grad = leaves.init_logits.grad = None
        fsc.evaluate(world, leaves, reset=reset, convention="paper").gain.backward()

    def new_policy():
        fresh = fsc.Policy(architecture=arch, logits=logits.clone().requires_grad_(True), init_logits=init_logits.clone().requires_grad_(True))
        fsc.evaluate(world, fresh, reset=reset, convention="paper").gain.backward()

    def nothing():
        leaves.logits.grad = leaves.init_logits.grad = None
        Nothing.apply(leaves.logits, leaves.init_logits)[0].backward()

    after()
    found = gradient()
    difference = max(float((leaves.logits.grad - found.grad_logits).abs().max()), float((leaves.init_logits.grad - found.grad_init_logits).abs().max()))
    functions = {"gradient": gradient, "after": after, "new": new_policy, "nothing": nothing}
    calls = max(5, args.calls * 40 // arch.num_nodes)
    t = fastest_calls(functions, calls * args.repeats) if args.per_call else rounds(functions, calls, args.repeats)
    g = t["gradient"]
    figures = (f"{g * 1e6:.0f}", f"{t['after'] * 1e6:.0f}", f"{t['after'] / g:.2f}", f"{t['new'] * 1e6:.0f}", f"{t['new'] / g:.2f}",
               f"{t['nothing'] * 1e6:.0f}", f"{difference:.2e}")  # fmt: skip
    print(f"{memory:<10} " + " ".join(f"{figure:>{max(8, len(name))}}" for figure, name in zip(figures, columns, strict=True)), flush=True)


# ---------------------------------------------------------------- automaton

TABLES = ("allowed", "next_node", "choice_action", "reset_mask")


def memento_rule(m: int, arms: str = "AB"):
    """Memento(m) as a rule: the node is the history of the last m (arm, reward) pairs."""
    import fsc

    symbols = [(x, o) for x in arms for o in "+-"]
    nodes = [()] + [h for n in range(1, m + 1) for h in itertools.product(symbols, repeat=n)]
    return fsc.Automaton(nodes, list(arms), lambda h, arm, obs: (h + ((arm, "+-"[obs]),))[-m:], action=arms.index, actions=len(arms),
                         observations=2, reset=[()])  # fmt: skip


def fastest(repeats: int, build, *arguments):
    """The fastest of ``repeats`` calls ``build(*arguments)``, and its result."""
    found, result = math.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        result = build(*arguments)
        found = min(found, time.perf_counter() - start)
    return found, result


def tabulated(arch, labels: bool = False):
    """The architecture with its tables (and labels) built: the built-in classes build them lazily, on first read."""
    for name in TABLES + (("node_values", "node_labels") if labels else ()):
        getattr(arch, name)
    return arch


def same_tables(a, b) -> bool:
    return all(np.array_equal(getattr(a, t), getattr(b, t)) for t in TABLES)


def automaton(args) -> None:
    """Rules tabulated by fsc.Automaton against the built-in table builders."""
    import fsc

    print("Seconds to build each architecture's tables (fastest of the repeats); the rule-based one also has its labels.")
    print(f"{'architecture':<34} {'nodes':>8} {'rules s':>9} {'built-in s':>10} {'ratio':>6} {'+labels s':>10} {'ratio':>6}  tables equal")
    for m in range(4, args.max_m + 1):
        rules_s, rules = fastest(args.repeats, memento_rule, m)
        builtin_s, builtin = fastest(args.repeats, lambda m: tabulated(fsc.Memento(m)), m)
        labelled_s, _ = fastest(args.repeats, lambda m: tabulated(fsc.Memento(m), labels=True), m)
        print(f"{f'Memento({m}) as a rule':<34} {rules.num_nodes:>8} {rules_s:>9.3f} {builtin_s:>10.3f} {rules_s / builtin_s:>6.1f} "
              f"{labelled_s:>10.3f} {rules_s / labelled_s:>6.2f}  {same_tables(rules, builtin)}", flush=True)  # fmt: skip
    for M in (8, 64):
        rules_s, column = fastest(args.repeats, lambda ram: tabulated(ram.restrict(fsc.Column.rule)), fsc.RAM(M))
        builtin_s, builtin = fastest(args.repeats, lambda M: tabulated(fsc.Column(M)), M)
        print(f"{f'RAM({M}).restrict(column rule)':<34} {column.num_nodes:>8} {rules_s:>9.3f} {builtin_s:>10.3f} {rules_s / builtin_s:>6.1f} "
              f"{'-':>10} {'-':>6}  {same_tables(column, builtin)}")  # fmt: skip
    product_s, both = fastest(args.repeats, fsc.product, fsc.Memento(4), fsc.RAM(8))
    print(f"{'product(Memento(4), RAM(8))':<34} {both.num_nodes:>8} {product_s:>9.3f} {'-':>10} {'-':>6} {'-':>10} {'-':>6}  -")


# ---------------------------------------------------------------- files: auto against every engine


FILE_ENGINES = ("dense", "choices", "sparse", "iterative", "large")



def file_case(spec: dict) -> dict:
    """One file, memory and engine: the first value and gradient (set-up included), in this process."""
    import fsc

    world = fsc.read_pomdp(spec["path"])
    arch = fsc.parse_memory(spec["memory"], arms=world.num_actions, observations=world.num_observations)
    leaf = fsc.Policy.uniform(arch).requires_grad_()
    start = time.perf_counter()
    ev = fsc.evaluate(world, leaf, engine=spec["engine"])
    ev.gain.backward()
    return {**spec, "seconds": time.perf_counter() - start, "ran": ev.engine, "value": float(ev.value.detach()),
            "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}  # fmt: skip


def files(args) -> None:
    """``auto`` against every engine on the files and corridors, a process per case."""
    if args.case:
        print(json.dumps(file_case(json.loads(args.case))))
        return
    import tempfile

    if not args.folder and args.files:
        raise SystemExit("bench_evaluate.py files: give --folder, the folder of the .POMDP files (or --files with no names)")
    folder = tempfile.mkdtemp(prefix="bench-files-")
    paths = [os.path.join(args.folder, name) for name in args.files]
    for S in args.corridors:
        paths.append(os.path.join(folder, f"corridor{S}.POMDP"))
        with open(paths[-1], "w") as f:
            f.write(corridor_text(S))
    print(f"{'file':<22} {'memory':<8} {'auto':>16} " + " ".join(f"{e:>10}" for e in FILE_ENGINES) + f" {'auto/best':>10}")
    records = []
    for path in paths:
        for memory in args.memories:
            row = {}
            for engine in ("auto", *FILE_ENGINES):
                spec = {"path": path, "memory": memory, "engine": engine}
                cmd = [sys.executable, os.path.abspath(__file__), "files", "--case", json.dumps(spec)]
                try:
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, cwd=ROOT)
                    lines = [x for x in out.stdout.splitlines() if x.startswith("{")]
                    row[engine] = json.loads(lines[-1]) if lines else {**spec, "error": (out.stderr.strip().splitlines() or ["?"])[-1][:120]}
                except subprocess.TimeoutExpired:
                    row[engine] = {**spec, "error": f"over {args.timeout:.0f} s", "seconds": math.inf}
            records.append(row)
            timed = {e: r["seconds"] for e, r in row.items() if "seconds" in r}
            best = min((t for e, t in timed.items() if e != "auto"), default=math.inf)
            auto = row["auto"]
            shown = f"{auto.get('ran', '-')} {auto['seconds']:.2f}" if "ran" in auto else auto.get("error", "?")[:16]

            def cell(engine, row=row):
                r = row[engine]
                return f"{r['seconds']:10.2f}" if "ran" in r else f"{'>' + format(args.timeout, '.0f') if 'over' in r.get('error', '') else '-':>10}"

            ratio = timed.get("auto", math.inf) / best if best < math.inf else math.nan
            print(f"{os.path.basename(path):<22} {memory:<8} {shown:>16} " + " ".join(cell(e) for e in FILE_ENGINES) + f" {ratio:>10.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1, default=str)


def main(argv: list[str] | None = None) -> None:
    parser, sub = modes_parser(__doc__)
    mode = add_mode(sub, engines, "every engine's value and gradient, a process per case", max_m=10)
    mode.add_argument("--section", nargs="+", default=["table"], choices=["table", "dense-power", "limit", "qstar", "lu-accuracy", "fd", "all"])
    mode.add_argument("--json", help="also write the records to this file")
    mode.add_argument("--case", help=__import__("argparse").SUPPRESS)
    add_mode(sub, after_choice, "the choices engine against the whole chain's engine", memory=list(AFTER_CHOICE), calls=200, repeats=5, until_t=1e6)
    add_mode(sub, overhead, "evaluate(gradient=True) against the LAPACK floor", memory=["ram:8", "ram:20", "memento:3", "memento:4"],
             engines=["auto"], calls=300, repeats=5)  # fmt: skip
    add_mode(sub, backward, "evaluate + gain.backward() against gradient=True and autograd's own cost", memory=["ram:8", "ram:64", "memento:4"],
             calls=200, repeats=5, per_call=False)  # fmt: skip
    add_mode(sub, automaton, "fsc.Automaton's rules against the built-in table builders", max_m=8, repeats=3)
    mode = add_mode(sub, files, "auto against every engine on .POMDP files and corridors, set-up included", folder="",
                    files=["tiger.95.POMDP", "network.POMDP", "tiger-grid.POMDP", "hallway.POMDP", "hallway2.POMDP", "machine.POMDP",
                           "fourth.POMDP", "RockSample_4_4.pomdp", "RockSample_5_5.pomdp", "TagAvoid.pomdp"],
                    memories=["ram:1", "ram:2"], corridors=[600, 1200, 2500], timeout=120.0, json="")  # fmt: skip
    mode.add_argument("--case", help=__import__("argparse").SUPPRESS)
    args = parser.parse_args(argv)
    one_thread()
    args.run(args)


if __name__ == "__main__":
    main()
