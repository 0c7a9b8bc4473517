"""Benchmark: how many value-and-gradient evaluations the published method makes in one hour on this machine.

The published script evaluates the gain by the power method, squaring each part's transfer matrix until
its columns agree to ``eps_power = 1e-8``, and differentiates that with autograd (float64, dense
``torch`` matrices over its own states). This file re-states that computation (written from the method,
for timing only) and times it at the published random start of ``--seed``, one thread, for each case.

An hour of the published code therefore holds at most ``3600 / (seconds per evaluation at the start)``
evaluations, hence at most that many accepted steps: the policy sharpens as it learns, its chain mixes
more slowly and each evaluation needs more squarings (a RAM 16 run at r = 1e-5 goes from 4 to up to 16),
so later evaluations cost more. ``examples/sweeps/fig4.json`` caps panels E and F with these bounds.

Usage: ``.venv/bin/python benchmarks/published_rate.py [--seconds 10] [--seed 0]``
"""

from __future__ import annotations

import argparse
import itertools
import time

import torch

CASES = [("ram", 8, 1e-3), ("ram", 20, 1e-3), ("memento", 3, 1e-3), ("memento", 4, 1e-3),
         ("memento", 3, 1e-5), ("ram", 16, 1e-5), ("memento", 4, 1e-5), ("ram", 64, 1e-5)]  # fmt: skip
EPS_POWER = 1e-8


def published_model(kind: str, memory: int, mu: float):
    """The published state and action spaces (labels such as ``03A+`` and ``AB +-``), rewards and the
    transition tensors ``M[s2, s, a]`` of the two worlds."""
    arms = "AB"
    if kind == "ram":
        nodes = [f"{i:02d}" for i in range(memory)]
        actions = [n + a for n in nodes for a in arms]
        states = [n + "  " for n in nodes] + [n + a + sign for n in nodes for a in arms for sign in "+-"]
        resets = memory

        def after(state: str, action: str) -> list[str]:
            return [action + sign for sign in "+-"]
    else:
        actions = list(arms)
        states = []
        for n in range(memory + 1):
            pad = " " * (memory - n)
            states += [pad + "".join(h) + pad + "".join(o) for h in itertools.product(arms, repeat=n) for o in itertools.product("+-", repeat=n)]
        resets = 1

        def after(state: str, action: str) -> list[str]:
            return [state[1:memory] + action + state[memory + 1 :] + sign for sign in "+-"]

    index = {s: i for i, s in enumerate(states)}
    rewards = torch.tensor([{"+": 1.0, "-": -1.0, " ": 0.0}[s[-1]] for s in states])
    tensors = []
    for better in (1, 0):  # arm B, then arm A, is the better one
        win = {arms[better]: 0.5 + mu / 2, arms[1 - better]: 0.5 - mu / 2}
        M = torch.zeros(len(states), len(states), len(actions))
        for j, s in enumerate(states):
            for k, a in enumerate(actions):
                for s2 in after(s, a):
                    M[index[s2], j, k] = win[a[-1]] if s2[-1] == "+" else 1 - win[a[-1]]
        tensors.append(M)
    return states, actions, resets, rewards, tensors


def value_and_gradient(rewards, tensors, reset, w_pi, w_0) -> tuple[float, list[int]]:
    """The published method's gain and gradient; also returns the squarings each part needed."""
    w_pi, w_0 = w_pi.clone().requires_grad_(), w_0.clone().requires_grad_()
    pi, p0 = w_pi.softmax(1), w_0.softmax(0)
    gain, squarings = 0.0, []
    for M in tensors:
        jump = pi.new_zeros(len(pi), len(pi))
        jump[: len(p0), :] = p0[:, None]
        T = (1 - reset) * torch.einsum("ja,ija->ij", pi, M) + reset * jump
        n = 0
        while True:
            T = T @ T
            n += 1
            if (T - T[:, [0]]).abs().max().item() < EPS_POWER or not torch.isfinite(T).all():
                break
        squarings.append(n)
        gain = gain + torch.dot(rewards, T[:, 0])
    gain = gain / len(tensors)
    gain.backward()
    return gain.item(), squarings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="time each case for at least this long")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    print(f"{'memory':<10} {'reset':>7} {'states':>6} {'squarings':>10} {'ms per evaluation':>18} {'evaluations per hour':>21}")
    for kind, memory, reset in CASES:
        states, actions, resets, rewards, tensors = published_model(kind, memory, 0.1)
        torch.manual_seed(args.seed)  # the published random start: logits, then the reset logits
        w_pi, w_0 = torch.randn(len(states), len(actions)), torch.randn(resets)
        value_and_gradient(rewards, tensors, reset, w_pi, w_0)
        calls, began = 0, time.perf_counter()
        while calls < 3 or time.perf_counter() - began < args.seconds:
            _, squarings = value_and_gradient(rewards, tensors, reset, w_pi, w_0)
            calls += 1
        seconds = (time.perf_counter() - began) / calls
        name, counts = f"{kind}:{memory}", "+".join(map(str, squarings))
        print(f"{name:<10} {reset:>7.0e} {len(states):>6} {counts:>10} {seconds * 1e3:>18.2f} {3600 / seconds:>21.3g}")


if __name__ == "__main__":
    main()
