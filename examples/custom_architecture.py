"""Compose a new memory architecture in Python: a win-streak counter.

The agent remembers the arm it played last and how many times in a row that
arm has paid (capped at ``K``).  One final attrs subclass of
``fsc.MemoryArchitecture`` describing its tables is all it takes: evaluation,
gradients, Monte Carlo and the checkers work unchanged.

    python examples/custom_architecture.py --K 3 --mu 0.2 --reset 0.01
"""

from __future__ import annotations

import argparse
import functools

import attrs
import numpy as np

import fsc
import tasks
from fsc.memory import arm_labels
from fsc.testing import check_architecture, check_policy


@attrs.frozen
class Streak(fsc.MemoryArchitecture):
    """Last arm and its current run of wins, ``0..K``; plus the blank start node ``_``.

    Nodes: ``_``, then ``A0 .. AK, B0 .. BK`` (arm, streak).  Choices: the arms.
    After arm ``x`` and a win the streak grows if ``x`` was already the last
    arm (else it is 1); after a loss it is 0.
    """

    K: int = attrs.field(validator=[attrs.validators.instance_of(int), attrs.validators.ge(0)])
    arms: int = attrs.field(default=2, kw_only=True, validator=[attrs.validators.instance_of(int), attrs.validators.ge(1)])

    num_actions = property(lambda self: self.arms)
    num_observations = property(lambda self: 2)  # + (win), - (loss)

    def node(self, arm: int, streak: int) -> int:
        return 1 + arm * (self.K + 1) + streak

    @functools.cached_property
    def node_labels(self) -> tuple[str, ...]:
        return ("_", *(f"{x}{k}" for x in arm_labels(self.arms) for k in range(self.K + 1)))

    @functools.cached_property
    def choice_labels(self) -> tuple[str, ...]:
        return arm_labels(self.arms)

    @functools.cached_property
    def allowed(self) -> np.ndarray:
        table = np.ones((1 + self.arms * (self.K + 1), self.arms), dtype=bool)
        table.setflags(write=False)
        return table

    @functools.cached_property
    def next_node(self) -> np.ndarray:
        N = 1 + self.arms * (self.K + 1)
        table = np.zeros((N, self.arms, 2), dtype=np.int64)
        for n in range(N):
            last, streak = (None, 0) if n == 0 else divmod(n - 1, self.K + 1)
            for x in range(self.arms):
                run = streak + 1 if x == last else 1
                table[n, x, 0] = self.node(x, min(run, self.K))  # win
                table[n, x, 1] = self.node(x, 0)  # loss
        table.setflags(write=False)
        return table

    @functools.cached_property
    def choice_action(self) -> np.ndarray:
        table = np.arange(self.arms, dtype=np.int64)
        table.setflags(write=False)
        return table

    @functools.cached_property
    def reset_mask(self) -> np.ndarray:
        table = np.eye(1 + self.arms * (self.K + 1), dtype=bool)[0]
        table.setflags(write=False)
        return table


def sticky(arch: Streak, switch: float) -> fsc.Policy:
    """Stay on a winning arm; after a loss (streak 0) move to the next arm with probability ``switch``."""
    probs = np.full((arch.num_nodes, arch.arms), 1 / arch.arms)
    for x in range(arch.arms):
        for k in range(arch.K + 1):
            row = probs[arch.node(x, k)]
            row[:] = 0
            row[x] = 1 if k > 0 else 1 - switch
            row[(x + 1) % arch.arms] += 0 if k > 0 else switch
    return fsc.Policy.from_probs(arch, probs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--K", type=int, default=3)
    parser.add_argument("--mu", type=float, default=0.2)
    parser.add_argument("--reset", type=float, default=0.01)
    args = parser.parse_args()
    arch, world = Streak(args.K), tasks.TwoHypothesis(args.mu)
    check_architecture(arch)
    print(f"{arch}: {arch.num_nodes} nodes {arch.node_labels}")
    for seed, switch in enumerate((1.0, 0.5, 0.2, 0.05)):
        policy = sticky(arch, switch)
        exact = fsc.evaluate(world, arch, policy, reset=args.reset)
        sim = fsc.simulate(world, arch, policy, reset=args.reset, steps=500_000, seed=seed)
        print(
            f"switch after a loss with probability {switch}: q = {float(exact.metrics['q']):.6f} (Monte Carlo {sim.metrics['q']:.6f} +- {sim.stderrs['q']:.1g})"
        )
    check_policy(world, fsc.Policy.random(arch, 0), reset=args.reset)
    print("check_architecture and check_policy passed")


if __name__ == "__main__":
    main()
