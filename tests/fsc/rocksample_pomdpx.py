"""RockSample[n, k] (Smith and Simmons 2004) written as a factored POMDPX file, and the same world built flat, state by
state, with loops: the second is the independent reference the reader's flattening is checked against.

The world, as this project defines it: a robot on an ``n x n`` grid of cells ``c{col}_{row}`` and an ``exit`` beyond
the east edge; ``k`` rocks on distinct cells (drawn with ``seed``), each ``bad`` or ``good``, uniformly at the start;
the robot starts at column 0, row ``n // 2``.  Actions: ``north``, ``south``, ``east``, ``west`` (a move off the grid
stays, except east, which leaves by the exit: +10, and the exit keeps the robot forever), ``sample`` (+10 on a good
rock, which turns bad, -10 on a bad one, -100 where there is no rock), ``check0`` ... (the sensor reads the rock's
kind right with probability ``(1 + 2 ** (-d / 2)) / 2`` at distance ``d``).  The robot's cell is fully observed
(``fullyObs="true"``); the sensor says ``none`` except after a check.  ``(n * n + 1) * 2 ** k`` states, ``5 + k``
actions, ``3 * (n * n + 1)`` observations: RockSample[11, 11] has 249,856 states.
"""

from __future__ import annotations

import math

import numpy as np

MOVES = {"north": (0, 1), "south": (0, -1), "east": (1, 0), "west": (-1, 0)}


