"""Compose a new memory architecture in Python: a win-streak counter, written as rules.

The agent remembers the arm it played last and how many times in a row that
arm has paid (capped at ``K``).  ``fsc.Automaton`` turns the rules into the
tables every engine reads: evaluation, gradients, Monte Carlo, drawing and
the public checkers work unchanged.

    python examples/custom_architecture.py --K 3 --mu 0.2 --reset 0.01
"""

from __future__ import annotations

import argparse

import numpy as np

import fsc
import tasks
from fsc.model.architecture import arm_labels
from fsc.testing import check_architecture, check_policy


def streak(K: int = 3, arms: int = 2) -> fsc.Automaton:
    """Nodes: ``start``, then ``(arm, streak)`` with streak ``0..K``.  Choices: the arms.

    After arm ``x`` and a win (observation 0) the streak grows if ``x`` was
    already the last arm (else it is 1), capped at ``K``; after a loss it is 0.
    """
    names = arm_labels(arms)

    def step(node, arm, obs):
        if obs == 1:
            return (arm, 0)
        run = node[1] + 1 if node != "start" and node[0] == arm else 1
        return (arm, min(run, K))

    return fsc.Automaton(
        nodes=["start"] + [(x, k) for x in names for k in range(K + 1)],
        choices=list(names),
        step=step,
        action=names.index,
        actions=arms,
        observations=2,
    )


def sticky(arch: fsc.Automaton, switch: float) -> fsc.Policy:
    """Stay on a winning arm; after a loss (streak 0) move to the next arm with probability ``switch``."""
    arms = arch.num_actions
    probs = np.full((arch.num_nodes, arms), 1 / arms)
    for n, node in enumerate(arch.node_labels):
        if node == "start":
            continue
        x = arch.choice_index(node[0])
        probs[n] = 0
        probs[n, x] = 1 if node[1] > 0 else 1 - switch
        probs[n, (x + 1) % arms] += 0 if node[1] > 0 else switch
    return fsc.Policy.from_probs(arch, probs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--K", type=int, default=3)
    parser.add_argument("--mu", type=float, default=0.2)
    parser.add_argument("--reset", type=float, default=0.01)
    args = parser.parse_args()
    arch, world = streak(args.K), tasks.TwoHypothesis(args.mu)
    check_architecture(arch)
    print(f"{arch}: nodes {arch.node_names}")
    for seed, switch in enumerate((1.0, 0.5, 0.2, 0.05)):
        policy = sticky(arch, switch)
        exact = fsc.evaluate(world, policy, reset=args.reset)
        sim = fsc.simulate(world, policy, reset=args.reset, steps=500_000, seed=seed)
        print(
            f"switch after a loss with probability {switch}: q = {float(exact.metrics['q']):.6f} (Monte Carlo {sim.metrics['q']:.6f} +- {sim.stderrs['q']:.1g})"
        )
    check_policy(world, fsc.Policy.random(arch, 0), reset=args.reset)
    print("check_architecture and check_policy passed")


if __name__ == "__main__":
    main()
