"""Benchmark: one value and gradient by ``fsc.evaluate`` + ``backward`` against the training path.

All in the same process, one torch thread, paper convention, mu = 0.1, r = 1e-3, the published random start:

- ``training``: :class:`fsc.objective.Objective` with its default engine (one compiled call,
  :func:`fsc.engines.kernels.fused_value_gradient`);
- ``after``: a policy on leaves that require a gradient (a user's loop: the same leaves, their gradients
  set to None each call), ``fsc.evaluate(world, policy)`` with the engine ``auto`` picks, then
  ``gain.backward()``: one compiled call computes the value, the distribution and the gain's gradient
  (:func:`fsc.engines.kernels.fused_value_gradient_distribution`), which the backward pass hands over;
- ``previous``: the same with the forward call handing back its LU factors too (eleven results) and the whole
  backward pass inside ``once_differentiable`` (this module's ``_Previous``), as before the five-result call;
- ``before``: the same ``fsc.evaluate`` on the evaluator's Python path, as ``fsc.evaluate`` ran it before
  the compiled passes (:meth:`fsc.evaluate.Evaluator.forward`, then :meth:`~fsc.evaluate.Evaluator.backward`
  on the engine's backend: a compiled call per stage).

The three alternate in each of ``--repeats`` rounds of ``--calls`` calls, so that the load of the machine
falls on all alike; each figure is the best round, in microseconds per value and gradient.  Also printed:
``after`` with a new ``fsc.Policy`` built each call; ``gradient=True``, ``fsc.evaluate(..., gradient=True)``
(the gain's gradient as ``grad_logits`` and ``grad_init_logits``, outside autograd); and the largest
difference between the gradients of ``after``, of ``gradient=True`` and of training (0 when they are the same
bits); ``autograd floor``, what torch's autograd costs
for a function of the two leaves with ``evaluate``'s three outputs that computes nothing (apply, then
``backward``); ``kernel``, the training path's compiled call alone; and ``least``, ``(kernel + floor) /
training``: the ratio ``evaluate`` + ``backward`` would have if everything but the compiled call and autograd
cost nothing.

With ``--per-call``, each figure is instead the fastest single call of ``--calls`` times ``--repeats``, the
functions alternating call by call: on a loaded machine, the cost of a call nothing interrupted.

Usage: ``.venv/bin/python benchmarks/bench_evaluate_backward.py [--calls 200] [--repeats 5] [--per-call]``
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fsc  # noqa: E402
import policies  # noqa: E402
import tasks  # noqa: E402
from fsc.engines import kernels  # noqa: E402
from fsc.evaluate import _Evaluate, _scalar  # noqa: E402
from fsc.objective import Objective  # noqa: E402

CASES = ["ram:8", "ram:64", "memento:4"]
MODULE = importlib.import_module("fsc.evaluate")
RESET = 1e-3


class _Before(_Evaluate):
    """``fsc.evaluate``'s autograd function as it was: the evaluator's Python forward pass."""

    @staticmethod
    def forward(ctx, logits, init_logits, evaluator, box):
        ctx.set_materialize_grads(False)
        run = evaluator.forward(logits.detach().numpy(), init_logits.detach().numpy())
        ctx.evaluator, ctx.run, ctx.gradient = evaluator, run, None
        K, S, N, _ = evaluator.shape
        box["run"] = run
        return (_scalar(run.gain), *map(_scalar, run.metrics.values()), torch.from_numpy(run.p_hat.reshape(K, S, N)))


class _Previous(_Evaluate):
    """``fsc.evaluate``'s autograd function before the five-result call: the forward call handing back its LU
    factors with the gradient (:func:`fsc.engines.kernels.fused_forward_gradient`, eleven results), and the
    whole backward pass inside ``once_differentiable``."""

    @staticmethod
    def forward(ctx, logits, init_logits, evaluator, box):
        ctx.set_materialize_grads(False)
        run = evaluator.forward_compiled(logits.detach().numpy(), init_logits.detach().numpy(), box["gradient"])
        box["run"] = run
        ctx.evaluator, ctx.run, ctx.gradient = evaluator, run, run.gradient
        K, S, N, _ = evaluator.shape
        return (_scalar(run.gain), *map(_scalar, run.metrics.values()), torch.from_numpy(run.p_hat.reshape(K, S, N)))

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_gain, *grads):
        if ctx.gradient is not None and grad_gain is not None and float(grad_gain) == 1.0 and all(g is None for g in grads):
            (grad_logits, grad_init), ctx.gradient = ctx.gradient, None
            return torch.from_numpy(grad_logits), torch.from_numpy(grad_init), None, None
        return _Evaluate.adjoint.__wrapped__(ctx, grad_gain, *grads)


class _Nothing(torch.autograd.Function):
    """Autograd's own cost: a function of the two leaves with ``evaluate``'s three outputs that computes nothing."""

    @staticmethod
    def forward(ctx, logits, init_logits, distribution):
        ctx.set_materialize_grads(False)
        ctx.zeros = (torch.zeros_like(logits), torch.zeros_like(init_logits))
        return _scalar(0.0), _scalar(0.0), distribution

    @staticmethod
    def backward(ctx, *grads):
        return *ctx.zeros, None


def fastest_calls(functions: dict, calls: int) -> dict:
    """Seconds of the fastest single call of each function, the functions alternating call by call: on a
    shared machine, the cost of a call that nothing interrupted."""
    for function in functions.values():
        function()
    best = dict.fromkeys(functions, float("inf"))
    clock = time.perf_counter
    for _ in range(calls):
        for name, function in functions.items():
            start = clock()
            function()
            best[name] = min(best[name], clock() - start)
    return best


def rounds(functions: dict, calls: int, repeats: int) -> dict:
    """Seconds per call of each function: the best of ``repeats`` rounds, the functions alternating in each."""
    for function in functions.values():
        function()
    best = dict.fromkeys(functions, float("inf"))
    for _ in range(repeats):
        for name, function in functions.items():
            start = time.perf_counter()
            for _ in range(calls):
                function()
            best[name] = min(best[name], (time.perf_counter() - start) / calls)
    return best


def cases(world, memory: str) -> tuple[dict, float]:
    """The functions timed on one memory, and the largest difference between the gradients of ``after`` and training."""
    arch = fsc.parse_memory(memory)
    start = policies.initial_policy("random", arch, seed=0)
    objective = Objective(world=world, architecture=arch, reset=RESET, convention="paper")
    logits, init_logits = start.logits.detach(), start.init_logits.detach()
    leaves = start.requires_grad_()

    def training():
        return objective(logits, init_logits)

    def after():
        leaves.logits.grad = leaves.init_logits.grad = None
        fsc.evaluate(world, leaves, reset=RESET, convention="paper").gain.backward()

    def before():
        leaves.logits.grad = leaves.init_logits.grad = None
        MODULE._Evaluate = _Before  # fsc.evaluate itself, on the old autograd function
        try:
            fsc.evaluate(world, leaves, reset=RESET, convention="paper").gain.backward()
        finally:
            MODULE._Evaluate = _Evaluate

    def previous():
        leaves.logits.grad = leaves.init_logits.grad = None
        MODULE._Evaluate = _Previous
        try:
            fsc.evaluate(world, leaves, reset=RESET, convention="paper").gain.backward()
        finally:
            MODULE._Evaluate = _Evaluate

    def gradient():
        return fsc.evaluate(world, start, reset=RESET, convention="paper", gradient=True).grad_logits

    def after_new_policy():
        policy = fsc.Policy(architecture=arch, logits=logits.clone().requires_grad_(True), init_logits=init_logits.clone().requires_grad_(True))
        fsc.evaluate(world, policy, reset=RESET, convention="paper").gain.backward()

    distribution = torch.zeros(1)

    def autograd_floor():
        leaves.logits.grad = leaves.init_logits.grad = None
        _Nothing.apply(leaves.logits, leaves.init_logits, distribution)[0].backward()

    def kernel():
        return kernels.fused_value_gradient(logits.numpy(), init_logits.numpy(), objective._fused)

    after()
    point = training()
    found = fsc.evaluate(world, start, reset=RESET, convention="paper", gradient=True)
    difference = max(
        float((leaves.logits.grad - point.grad_logits).abs().max()), float((leaves.init_logits.grad - point.grad_init).abs().max()),
        float((found.grad_logits - point.grad_logits).abs().max()), float((found.grad_init_logits - point.grad_init).abs().max()),
    )  # fmt: skip
    functions = {"training": training, "before": before, "previous": previous, "after": after, "after_new_policy": after_new_policy, "gradient": gradient}
    return {**functions, "floor": autograd_floor, "kernel": kernel}, difference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--per-call", action="store_true", help="the fastest single call of --calls * --repeats, alternating call by call")
    args = parser.parse_args()
    torch.set_num_threads(1)
    world = tasks.TwoHypothesis(0.1)
    print("microseconds per value and gradient; ratio: to training")
    columns = ("training", "before", "ratio", "previous", "ratio", "after", "ratio", "after, new policy", "ratio", "gradient=True", "ratio",
               "autograd floor", "kernel", "least", "max |dgrad|")  # fmt: skip
    print(f"{'memory':<10} " + " ".join(f"{name:>{max(8, len(name))}}" for name in columns))
    for memory in CASES:
        functions, difference = cases(world, memory)
        calls = max(5, args.calls // (10 if memory == "ram:64" else 1))
        t = fastest_calls(functions, calls * args.repeats) if args.per_call else rounds(functions, calls, args.repeats)
        train = t["training"]
        figures = (
            f"{train * 1e6:.0f}", f"{t['before'] * 1e6:.0f}", f"{t['before'] / train:.2f}", f"{t['previous'] * 1e6:.0f}",
            f"{t['previous'] / train:.2f}", f"{t['after'] * 1e6:.0f}",
            f"{t['after'] / train:.2f}", f"{t['after_new_policy'] * 1e6:.0f}", f"{t['after_new_policy'] / train:.2f}",
            f"{t['gradient'] * 1e6:.0f}", f"{t['gradient'] / train:.2f}",
            f"{t['floor'] * 1e6:.0f}", f"{t['kernel'] * 1e6:.0f}", f"{(t['kernel'] + t['floor']) / train:.2f}", f"{difference:.2e}",
        )  # fmt: skip
        print(f"{memory:<10} " + " ".join(f"{figure:>{max(8, len(name))}}" for figure, name in zip(figures, columns, strict=True)))


if __name__ == "__main__":
    main()