def layout(n: int, k: int, seed: int = 0) -> tuple[list[str], list[tuple[int, int]], list[str], tuple[int, int]]:
    """The cells' names (``exit`` last), the rocks' cells, the actions and the start cell."""
    cells = [f"c{col}_{row}" for col in range(n) for row in range(n)] + ["exit"]
    rng = np.random.default_rng(seed)
    rocks = [divmod(int(c), n) for c in rng.choice(n * n, size=k, replace=False)]
    return cells, rocks, [*MOVES, "sample", *(f"check{i}" for i in range(k))], (0, n // 2)


def move(n: int, cell: tuple[int, int] | None, action: str) -> tuple[int, int] | None:
    """The cell after a move (None: the exit)."""
    if cell is None or action not in MOVES:
        return cell
    col, row = cell[0] + MOVES[action][0], cell[1] + MOVES[action][1]
    if col >= n:
        return None
    return (col, row) if 0 <= col and 0 <= row < n else cell


def accuracy(cell: tuple[int, int], rock: tuple[int, int]) -> float:
    return 0.5 * (1.0 + 2.0 ** (-math.dist(cell, rock) / 2.0))


def _name(n: int, cell: tuple[int, int] | None) -> str:
    return "exit" if cell is None else f"c{cell[0]}_{cell[1]}"


def _entry(instance: str, table: str, values: str) -> str:
    return f"<Entry><Instance>{instance}</Instance><{table}>{values}</{table}></Entry>"


def _condprob(var: str, parents: str, entries: list[str]) -> str:
    return f'<CondProb><Var>{var}</Var><Parent>{parents}</Parent><Parameter type="TBL">{"".join(entries)}</Parameter></CondProb>'


def rocksample_pomdpx(n: int, k: int, seed: int = 0) -> str:
    """The text of the POMDPX file of RockSample[n, k]."""
    cells, rocks, actions, start = layout(n, k, seed)
    rock_vars = [f"rock{i}" for i in range(k)]
    out = ['<?xml version="1.0" encoding="ISO-8859-1"?>', f'<pomdpx version="1.0" id="rocksample_{n}_{k}">', "<Discount>0.95</Discount>", "<Variable>"]
    out.append(f'<StateVar vnamePrev="robot_0" vnameCurr="robot_1" fullyObs="true"><ValueEnum>{" ".join(cells)}</ValueEnum></StateVar>')
    out += [f'<StateVar vnamePrev="{r}_0" vnameCurr="{r}_1"><ValueEnum>bad good</ValueEnum></StateVar>' for r in rock_vars]
    out.append('<ObsVar vname="sensor"><ValueEnum>none good bad</ValueEnum></ObsVar>')
    out.append(f'<ActionVar vname="action"><ValueEnum>{" ".join(actions)}</ValueEnum></ActionVar><RewardVar vname="reward"/></Variable>')
    first = " ".join("1" if c == _name(n, start) else "0" for c in cells)
    out.append("<InitialStateBelief>" + _condprob("robot_0", "null", [_entry("-", "ProbTable", first)]))
    out += [_condprob(f"{r}_0", "null", [_entry("-", "ProbTable", "uniform")]) for r in rock_vars]
    out.append("</InitialStateBelief><StateTransitionFunction>")
    robot = [
        _entry(f"{a} {_name(n, c)} {_name(n, move(n, c, a))}", "ProbTable", "1") for c in [*((i, j) for i in range(n) for j in range(n)), None] for a in MOVES
    ]
    robot += [_entry(f"{a} - -", "ProbTable", "identity") for a in actions if a not in MOVES]
    out.append(_condprob("robot_1", "action robot_0", robot))
    for i, r in enumerate(rock_vars):
        entries = [_entry("* * - -", "ProbTable", "1 0 0 1"), _entry(f"sample {_name(n, rocks[i])} * -", "ProbTable", "1 0")]
        out.append(_condprob(f"{r}_1", f"action robot_0 {r}_0", entries))
    out.append("</StateTransitionFunction><ObsFunction>")
    sensor = [_entry(" ".join(["*"] * (k + 2)) + " -", "ProbTable", "1 0 0")]
    for i in range(k):
        for c in (divmod(x, n) for x in range(n * n)):
            eta = accuracy(c, rocks[i])
            dims = " ".join("-" if j == i else "*" for j in range(k))
            sensor.append(_entry(f"check{i} {_name(n, c)} {dims} -", "ProbTable", f"0 {1 - eta!r} {eta!r} 0 {eta!r} {1 - eta!r}"))
    out.append(_condprob("sensor", "action robot_1 " + " ".join(f"{r}_1" for r in rock_vars), sensor) + "</ObsFunction>")
    stars = " ".join(["*"] * k)
    reward = [_entry(f"sample {_name(n, divmod(x, n))} {stars}", "ValueTable", "-100") for x in range(n * n)]
    for i, rock in enumerate(rocks):
        dims = " ".join("-" if j == i else "*" for j in range(k))
        reward.append(_entry(f"sample {_name(n, rock)} {dims}", "ValueTable", "-10 10"))
    reward += [_entry(f"east c{n - 1}_{row} {stars}", "ValueTable", "10") for row in range(n)]
    parents = "action robot_0 " + " ".join(f"{r}_0" for r in rock_vars)
    out.append(f'<RewardFunction><Func><Var>reward</Var><Parent>{parents}</Parent><Parameter type="TBL">{"".join(reward)}</Parameter></Func></RewardFunction>')
    out.append("</pomdpx>")
    return "\n".join(out)


def rocksample_flat(n: int, k: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The same world's dense tables, state by state: ``transition (S, A, S)``, ``observation (A, S, O)``, ``reward
    (S, A)`` and ``initial (S,)``; a state is ``cell * 2**k + rocks`` (rock 0 the highest bit, 1 = good), an
    observation ``sensor * (n * n + 1) + cell``."""
    cells, rocks, actions, start = layout(n, k, seed)
    C, R, A = len(cells), 2**k, len(actions)
    S, O = C * R, 3 * C
    where = [(i, j) for i in range(n) for j in range(n)] + [None]
    transition, observation, reward = np.zeros((S, A, S)), np.zeros((A, S, O)), np.zeros((S, A))
    for s in range(S):
        cell, bits = where[s // R], [(s % R) >> (k - 1 - i) & 1 for i in range(k)]
        for a, action in enumerate(actions):
            after, new = move(n, cell, action), list(bits)
            if action == "sample" and cell is not None:
                hit = [i for i in range(k) if rocks[i] == cell]
                reward[s, a] = (10.0 if bits[hit[0]] else -10.0) if hit else -100.0
                for i in hit:
                    new[i] = 0
            if action == "east" and cell is not None and after is None:
                reward[s, a] = 10.0
            transition[s, a, where.index(after) * R + sum(b << (k - 1 - i) for i, b in enumerate(new))] = 1.0
            c2 = where.index(cell)
            if action.startswith("check") and cell is not None:
                i = int(action[5:])
                eta = accuracy(cell, rocks[i])
                observation[a, s, 1 * C + c2] = eta if bits[i] else 1 - eta
                observation[a, s, 2 * C + c2] = 1 - eta if bits[i] else eta
            else:
                observation[a, s, c2] = 1.0
    initial = np.zeros(S)
    initial[where.index(start) * R : (where.index(start) + 1) * R] = 1.0 / R
    return {"transition": transition, "observation": observation, "reward": reward, "initial": initial}
