"""Benchmark: one value and gradient by ``fsc.evaluate`` + ``backward`` against the training path.

Both in the same process, one torch thread, paper convention, mu = 0.1, the published random start:

- ``training``: :class:`fsc.objective.Objective` with its default engine: :class:`fsc.evaluate.Evaluator`'s
  forward pass and adjoint, called directly;
- ``evaluate + backward``: a new ``fsc.Policy`` on leaves that require a gradient, ``fsc.evaluate(world,
  policy)`` with the engine ``auto`` picks, then ``gain.backward()``: the same evaluator under autograd.

Prints microseconds per value-and-gradient (best of ``--repeats`` blocks of ``--calls``) and their ratios
to the training path: ``evaluate + backward`` on one policy whose leaves are reused (a user's training loop),
and the same with a new ``fsc.Policy`` built each call; and the largest difference between the gradients.

Usage: ``.venv/bin/python benchmarks/bench_evaluate_backward.py [--calls 200] [--repeats 5]``
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import best, timing_arguments  # noqa: E402

import fsc  # noqa: E402
import policies  # noqa: E402
import tasks  # noqa: E402
from fsc.objective import Objective  # noqa: E402

CASES = [("ram:8", 1e-3), ("ram:20", 1e-3), ("memento:3", 1e-3), ("memento:4", 1e-3)]


def main() -> None:
    args = timing_arguments(__doc__.splitlines()[0], calls=200)
    torch.set_num_threads(1)
    world = tasks.TwoHypothesis(0.1)
    print(f"{'memory':<10} {'engine':<7} {'training':>9} {'evaluate+backward':>18} {'ratio':>6} {'new policy each call':>21} {'ratio':>6} {'max |dgrad|':>12}")
    for memory, reset in CASES:
        arch = fsc.parse_memory(memory)
        start = policies.initial_policy("random", arch, seed=0)
        objective = Objective(world=world, architecture=arch, reset=reset, convention="paper")
        logits, init_logits = start.logits.detach(), start.init_logits.detach()
        leaves = start.requires_grad_()  # a user's loop: the same leaves, their gradients set to None each step

        def training(objective=objective, logits=logits, init_logits=init_logits):
            return objective(logits, init_logits)

        def by_evaluate(policy=leaves, reset=reset):
            policy.logits.grad = policy.init_logits.grad = None
            result = fsc.evaluate(world, policy, reset=reset, convention="paper")
            result.gain.backward()
            return policy, result

        def by_evaluate_new_policy(arch=arch, logits=logits, init_logits=init_logits, reset=reset):
            policy = fsc.Policy(architecture=arch, logits=logits.clone().requires_grad_(True), init_logits=init_logits.clone().requires_grad_(True))
            result = fsc.evaluate(world, policy, reset=reset, convention="paper")
            result.gain.backward()
            return policy, result

        policy, result = by_evaluate()
        point = training()
        difference = max(float((policy.logits.grad - point.grad_logits).abs().max()), float((policy.init_logits.grad - point.grad_init).abs().max()))
        t_train = best(training, args.calls, args.repeats)
        t_eval = best(by_evaluate, args.calls, args.repeats)
        t_new = best(by_evaluate_new_policy, args.calls, args.repeats)
        print(
            f"{memory:<10} {result.engine:<7} {t_train * 1e6:>9.0f} {t_eval * 1e6:>18.0f} {t_eval / t_train:>6.2f} "
            f"{t_new * 1e6:>21.0f} {t_new / t_train:>6.2f} {difference:>12.2e}"
        )


if __name__ == "__main__":
    main()
