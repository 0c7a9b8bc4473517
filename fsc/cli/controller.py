"""The commands on one controller: ``evaluate``, ``simulate``, ``draw``; and the paper's closed forms:
``closed-form`` and ``necklace``."""

from __future__ import annotations

import math
import time
from pathlib import Path

from fsc.checks import CONVENTIONS
from fsc.console import emit, number, positive_int
from fsc.errors import InputError
from fsc.limits import check_necklace_work, check_simulate_steps, closed_form_M_arg, walkers_arg

# closed-form and necklace run without torch: the evaluator, the simulator and the options that resolve a
# controller are imported by the commands that use them (fsc.cli.WITHOUT_TORCH).  evaluate, simulate and draw
# import the evaluator, the simulator and viz (numba) only once the world and the memory are built
# (fsc.cli.TORCH_AFTER_INPUT): a file declaring more than the machine can hold is refused without them.  They
# import torch only for a gradient (evaluate --grad) or a named policy other than uniform: a policy file and
# uniform are numpy arrays (fsc.model.policy.Weights), evaluated by fsc.evaluate.evaluate_weights.

#: ``viz.FORMATS``, the formats ``fsc draw`` writes, named here so that a bad one is refused before viz (torch)
#: is imported (tests/fsc/test_startup.py checks that the two agree).
DRAW_FORMATS = ("svg", "png", "dot")


def cmd_evaluate(args) -> int:
    from fsc.cli.options import resolve_controller, world_record
    from fsc.resolve import is_policy_file

    # without --grad, no torch (uniform or a policy file); a policy file may be deterministic, valued as a policy graph
    controller = resolve_controller(args, arrays=not args.grad, graph=not args.grad and is_policy_file(args.policy))
    from fsc.evaluate import evaluate, evaluate_weights

    start = time.perf_counter()
    graph = None if args.grad else _as_graph(controller, args.engine)
    if graph is not None:
        record = _graph_record(graph, controller, args.convention) | _description(args, controller, controller.reset)
        emit(args.json, record | {"seconds": time.perf_counter() - start})
        return 0
    if args.grad:
        result = evaluate(controller.world, controller.policy, reset=controller.reset, engine=args.engine, convention=args.convention, gradient=True)
    else:
        result = evaluate_weights(controller.world, controller.policy, reset=controller.reset, engine=args.engine, convention=args.convention)
    record = world_record(result)
    if args.grad:  # the gain's gradient in the same pass, outside autograd
        record["grad_norm"] = math.sqrt(float((result.grad_logits**2).sum()) + float((result.grad_init_logits**2).sum()))
    seconds = time.perf_counter() - start
    record |= {"engine": result.engine, "residual": result.residual}
    if "fallback" in result.info:  # the engine that finally ran
        record["fallback"] = result.info["fallback"]
    record |= _description(args, controller, result.reset) | {"seconds": seconds}
    emit(args.json, record)
    return 0


def _as_graph(controller, engine: str):
    """The policy as a policy graph with its exact values (:func:`fsc.solver.graph.from_policy`) when neither ``engine``
    nor any engine ``auto`` may pick holds its evaluator (:func:`fsc.engines.estimate.evaluable`), the reset is positive
    and the policy deterministic; else None (the evaluator runs, or refuses as it does)."""
    from fsc.engines.estimate import evaluable
    from fsc.model.pomdp import as_pomdp

    world, arch, reset = as_pomdp(controller.world), controller.arch, controller.reset
    if not reset > 0 or evaluable(world, arch, reset, engine):
        return None  # an engine holds it (the one asked for refuses where another fits: said in its refusal)
    from fsc.solver.graph import from_policy
    from fsc.solver.pointbased import model

    return from_policy(model(controller.world, controller.reset), controller.policy)


def _graph_record(graph, controller, convention: str) -> dict:
    """What ``evaluate`` prints of a policy valued as a policy graph: the gain and the value read out in the convention
    asked for (:func:`fsc.evaluate.read_out`), the graph's nodes; the world's metrics are not computed."""
    from fsc.evaluate import read_out
    from fsc.model.pomdp import as_pomdp

    reset = controller.reset
    gain, _ = read_out(controller.world, convention, reset, reset * graph.value, {})
    record = {"gain": float(gain), "value": float(gain) / reset}
    if as_pomdp(controller.world).metrics:
        record["metrics"] = "not computed (the policy graph values the reward alone)"
    return record | {"engine": "graph", "graph_nodes": graph.size}


def _description(args, controller, reset: float) -> dict:
    """The fields that say what was evaluated or simulated: nodes, memory, world, reset, convention, policy."""
    return {"nodes": controller.arch.num_nodes, **controller.text, "reset": reset, "convention": args.convention, "policy": args.policy}


def cmd_simulate(args) -> int:
    from fsc.cli.options import resolve_controller
    from fsc.io.trajectory import metric_key

    controller = resolve_controller(args, allow_zero=False, joint_chain=False, arrays=True)
    check_simulate_steps(args.steps, args.walkers, controller.reset, prefix="--")
    from fsc.simulate import simulate

    result = simulate(
        controller.world, controller.policy, reset=controller.reset, steps=args.steps, walkers=args.walkers, seed=args.seed,
        convention=args.convention,
    )  # fmt: skip
    record = {**({"q": result.metrics["q"], "q_stderr": result.stderrs["q"]} if "q" in result.metrics else {})}
    record.update(
        gain=result.gain,
        gain_stderr=result.gain_stderr,
        value=result.gain / controller.reset,
        value_stderr=result.gain_stderr / controller.reset,
    )
    for name, value in result.metrics.items():
        if name != "q":
            record |= {metric_key(name): value, metric_key(name) + "_stderr": result.stderrs[name]}
    record |= {"steps": result.steps, "episodes": result.episodes} | _description(args, controller, result.reset)
    record["seconds"] = result.seconds
    emit(args.json, record)
    return 0


