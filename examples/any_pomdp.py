"""Finite-state controllers on classic POMDPs: Tiger, the cheese maze, the 4x3 grid.

Four tables (printed, and written as CSV with ``--out``):

1. Tiger at discount 0.95 and 0.75: exact values (``fsc.evaluate``) of
   hand-built controllers, against an independent solve of the controller's
   value equations ``V = R + gamma P V`` on (node, state).
2. Tiger: the best deterministic controller with 1 to 4 nodes, by
   enumerating every controller (vectorised value equations).
3. Training by gradient flow from random starts (10 seeds, until converged or
   ``--max-seconds``) on ``RAM(N)`` with the world's actions and
   observations: best and median value, against upper bounds on the optimal
   POMDP value (``fsc.bounds``: for Tiger, value iteration on a fine grid of
   its one-dimensional belief; for all, the fast informed and MDP bounds).
4. The trained 5-node Tiger controller's skeleton, drawn with ``fsc draw``.

    python examples/any_pomdp.py --out results/any_pomdp
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

import fsc
import tasks
from fsc.bounds import informed_bound, mdp_bound, two_state_bound
from fsc.files import write_rows
from fsc.train import converged


def write(rows: list[dict], path: Path) -> None:
    print(f"wrote {write_rows(path, rows)}")


# ---------------------------------------------------------------- controllers by their value equations


def controller_values(world: fsc.POMDP, action: np.ndarray, next_node: np.ndarray, discount: float, start: int = 0) -> np.ndarray:
    """Values from the initial belief of deterministic controllers started in node ``start``, batched.

    ``action``: ``(N,)``; ``next_node``: ``(B, N, O)`` (the node after
    observation ``o`` in node ``q``, which plays ``action[q]``).  Solves
    ``V[q, s] = rbar[s, a_q] + gamma sum_{s2, o} T[s, a_q, s2] O[a_q, s2, o] V[next[q, o], s2]``.
    """
    T, Ob = world.transition, world.observation
    S = world.num_states
    B, N, O = next_node.shape
    rbar = np.einsum("sat,ato,sato->sa", T, Ob, np.asarray(world.reward))
    R = rbar[:, action].T.reshape(N * S)  # (q, s)
    # M[b, (q, s), (q2, s2)] = sum_o T[s, a_q, s2] O[a_q, s2, o] [q2 = next[b, q, o]]
    step = np.einsum("qst,qto->qsto", T[:, action].transpose(1, 0, 2), Ob[action])  # (N, S, S2, O)
    M = np.zeros((B, N, S, N, S))
    for o in range(O):
        target = np.zeros((B, N, N))
        np.put_along_axis(target, next_node[:, :, o, None], 1.0, axis=2)  # (B, q, q2)
        M += np.einsum("bqr,qst->bqsrt", target, step[..., o])
    A = np.eye(N * S) - discount * M.reshape(B, N * S, N * S)
    V = np.linalg.solve(A, np.broadcast_to(R, (B, N * S))[..., None])[..., 0]
    return V[:, start * S : (start + 1) * S] @ world.initial


def counting_tiger(margin: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Listen until one side has been heard ``margin`` times more than the other, then open the other door.

    Node ``k`` counts hear-left minus hear-right plus ``margin``; node ``margin`` is the start.
    """
    N = 2 * margin + 1
    listen, open_left, open_right = range(3)
    action = np.full(N, listen)
    action[0], action[-1] = open_left, open_right  # heard right more: the tiger is right; open the left door
    next_node = np.zeros((N, 3, 2), dtype=np.int64)
    for q in range(N):
        if action[q] == listen:
            next_node[q, listen] = [min(q + 1, N - 1), max(q - 1, 0)]  # hear-left: count up
        else:
            next_node[q] = margin
    return action, next_node


def hand_built(discount: float) -> list[dict]:
    world = tasks.Tiger(discount=discount)
    rows = []
    cases = {f"always {name}": (np.array([a]), np.zeros((1, 3, 2), dtype=np.int64)) for a, name in enumerate(world.pomdp.action_labels)}
    cases["count to 2, then open"] = counting_tiger(2)
    for name, (action, next_node) in cases.items():
        N = len(action)
        arch = fsc.RAM(N, arms=3, observations=2)
        exact = float(fsc.evaluate(world, fsc.Policy.from_controller(arch, action, next_node, initial=N // 2)).value)
        after = next_node[np.arange(N), action]  # (N, O): the next node after each observation
        independent = controller_values(world.pomdp, action, after[None], discount, start=N // 2)[0]
        rows.append(dict(discount=discount, controller=name, nodes=N, value_fsc=exact, value_independent=float(independent), diff=abs(exact - independent)))
    return rows


def enumerate_best(world: fsc.POMDP, N: int, discount: float, chunk: int = 1 << 16) -> dict:
    """The best deterministic ``N``-node controller (start node 0), by evaluating every one."""
    A, O = world.num_actions, world.num_observations
    best = (-np.inf, None, None)
    count = 0
    for action in itertools.product(range(A), repeat=N):
        action = np.array(action)
        codes = np.arange(N ** (N * O))
        for lo in range(0, len(codes), chunk):
            block = codes[lo : lo + chunk]
            digits = (block[:, None] // N ** np.arange(N * O)) % N
            next_node = digits.reshape(-1, N, O)
            values = controller_values(world, action, next_node, discount)
            count += len(values)
            i = int(values.argmax())
            if values[i] > best[0]:
                best = (float(values[i]), action, next_node[i])
    return {"value": best[0], "action": best[1].tolist(), "next_node": best[2].tolist(), "controllers": count}


# ---------------------------------------------------------------- training


def train_one(job: tuple) -> dict:
    import torch

    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    name, discount, N, seed, max_seconds = job
    task = TASKS[name](discount)
    world = task.pomdp
    arch = fsc.RAM(N, arms=world.num_actions, observations=world.num_observations)
    start = time.perf_counter()
    ts, gains = [], []
    for record in fsc.flow(task, fsc.Policy.random(arch, seed), reset=1 - discount, max_seconds=max_seconds):
        ts.append(record.t)
        gains.append(record.gain)
        if converged(ts, gains):  # the rule of fsc train without --until-t
            break
    value = record.gain / (1 - discount)
    logits, init = record.state.point.logits, record.state.point.init_logits
    return dict(
        problem=name,
        discount=discount,
        nodes=N,
        seed=seed,
        value=value,
        t=record.t,
        steps=record.step,
        seconds=time.perf_counter() - start,
        logits=logits.numpy().tolist(),
        init_logits=init.numpy().tolist(),
    )


TASKS = {"tiger": lambda g: tasks.Tiger(discount=g), "cheese": lambda g: tasks.CheeseMaze(discount=g), "grid4x3": lambda g: tasks.Grid4x3(discount=g)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--max-seconds", type=float, default=60.0, help="wall-time cap per training run")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--enumerate-up-to", type=int, default=4)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    out = Path(args.out) if args.out else None

    print("1. Tiger: hand-built controllers, fsc.evaluate against the value equations solved directly")
    rows = hand_built(0.95) + hand_built(0.75)
    for row in rows:
        print(
            f"  gamma={row['discount']}  {row['controller']:<24} nodes={row['nodes']}  value={row['value_fsc']:.12f}"
            f"  independent={row['value_independent']:.12f}  diff={row['diff']:.1e}"
        )
    if out:
        write(rows, out / "tiger_hand_built.csv")

    print("\n2. Tiger: best deterministic controllers by enumeration (start node 0)")
    enumerated = []
    for discount in (0.95, 0.75):
        for N in range(1, args.enumerate_up_to + 1):
            clock = time.perf_counter()
            best = enumerate_best(tasks.Tiger(discount=discount).pomdp, N, discount)
            enumerated.append(dict(discount=discount, nodes=N, **best, seconds=time.perf_counter() - clock))
            print(
                f"  gamma={discount} N={N}: best value {best['value']:.10f} over {best['controllers']} controllers"
                f" ({time.perf_counter() - clock:.1f} s); actions {best['action']}"
            )
    if out:
        write(enumerated, out / "tiger_enumeration.csv")

    print("\n3. Training from random starts (gradient flow until converged, 1 thread per run)")
    jobs = [("tiger", g, N, s, args.max_seconds) for g in (0.95, 0.75) for N in range(1, 6) for s in range(args.seeds)]
    jobs += [(name, 0.95, N, s, args.max_seconds) for name in ("cheese", "grid4x3") for N in range(1, 5) for s in range(args.seeds)]
    clock = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        runs = list(pool.map(train_one, jobs))
    print(f"  {len(runs)} runs in {time.perf_counter() - clock:.0f} s wall")
    optimum = {("tiger", g): two_state_bound(tasks.Tiger(discount=g).pomdp, g) for g in (0.95, 0.75)}
    table = []
    for (name, discount, N), group in itertools.groupby(runs, key=lambda r: (r["problem"], r["discount"], r["nodes"])):
        group = list(group)
        values = [r["value"] for r in group]
        world = TASKS[name](discount).pomdp
        row = dict(
            problem=name,
            discount=discount,
            nodes=N,
            best=max(values),
            median=statistics.median(values),
            belief_bound=optimum.get((name, discount), float("nan")),
            informed_bound=informed_bound(world, discount),
            mdp_bound=mdp_bound(world, discount),
            seconds_total=sum(r["seconds"] for r in group),
            seconds_max=max(r["seconds"] for r in group),
        )
        table.append(row)
        print(
            f"  {name:<8} gamma={discount} N={N}: best {row['best']:.6f}  median {row['median']:.6f}  belief-grid bound {row['belief_bound']:.9f}"
            f"  bounds {row['informed_bound']:.4f} {row['mdp_bound']:.4f}  {row['seconds_total']:.0f} s"
        )
    if out:
        write(table, out / "training.csv")
        best5 = max((r for r in runs if r["problem"] == "tiger" and r["discount"] == 0.95 and r["nodes"] == 5), key=lambda r: r["value"])
        (out / "runs.json").write_text(json.dumps([{k: v for k, v in r.items() if k not in ("logits", "init_logits")} for r in runs], indent=1))
        import torch

        arch = fsc.RAM(5, arms=3, observations=2)
        policy = fsc.Policy(architecture=arch, logits=torch.tensor(best5["logits"]), init_logits=torch.tensor(best5["init_logits"]))
        policy.save(out / "tiger5.npz")
        skeleton = policy.skeleton()
        print("\n4. The best trained 5-node Tiger controller (gamma = 0.95), its skeleton:")
        labels = tasks.Tiger().pomdp.action_labels
        for q in range(5):
            print(
                f"  node {q}: {labels[skeleton.action[q]]} (p={skeleton.action_prob[q]:.4f}); after listen:"
                f" hear-left -> {skeleton.next_node[q, 0, 0]}, hear-right -> {skeleton.next_node[q, 0, 1]}"
            )
        world_file = out / "tiger.pomdp"
        fsc.write_pomdp(tasks.Tiger().pomdp, world_file)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "fsc.cli",
                "draw",
                "--pomdp",
                str(world_file),
                "--memory",
                "ram:5",
                "--policy",
                str(out / "tiger5.npz"),
                "--out",
                str(out / "tiger5.svg"),
                "--threshold",
                "0.01",
            ],
            check=True,
        )


if __name__ == "__main__":
    main()