def evaluate_options(p):
    from fsc.cli.options import add_controller_options
    from fsc.engines.registry import ENGINES

    add_controller_options(p)
    p.add_argument("--engine", default="auto", help=f"auto (default: the engine that fits and runs fastest) or one of {', '.join(ENGINES)}")
    p.add_argument("--grad", action="store_true", help="also compute the gradient of the gain w.r.t. all logits; report grad_norm")


def simulate_options(p):
    from fsc.cli.options import add_controller_options

    add_controller_options(p)
    p.add_argument("--steps", type=positive_int, default=1_000_000, help="step budget (default 1e6)")
    p.add_argument("--walkers", type=walkers_arg, default=256, help="independent walkers (default 256)")


def cmd_closed_form(args) -> int:
    from policies import closed_form

    if args.policy == "asymmetric-ccp":
        from policies.asymmetric import cmd_asymmetric_ccp

        emit(args.json, cmd_asymmetric_ccp(args))
        return 0
    eps_opt = closed_form.ccp_eps_opt(args.mu, args.M, args.reset)
    eps = closed_form.ccp_eps_best(args.mu, args.M, args.reset) if args.eps is None else args.eps
    record = {
        "q": closed_form.to_convention(closed_form.ccp_q(args.mu, args.M, args.reset, eps), args.reset, args.convention),
        "eps": eps,
        "eps_opt": eps_opt,
        "q_limit": closed_form.ccp_q_limit(args.mu, args.M),
        "q_hellman_cover": closed_form.q_hellman_cover(args.mu, args.M),
        "mu": args.mu,
        "M": args.M,
        "reset": args.reset,
    }
    emit(args.json, record)
    return 0


def closed_form_options(p):
    p.add_argument("policy", choices=["ccp", "asymmetric-ccp"], help="ccp (appendix C) or asymmetric-ccp (optimum over two exits and the reset split)")
    p.add_argument("--mu", type=number, default=0.1, help="gap between the arms, in (0, 1) (default 0.1)")
    p.add_argument("--M", type=closed_form_M_arg, required=True, help="memory size")
    p.add_argument("--reset", type=number, default=1e-3, help="reset probability r (default 1e-3)")
    p.add_argument("--eps", type=number, default=None, help="exit probability at the top (default: the optimum, capped at 1)")
    p.add_argument("--convention", choices=CONVENTIONS, default="native", help="the convention of q: native (default) or paper, (1 - r) q + r/2")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def cmd_necklace(args) -> int:
    from policies import closed_form, necklaces

    check_necklace_work(args.m, args.time_budget)
    chain = necklaces.gray_chain(args.m, time_budget=args.time_budget)
    record = {
        "m": args.m,
        "count": necklaces.count_necklaces(args.m),
        "chain": list(chain.chain),
        "chain_length": chain.length,
        "optimal": chain.optimal,
        "q_star": closed_form.necklace_q_star(args.mu, args.m, chain.length),
        "mu": args.mu,
    }
    if not args.json:
        record["chain"] = " ".join(chain.chain)
    emit(args.json, record)
    return 0


def necklace_options(p):
    p.add_argument("--m", type=positive_int, required=True, help="memory length m")
    p.add_argument("--mu", type=number, default=0.1, help="gap between the arms, for q* (default 0.1)")
    p.add_argument("--time-budget", type=number, default=10.0, help="seconds for the longest-chain search (default 10)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def cmd_draw(args) -> int:
    from fsc.cli.options import resolve_controller, world_record

    out = Path(args.out)
    fmt = args.format or out.suffix.lstrip(".").lower()
    if fmt not in DRAW_FORMATS:
        raise InputError(f"--format must be one of {DRAW_FORMATS} (or given by the suffix of --out), got {fmt!r}")
    if out.exists() and out.is_dir():
        raise InputError(f"--out must be a file path, got the directory {args.out!r}")
    controller = resolve_controller(args, arrays=True)
    from fsc.evaluate import evaluate_weights
    from viz.graph import memory_graph
    from viz.output import render

    result = evaluate_weights(controller.world, controller.policy, reset=controller.reset, convention=args.convention)
    built = memory_graph(controller.policy, threshold=args.threshold, occupancy=result.occupancy(), title=args.title)
    render(built, out, format=fmt)
    record = {
        "out": str(out),
        "format": fmt,
        "nodes": built.num_nodes,
        "edges": built.num_edges,
        "threshold": args.threshold,
        **world_record(result),
        "memory": controller.text["memory"],
        "policy": args.policy,
    }
    emit(args.json, record)
    return 0


def draw_options(p):
    from fsc.cli.options import add_controller_options

    add_controller_options(p)
    p.add_argument("--format", choices=DRAW_FORMATS, default=None, help="output format (default: the suffix of --out)")
    p.add_argument("--out", required=True, help="file to write (.svg, .png or .dot)")
    p.add_argument("--threshold", type=number, default=1e-3, help="hide edges of smaller probability (stated in the caption; default 1e-3)")
    p.add_argument("--title", default=None, help="caption title")
